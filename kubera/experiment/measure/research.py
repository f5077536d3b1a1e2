"""Research measures of a run's end state, with no I/O: fragmentation (capacity stranded by
the pods still waiting), free devices no waiting pod can use, and the queue-drain time.
docs/experiments.md#research-measures gives the definitions and their reference.

The inputs are plain records the collector builds from the cluster's objects as the run
ends (collect.py `cluster_state` → `state_records`): each node's free amounts, each pending
pod's requests (and, with DRA, which free devices its claims could take). "Fits" is
NodeResourcesFit's arithmetic alone: every amount the pod requests (and one pod slot) at
most what the node has free; taints, affinity, ports and volumes are not weighed, so the
measures are lower bounds of what the scheduler strands.

Definitions, for a resource r, nodes N, pending pods P, free_n(r) = allocatable − requested
(of the pods bound to n, never below 0):

- stranded(r)  = Σ_{n ∈ N, no p ∈ P fits n} free_n(r)             (0 when P is empty)
- expected(r)  = Σ_n free_n(r) · |{p ∈ P: p does not fit n}| / |P|   (Weng et al.'s
  fragmentation of n against the workload P, each pending pod one draw; 0 when P is empty)
- unusable(d)  for a device resource d (an extended resource such as nvidia.com/gpu):
  Σ_{n: no p ∈ P with p(d) > 0 fits n} free_n(d); for DRA, the free devices (in a
  ResourceSlice, in no claim's allocation) no pending pod's unallocated claim could take on
  a node it fits; each with its share of the free amount.
- queue drain  = the last bind − the last pod's creation, when every pod created is bound
  or deleted at the end; None (not drained) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The resources every node and pod carry, in the units reported (cores, bytes, count).
BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


@dataclass(frozen=True)
class NodeFree:
    """A node's free amounts by resource (allocatable − requested, ≥ 0)."""

    name: str
    free: Mapping[str, float]


@dataclass(frozen=True)
class FreeDevice:
    """One DRA device no claim holds: its driver, pool, name and the node it is on (None:
    a slice for all nodes or a node selector, reachable from any node)."""

    driver: str
    pool: str
    name: str
    node: str | None


@dataclass(frozen=True)
class PendingPod:
    """A pod still waiting: its requests (every resource with an amount > 0, pods
    included) and, with DRA, whether it could take a given free device."""

    requests: Mapping[str, float]
    takes_device: Callable[[FreeDevice], bool] | None = field(default=None, compare=False)


def is_device_resource(name: str) -> bool:
    """An extended resource (a domain-qualified name outside kubernetes.io, such as
    nvidia.com/gpu): counted as devices."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def fits(requests: Mapping[str, float], free: Mapping[str, float]) -> bool:
    """NodeResourcesFit's arithmetic: every requested amount (> 0) at most what is free."""
    return all(v <= free.get(r, 0.0) for r, v in requests.items() if v > 0)


def shapes(pending: Sequence[PendingPod]) -> list[tuple[PendingPod, int]]:
    """The pending pods grouped by shape (the same requests and the same device check, as
    endstate.py shares one check among pods whose claims ask alike), with their counts:
    the measures weigh a shape once per node, not once per pod."""
    groups: dict[Any, list[Any]] = {}
    for p in pending:
        key = (tuple(sorted(p.requests.items())), id(p.takes_device))
        group = groups.get(key)
        if group is None:
            groups[key] = [p, 1]
        else:
            group[1] += 1
    return [(p, n) for p, n in groups.values()]


def _share(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole > 0 else 0.0


def fragmentation(
    nodes: Sequence[NodeFree], pending: Sequence[PendingPod]
) -> dict[str, dict[str, float]]:
    """Per resource: ``free`` (Σ free), ``stranded`` and ``expected`` (module docstring) and
    their shares of ``free``. Resources: the base ones and every one a node has free."""
    names = list(BASE_RESOURCES) + sorted(
        {r for n in nodes for r in n.free if r not in BASE_RESOURCES}
    )
    out: dict[str, dict[str, float]] = {}
    kinds = shapes(pending)
    misfits = [sum(k for p, k in kinds if not fits(p.requests, n.free)) for n in nodes]
    for r in names:
        free = stranded = expected = 0.0
        for n, missed in zip(nodes, misfits, strict=True):
            amount = n.free.get(r, 0.0)
            free += amount
            if pending:
                if missed == len(pending):
                    stranded += amount
                expected += amount * missed / len(pending)
        out[r] = {
            "free": round(free, 6),
            "stranded": round(stranded, 6),
            "strandedShare": _share(stranded, free),
            "expected": round(expected, 6),
            "expectedShare": _share(expected, free),
        }
    return out


def unusable_devices(
    nodes: Sequence[NodeFree], pending: Sequence[PendingPod]
) -> dict[str, dict[str, float]]:
    """Per device resource a node has free: ``free``, ``unusable`` (no pending pod that
    asks for it fits the node) and ``unusableShare``."""
    names = sorted({r for n in nodes for r, v in n.free.items() if v > 0 and is_device_resource(r)})
    out: dict[str, dict[str, float]] = {}
    for r in names:
        wanting = [p for p, _ in shapes(pending) if p.requests.get(r, 0.0) > 0]
        free = unusable = 0.0
        for n in nodes:
            amount = n.free.get(r, 0.0)
            free += amount
            if not any(fits(p.requests, n.free) for p in wanting):
                unusable += amount
        out[r] = {
            "free": round(free, 6),
            "unusable": round(unusable, 6),
            "unusableShare": _share(unusable, free),
        }
    return out


def unusable_dra_devices(
    devices: Sequence[FreeDevice], nodes: Sequence[NodeFree], pending: Sequence[PendingPod]
) -> dict[str, dict[str, float]]:
    """Per driver: ``free`` DRA devices, ``unusable`` (no pending pod fits a node the device
    reaches and could take it with an unallocated claim) and ``unusableShare``."""
    claimants = [p for p, _ in shapes(pending) if p.takes_device is not None]
    fitting: dict[str, list[PendingPod]] = {
        n.name: [p for p in claimants if fits(p.requests, n.free)] for n in nodes
    }
    placeable = {id(p) for fit in fitting.values() for p in fit}
    anywhere = [p for p in claimants if id(p) in placeable]
    counts: dict[str, list[int]] = {}
    for d in devices:
        candidates = fitting.get(d.node, []) if d.node is not None else anywhere
        usable = any(p.takes_device is not None and p.takes_device(d) for p in candidates)
        c = counts.setdefault(d.driver, [0, 0])
        c[0] += 1
        c[1] += 0 if usable else 1
    return {
        driver: {"free": float(f), "unusable": float(u), "unusableShare": _share(u, f)}
        for driver, (f, u) in sorted(counts.items())
    }


def queue_drain(created: Iterable[float], bound: Iterable[float], pending: int) -> float | None:
    """Seconds from the last pod created to the last bind, or None when pods were still
    pending at the end (the queue never drained) or nothing was created."""
    last_created = max(created, default=None)
    if last_created is None or pending > 0:
        return None
    last_bound = max(bound, default=last_created)
    return round(max(0.0, last_bound - last_created), 6)


def measures(
    nodes: Sequence[NodeFree],
    pending: Sequence[PendingPod],
    devices: Sequence[FreeDevice] = (),
    *,
    drain: float | None = None,
) -> dict[str, Any]:
    """What results.json's ``research`` holds (the module docstring defines each)."""
    out: dict[str, Any] = {
        "nodes": len(nodes),
        "pendingPods": len(pending),
        "fragmentation": fragmentation(nodes, pending),
        "unusableDevices": unusable_devices(nodes, pending),
        "queueDrainSeconds": drain,
    }
    if devices:
        out["unusableDRADevices"] = unusable_dra_devices(devices, nodes, pending)
    return out
