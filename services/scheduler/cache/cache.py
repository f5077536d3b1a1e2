"""The scheduler cache: what is placed where, including what the scheduler has only assumed.

The informers tell the scheduler what the apiserver has stored; the scheduler itself knows
more: a pod it has just placed holds that node's resources from the moment it is assumed,
long before the Bind round-trip and the watch event confirm it. Without that, the next pod
would be placed against stale numbers and nodes would be overcommitted. This module keeps
both in one place (upstream pkg/scheduler/backend/cache):

- `Cache`: per-node aggregates (`NodeInfo`) with the pod state machine drawn on the class,
  kept in a most-recently-updated list so a snapshot copies only what changed.
- `NodeTree` (node_tree.py): node names grouped by zone, listed one zone at a time (zone
  round-robin), so that a scan of the first N feasible nodes spreads over zones.
- `Snapshot` (snapshot.py): the read-only view one scheduling cycle works on, with per-node
  resource arrays for vectorised Filter/Score.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2
from services.clock import Clock, RealClock
from services.scheduler.cache.node_tree import NodeTree
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.types import NodeInfo, PodInfo

#: Assumed pods never expire by default: upstream set durationToExpireAssumedPod to 0
#: (kubernetes#106361: an expiry racing a slow watch event dropped pods that were bound).
DEFAULT_ASSUMED_POD_TTL = 0.0


class CacheError(Exception):
    """The cache was asked something inconsistent with what it holds: a bug in the caller or
    a missed/duplicated informer event. Callers log it; the cache stays as it was."""


def _pod_of(pod: core_pb2.Pod | PodInfo) -> core_pb2.Pod:
    return pod.pod if isinstance(pod, PodInfo) else pod


def _pod_info(pod: core_pb2.Pod | PodInfo, state: _PodState | None) -> PodInfo:
    """`pod` as a PodInfo, sharing what the cached version derived when it still applies
    (an informer's copy of an assumed pod, a status update)."""
    if isinstance(pod, PodInfo):
        return pod
    return PodInfo(pod) if state is None else state.pod_info.updated(pod)


def _cache_key(pod: core_pb2.Pod) -> str:
    """The UID, as upstream's GetPodKey; namespace/name only for UID-less test objects."""
    return pod.metadata.uid or f"{pod.metadata.namespace}/{pod.metadata.name}"


class _Item:
    """A NodeInfo in the cache's most-recently-updated list."""

    __slots__ = ("info", "prev", "next")

    def __init__(self, info: NodeInfo) -> None:
        self.info = info
        self.prev: _Item | None = None
        self.next: _Item | None = None


@dataclass
class _PodState:
    pod_info: PodInfo
    #: Monotonic deadline after which an assumed pod expires; None: never.
    deadline: float | None = None
    binding_finished: bool = False

    @property
    def node_name(self) -> str:
        return self.pod_info.pod.spec.node_name


def _assign(dst: NodeInfo, src: NodeInfo) -> None:
    """Overwrite dst's state with src's, keeping dst's identity (upstream `*existing = *clone`):
    the snapshot's list and affinity lists hold dst and stay valid."""
    slots = getattr(type(src), "__slots__", None)
    if slots is None:
        vars(dst).update(vars(src))
    else:
        for name in slots:
            setattr(dst, name, getattr(src, name))


class Cache:
    """Pods and nodes as the scheduler sees them, assumed pods included (upstream cacheImpl).

    Pod states (key: UID)::

                 assume_pod             add_pod (watch event confirms the bind)
        Initial ───────────▶ Assumed ────────────────────────────▶ Added
           │                  │   │                                 │  ▲
           │ add_pod          │   │ forget_pod (bind failed)        │  │ update_pod
           │ (bound elsewhere)│   ▼                                 │  │
           └────────────────▶ │  Forgotten              remove_pod  ▼  │
                              │                                  Deleted
                              │ finish_binding, then ttl passes
                              ▼ (cleanup_expired_assumed_pods; ttl 0: never)
                           Expired

    An assumed pod's resources count on its node from assume_pod on; add_pod of an assumed
    pod replaces it with the apiserver's copy, moving it if it landed on another node.

    Invariants (all under `_lock`):
    - every pod in `_pod_states` is in exactly one NodeInfo, the one of its spec.node_name;
      `_assumed` ⊆ `_pod_states`.
    - `_nodes` maps a name to its list item; a NodeInfo without a node ("ghost") exists only
      while pods still reference it (a pod seen before its node, or a node deleted before
      its pods), and is not in the NodeTree.
    - the list from `_head` is ordered by NodeInfo.generation, newest first: every change to
      a NodeInfo moves it to the head, so update_snapshot stops at the first item that is
      not newer than the snapshot.
    """

    def __init__(self, *, ttl: float = DEFAULT_ASSUMED_POD_TTL, clock: Clock | None = None):
        if ttl < 0:
            raise ValueError(f"assumed pod ttl must be >= 0, got {ttl}")
        self.ttl = ttl
        self.clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._pod_states: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._nodes: dict[str, _Item] = {}
        self._head: _Item | None = None
        self._tree = NodeTree()

    # -- the most-recently-updated list ---------------------------------------------------

    def _move_to_head(self, item: _Item) -> None:
        if item is self._head:
            return
        if item.prev is not None:
            item.prev.next = item.next
        if item.next is not None:
            item.next.prev = item.prev
        if self._head is not None:
            self._head.prev = item
        item.next = self._head
        item.prev = None
        self._head = item

    def _unlink(self, name: str) -> None:
        item = self._nodes.pop(name, None)
        if item is None:
            return
        if item.prev is not None:
            item.prev.next = item.next
        if item.next is not None:
            item.next.prev = item.prev
        if item is self._head:
            self._head = item.next
        item.prev = item.next = None

    def _item(self, name: str) -> _Item:
        item = self._nodes.get(name)
        if item is None:
            item = _Item(NodeInfo())
            self._nodes[name] = item
        return item

    # -- pods -----------------------------------------------------------------------------

    def _add_pod(self, pi: PodInfo, *, assumed: bool) -> None:
        node_name = pi.pod.spec.node_name
        item = self._item(node_name)
        item.info.add_pod(pi)
        self._move_to_head(item)
        key = _cache_key(pi.pod)
        self._pod_states[key] = _PodState(pi)
        if assumed:
            self._assumed.add(key)

    def _remove_pod(self, pod: core_pb2.Pod) -> None:
        """Remove `pod` (the cached copy: its node_name is where it is counted)."""
        key = _cache_key(pod)
        node_name = pod.spec.node_name
        item = self._nodes.get(node_name)
        if item is not None:
            if not item.info.remove_pod(pod):
                raise CacheError(f"pod {key} is not on node {node_name!r} in the cache")
            if not item.info.pods and item.info.node is None:
                self._unlink(node_name)
            else:
                self._move_to_head(item)
        self._pod_states.pop(key, None)
        self._assumed.discard(key)

    def _update_pod(self, old: core_pb2.Pod, new: PodInfo) -> None:
        self._remove_pod(old)
        self._add_pod(new, assumed=False)

    def assume_pod(self, pod_info: PodInfo) -> None:
        """Count the pod on pod_info.pod.spec.node_name (set by the caller on its own copy)
        before the bind is confirmed."""
        pod = pod_info.pod
        key = _cache_key(pod)
        if not pod.spec.node_name:
            raise CacheError(f"pod {key} has no node_name, so it cannot be assumed")
        with self._lock:
            if key in self._pod_states:
                raise CacheError(f"pod {key} is in the cache, so it cannot be assumed")
            self._add_pod(pod_info, assumed=True)

    def finish_binding(self, pod: core_pb2.Pod | PodInfo) -> None:
        """The binding cycle is over (bound or not): start the assumed pod's expiry clock."""
        key = _cache_key(_pod_of(pod))
        with self._lock:
            state = self._pod_states.get(key)
            if state is None or key not in self._assumed:
                return
            state.deadline = self.clock.monotonic() + self.ttl if self.ttl > 0 else None
            state.binding_finished = True

    def forget_pod(self, pod: core_pb2.Pod | PodInfo) -> None:
        """Undo assume_pod (the bind or a step before it failed)."""
        p = _pod_of(pod)
        key = _cache_key(p)
        with self._lock:
            state = self._pod_states.get(key)
            if state is not None and state.node_name != p.spec.node_name:
                raise CacheError(
                    f"pod {key} was assumed on {state.node_name!r} "
                    f"but is assigned to {p.spec.node_name!r}"
                )
            if state is None or key not in self._assumed:
                raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
            self._remove_pod(state.pod_info.pod)

    def add_pod(self, pod: core_pb2.Pod | PodInfo) -> None:
        """An assigned pod from the informer: confirms an assumed pod, or adds a pod bound by
        someone else (or before this scheduler started)."""
        p = _pod_of(pod)
        key = _cache_key(p)
        if not p.spec.node_name:
            raise CacheError(f"pod {key} is not assigned to a node")
        with self._lock:
            state = self._pod_states.get(key)
            pi = _pod_info(pod, state)
            if state is None:
                self._add_pod(pi, assumed=False)
            elif key in self._assumed:
                # Replace the assumed copy with the apiserver's; it may have landed elsewhere.
                self._update_pod(state.pod_info.pod, pi)
            else:
                raise CacheError(f"pod {key} was already in added state")

    def update_pod(self, old: core_pb2.Pod | PodInfo, new: core_pb2.Pod | PodInfo) -> None:
        """An informer update of an added pod (labels, resources resized, …)."""
        key = _cache_key(_pod_of(old))
        with self._lock:
            state = self._pod_states.get(key)
            new_pi = _pod_info(new, state)
            if state is None:
                raise CacheError(f"pod {key} is not in the cache, so cannot be updated")
            # An assumed pod gets an Add event before any Update.
            if key in self._assumed:
                raise CacheError(f"assumed pod {key} should not be updated")
            if state.node_name != new_pi.pod.spec.node_name:
                raise CacheError(
                    f"pod {key} updated on node {new_pi.pod.spec.node_name!r}, "
                    f"but was added to {state.node_name!r}: the cache is corrupted"
                )
            self._update_pod(state.pod_info.pod, new_pi)

    def remove_pod(self, pod: core_pb2.Pod | PodInfo) -> None:
        """An informer delete. `pod` may be a last-known state with an empty node_name."""
        p = _pod_of(pod)
        key = _cache_key(p)
        with self._lock:
            state = self._pod_states.get(key)
            if state is None:
                raise CacheError(f"pod {key} is not in the cache, so cannot be removed")
            if p.spec.node_name and state.node_name != p.spec.node_name:
                raise CacheError(
                    f"pod {key} deleted from node {p.spec.node_name!r}, "
                    f"but was added to {state.node_name!r}: the cache is corrupted"
                )
            self._remove_pod(state.pod_info.pod)

    def is_assumed(self, pod: core_pb2.Pod | PodInfo) -> bool:
        with self._lock:
            return _cache_key(_pod_of(pod)) in self._assumed

    def get_pod(self, pod: core_pb2.Pod | PodInfo) -> core_pb2.Pod | None:
        """The cached copy (assumed or added), or None."""
        with self._lock:
            state = self._pod_states.get(_cache_key(_pod_of(pod)))
            return state.pod_info.pod if state is not None else None

    def cleanup_expired_assumed_pods(self) -> list[core_pb2.Pod]:
        """Drop assumed pods whose binding finished more than `ttl` ago (per the clock);
        returns them. Pods still binding never expire."""
        now = self.clock.monotonic()
        expired: list[core_pb2.Pod] = []
        with self._lock:
            for key in list(self._assumed):
                state = self._pod_states[key]
                if not state.binding_finished or state.deadline is None:
                    continue
                if now > state.deadline:
                    self._remove_pod(state.pod_info.pod)
                    expired.append(state.pod_info.pod)
        return expired

    async def run_cleanup(self, *, period: float = 1.0) -> None:
        """Expire assumed pods every `period` seconds until cancelled (no-op with ttl 0)."""
        while True:
            await self.clock.sleep(period)
            if self.ttl > 0:
                self.cleanup_expired_assumed_pods()

    # -- nodes ----------------------------------------------------------------------------

    def add_node(self, node: core_pb2.Node) -> NodeInfo:
        """Returns a copy of the node's NodeInfo (with any pods that arrived before it)."""
        name = node.metadata.name
        with self._lock:
            item = self._item(name)
            self._move_to_head(item)
            if name in self._tree:
                self._tree.update_node(None, node)
            else:
                self._tree.add_node(node)
            item.info.set_node(node)
            return item.info.clone()

    def update_node(self, old: core_pb2.Node | None, new: core_pb2.Node) -> NodeInfo:
        name = new.metadata.name
        with self._lock:
            item = self._item(name)
            self._move_to_head(item)
            self._tree.update_node(old, new)
            item.info.set_node(new)
            return item.info.clone()

    def remove_node(self, node: core_pb2.Node) -> None:
        """The node leaves the NodeTree (and the next snapshot) at once; its NodeInfo stays,
        without a node, until the delete events of its pods have arrived."""
        name = node.metadata.name
        with self._lock:
            item = self._nodes.get(name)
            if item is None or item.info.node is None:
                raise CacheError(f"node {name} is not found")
            item.info.remove_node()
            if item.info.pods:
                self._move_to_head(item)
            else:
                self._unlink(name)
            self._tree.remove_node(node)

    def node_count(self) -> int:
        """NodeInfos held, ghosts (pods without a known node) included."""
        with self._lock:
            return len(self._nodes)

    def pod_count(self) -> int:
        """Pods held, assumed ones and those on ghost NodeInfos included."""
        with self._lock:
            return sum(len(item.info.pods) for item in self._nodes.values())

    def node_names(self) -> list[str]:
        """Known nodes in zone round-robin order."""
        with self._lock:
            return self._tree.list()

    # -- snapshot -------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring `snapshot` up to date, copying only NodeInfos changed since its generation.

        NodeInfo objects in the snapshot keep their identity (they are overwritten in place),
        so `list()` is reordered only when the set of nodes or their zones changed, and the
        affinity lists only when a node gained its first or lost its last such pod.
        Raises CacheError (after repairing the snapshot) if it was found inconsistent.
        """
        with self._lock:
            since = snapshot.generation
            rebuild_list = snapshot.tree_version != self._tree.version
            rebuild_affinity = False
            changed: list[NodeInfo] = []
            item = self._head
            while item is not None and item.info.generation > since:
                node = item.info.node
                if node is not None:
                    name = node.metadata.name
                    clone = item.info.clone()
                    existing = snapshot._map.get(name)
                    if existing is None:
                        # A node new to the snapshot: the list (and the affinity lists) are
                        # rebuilt below, so the clone itself goes in.
                        rebuild_list = True
                        snapshot._map[name] = clone
                        changed.append(clone)
                    else:
                        if bool(existing.pods_with_affinity) != bool(clone.pods_with_affinity) or (
                            bool(existing.pods_with_required_anti_affinity)
                            != bool(clone.pods_with_required_anti_affinity)
                        ):
                            rebuild_affinity = True
                        _assign(existing, clone)
                        changed.append(existing)
                item = item.next
            if self._head is not None:
                snapshot.generation = max(snapshot.generation, self._head.info.generation)
            snapshot.last_copied = len(changed)

            if len(snapshot._map) > self._tree.num_nodes:
                self._remove_deleted_nodes(snapshot)
                rebuild_list = True

            if not rebuild_list:
                try:
                    for ni in changed:
                        snapshot._write_row(snapshot._index[ni.name], ni)
                except KeyError:  # not expected: map ⊇ tree nodes whenever the list is built
                    rebuild_list = True
            if rebuild_list:
                self._rebuild_list(snapshot)
            elif rebuild_affinity:
                snapshot._rebuild_affinity_lists()

            if len(snapshot._list) != self._tree.num_nodes:
                self._rebuild_list(snapshot)
                raise CacheError(
                    "snapshot state is not consistent: "
                    f"{len(snapshot._list)} NodeInfos listed, {self._tree.num_nodes} in the "
                    f"node tree, {len(snapshot._map)} in the snapshot map, "
                    f"{len(self._nodes)} in the cache; rebuilt for the next cycle"
                )

    def _remove_deleted_nodes(self, snapshot: Snapshot) -> None:
        for name in [
            name
            for name in snapshot._map
            if (item := self._nodes.get(name)) is None or item.info.node is None
        ]:
            del snapshot._map[name]

    def _rebuild_list(self, snapshot: Snapshot) -> None:
        snapshot._list = [
            ni for name in self._tree.list() if (ni := snapshot._map.get(name)) is not None
        ]
        snapshot.tree_version = self._tree.version
        snapshot._rebuild_arrays()
        snapshot._rebuild_affinity_lists()


def new_snapshot(nodes: Iterable[core_pb2.Node], pods: Iterable[core_pb2.Pod] = ()) -> Snapshot:
    """A snapshot of these nodes with these (assigned) pods, for plugin tests and tools
    (upstream cache.NewSnapshot). Pods on unknown nodes are held but not listed."""
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap
