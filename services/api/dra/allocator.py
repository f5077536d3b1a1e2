"""Structured allocation: which of a node's devices satisfy a pod's claims (upstream
k8s.io/dynamic-resource-allocation/structured, allocator.go).

SKELETON (issue 16): the interface below is fixed; the helper that owns this module
implements it and ports upstream's allocator_test.go table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2, resource_pb2


@dataclass(frozen=True, order=True)
class DeviceID:
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Unfit:
    """Why the claims cannot be allocated on a node; `claim` is "namespace/name" and
    `reason` names it (for Filter's status and `kubera explain`)."""

    claim: str
    reason: str


class AllocationError(Exception):
    """Not a fit problem but a broken input (a class that does not exist, a selector that
    fails at runtime): the pod is unschedulable until something changes. Message names
    the claim and request."""


@dataclass
class Allocator:
    """Allocates `claims` (not yet allocated) together on one node at a time.

    `allocated`: devices in use (by allocated claims and in-flight allocations) that
    cannot be given again (admin-access requests ignore this). `classes` by name;
    `slices`: every ResourceSlice in the cluster (the allocator picks those reaching the
    node, the newest generation of each pool). `admin_namespaces`: namespaces labelled
    resource.kubernetes.io/admin-access=true.
    """

    claims: Sequence[resource_pb2.ResourceClaim]
    allocated: frozenset[DeviceID] | set[DeviceID]
    classes: Mapping[str, resource_pb2.DeviceClass]
    slices: Sequence[resource_pb2.ResourceSlice]
    admin_namespaces: frozenset[str] = frozenset()

    def allocate(self, node: core_pb2.Node) -> list[resource_pb2.AllocationResult] | Unfit:
        """One AllocationResult per claim, in order (nodeSelector set to the node for
        node-local devices), or why not. Raises AllocationError."""
        raise NotImplementedError
