"""The garbage collector (upstream pkg/controller/garbagecollector): dependents go with their
owners, across every kind kubera serves.

An object's metadata.ownerReferences name its owners by uid. The collector keeps the graph
of who owns whom from informers over every kind of the kinds table (KINDS, so kinds added
later are covered; Events are left out, as upstream's ignoredResources do, and Leases are
watched in kube-node-lease only, where the nodes' own leases live), and acts on it:

    owner deleted (Background)        its dependents are attempted: a dependent whose
                                      owners are all gone (or waiting, below) is deleted;
                                      one with a live owner left keeps that owner and loses
                                      the references to the gone ones
    owner held by "foregroundDeletion"  (propagationPolicy Foreground) its dependents are
                                      deleted, those with dependents of their own in the
                                      foreground too; once no dependent that names it with
                                      blockOwnerDeletion is left, the finalizer is removed
                                      and the owner goes
    owner held by "orphan"            (propagationPolicy Orphan) its dependents lose their
                                      reference to it, then the finalizer is removed
    an object whose owner was never seen   is attempted too: owners are read from the
                                      apiserver (by kind, name and uid) before anything is
                                      deleted, so an object observed before its owner is
                                      left alone

Work items are (action, uid) in one work queue; `attempt_to_delete` and `attempt_to_orphan`
are upstream's attemptToDeleteItem / orphanDependents with processDeletingDependentsItem.
The apiserver's delete holds the object with the finalizer (services/apiserver/deletion.py).

Differences from upstream: no "virtual" nodes (an unseen owner is simply read from the
apiserver when its dependent is attempted), no absent-owner cache, no cycle detection
among foreground deletions, and owner references to kinds kubera does not serve are left
as they are (upstream fails and retries them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import meta_pb2
from services.api.helpers.wellknown import NODE_LEASE_NAMESPACE
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import KINDS, Kind
from services.api.machinery.kubeobject import object_meta
from services.client import Client, Handlers, Informer, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import wait_synced
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"
DELETE = "delete"
ORPHAN = "orphan"
#: Kinds never collected (upstream's ignoredResources: events).
IGNORED = frozenset({"Event"})
#: Kinds watched in one namespace only (the nodes' leases; leader leases own nothing).
NAMESPACE_OF = {"Lease": NODE_LEASE_NAMESPACE}
#: How many times a read-modify-write of a dependent is retried on conflict.
_RETRIES = 5


@dataclass
class GarbageCollectorConfig(WorkerSettings):
    """Settings of the garbage collector."""

    workers: int = 5
    """Items attempted at once (upstream --concurrent-gc-syncs, 20)."""


@dataclass
class GraphNode:
    """One object as the graph knows it (upstream's node)."""

    kind: Kind
    namespace: str
    name: str
    uid: str
    owners: list[meta_pb2.OwnerReference]
    deleting: bool
    finalizers: tuple[str, ...]

    def deleting_dependents(self) -> bool:
        return self.deleting and FINALIZER_FOREGROUND in self.finalizers


def _kind_of_ref(ref: meta_pb2.OwnerReference) -> Kind | None:
    for k in KINDS:
        if k.kind == ref.kind and k.api_version == ref.api_version:
            return k
    return None


def _node(kind: Kind, obj: Message) -> GraphNode:
    m = object_meta(obj)
    owners = []
    for r in m.owner_references:
        ref = meta_pb2.OwnerReference()
        ref.CopyFrom(r)
        owners.append(ref)
    return GraphNode(
        kind, m.namespace, m.name, m.uid, owners, bool(m.deletion_timestamp), tuple(m.finalizers)
    )


def _gc_fields(obj: Message) -> tuple[object, ...]:
    m = object_meta(obj)
    return (
        [(r.uid, r.block_owner_deletion) for r in m.owner_references],
        bool(m.deletion_timestamp),
        tuple(m.finalizers),
    )


class GarbageCollector:
    """Deletes and orphans dependents (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: GarbageCollectorConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or GarbageCollectorConfig()
        self.clock = clock or RealClock()
        self.graph: dict[str, GraphNode] = {}
        #: owner uid -> dependents' uids, including owners not (yet) in the graph.
        self.dependents: dict[str, set[str]] = {}
        self.queue: WorkQueue[tuple[str, str]] = controller_queue(  # type: ignore[assignment]
            "garbagecollector",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        #: Until every informer has listed, an owner missing from the graph may simply not
        #: be listed yet: dangling owners are looked for once, after the sync (`run`).
        self.synced = False
        self.informers: list[Informer] = []
        for kind in KINDS:
            if kind.kind in IGNORED:
                continue
            inf = informers.get(kind, namespace=NAMESPACE_OF.get(kind.kind, ""))
            inf.add_handlers(self._handlers(kind))
            self.informers.append(inf)

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, *(i.synced for i in self.informers)):
                self.synced = True
                for node in list(self.graph.values()):
                    if any(r.uid not in self.graph for r in node.owners):
                        self.queue.add((DELETE, node.uid))
                await run_workers(
                    self.queue,  # type: ignore[arg-type]
                    self.sync,  # type: ignore[arg-type]
                    workers=self.config.workers,
                    stop=stop,
                    what="garbagecollector",
                )
        finally:
            self.queue.shutdown()

    # ------------------------------------------------------------------ the graph

    def _handlers(self, kind: Kind) -> Handlers:
        return Handlers(
            lambda obj: self.observe(kind, obj),
            lambda old, new: (
                self.observe(kind, new) if _gc_fields(old) != _gc_fields(new) else None
            ),
            lambda obj: self.forget(kind, obj),
        )

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """Only a change of owners, deletion or finalizers matters to the graph."""
        return _gc_fields(old) != _gc_fields(new)

    def observe(self, kind: Kind, obj: Message) -> None:
        """An added or updated object (GraphBuilder.processGraphChanges)."""
        new = _node(kind, obj)
        old = self.graph.get(new.uid)
        self.graph[new.uid] = new
        old_owners = {r.uid for r in old.owners} if old is not None else set()
        for gone in old_owners - {r.uid for r in new.owners}:
            self.dependents.get(gone, set()).discard(new.uid)
            self._owner_may_be_free(gone)
        for ref in new.owners:
            self.dependents.setdefault(ref.uid, set()).add(new.uid)
            owner = self.graph.get(ref.uid)
            if (owner is None and self.synced) or (
                owner is not None and owner.deleting_dependents()
            ):
                self.queue.add((DELETE, new.uid))  # a dangling or waiting owner
        if new.deleting and FINALIZER_ORPHAN in new.finalizers:
            self.queue.add((ORPHAN, new.uid))
        if new.deleting_dependents():
            self.queue.add((DELETE, new.uid))
            for dep in self.dependents.get(new.uid, ()):
                self.queue.add((DELETE, dep))

    def forget(self, kind: Kind, obj: Message) -> None:
        """A deleted object: its dependents are attempted, its owners may be free."""
        uid = object_meta(obj).uid
        node = self.graph.pop(uid, None)
        for dep in self.dependents.get(uid, set()):
            self.queue.add((DELETE, dep))
        if node is None:
            return
        for ref in node.owners:
            self.dependents.get(ref.uid, set()).discard(uid)
            self._owner_may_be_free(ref.uid)
        if uid in self.dependents and not self.dependents[uid]:
            del self.dependents[uid]

    def _owner_may_be_free(self, owner_uid: str) -> None:
        owner = self.graph.get(owner_uid)
        if owner is not None and owner.deleting_dependents():
            self.queue.add((DELETE, owner_uid))
        if owner is None and not self.dependents.get(owner_uid):
            self.dependents.pop(owner_uid, None)

    def blocking_dependents(self, node: GraphNode) -> list[GraphNode]:
        """The dependents that name `node` with blockOwnerDeletion."""
        out = []
        for uid in self.dependents.get(node.uid, ()):
            dep = self.graph.get(uid)
            if dep is None:
                continue
            if any(r.uid == node.uid and r.block_owner_deletion for r in dep.owners):
                out.append(dep)
        return out

    # ---------------------------------------------------------------------- work

    async def sync(self, item: tuple[str, str]) -> None:
        action, uid = item
        node = self.graph.get(uid)
        if node is None:
            return
        if action == ORPHAN:
            await self.attempt_to_orphan(node)
        else:
            await self.attempt_to_delete(node)

    async def _live(self, kind: Kind, namespace: str, name: str, uid: str) -> Message | None:
        """The object as stored now, if it is still the one with `uid`."""
        try:
            obj = await self.client.get(kind, name, namespace if kind.namespaced else "")
        except NotFoundError:
            return None
        return obj if object_meta(obj).uid == uid else None

    async def attempt_to_delete(self, node: GraphNode) -> None:
        """attemptToDeleteItem (with processDeletingDependentsItem)."""
        if node.deleting and not node.deleting_dependents():
            return
        if node.deleting_dependents():
            blocking = self.blocking_dependents(node)
            if not blocking:
                await self._remove_finalizer(node, FINALIZER_FOREGROUND)
                return
            for dep in blocking:
                if not dep.deleting:
                    self.queue.add((DELETE, dep.uid))
            return
        live = await self._live(node.kind, node.namespace, node.name, node.uid)
        if live is None:
            return
        solid, dangling, waiting = [], [], []
        for ref in object_meta(live).owner_references:
            owner_kind = _kind_of_ref(ref)
            if owner_kind is None:
                solid.append(ref)  # a kind kubera does not serve: left as it is
                continue
            owner = await self._live(owner_kind, node.namespace, ref.name, ref.uid)
            if owner is None:
                dangling.append(ref)
            elif (
                object_meta(owner).deletion_timestamp
                and FINALIZER_FOREGROUND in object_meta(owner).finalizers
            ):
                waiting.append(ref)
            else:
                solid.append(ref)
        if not dangling and not waiting:
            return  # every owner is alive (or it has none left)
        if solid:
            gone = {r.uid for r in (*dangling, *waiting)}
            await self._drop_owner_refs(node, gone)
            return
        if waiting and self.dependents.get(node.uid):
            policy = "Foreground"
        elif FINALIZER_ORPHAN in object_meta(live).finalizers:
            policy = "Orphan"
        elif FINALIZER_FOREGROUND in object_meta(live).finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        log.info(
            "garbage collecting %s %s/%s (owners gone; propagation %s)",
            node.kind.kind,
            node.namespace,
            node.name,
            policy,
        )
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.client.delete(
                node.kind, node.name, node.namespace, uid=node.uid, propagation_policy=policy
            )

    async def attempt_to_orphan(self, owner: GraphNode) -> None:
        """orphanDependents, then the orphan finalizer removed."""
        for uid in list(self.dependents.get(owner.uid, ())):
            dep = self.graph.get(uid)
            if dep is not None:
                await self._drop_owner_refs(dep, {owner.uid})
        await self._remove_finalizer(owner, FINALIZER_ORPHAN)

    async def _drop_owner_refs(self, node: GraphNode, uids: Iterable[str]) -> None:
        drop = set(uids)
        for _ in range(_RETRIES):
            live = await self._live(node.kind, node.namespace, node.name, node.uid)
            if live is None:
                return
            m = object_meta(live)
            kept = [r for r in m.owner_references if r.uid not in drop]
            if len(kept) == len(m.owner_references):
                return
            copies = []
            for r in kept:
                c = meta_pb2.OwnerReference()
                c.CopyFrom(r)
                copies.append(c)
            del m.owner_references[:]
            m.owner_references.extend(copies)
            try:
                await self.client.update(live)
                return
            except ConflictError:
                continue
            except NotFoundError:
                return
        raise ConflictError(f"{node.kind.resource} {node.name}: ownerReferences kept changing")

    async def _remove_finalizer(self, node: GraphNode, finalizer: str) -> None:
        for _ in range(_RETRIES):
            live = await self._live(node.kind, node.namespace, node.name, node.uid)
            if live is None:
                return
            m = object_meta(live)
            if finalizer not in m.finalizers:
                return
            kept = [f for f in m.finalizers if f != finalizer]
            del m.finalizers[:]
            m.finalizers.extend(kept)
            try:
                await self.client.update(live)
                return
            except ConflictError:
                continue
            except NotFoundError:
                return
        raise ConflictError(f"{node.kind.resource} {node.name}: finalizers kept changing")


__all__ = ["GarbageCollector", "GarbageCollectorConfig", "GraphNode"]
