"""The table shape of the allocator tests: upstream's object generators
(allocatortesting: class per driver, slice per node or selector, request with count) over
the shared builders, a Case row, and `check`, which runs one row on a real Allocator.

Upstream's classes select their driver with CEL (`device.driver == "driver-a"`), so the
rows run on the real CEL library. Where upstream only says "no result" a row pins the
Unfit's claim and a part of its reason; where it says error, a part of the
AllocationError's message (kubera's wording: `claim <ns>/<name>, request "<name>"`).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.allocator import (
    AllocationError,
    Allocator,
    DeviceCache,
    DeviceID,
    Unfit,
)
from tests.builders import MakeNode, device_class, resource_claim, resource_slice, slice_device

Json = dict[str, Any]

NS = "default"
REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2 = "slice-1", "slice-2"
DEV0, DEV1, DEV2, DEV3 = "device-0", "device-1", "device-2", "device-3"
ALL_NODES = "<all nodes>"
PER_DEVICE = "<per device>"  # dracounters: perDeviceNodeSelection

INT_ATTR = f"{DRIVER_A}/numa"
VERSION_ATTR = f"{DRIVER_A}/driverVersion"
STRING_ATTR = f"{DRIVER_A}/stringAttribute"
BOOL_ATTR = f"{DRIVER_A}/boolAttribute"


# ----------------------------------------------------------------------------- table helpers
# Upstream's shapes (class per driver, slice per node/selector, request with count) over
# the shared builders.


def node(name: str, region: str) -> core_pb2.Node:
    return MakeNode().name(name).labels({"region": region, "planet": "earth"}).obj()


def cls(name: str, driver: str, config: str | None = None) -> resource_pb2.DeviceClass:
    doc: Json = {}
    if config is not None:
        doc["spec"] = {"config": [{"opaque": opaque(driver, config)}]}
    return device_class(name, f'device.driver == "{driver}"', **doc)


def opaque(driver: str, attribute: str) -> Json:
    return {"driver": driver, "parameters": {attribute: attribute + "Value"}}


def slc(
    name: str,
    where: str | Json,
    pool: str,
    driver: str,
    *devices: Json,
    count: int = 1,
    generation: int = 1,
) -> resource_pb2.ResourceSlice:
    """A slice for node `where`, ALL_NODES, PER_DEVICE or a nodeSelector dict."""
    spec: Json = {}
    node_name = None
    if where == ALL_NODES:
        spec["allNodes"] = True
    elif where == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        node_name = where
    return resource_slice(
        name,
        driver=driver,
        node=node_name,
        pool=pool,
        devices=devices,
        generation=generation,
        slice_count=count,
        **spec,
    )


def one(name: str, where: str | Json, pool: str, driver: str) -> resource_pb2.ResourceSlice:
    return slc(name, where, pool, driver, slice_device(DEV1))


def many(name: str, where: str, pool: str, driver: str, n: int) -> resource_pb2.ResourceSlice:
    return slc(name, where, pool, driver, *(slice_device(f"device-{i}") for i in range(n)))


def label_selector(key: str, value: str) -> Json:
    return {"nodeSelectorTerms": [{"matchExpressions": [_req(key, value)]}]}


def local(node_name: str) -> Json:
    return {"nodeSelectorTerms": [{"matchFields": [_req("metadata.name", node_name)]}]}


def _req(key: str, value: str) -> Json:
    return {"key": key, "operator": "In", "values": [value]}


def req(
    name: str,
    class_name: str,
    count: int = 1,
    *selectors: str,
    mode: str = "ExactCount",
    admin: bool | None = None,
) -> Json:
    exactly: Json = {"deviceClassName": class_name, "allocationMode": mode}
    if count:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin is not None:
        exactly["adminAccess"] = admin
    return {"name": name, "exactly": exactly}


def all_req(name: str, class_name: str, **kw: Any) -> Json:
    return req(name, class_name, 0, mode="All", **kw)


def first(name: str, *subs: Json) -> Json:
    return {"name": name, "firstAvailable": list(subs)}


def sub(name: str, class_name: str, count: int = 1, *selectors: str, mode: str = "") -> Json:
    doc: Json = {"name": name, "deviceClassName": class_name}
    if count:
        doc["count"] = count
    if mode:
        doc["allocationMode"] = mode
    if selectors:
        doc["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return doc


def claim(
    name: str,
    *requests: Json,
    constraints: Sequence[Json] = (),
    config: Sequence[Json] = (),
    namespace: str = NS,
) -> resource_pb2.ResourceClaim:
    c = resource_claim(name, namespace, *requests, constraints=constraints)
    if config:
        json_format.ParseDict({"spec": {"devices": {"config": list(config)}}}, c)
    return c


def match(attribute: str, *requests: str) -> Json:
    return {"matchAttribute": attribute, **({"requests": list(requests)} if requests else {})}


def mem_at_least(q: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0'


def dev(request: str, driver: str, pool: str, name: str, admin: bool = False) -> Json:
    d: Json = {"request": request, "driver": driver, "pool": pool, "device": name}
    if admin:
        d["adminAccess"] = True
    return d


def result(selector: Json | None, *devices: Json, config: Sequence[Json] = ()) -> Json:
    out: Json = {"devices": {"results": list(devices)}}
    if config:
        out["devices"]["config"] = list(config)
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def cfg(source: str, requests: Sequence[str], driver: str, attribute: str) -> Json:
    d: Json = {"source": source, "opaque": opaque(driver, attribute)}
    if requests:
        d["requests"] = list(requests)
    return d


@dataclass
class Case:
    claims: list[resource_pb2.ResourceClaim] = field(default_factory=list)
    classes: list[resource_pb2.DeviceClass] = field(default_factory=list)
    slices: list[resource_pb2.ResourceSlice] = field(default_factory=list)
    node: core_pb2.Node = field(default_factory=lambda: node(NODE1, REGION1))
    allocated: set[DeviceID] = field(default_factory=set)
    admin_namespaces: frozenset[str] = frozenset({NS})
    results: list[Json] | None = None  # success: one AllocationResult dict per claim
    unfit: tuple[str, str] | None = None  # (claim, part of the reason)
    error: str | None = None  # part of the AllocationError message
    # At most this many device placements tried (upstream expectNumAllocateOneInvocations
    # counts its own search, which tries every order; kubera's bound is upstream's).
    max_steps: int | None = None
    # Feature gate overrides (upstream's row `features`), e.g. {DRA_PRIORITIZED_LIST: False}.
    gates: dict[str, bool] = field(default_factory=dict)
    # dracounters: devices with shares in use and what they consume (consumable capacity).
    consumed: dict[DeviceID, dict[str, Decimal]] = field(default_factory=dict)


CA, CB = cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)


def _attrs(**kw: Any) -> Json:
    return kw


ATTRS_1 = _attrs(
    driverVersion={"version": "1.0.0"}, numa=1, stringAttribute="stringAttributeValue"
) | {"boolAttribute": True}


def allocator(case: Case, cache: DeviceCache | None = None) -> Allocator:
    return Allocator(
        case.claims,
        case.allocated,
        {c.metadata.name: c for c in case.classes},
        case.slices,
        admin_namespaces=case.admin_namespaces,
        cache=cache,
        gates=case.gates,
        consumed=case.consumed,
        share_id=lambda: SHARE_ID,
    )


def run(
    case: Case, cache: DeviceCache | None = None
) -> list[resource_pb2.AllocationResult] | Unfit:
    return allocator(case, cache).allocate(case.node)


def check(case: Case) -> None:
    """Run the row and compare: results as JSON dicts, or the Unfit, or the error; and
    the search's work when the row bounds it."""
    alloc = allocator(case)
    if case.error is not None:
        with pytest.raises(AllocationError) as err:
            alloc.allocate(case.node)
        assert case.error in str(err.value)
        return
    got = alloc.allocate(case.node)
    if case.max_steps is not None:
        assert alloc.steps <= case.max_steps
    if case.unfit is not None:
        assert isinstance(got, Unfit), got
        assert got.claim == case.unfit[0]
        assert case.unfit[1] in got.reason, got.reason
        return
    assert not isinstance(got, Unfit), got
    assert [json_format.MessageToDict(r) for r in got] == case.results


# ----------------------------------------------------------------------------- dracore builders


def attr_device(name: str, **attributes: Json) -> Json:
    """A device whose attributes are given in their API shape ({"strings": [...]},
    {"int": 1}, {} for an attribute with no value)."""
    return {"name": name, "attributes": attributes}


# ----------------------------------------------------------------------------- dracounters
# Partitionable devices: upstream's sliceWithCounterSets, counterSet and
# device(...).withDeviceCounterConsumption(...).withNodeSelection(...).

SET1, SET2 = "counter-set-1", "counter-set-2"
SLICE3, SLICE4 = "slice-3", "slice-4"


def counter_slice(
    name: str, where: str | Json, pool: str, driver: str, count: int, **sets: dict[str, str]
) -> resource_pb2.ResourceSlice:
    """A slice with sharedCounters and no devices: counter set name -> counter -> value
    (keywords spell set names with "_" for "-")."""
    s = slc(name, where, pool, driver, count=count)
    shared = [
        {"name": k.replace("_", "-"), "counters": {n: {"value": v} for n, v in c.items()}}
        for k, c in sets.items()
    ]
    json_format.ParseDict({"spec": {"sharedCounters": shared}}, s)
    return s


def pdev(
    name: str,
    consumes: dict[str, dict[str, str]] | None = None,
    *,
    from_counters: bool = False,
    on: str | Json | None = None,
    **attributes: Any,
) -> Json:
    """A device consuming `consumes` (counter set -> counter -> value); `from_counters`:
    its capacity is what it consumes (upstream fromCounters); `on`: per-device node
    selection (a node name, ALL_NODES or a nodeSelector dict)."""
    d = slice_device(name, **attributes)
    if consumes:
        d["consumesCounters"] = [
            {"counterSet": cs, "counters": {n: {"value": v} for n, v in c.items()}}
            for cs, c in consumes.items()
        ]
        if from_counters:
            d["capacity"] = {n: {"value": v} for c in consumes.values() for n, v in c.items()}
    if on == ALL_NODES:
        d["allNodes"] = True
    elif isinstance(on, dict):
        d["nodeSelector"] = on
    elif on is not None:
        d["nodeName"] = on
    return d


# Consumable capacity: upstream's withAllowMultipleAllocations,
# withCapacityRequestPolicyRange / ValidValues, withCapacityRequest and withConsumedCapacity.

#: upstream fixedShareID: every share's ID in the rows.
SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
CAP0, CAP1 = "capacity-0", "capacity-1"
REQ3 = "req-3"


def shared(d: Json) -> Json:
    """The device allows multiple allocations."""
    return {**d, "allowMultipleAllocations": True}


def caps(d: Json, **values: str | Json) -> Json:
    """Set capacities (keywords spell "capacity-0" as capacity_0): a value, or a dict
    with "value" and "requestPolicy"."""
    out = dict(d.get("capacity", {}))
    for k, v in values.items():
        out[k.replace("_", "-")] = v if isinstance(v, dict) else {"value": v}
    return {**d, "capacity": out}


def ranged(value: str) -> Json:
    """upstream withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4."""
    return {
        "value": value,
        "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
    }


def valued(value: str, default: str, *more: str) -> Json:
    """upstream withCapacityRequestPolicyValidValues: validValues = [default, *more]."""
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *more]}}


def asking(request: Json, q: str, name: str = CAP0) -> Json:
    """A request (or subrequest) asking for `q` of capacity `name`."""
    out = dict(request)
    target = out if "exactly" not in out else dict(out["exactly"])
    target["capacity"] = {"requests": {name: q}}
    if "exactly" in out:
        out["exactly"] = target
    return out


def multi_class(name: str, driver: str, multi: bool) -> resource_pb2.DeviceClass:
    """upstream classWithAllowMultipleAllocations."""
    return device_class(
        name,
        f'device.driver == "{driver}" && device.allowMultipleAllocations == {str(multi).lower()}',
    )


def share(request: str, driver: str, pool: str, name: str, **consumed: str) -> Json:
    """A result for a share of a device (keywords: consumed capacity, "_" for "-")."""
    d = dev(request, driver, pool, name)
    d["shareID"] = SHARE_ID
    if consumed:
        d["consumedCapacity"] = {k.replace("_", "-"): v for k, v in consumed.items()}
    return d


# ----------------------------------------------------------------------------- drabinding
# Binding conditions (upstream withBindingConditions / withBindsToNode and
# deviceRequestAllocationResultWithBindingConditions).


def bound_device(
    name: str,
    conditions: Sequence[str] = (),
    failures: Sequence[str] = (),
    *,
    binds_to_node: bool | None = None,
    **attributes: Any,
) -> Json:
    d = slice_device(name, **attributes)
    if conditions:
        d["bindingConditions"] = list(conditions)
    if failures:
        d["bindingFailureConditions"] = list(failures)
    if binds_to_node is not None:
        d["bindsToNode"] = binds_to_node
    return d


def bound_dev(
    request: str,
    driver: str,
    pool: str,
    name: str,
    conditions: Sequence[str] = (),
    failures: Sequence[str] = (),
) -> Json:
    d = dev(request, driver, pool, name)
    if conditions:
        d["bindingConditions"] = list(conditions)
    if failures:
        d["bindingFailureConditions"] = list(failures)
    return d


# Partitionable devices: upstream's device(..., fromCounters, nil).withDeviceCounterConsumption
# and withBindingConditions.

PREP, FAIL = ["IsPrepare"], ["BindingFailed"]


def mem(q: str, cs: str = SET1) -> dict[str, dict[str, str]]:
    return {cs: {"memory": q}}


def gpu(name: str, q: str, cs: str = SET1, **kw: Any) -> Json:
    """A partition consuming `q` of memory from `cs`, with that as its capacity."""
    return pdev(name, mem(q, cs), from_counters=True, **kw)


def conds(d: Json, conditions: list[str], failures: list[str]) -> Json:
    """The device with binding conditions (upstream withBindingConditions)."""
    return {**d, "bindingConditions": conditions, "bindingFailureConditions": failures}
