"""A fork of the leader's state: what one what-if session schedules against.

    Base.capture(scheduler)   one synchronous read of the leader (no await, so no informer
                              event lands half way): its cache cloned into a fresh Snapshot
                              (every node with its pods, assumed ones included), the pod
                              store, the other informers' stores, the nominations, the PDBs
                              and the namespaces' labels; nothing of it is shared mutably
    Fork(base)                a Cache and a Snapshot of its own filled from the base, the
                              stores copied, the profiles' Frameworks built anew on a
                              SessionHandle (handle.py): every plugin has its own state
                              (gang counts, DRA claims in flight, the preemption dry-run
                              cache), fed from the fork's stores (each object handed to
                              their handlers, as an informer's first list), never from the
                              leader's

The fork changes only through its primitives, which keep the cache, the pod store and the
plugins' pod handlers in step (a plugin's pod index sees the fork's pods as it sees the
informer's): `add_pending` (a pod exists, unscheduled), `bind` (an assumed pod confirmed on
its node, as the informer's update after a bind), `remove_pod`, `add_node`, `remove_node`.

Differences from the leader's view, by construction: the fork is taken from the cache, so
a pod the leader has assumed counts on its node, as for the leader's next cycle; pods in the
leader's queue are in the pod store (gangs count them) but are not placed by the what-if.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery.meta import object_key
from services.client import Handlers
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from services.scheduler.scheduler import Scheduler


class StoreInformer:
    """An informer as a plugin sees it (`store`, `handlers`, `add_handlers`), over a store
    of the fork's own: nothing streams into it, the fork calls the pod handlers itself."""

    def __init__(self, store: dict[str, Any]) -> None:
        self.store = store
        self.handlers: list[Handlers] = []

    def add_handlers(self, handlers: Handlers) -> None:
        self.handlers.append(handlers)


@dataclass
class Base:
    """The leader's state at the moment a session was forked (see the module docstring).
    Read, never changed: every Fork copies what it changes."""

    #: (node, the PodInfos counted on it), in the leader's zone round-robin order.
    nodes: list[tuple[core_pb2.Node, list[PodInfo]]]
    #: The leader's pod informer store (every pod, bound or not), "namespace/name" -> pod.
    pods: dict[str, core_pb2.Pod]
    #: Kind name -> the store of the leader's informer of that kind (the plugins' listers).
    stores: dict[str, dict[str, Any]]
    #: (pod, node) of every nomination the leader holds.
    nominations: list[tuple[PodInfo, str]]
    pdbs: list[Any]
    namespace_labels: dict[str, dict[str, str]]
    #: The leader's configuration: its profiles are the frameworks a fork builds.
    config: Any
    clock: Any
    cluster_clock: Any
    shared_state: bool = False
    identity: str = ""
    percentage_of_nodes_to_score: int | None = None
    #: The leader's metrics, failure reporter and queue: ScheduleOne's collaborators,
    #: which a session's cycles never call (they record, report and requeue attempts).
    metrics: Any = None
    reporter: Any = None
    queue: Any = None

    @classmethod
    def capture(cls, sched: Scheduler) -> Base:
        snap = Snapshot()
        sched.cache.update_snapshot(snap)
        nodes = [(ni.node, list(ni.pods)) for ni in snap.list() if ni.node is not None]
        names = [node.metadata.name for node, _ in nodes]
        nominations = [(pi, name) for name in names for pi in sched.nominator.pods_on(name)]
        return cls(
            nodes=nodes,
            pods=dict(sched.pods.store),
            stores={kind: dict(inf.store) for kind, inf in sched.kind_informers.items()},
            nominations=nominations,
            pdbs=list(sched.pdbs.store.values()) if sched.pdbs is not None else [],
            namespace_labels={
                ns.metadata.name: dict(ns.metadata.labels) for ns in sched.namespaces.store.values()
            },
            config=sched.config,
            clock=sched.clock,
            cluster_clock=sched.cluster_clock,
            shared_state=sched.shared_state is not None,
            identity=sched.identity,
            percentage_of_nodes_to_score=sched.config.percentage_of_nodes_to_score,
            metrics=sched.metrics,
            reporter=sched.cycles.reporter,
            queue=sched.queue,
        )


class Fork:
    """One session's copy of the cluster (see the module docstring). `rng` breaks the
    cycles' score ties and gives preemption's dry-run offset, as the leader's does."""

    def __init__(
        self,
        base: Base,
        *,
        rng: random.Random,
        make_frameworks: Callable[[Fork], dict[str, Framework]],
    ) -> None:
        self.base = base
        self.rng = rng
        self.cache = Cache(clock=base.clock)
        self.snapshot = Snapshot()
        for ns, labels in base.namespace_labels.items():
            self.snapshot.set_namespace_labels(ns, labels)
        for node, pods in base.nodes:
            self.cache.add_node(node)
            for pi in pods:
                self.cache.add_pod(pi)
        self.pods = StoreInformer(dict(base.pods))
        self.informers = {kind: StoreInformer(dict(s)) for kind, s in base.stores.items()}
        self.nominator = Nominator()
        for pi, nominated in base.nominations:
            self.nominator.add(pi, nominated)
        self.pdbs = list(base.pdbs)
        #: Writes the plugins tried (preemption's deletes and patches), never sent.
        self.writes: list[tuple[str, str, str, str]] = []
        self.frameworks = make_frameworks(self)
        self._list_to_handlers()
        self.sync()

    def _list_to_handlers(self) -> None:
        """Every object of the fork's stores to the handlers the plugins added, as an
        informer's first list reaches the handlers added before it ran (a gang plugin's
        index learns the members that exist, bound or pending)."""
        for informer in (self.pods, *self.informers.values()):
            for h in list(informer.handlers):
                if h.on_add is not None:
                    for obj in list(informer.store.values()):
                        h.on_add(obj)

    # ---------------------------------------------------------------- reading

    def sync(self) -> None:
        """Bring the snapshot up to date with the cache (before each cycle)."""
        self.cache.update_snapshot(self.snapshot)

    def informer(self, kind: str) -> StoreInformer:
        """The fork's store of `kind` (empty when the leader has no informer of it)."""
        found = self.informers.get(kind)
        if found is None:
            found = self.informers[kind] = StoreInformer({})
        return found

    def pod(self, key: str) -> core_pb2.Pod | None:
        return self.pods.store.get(key)

    def node(self, name: str) -> core_pb2.Node | None:
        ni = self.snapshot.get(name)
        return ni.node if ni is not None else None

    def pods_on(self, node: str) -> list[core_pb2.Pod]:
        ni = self.snapshot.get(node)
        return [p.pod for p in ni.pods] if ni is not None else []

    # ------------------------------------------------------------- primitives

    def overlay(self, objects: Iterable[tuple[str, Message]]) -> None:
        """(kind name, object) the pods need that the cluster does not have (a PodGroup,
        a Workload): put in the fork's store of that kind, as if created."""
        for kind, obj in objects:
            store = self.informer(kind)
            key = object_key(obj)
            old = store.store.get(key)
            store.store[key] = obj
            for h in list(store.handlers):
                if old is None and h.on_add is not None:
                    h.on_add(obj)
                elif old is not None and h.on_update is not None:
                    h.on_update(old, obj)

    def add_pending(self, pod: core_pb2.Pod) -> None:
        """The pod exists, unscheduled (a created pod the informer brought)."""
        self.pods.store[object_key(pod)] = pod
        for h in list(self.pods.handlers):
            if h.on_add is not None:
                h.on_add(pod)

    def bind(self, assumed: PodInfo) -> None:
        """The assumed pod is bound: confirmed in the cache, the store's copy updated."""
        pod = assumed.pod
        self.cache.add_pod(assumed)
        self.nominator.delete(assumed.uid)
        key = object_key(pod)
        old = self.pods.store.get(key)
        self.pods.store[key] = pod
        for h in list(self.pods.handlers):
            if old is None and h.on_add is not None:
                h.on_add(pod)
            elif old is not None and h.on_update is not None:
                h.on_update(old, pod)
        self.sync()

    def remove_pod(self, key: str) -> core_pb2.Pod | None:
        """Delete the pod `key` (namespace/name): off its node, out of the store; None
        when the fork has no such pod."""
        pod = self.pods.store.pop(key, None)
        cached = self.cache.get_pod(pod) if pod is not None else None
        if cached is not None:
            self.cache.remove_pod(cached)
        if pod is None:
            return None
        self.nominator.delete(pod.metadata.uid)
        for h in list(self.pods.handlers):
            if h.on_delete is not None:
                h.on_delete(pod)
        self.sync()
        return cached or pod

    def remove_node(self, name: str) -> list[str]:
        """Delete the node and the pods bound to it (as the pod garbage collector deletes
        a deleted node's pods); the keys of those pods."""
        node = self.node(name)
        if node is None:
            raise KeyError(name)
        gone = [object_key(p) for p in self.pods_on(name)]
        for key in gone:
            self.remove_pod(key)
        self.cache.remove_node(node)
        self.sync()
        return gone

    def add_node(self, node: core_pb2.Node) -> None:
        if self.node(node.metadata.name) is not None:
            raise ValueError(f'node "{node.metadata.name}" already exists')
        self.cache.add_node(node)
        self.sync()
