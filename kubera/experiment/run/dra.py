"""What scheduler_perf's DRA ops do, without I/O: the slices a test driver publishes and the
pre-allocation of claims (upstream test/integration/scheduler_perf/dra.go).

`createResourceDriver` stands in for a DRA driver: for every node whose name matches a glob it
publishes one ResourceSlice (`resource_slice_doc`: the node's own pool, `capacity` devices
`instance-<i>` with the attributes upstream's test driver gives). `allocResourceClaims` fills the
cluster before the measurement: each unallocated claim, one at a time, is allocated by the
structured allocator on the first node of a shuffled list where it fits, and written at once,
so the next claim sees its devices taken (`allocate_claims`). opexec.py lists and writes; the
unit tests drive these with recorded objects and a fake allocator.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.allocator import Allocator, DeviceID, FailedOnNode, Unfit

#: The device attributes and capacity of upstream's test driver (dra.go resourceSlice).
DEVICE_MODEL = "A100"
DEVICE_FAMILY = "GPU"
DEVICE_DRIVER_VERSION = "1.2.3"
DEVICE_NUMA_ATTRIBUTE = "dra.example.com/numa"
DEVICE_MEMORY = "1Gi"


def matching_nodes(pattern: str, names: Iterable[str]) -> list[str]:
    """The node names `pattern` matches (shell glob, case-sensitive as Go's filepath.Match),
    sorted."""
    return sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))


def resource_slice_doc(driver: str, node: str, capacity: int) -> dict[str, Any]:
    """The slice the test driver publishes for `node`: named after the node, the node's own
    pool (generation 1, one slice), `capacity` devices `instance-0` … with attributes model,
    family, driverVersion and a per-device numa index, and 1Gi of memory each."""
    devices = [
        {
            "name": f"instance-{i}",
            "attributes": {
                "model": {"string": DEVICE_MODEL},
                "family": {"string": DEVICE_FAMILY},
                "driverVersion": {"version": DEVICE_DRIVER_VERSION},
                DEVICE_NUMA_ATTRIBUTE: {"int": i},
            },
            "capacity": {"memory": {"value": DEVICE_MEMORY}},
        }
        for i in range(capacity)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def slices_by_node(
    slices: Sequence[resource_pb2.ResourceSlice],
) -> Callable[[str], list[resource_pb2.ResourceSlice]]:
    """node name → the slices that may reach it: its own (spec.nodeName) and every slice not
    bound to one node (nodeSelector, allNodes), which the allocator then checks."""
    local: dict[str, list[resource_pb2.ResourceSlice]] = {}
    shared: list[resource_pb2.ResourceSlice] = []
    for s in slices:
        if s.spec.HasField("node_name") and s.spec.node_name:
            local.setdefault(s.spec.node_name, []).append(s)
        else:
            shared.append(s)
    return lambda node: local.get(node, []) + shared


class AllocatorFactory(Protocol):
    def __call__(
        self,
        claims: Sequence[resource_pb2.ResourceClaim],
        allocated: set[DeviceID],
        classes: Mapping[str, resource_pb2.DeviceClass],
        slices: Sequence[resource_pb2.ResourceSlice],
        admin_namespaces: frozenset[str],
    ) -> Any: ...


class AllocationFailed(Exception):
    """A claim fits on no node; the message names it and how many claims came before."""


def allocated_devices(claims: Iterable[resource_pb2.ResourceClaim]) -> set[DeviceID]:
    """The devices the allocated claims among `claims` hold (admin-access results excluded:
    they do not take a device)."""
    out: set[DeviceID] = set()
    for c in claims:
        if not c.status.HasField("allocation"):
            continue
        for r in c.status.allocation.devices.results:
            if not r.admin_access:
                out.add(DeviceID(r.driver, r.pool, r.device))
    return out


async def allocate_claims(
    claims: Sequence[resource_pb2.ResourceClaim],
    *,
    every_claim: Sequence[resource_pb2.ResourceClaim],
    nodes: Sequence[core_pb2.Node],
    classes: Mapping[str, resource_pb2.DeviceClass],
    slices: Sequence[resource_pb2.ResourceSlice],
    write: Callable[[resource_pb2.ResourceClaim], Awaitable[resource_pb2.ResourceClaim]],
    admin_namespaces: frozenset[str] = frozenset(),
    rng: random.Random | None = None,
    allocator: AllocatorFactory | None = None,
) -> int:
    """Allocate each unallocated claim of `claims` in turn on a random node where it fits
    and `write` it (its status.allocation set); returns how many were allocated.

    Devices in use start as those of every allocated claim of the cluster (`every_claim`)
    and grow with each allocation made here, so no device is given twice. The node order is
    shuffled per claim (seeded `rng`: a run is reproducible). `allocator` makes the allocator
    (default: the structured one, services.api.dra.allocator). Raises AllocationFailed when a
    claim fits nowhere, and the allocator's AllocationError as is (but FailedOnNode, which
    only rules the node out)."""
    rng = rng or random.Random(0)
    make = allocator or Allocator
    in_use = allocated_devices(every_claim)
    order = list(nodes)
    reaching = slices_by_node(slices)
    done = 0
    for i, claim in enumerate(claims):
        if claim.status.HasField("allocation"):
            continue
        rng.shuffle(order)
        for node in order:
            # Only the slices that may reach the node: the allocator is made per node, and
            # making one over every slice of a 500-node cluster costs ~30 ms a claim.
            near = reaching(node.metadata.name)
            try:
                result = make([claim], in_use, classes, near, admin_namespaces).allocate(node)
            except FailedOnNode:
                continue  # this node only (invalid pools), as the scheduler takes it
            if isinstance(result, Unfit):
                continue
            updated = resource_pb2.ResourceClaim()
            updated.CopyFrom(claim)
            updated.status.allocation.CopyFrom(result[0])
            await write(updated)
            in_use |= allocated_devices([updated])
            done += 1
            break
        else:
            m = claim.metadata
            raise AllocationFailed(
                f"claim {m.namespace}/{m.name} ({i + 1} of {len(claims)}) fits on none of "
                f"{len(order)} nodes"
            )
    return done


__all__ = [
    "AllocationFailed",
    "allocate_claims",
    "allocated_devices",
    "matching_nodes",
    "slices_by_node",
    "resource_slice_doc",
]
