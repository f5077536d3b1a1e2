"""The cluster as a run ends, as research.py's plain records: each node's free amounts, the
pods still pending and what they ask, the DRA devices no claim holds and which of them a
pending pod's claims could take.

`read` lists the objects once through the apiserver (the collector calls it as the run
ends, before the cluster goes down); `records` turns them into the records with no I/O, so
the unit tests feed it objects made by hand.

A pod is pending when it is bound to no node, not terminal (Succeeded/Failed), not being
deleted and not gated (a gated pod waits for its gates, not for room). A node's requested
amounts are those of its bound, non-terminal pods (services/api/helpers/resources.py's
pod_requests, as the scheduler counts them); cpu is in cores, the rest in their units.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubera.experiment.measure.research import FreeDevice, NodeFree, PendingPod
from services.api.dra.cel import compile_selector
from services.api.helpers.resources import CPU, PODS, Resource, pod_requests
from services.api.machinery.kinds import BY_KIND

TERMINAL = ("Succeeded", "Failed")
#: What `read` lists: Node and Pod always; the DRA kinds when the cluster serves them.
KINDS = ("Node", "Pod", "ResourceSlice", "ResourceClaim", "DeviceClass")


@dataclass
class EndState:
    """The objects listed as the run ended, by kind (empty lists for a kind not listed)."""

    objects: dict[str, list[Any]] = field(default_factory=dict)

    def of(self, kind: str) -> list[Any]:
        return self.objects.get(kind, [])


async def read(client: Any, timeout: float = 30.0) -> EndState:
    """List every kind of KINDS (a kind that fails to list is left empty)."""
    state = EndState()
    for kind in KINDS:
        with contextlib.suppress(Exception):
            items, _ = await asyncio.wait_for(client.list(BY_KIND[kind]), timeout)
            state.objects[kind] = list(items)
    return state


def _amounts(r: Resource) -> dict[str, float]:
    out = {
        CPU: r.milli_cpu / 1000,
        "memory": float(r.memory),
        "ephemeral-storage": float(r.ephemeral_storage),
        PODS: float(r.allowed_pod_number),
    }
    out.update({k: float(v) for k, v in r.scalar.items()})
    return out


def is_pending(pod: Any) -> bool:
    return (
        not pod.spec.node_name
        and pod.status.phase not in TERMINAL
        and not pod.metadata.deletion_timestamp
        and not pod.spec.scheduling_gates
    )


def node_records(nodes: Sequence[Any], pods: Sequence[Any]) -> list[NodeFree]:
    used: dict[str, Resource] = {}
    for p in pods:
        if p.spec.node_name and p.status.phase not in TERMINAL:
            r = used.setdefault(p.spec.node_name, Resource())
            r.add(pod_requests(p))
            r.allowed_pod_number += 1
    out = []
    for n in nodes:
        free = _amounts(Resource.from_list(n.status.allocatable))
        for k, v in _amounts(used.get(n.metadata.name, Resource())).items():
            free[k] = max(0.0, free.get(k, 0.0) - v)
        out.append(NodeFree(n.metadata.name, free))
    return out


def _allocated(claims: Sequence[Any]) -> set[tuple[str, str, str]]:
    return {
        (r.driver, r.pool, r.device) for c in claims for r in c.status.allocation.devices.results
    }


def free_devices(slices: Sequence[Any], claims: Sequence[Any]) -> list[FreeDevice]:
    """Every device of every ResourceSlice that no claim's allocation names."""
    taken = _allocated(claims)
    out = []
    for s in slices:
        spec = s.spec
        node = spec.node_name if spec.HasField("node_name") and spec.node_name else None
        for d in spec.devices:
            if (spec.driver, spec.pool.name, d.name) not in taken:
                out.append(FreeDevice(spec.driver, spec.pool.name, d.name, node))
    return out


def _claim_names(pod: Any) -> list[str]:
    generated = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    names = []
    for rc in pod.spec.resource_claims:
        name = rc.resource_claim_name if rc.HasField("resource_claim_name") else ""
        name = name or generated.get(rc.name, "")
        if name:
            names.append(name)
    return names


class _DeviceMatcher:
    """Whether a device could serve a request: its class's selectors and its own all hold
    (CEL, as the allocator evaluates them; an expression that fails counts as no)."""

    def __init__(self, classes: Sequence[Any], slices: Sequence[Any]) -> None:
        self.classes = {c.metadata.name: c for c in classes}
        self.devices = {
            (s.spec.driver, s.spec.pool.name, d.name): d for s in slices for d in s.spec.devices
        }

    def _holds(self, selectors: Sequence[Any], dev: FreeDevice) -> bool:
        device = self.devices.get((dev.driver, dev.pool, dev.name))
        if device is None:
            return False
        for sel in selectors:
            try:
                if not compile_selector(sel.cel.expression).matches(dev.driver, device):
                    return False
            except Exception:  # noqa: BLE001 - a broken selector matches nothing
                return False
        return True

    def request(self, class_name: str, selectors: Sequence[Any], dev: FreeDevice) -> bool:
        cls = self.classes.get(class_name)
        if cls is None:
            return False
        return self._holds(cls.spec.selectors, dev) and self._holds(selectors, dev)

    def claim(self, claim: Any, dev: FreeDevice) -> bool:
        for req in claim.spec.devices.requests:
            if req.exactly.device_class_name and self.request(
                req.exactly.device_class_name, req.exactly.selectors, dev
            ):
                return True
            if any(
                self.request(s.device_class_name, s.selectors, dev) for s in req.first_available
            ):
                return True
        return False


def pending_records(
    pods: Sequence[Any], claims: Sequence[Any], matcher: _DeviceMatcher | None
) -> list[PendingPod]:
    by_key: Mapping[str, Any] = {f"{c.metadata.namespace}/{c.metadata.name}": c for c in claims}
    #: One device check per set of claims that ask alike (pods from one template share it,
    #: so research.py weighs them as one shape).
    takers: dict[tuple[bytes, ...], Callable[[FreeDevice], bool]] = {}
    out = []
    for p in pods:
        if not is_pending(p):
            continue
        requests = {k: v for k, v in _amounts(pod_requests(p)).items() if v > 0}
        requests[PODS] = 1.0
        waiting = [
            c
            for name in _claim_names(p)
            if (c := by_key.get(f"{p.metadata.namespace}/{name}")) is not None
            and not c.status.HasField("allocation")
        ]
        takes = None
        if waiting and matcher is not None:
            spec = tuple(sorted(c.spec.SerializeToString(deterministic=True) for c in waiting))
            takes = takers.setdefault(spec, _taker(matcher, waiting))
        out.append(PendingPod(requests, takes))
    return out


def _taker(matcher: _DeviceMatcher, claims: list[Any]) -> Callable[[FreeDevice], bool]:
    """Whether one of a pending pod's unallocated `claims` could take a device."""
    return lambda dev: any(matcher.claim(c, dev) for c in claims)


def records(state: EndState) -> tuple[list[NodeFree], list[PendingPod], list[FreeDevice]]:
    """research.py's inputs from the listed objects."""
    pods, claims, slices = state.of("Pod"), state.of("ResourceClaim"), state.of("ResourceSlice")
    matcher = _DeviceMatcher(state.of("DeviceClass"), slices) if slices else None
    return (
        node_records(state.of("Node"), pods),
        pending_records(pods, claims, matcher),
        free_devices(slices, claims),
    )
