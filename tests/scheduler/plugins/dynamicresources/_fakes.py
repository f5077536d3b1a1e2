"""In-memory stand-ins for the DynamicResources plugin's unit tests: an Allocator that hands
out a node's free devices in slice order (the real one, with CEL and constraints, is tested
in tests/api/dra), and a claims API with resourceVersion checks like the apiserver's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.allocator import AllocationError, DeviceID, Unfit
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.meta import object_key

#: A class whose selectors contain this fails at "runtime", as a broken CEL expression does.
BROKEN = "broken"


@dataclass
class FakeAllocator:
    """Allocator's interface: each request takes `count` (default 1) free devices of the
    slices published for the node, in order; a claim that cannot be served is Unfit."""

    claims: Sequence[resource_pb2.ResourceClaim]
    allocated: frozenset[DeviceID] | set[DeviceID]
    classes: Mapping[str, resource_pb2.DeviceClass]
    slices: Sequence[resource_pb2.ResourceSlice]
    admin_namespaces: frozenset[str] = frozenset()
    cache: Any = None
    consumed: Any = None
    gates: Any = None
    calls: list[str] = field(default_factory=list)

    def allocate(self, node: core_pb2.Node) -> list[resource_pb2.AllocationResult] | Unfit:
        name = node.metadata.name
        self.calls.append(name)
        taken = set(self.allocated)
        devices = [
            DeviceID(s.spec.driver, s.spec.pool.name, d.name)
            for s in self.slices
            if s.spec.node_name == name
            for d in s.spec.devices
        ]
        out = []
        for claim in self.claims:
            result = resource_pb2.AllocationResult()
            for req in claim.spec.devices.requests:
                cls = self.classes[req.exactly.device_class_name]
                if any(BROKEN in sel.cel.expression for sel in cls.spec.selectors):
                    raise AllocationError(
                        f"claim {object_key(claim)}, request {req.name}: selector failed"
                    )
                for _ in range(req.exactly.count or 1):
                    free = next((d for d in devices if d not in taken), None)
                    if free is None:
                        return Unfit(
                            object_key(claim),
                            f'resourceclaim "{object_key(claim)}": request {req.name}: '
                            f"no free device on node {name}",
                        )
                    taken.add(free)
                    result.devices.results.add(
                        request=req.name, driver=free.driver, pool=free.pool, device=free.device
                    )
            term = result.node_selector.node_selector_terms.add()
            term.match_fields.add(key="metadata.name", operator="In", values=[name])
            out.append(result)
        return out


class FakeClaimsAPI:
    """The client calls the plugin makes on claims: get, update, update_status, each
    resourceVersion-checked; `store` is also the informer's store unless `informer_lags`."""

    def __init__(self, claims: Sequence[resource_pb2.ResourceClaim]) -> None:
        self.objects: dict[str, resource_pb2.ResourceClaim] = {}
        self.rv = 100
        for c in claims:
            self._put(c)
        self.store: dict[str, resource_pb2.ResourceClaim] = dict(self.objects)
        self.informer_lags = False
        #: Conflicts to answer before the next update_status succeeds.
        self.conflicts = 0
        self.calls: list[str] = []
        self.created = 0
        self.fail_create: Exception | None = None
        self.fail_patch: Exception | None = None
        #: (pod key, merge patch, status subresource) of each pod patch
        self.patches: list[tuple[str, Any, bool]] = []

    def _put(self, claim: resource_pb2.ResourceClaim) -> resource_pb2.ResourceClaim:
        c = resource_pb2.ResourceClaim()
        c.CopyFrom(claim)
        self.rv += 1
        c.metadata.resource_version = str(self.rv)
        self.objects[object_key(c)] = c
        return c

    def _write(self, obj: Any, verb: str) -> resource_pb2.ResourceClaim:
        self.calls.append(f"{verb} {object_key(obj)}")
        cur = self.objects.get(object_key(obj))
        if cur is None:
            raise NotFoundError(f"{object_key(obj)} not found")
        if verb == "update_status" and self.conflicts:
            self.conflicts -= 1
            self.touch(object_key(obj))
            raise ConflictError("the object has been modified")
        if obj.metadata.resource_version != cur.metadata.resource_version:
            raise ConflictError("the object has been modified")
        new = resource_pb2.ResourceClaim()
        new.CopyFrom(cur)
        if verb == "update":
            new.metadata.CopyFrom(obj.metadata)
            new.spec.CopyFrom(obj.spec)
        else:
            new.status.CopyFrom(obj.status)
        out = self._put(new)
        if not self.informer_lags:
            self.store[object_key(out)] = out
        reply = resource_pb2.ResourceClaim()
        reply.CopyFrom(out)
        return reply

    def touch(self, key: str) -> None:
        """Someone else changed the claim (a label): its resourceVersion moves on."""
        cur = self.objects[key]
        cur.metadata.labels["touched"] = "yes"
        self.store[key] = self._put(cur)

    async def get(self, kind: Any, name: str, namespace: str = "") -> Any:
        self.calls.append(f"get {namespace}/{name}")
        c = self.objects.get(f"{namespace}/{name}")
        if c is None:
            raise NotFoundError(f"{namespace}/{name} not found")
        out = resource_pb2.ResourceClaim()
        out.CopyFrom(c)
        return out

    async def update(self, obj: Any) -> Any:
        return self._write(obj, "update")

    async def update_status(self, obj: Any) -> Any:
        return self._write(obj, "update_status")

    # The calls PreBind, PostFilter and Unreserve make for an extended resource claim.

    async def create(self, obj: Any) -> Any:
        if self.fail_create is not None:
            raise self.fail_create
        c = resource_pb2.ResourceClaim()
        c.CopyFrom(obj)
        self.created += 1
        if not c.metadata.name:
            c.metadata.name = f"{c.metadata.generate_name}{self.created:05d}"
        c.metadata.uid = f"uid-{c.metadata.name}"
        self.calls.append(f"create {object_key(c)}")
        out = self._put(c)
        if not self.informer_lags:
            self.store[object_key(out)] = out
        reply = resource_pb2.ResourceClaim()
        reply.CopyFrom(out)
        return reply

    async def delete(self, kind: Any, name: str, namespace: str = "", **_: Any) -> None:
        self.calls.append(f"delete {namespace}/{name}")
        if self.objects.pop(f"{namespace}/{name}", None) is None:
            raise NotFoundError(f"{namespace}/{name} not found")
        self.store.pop(f"{namespace}/{name}", None)

    async def patch(
        self, kind: Any, name: str, merge_patch: str, *, namespace: str = "", status: bool = False
    ) -> Any:
        self.calls.append(f"patch {namespace}/{name}")
        if self.fail_patch is not None:
            raise self.fail_patch
        self.patches.append((f"{namespace}/{name}", json.loads(merge_patch), status))


class FakeSnapshot:
    def __init__(self, ns_labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._ns = ns_labels or {}

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._ns.get(namespace)


class FakeHandle:
    def __init__(
        self, ns_labels: Mapping[str, Mapping[str, str]] | None = None, clock: Any = None
    ) -> None:
        self._snapshot = FakeSnapshot(ns_labels)
        #: None: the plugin takes the real clock.
        self.clock = clock

    def snapshot(self) -> FakeSnapshot:
        return self._snapshot
