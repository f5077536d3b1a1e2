"""What the structured allocator answers (allocator.py's Results and Unfit rules): one
claim's AllocationResult from the devices the search picked, its nodeSelector, and why a
request could not be satisfied.

    results     per picked device: request, driver, pool, device; adminAccess when set;
                the request's tolerations (DRADeviceTaints); a share's shareID and
                consumedCapacity; the device's binding conditions (binding and status on)
    config      each class's configs once (FromClass, the requests that used the class),
                then the claim's configs naming an allocated request or subrequest, or
                none (FromClaim); one covering every request lists none
    nodeSelector  a node-local device, or one binding to the node: metadata.name In
                [node]; else the single terms of the devices' nodeSelectors merged;
                allNodes only: none
    why         the first of: nothing matches, too few free, taints, shared counters,
                capacity, constraints, taken by other requests

The search's own types stay in allocator.py; what this module needs of a request is the
Picked protocol, and the search's state comes as arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple, Protocol

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import bindingconditions, capacity
from services.api.dra.pools import DeviceID, PoolDevice
from services.api.helpers.nodeaffinity import OBJECT_NAME_FIELD

SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


class Picked(Protocol):
    """What a result needs of the request (or subrequest) a device was picked for."""

    claim: str
    base: str
    sub: str
    name: str
    cls: resource_pb2.DeviceClass
    count: int
    admin: bool
    tolerations: tuple[resource_pb2.DeviceToleration, ...]
    capacity: capacity.Amounts | None


class Pick(NamedTuple):
    device: PoolDevice
    request: Picked
    #: a share's use of the device's capacity (None: the device is dedicated)
    use: capacity.Amounts | None


class UnsupportedNodeSelector(ValueError):
    """A slice's nodeSelector with several terms (the allocator cannot merge those)."""


def allocation_result(
    claim: resource_pb2.ResourceClaim,
    picks: Sequence[Pick],
    chosen: Sequence[Picked],
    node: str,
    *,
    share_id: Callable[[], str],
    tolerations: bool,
    binding_conditions: bool,
) -> resource_pb2.AllocationResult:
    """The claim's AllocationResult: `picks` in pick order, `chosen` the alternative taken
    for each of the claim's requests. Raises UnsupportedNodeSelector."""
    out = resource_pb2.AllocationResult()
    for d, req, use in picks:
        res = out.devices.results.add(
            request=req.name, driver=d.id.driver, pool=d.id.pool, device=d.id.device
        )
        if req.admin:
            res.admin_access = True
        if tolerations:
            res.tolerations.extend(req.tolerations)
        if use is not None:
            res.share_id = share_id()
            for name, value in use.items():
                res.consumed_capacity[name] = capacity.text(value, d.device.capacity[name].value)
        if binding_conditions:
            bindingconditions.copy_to_result(res, d.device)
    _config(out, claim, chosen)
    selector = node_selector(picks, node)
    if selector is not None:
        out.node_selector.CopyFrom(selector)
    return out


def _config(
    out: resource_pb2.AllocationResult,
    claim: resource_pb2.ResourceClaim,
    chosen: Sequence[Picked],
) -> None:
    by_class: dict[str, list[resource_pb2.DeviceAllocationConfiguration]] = {}
    for req in chosen:
        name = req.cls.metadata.name
        if name in by_class:
            for cfg in by_class[name]:
                cfg.requests.append(req.name)
            continue
        by_class[name] = []
        for cc in req.cls.spec.config:
            cfg = out.devices.config.add(source=SOURCE_CLASS, requests=[req.name])
            cfg.opaque.CopyFrom(cc.opaque)
            by_class[name].append(cfg)
    names = {req.base for req in chosen} | {req.name for req in chosen}
    for cc in claim.spec.devices.config:
        if not cc.requests or names.intersection(cc.requests):
            cfg = out.devices.config.add(source=SOURCE_CLAIM, requests=cc.requests)
            cfg.opaque.CopyFrom(cc.opaque)
    for cfg in out.devices.config:
        # A config covering every request (by its name or the chosen subrequest's)
        # applies to all: written without requests (upstream's "empty means all").
        covered = set(cfg.requests)
        if covered and all(r.base in covered or r.name in covered for r in chosen):
            del cfg.requests[:]


def node_selector(picks: Sequence[Pick], node: str) -> core_pb2.NodeSelector | None:
    """Where the picked devices can be used, from `node`'s point of view."""
    term = core_pb2.NodeSelectorTerm()
    for pick in picks:
        d = pick.device
        s = d.slice
        # With perDeviceNodeSelection the device says where it is, else its slice.
        where = d.device if s.per_device else s.msg.spec
        if (where.HasField("node_name") and where.node_name) or (
            bindingconditions.binds_to_node(d)
        ):
            # One node-local device, or one binding to the node, ties the whole
            # allocation to the node (the one a node-local device reaches).
            local = core_pb2.NodeSelectorTerm()
            local.match_fields.add(key=OBJECT_NAME_FIELD, operator="In", values=[node])
            return core_pb2.NodeSelector(node_selector_terms=[local])
        if not where.HasField("node_selector"):
            continue
        terms = where.node_selector.node_selector_terms
        if len(terms) > 1:
            raise UnsupportedNodeSelector(
                f"claim {picks[0].request.claim}: unsupported ResourceSlice "
                f"nodeSelector with {len(terms)} terms (slice {s.msg.metadata.name})"
            )
        for t in terms:
            _merge(t.match_fields, term.match_fields)
            _merge(t.match_expressions, term.match_expressions)
    if term.match_fields or term.match_expressions:
        return core_pb2.NodeSelector(node_selector_terms=[term])
    return None


def _merge(
    src: Sequence[core_pb2.NodeSelectorRequirement],
    dst: Sequence[core_pb2.NodeSelectorRequirement],
) -> None:
    """Append to `dst` (a repeated field) the requirements of `src` it lacks."""
    for req in src:
        if not any(
            e.key == req.key and e.operator == req.operator and set(e.values) == set(req.values)
            for e in dst
        ):
            dst.add().CopyFrom(req)  # type: ignore[attr-defined]


def why(
    req: Picked,
    matching: Sequence[PoolDevice],
    *,
    all_mode: bool,
    tainted: Callable[[PoolDevice], bool],
    allocated: Collection[DeviceID],
    consumable: bool,
    constrained: Sequence[str],
) -> str:
    """Why `req` could not be satisfied in the search, judged on its own: `matching` its
    selectable devices on the node (with allocationMode All, exactly those it needs),
    `tainted(d)` whether d has a taint it does not tolerate, `allocated` the devices in
    use, `consumable` DRAConsumableCapacity, `constrained` the attributes of the claim's
    matchAttribute constraints."""
    label = f"{req.sub}: " if req.sub else ""
    kind = f'of class "{req.cls.metadata.name}"'
    if not matching:
        return f"{label}no device {kind} matches"
    if all_mode:
        n_tainted = sum(1 for d in matching if tainted(d))
        if n_tainted:
            return (
                f"{label}asks for all {len(matching)} devices {kind}, {n_tainted} have "
                "taints the request does not tolerate"
            )
        busy = sum(1 for d in matching if d.id in allocated)
        if busy and not req.admin:
            return f"{label}asks for all {len(matching)} devices {kind}, {busy} in use"
        return f"{label}all {len(matching)} devices {kind} cannot be allocated together"
    free = sum(1 for d in matching if req.admin or d.id not in allocated)
    if free < req.count:
        return (
            f"{label}needs {req.count} device(s) {kind}, {free} of {len(matching)} "
            "matching are free"
        )
    n_tainted = sum(1 for d in matching if (req.admin or d.id not in allocated) and tainted(d))
    if free - n_tainted < req.count:
        return (
            f"{label}needs {req.count} device(s) {kind}, {n_tainted} of the {free} free "
            "matching devices have taints the request does not tolerate"
        )
    if any(d.consumes for d in matching):
        return (
            f"{label}{len(matching)} matching devices {kind}, but their pools' shared "
            f"counters do not cover {req.count} of them with the devices in use"
        )
    if consumable and (req.capacity is not None or any(d.multi for d in matching)):
        return (
            f"{label}{len(matching)} matching devices {kind}, but not {req.count} with "
            "the capacity the request consumes left"
        )
    if constrained:
        return (
            f"{label}{len(matching)} matching devices {kind}, but not {req.count} that "
            f"satisfy the claim's constraints (matchAttribute {', '.join(constrained)}) "
            "together with the other requests"
        )
    return f"{label}the matching devices {kind} are taken by other requests"
