"""The DRA devices of a pool's hollow nodes, published as ResourceSlices (what a kubelet
plugin of each DRA driver publishes upstream, through the kubelet's ResourceSlice
controller).

Each node of a kind with `devices` gets one ResourceSlice per driver (template.py's
DeviceSet): name `<node>-<driver, dots as dashes>`, spec.nodeName the node, one pool per
node (pool name = node name, generation 1, resourceSliceCount 1), devices
`<namePrefix>-<i>` with the set's attributes plus the int attribute `index` = i, and the
set's taints (the apiserver stamps their timeAdded). A set
with sharedCounters (partitionable devices) publishes its counter sets in a second slice
of the pool, `<node>-<driver>-counters` (resourceSliceCount 2), and its devices and
their partitions consume them; a set with allowMultipleAllocations marks its devices so.

Publishing is batched as node registration is (BatchCreate, 500 a call; a slice that
exists, ours from before a restart, is written over). While the pool runs, an informer on
ResourceSlice (only when the pool has devices at all; it keeps only this pool's slices)
re-creates a slice someone deleted, as the upstream slice controller does. Like the Node
objects, the slices stay when the pool stops: a pool that comes back takes them over.

A device set with binding conditions (template.py's Binding) publishes bindsToNode,
bindingConditions and bindingFailureConditions on its devices, and its node side
(`BindingDriver`, what a driver's controller does upstream: attach, prepare...) answers
each allocation of one of them: `preparationDelay` (simulated) after the pool sees the
claim allocated, it writes the device's entry in the claim's status.devices with every
binding condition True, or, drawn with `preparationFailureRate`, the first failure
condition True (reason PreparationFailed). The scheduler's PreBind waits for exactly that
(services/scheduler/plugins/dynamicresources/binding.py). A device already reported (a
condition of either list True) is not reported again; an allocation gone or changed
before the delay ends is left alone.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import resource_pb2
from services.api.dra.bindingconditions import TRUE, device_status, set_condition
from services.api.machinery import codec
from services.api.machinery.errors import AlreadyExistsError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, object_meta
from services.client import Client, Handlers, Informer
from services.clock import Clock, rfc3339
from services.kubelet.template import INDEX_ATTRIBUTE, Binding, DeviceSet, NodePlan

log = logging.getLogger(__name__)

SLICES = BY_KIND["ResourceSlice"]

#: Seconds before a failed re-creation is tried again.
_RETRY = 1.0


async def create_or_update(client: Client, objs: Sequence[Message], max_batch: int) -> None:
    """Create `objs` in batches; those that exist are written over (what a node publishes
    about itself: its slices, its CSINode)."""
    for start in range(0, len(objs), max_batch):
        chunk = objs[start : start + max_batch]
        results = await client.batch_create(chunk)
        existing = []
        for obj, r in zip(chunk, results, strict=True):
            if isinstance(r.error, AlreadyExistsError):
                existing.append(obj)
            elif r.error is not None:
                raise r.error
        for r in await client.batch_update(existing):
            if r.error is not None:
                raise r.error


def slice_name(node: str, driver: str) -> str:
    """The name of a node's slice of `driver`: unique, since a node has one slice per driver."""
    return f"{node}-{driver.replace('.', '-')}"


def _consumes(counter_set: str, counters: dict[str, str]) -> list[dict[str, Any]]:
    return [{"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}]


def _devices(devices: DeviceSet) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    binding = devices.binding
    for i, name in enumerate(devices.device_names()):
        attributes: dict[str, Any] = {**devices.attributes, INDEX_ATTRIBUTE: {"int": i}}
        item: dict[str, Any] = {
            "name": name,
            "attributes": attributes,
            "capacity": {k: {"value": v} for k, v in devices.capacity.items()},
        }
        if devices.taints:
            item["taints"] = [dict(t) for t in devices.taints]
        if devices.allow_multiple_allocations:
            item["allowMultipleAllocations"] = True
        if binding is not None:
            if binding.binds_to_node is not None:
                item["bindsToNode"] = binding.binds_to_node
            if binding.conditions:
                item["bindingConditions"] = list(binding.conditions)
                item["bindingFailureConditions"] = list(binding.failure_conditions)
        items.append(item)
        if not devices.shared_counters:
            continue
        # The whole device takes its counter set whole; each partition a part of it.
        item["consumesCounters"] = _consumes(name, devices.shared_counters)
        for part in devices.partitions:
            for j in range(part.count):
                items.append(
                    {
                        "name": f"{name}-{part.name}-{j}",
                        "attributes": {**attributes, **part.attributes},
                        "capacity": {k: {"value": v} for k, v in part.consumes.items()},
                        "consumesCounters": _consumes(name, part.consumes),
                        **(
                            {"allowMultipleAllocations": True}
                            if devices.allow_multiple_allocations
                            else {}
                        ),
                    }
                )
    return items


def slice_objects(node: str, devices: DeviceSet) -> list[resource_pb2.ResourceSlice]:
    """The ResourceSlices that publish `devices` on `node` (two with shared counters)."""
    pool = {
        "name": node,
        "generation": 1,
        "resourceSliceCount": 2 if devices.shared_counters else 1,
    }
    specs: list[tuple[str, dict[str, Any]]] = [
        (slice_name(node, devices.driver), {"devices": _devices(devices)})
    ]
    if devices.shared_counters:
        counters = {k: {"value": v} for k, v in devices.shared_counters.items()}
        specs.append(
            (
                f"{slice_name(node, devices.driver)}-counters",
                {
                    "sharedCounters": [
                        {"name": n, "counters": counters} for n in devices.device_names()
                    ]
                },
            )
        )
    out = []
    for name, spec in specs:
        doc = {
            "apiVersion": SLICES.api_version,
            "kind": SLICES.kind,
            "metadata": {"name": name},
            "spec": {"driver": devices.driver, "nodeName": node, "pool": pool, **spec},
        }
        out.append(narrow(codec.decode(doc, validate="strict").obj, resource_pb2.ResourceSlice))
    return out


def slices_for(plans: Sequence[NodePlan]) -> dict[str, resource_pb2.ResourceSlice]:
    """Every slice the nodes of `plans` publish, by name."""
    out: dict[str, resource_pb2.ResourceSlice] = {}
    for plan in plans:
        for devices in plan.kind.devices:
            for s in slice_objects(plan.name, devices):
                out[s.metadata.name] = s
    return out


class NodeSlices:
    """The slices of a pool's nodes: published at registration, kept while it runs."""

    def __init__(self, client: Client, plans: Sequence[NodePlan], *, max_batch: int = 500) -> None:
        self.client = client
        self.max_batch = max_batch
        self.wanted = slices_for(plans)
        self.recreated = 0
        self._again: asyncio.Queue[str] = asyncio.Queue()
        self.informer: Informer | None = None
        if self.wanted:
            self.informer = Informer(client, SLICES, keep=self._ours)
            self.informer.add_handlers(Handlers(on_delete=self._deleted))

    def _ours(self, obj: Message) -> bool:
        return object_meta(obj).name in self.wanted

    async def publish(self) -> None:
        """Create every slice (a slice that exists is written over), in batches."""
        await create_or_update(self.client, list(self.wanted.values()), self.max_batch)

    def _deleted(self, obj: Message) -> None:
        name = object_meta(obj).name
        if name in self.wanted:
            self._again.put_nowait(name)

    async def run(self) -> None:
        """Re-create the slices deleted while the pool runs; until cancelled."""
        while True:
            name = await self._again.get()
            try:
                await self.client.create(self.wanted[name])
                self.recreated += 1
                log.info("resourceslice %s was deleted; re-created it", name)
            except AlreadyExistsError:
                pass
            except Exception as e:  # noqa: BLE001 - retried; one slice must not stop the loop
                log.warning("resourceslice %s: re-creating failed: %s; retrying", name, e)
                await asyncio.sleep(_RETRY)
                self._again.put_nowait(name)


#: Tries of one report on resourceVersion conflicts (retry.DefaultRetry's steps).
_REPORT_TRIES = 5
REASON_PREPARED = "Prepared"
REASON_FAILED = "PreparationFailed"
CLAIMS = BY_KIND["ResourceClaim"]


class BindingDriver:
    """The node side of a pool's hollow drivers with binding conditions (see the module
    docstring). `on_claim` takes every allocated claim the pool sees."""

    def __init__(
        self, client: Client, plans: Sequence[NodePlan], clock: Clock, rng: random.Random
    ) -> None:
        self.client = client
        self.clock = clock
        self.rng = rng
        #: (driver, pool) -> its binding; the pool of a node's slice is the node's name.
        self.bindings: dict[tuple[str, str], Binding] = {
            (d.driver, plan.name): d.binding
            for plan in plans
            for d in plan.kind.devices
            if d.binding is not None and d.binding.conditions
        }
        #: (claim uid, driver, pool, device) being prepared.
        self.preparing: set[tuple[str, str, str, str]] = set()
        self.reported = 0
        self.failed = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def on_claim(self, claim: resource_pb2.ResourceClaim) -> None:
        if not self.bindings or not claim.status.HasField("allocation"):
            return
        for res in claim.status.allocation.devices.results:
            binding = self.bindings.get((res.driver, res.pool))
            if binding is None or not res.binding_conditions or _reported(claim, res):
                continue
            key = (claim.metadata.uid, res.driver, res.pool, res.device)
            if key in self.preparing:
                continue
            self.preparing.add(key)
            fail = bool(binding.failure_rate) and self.rng.random() < binding.failure_rate
            task = asyncio.get_running_loop().create_task(
                self._prepare(key, claim.metadata.namespace, claim.metadata.name, binding, fail)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _prepare(
        self, key: tuple[str, str, str, str], ns: str, name: str, binding: Binding, fail: bool
    ) -> None:
        uid, driver, pool, device = key
        try:
            await self.clock.sleep(binding.delay)
            for _ in range(_REPORT_TRIES):
                current = narrow(
                    await self.client.get(CLAIMS, name, ns), resource_pb2.ResourceClaim
                )
                res = _allocated(current, uid, driver, pool, device)
                if res is None or _reported(current, res):
                    return  # deallocated, reallocated elsewhere, or reported meanwhile
                edited = narrow(codec.clone(current), resource_pb2.ResourceClaim)
                now = rfc3339(self.clock.now())
                if fail:
                    set_condition(
                        edited,
                        res,
                        res.binding_failure_conditions[0],
                        reason=REASON_FAILED,
                        message=f"hollow driver {driver}: preparing {device} failed",
                        now=now,
                    )
                else:
                    for type_ in res.binding_conditions:
                        set_condition(
                            edited,
                            res,
                            type_,
                            reason=REASON_PREPARED,
                            message=f"hollow driver {driver}: {device} is ready",
                            now=now,
                        )
                try:
                    await self.client.update_status(edited)
                except ConflictError:
                    continue
                if fail:
                    self.failed += 1
                else:
                    self.reported += 1
                return
        except NotFoundError:
            return
        except Exception as e:  # noqa: BLE001 - the next claim event retries it
            log.warning("claim %s/%s: reporting device %s failed: %s", ns, name, device, e)
        finally:
            self.preparing.discard(key)

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _allocated(
    claim: resource_pb2.ResourceClaim, uid: str, driver: str, pool: str, device: str
) -> resource_pb2.DeviceRequestAllocationResult | None:
    if claim.metadata.uid != uid or not claim.status.HasField("allocation"):
        return None
    for res in claim.status.allocation.devices.results:
        if (res.driver, res.pool, res.device) == (driver, pool, device) and res.binding_conditions:
            return res
    return None


def _reported(
    claim: resource_pb2.ResourceClaim, res: resource_pb2.DeviceRequestAllocationResult
) -> bool:
    st = device_status(claim, res)
    if st is None:
        return False
    types = {*res.binding_conditions, *res.binding_failure_conditions}
    return any(c.type in types and c.status == TRUE for c in st.conditions)


__all__ = [
    "SLICES",
    "BindingDriver",
    "NodeSlices",
    "create_or_update",
    "slice_name",
    "slice_objects",
    "slices_for",
]
