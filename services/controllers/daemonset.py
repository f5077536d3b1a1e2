"""The DaemonSet controller (upstream pkg/controller/daemon): one daemon pod on every node
that should run it, placed by the default scheduler, and rolled out node by node.

Which nodes (nodeShouldRunDaemonPod): the template's pod, with the tolerations the
controller adds (util.AddOrUpdateDaemonPodTolerations: not-ready and unreachable
NoExecute; disk-, memory-, pid-pressure and unschedulable NoSchedule; network-unavailable
NoSchedule for hostNetwork pods), must fit the node's name (spec.nodeName), its
nodeSelector and required node affinity, and tolerate every NoSchedule and NoExecute
taint. A pod whose node gains a NoSchedule taint it does not tolerate keeps running
(shouldContinueRunning); a NoExecute one it does not tolerate takes it away.

A pod is created without spec.nodeName: its required node affinity is replaced by the one
term `matchFields metadata.name In [<node>]` (ReplaceDaemonSetPodNodeNameNodeAffinity) and
the default scheduler binds it, so its resources, ports and priority go through the
scheduler's filters and preemption. Until it is bound, the affinity names its node
(GetTargetNodeName), so a pending pod counts as that node's.

One sync of a DaemonSet:

    history: the revision of the current template (created, or an equal older one bumped
      to the newest number) gives the hash every new pod is labelled with
      (controller-revision-hash)
      ─► claim the pods (adopt orphans that match; release ours that stopped matching),
         grouped by target node
      ─► expectations satisfied? manage: create a pod on each node that should run one
         and has none (slow start); delete pods on nodes that should not run them,
         Failed or Succeeded pods, and all but the oldest of several pods on one node
         (with maxSurge: an old and a new pod may run together until the new one is
         available)
      ─► RollingUpdate (updateStrategy): maxUnavailable and maxSurge out of the nodes that
         should run the pod (percentages round up; both 0 means maxUnavailable 1);
         without surge, old pods are deleted (an unavailable one always, the others while
         fewer than maxUnavailable nodes are unavailable); with surge, new pods are
         created beside old ones (at most maxSurge at once) and the old pod is deleted
         once the new one is available. OnDelete: nothing.
      ─► history beyond revisionHistoryLimit deleted (never a revision a pod uses)
      ─► status: desired, current, misscheduled, ready, available, updated, unavailable

Where kubera differs: a Failed daemon pod is deleted at once (upstream backs off per
node, 1 s doubling to 15 min); a pod counts as updated by its hash alone (upstream also
accepts a matching pod-template-generation label, from before revisions existed);
the pods and revisions of a deleted DaemonSet are deleted by this controller when
`cascade_delete` (kubera's garbage collector may not run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.helpers.nodeaffinity import OBJECT_NAME_FIELD, get_required_node_affinity
from services.api.helpers.taints import find_matching_untolerated_taint
from services.api.helpers.wellknown import (
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
)
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    NamespaceIndex,
    controller_of,
    is_namespace_terminating,
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    selector_for,
    slow_start_batch,
    split_key,
    timestamp,
    wait_synced,
)
from services.controllers.deployment.util import scaled_value
from services.controllers.events import EventRecorder
from services.controllers.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations
from services.controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    CONTROLLER_REVISIONS,
    bump_revision,
    create_revision,
    find_equal,
    new_revision,
    next_revision,
    sort_revisions,
)
from services.controllers.ref_manager import claim, recheck_owner
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
DAEMON_SETS = BY_KIND["DaemonSet"]
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
#: The DaemonSet's template generation (set by the apiserver) and the pod label carrying it
#: (extensions.DaemonSetTemplateGenerationKey; deprecated upstream, still written).
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
#: Upstream's BurstReplicas for daemon sets.
BURST_REPLICAS = 250


# ============================================================================ pure rules


def _toleration(key: str, effect: str) -> core_pb2.Toleration:
    return core_pb2.Toleration(key=key, operator="Exists", effect=effect)


def daemon_pod_tolerations(spec: core_pb2.PodSpec) -> list[core_pb2.Toleration]:
    """The tolerations AddOrUpdateDaemonPodTolerations gives every daemon pod."""
    out = [
        _toleration(TAINT_NOT_READY, "NoExecute"),
        _toleration(TAINT_UNREACHABLE, "NoExecute"),
        _toleration(TAINT_DISK_PRESSURE, "NoSchedule"),
        _toleration(TAINT_MEMORY_PRESSURE, "NoSchedule"),
        _toleration(TAINT_PID_PRESSURE, "NoSchedule"),
        _toleration(TAINT_UNSCHEDULABLE, "NoSchedule"),
    ]
    if spec.host_network:
        out.append(_toleration(TAINT_NETWORK_UNAVAILABLE, "NoSchedule"))
    return out


def _same_toleration(a: core_pb2.Toleration, b: core_pb2.Toleration) -> bool:
    """Toleration.MatchToleration: key, operator, value and effect (not the seconds)."""
    return (a.key, a.operator or "Equal", a.value, a.effect) == (
        b.key,
        b.operator or "Equal",
        b.value,
        b.effect,
    )


def add_daemon_tolerations(spec: core_pb2.PodSpec) -> None:
    """AddOrUpdateTolerationInPodSpec for each daemon toleration: one that matches an
    existing toleration replaces it in place, the others are appended."""
    for t in daemon_pod_tolerations(spec):
        items = list(spec.tolerations)
        for i, have in enumerate(items):
            if _same_toleration(t, have):
                items[i] = t
                break
        else:
            items.append(t)
        del spec.tolerations[:]
        spec.tolerations.extend(items)


def node_name_affinity(spec: core_pb2.PodSpec, node_name: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes the one
    term `matchFields metadata.name In [node_name]` (preferred terms are kept)."""
    required = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    del required.node_selector_terms[:]
    term = required.node_selector_terms.add()
    term.match_fields.add(key=OBJECT_NAME_FIELD, operator="In", values=[node_name])


def target_node(pod: core_pb2.Pod) -> str:
    """GetTargetNodeName: spec.nodeName, else the node the matchFields affinity names
    ("" when none)."""
    if pod.spec.node_name:
        return pod.spec.node_name
    na = pod.spec.affinity.node_affinity
    for term in na.required_during_scheduling_ignored_during_execution.node_selector_terms:
        for req in term.match_fields:
            if req.key == OBJECT_NAME_FIELD and req.operator == "In" and len(req.values) == 1:
                return req.values[0]  # type: ignore[no-any-return]
    return ""


def daemon_pod(ds: apps_pb2.DaemonSet, node_name: str) -> core_pb2.Pod:
    """NewPod: the template's pod on `node_name` with the daemon tolerations (what the
    predicates judge)."""
    pod = core_pb2.Pod()
    pod.metadata.CopyFrom(ds.spec.template.metadata)
    pod.metadata.namespace = ds.metadata.namespace
    pod.spec.CopyFrom(ds.spec.template.spec)
    pod.spec.node_name = node_name
    add_daemon_tolerations(pod.spec)
    return pod


def should_run(ds: apps_pb2.DaemonSet, node: core_pb2.Node) -> tuple[bool, bool]:
    """nodeShouldRunDaemonPod: (shouldRun, shouldContinueRunning)."""
    wanted = ds.spec.template.spec.node_name
    if wanted and wanted != node.metadata.name:
        return False, False
    pod = daemon_pod(ds, node.metadata.name)
    if not get_required_node_affinity(pod).match(node):
        return False, False
    taints = list(node.spec.taints)
    untolerated = find_matching_untolerated_taint(
        taints, pod.spec.tolerations, lambda t: t.effect in ("NoExecute", "NoSchedule")
    )
    if untolerated is not None:
        no_execute = find_matching_untolerated_taint(
            taints, pod.spec.tolerations, lambda t: t.effect == "NoExecute"
        )
        return False, no_execute is None
    return True, True


def pod_template_for(ds: apps_pb2.DaemonSet, hash_: str) -> core_pb2.Pod:
    """CreatePodTemplate + the pod metadata CreatePods writes: the template with the daemon
    tolerations, the revision hash and template generation labels, named `<ds>-<random>`,
    controlled by `ds`."""
    pod = PODS.new()
    assert isinstance(pod, core_pb2.Pod)
    template = ds.spec.template
    pod.metadata.namespace = ds.metadata.namespace
    pod.metadata.generate_name = f"{ds.metadata.name}-"
    pod.metadata.labels.update(template.metadata.labels)
    pod.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    generation = ds.metadata.annotations.get(TEMPLATE_GENERATION_ANNOTATION)
    if generation:
        pod.metadata.labels[TEMPLATE_GENERATION_LABEL] = generation
    pod.metadata.annotations.update(template.metadata.annotations)
    pod.metadata.finalizers.extend(template.metadata.finalizers)
    pod.metadata.owner_references.append(new_controller_ref(ds, DAEMON_SETS))
    pod.spec.CopyFrom(template.spec)
    add_daemon_tolerations(pod.spec)
    return pod


def is_updated(pod: core_pb2.Pod, hash_: str) -> bool:
    """IsPodUpdated: the pod carries the current revision's hash."""
    return pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_


def _oldest_first_key(pod: core_pb2.Pod) -> tuple[int, float, str]:
    """podByCreationTimestampAndPhase: bound pods first, then older, then by name."""
    created = timestamp(pod.metadata.creation_timestamp) or 0.0
    return (0 if pod.spec.node_name else 1, created, pod.metadata.name)


def oldest_first(pods: Sequence[core_pb2.Pod]) -> list[core_pb2.Pod]:
    return sorted(pods, key=_oldest_first_key)


def allows_surge(ds: apps_pb2.DaemonSet) -> bool:
    """AllowsSurge: a RollingUpdate with a non-zero maxSurge."""
    st = ds.spec.update_strategy
    return (
        st.type == ROLLING_UPDATE
        and st.rolling_update.HasField("max_surge")
        and scaled_value(st.rolling_update.max_surge, 100, True) > 0
    )


def surge_and_unavailable(ds: apps_pb2.DaemonSet, desired: int) -> tuple[int, int]:
    """updatedDesiredNodeCounts: (maxSurge, maxUnavailable) scaled to `desired` nodes,
    rounding up; both 0 with nodes to run on means maxUnavailable 1."""
    ru = ds.spec.update_strategy.rolling_update
    unavailable = scaled_value(
        ru.max_unavailable if ru.HasField("max_unavailable") else "1", desired, True
    )
    surge = scaled_value(ru.max_surge if ru.HasField("max_surge") else "0", desired, True)
    if desired > 0 and surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def updated_pods_on_node(
    pods: Sequence[core_pb2.Pod], hash_: str
) -> tuple[core_pb2.Pod | None, core_pb2.Pod | None, bool]:
    """findUpdatedPodsOnNode: (new pod, old pod, ok); not ok when a node has two of a
    kind (the manage step prunes them first). Pods being deleted are ignored."""
    new = old = None
    for p in pods:
        if p.metadata.deletion_timestamp:
            continue
        if is_updated(p, hash_):
            if new is not None:
                return None, None, False
            new = p
        else:
            if old is not None:
                return None, None, False
            old = p
    return new, old, True


@dataclass(frozen=True)
class Plan:
    """What one sync does: nodes to create a pod on, pods (names) to delete."""

    create_on: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()


def manage_plan(
    ds: apps_pb2.DaemonSet,
    nodes: Sequence[core_pb2.Node],
    by_node: dict[str, list[core_pb2.Pod]],
    hash_: str,
    now: float,
) -> Plan:
    """manage + podsShouldBeOnNode: create where a pod should run and none does; delete
    where none should, terminated pods, and surplus pods on one node. Unscheduled pods
    whose node no longer exists are deleted."""
    create: list[str] = []
    delete: list[str] = []
    seen: set[str] = set()
    for node in nodes:
        name = node.metadata.name
        seen.add(name)
        run, keep = should_run(ds, node)
        pods = by_node.get(name, [])
        if run and not pods:
            create.append(name)
            continue
        if not keep:
            delete += [p.metadata.name for p in pods if not p.metadata.deletion_timestamp]
            continue
        running: list[core_pb2.Pod] = []
        for p in pods:
            if p.metadata.deletion_timestamp:
                continue
            if p.status.phase in ("Failed", "Succeeded"):
                delete.append(p.metadata.name)
            else:
                running.append(p)
        if len(running) <= 1:
            continue
        running = oldest_first(running)
        if not allows_surge(ds):
            delete += [p.metadata.name for p in running[1:]]
            continue
        oldest_new = oldest_old = None
        for p in running:
            if is_updated(p, hash_):
                if oldest_new is None:
                    oldest_new = p
                    continue
            elif oldest_old is None:
                oldest_old = p
                continue
            delete.append(p.metadata.name)
        # Two pods only while the new one is not available and the old one is ready.
        if (
            oldest_new is not None
            and oldest_old is not None
            and (
                not is_pod_ready(oldest_old)
                or is_pod_available(oldest_new, ds.spec.min_ready_seconds, now)
            )
        ):
            delete.append(oldest_old.metadata.name)
    for name, pods in by_node.items():
        if name not in seen:  # getUnscheduledPodsWithoutNode (bound ones are PodGC's)
            delete += [
                p.metadata.name
                for p in pods
                if not p.spec.node_name and not p.metadata.deletion_timestamp
            ]
    return Plan(tuple(create), tuple(delete))


def rolling_update_plan(
    ds: apps_pb2.DaemonSet,
    nodes: Sequence[core_pb2.Node],
    by_node: dict[str, list[core_pb2.Pod]],
    hash_: str,
    now: float,
) -> Plan:
    """rollingUpdate (update.go): which old pods to delete (no surge) or on which nodes to
    create new pods beside old ones (surge), within maxUnavailable / maxSurge."""
    active = {
        n: [p for p in pods if p.status.phase not in ("Failed", "Succeeded")]
        for n, pods in by_node.items()
    }
    desired = 0
    for node in nodes:
        if should_run(ds, node)[0]:
            desired += 1
            active.setdefault(node.metadata.name, [])
    surge, max_unavailable = surge_and_unavailable(ds, desired)
    min_ready = ds.spec.min_ready_seconds
    if surge == 0:
        unavailable = 0
        allowed: list[str] = []
        candidates: list[str] = []
        for _name, pods in sorted(active.items()):
            new, old, ok = updated_pods_on_node(pods, hash_)
            if not ok:
                continue
            if (old is None and new is None) or (old is not None and new is not None):
                unavailable += 1  # manage creates or prunes here
            elif new is not None:
                if not is_pod_available(new, min_ready, now):
                    unavailable += 1
            elif old is not None:
                if not is_pod_available(old, min_ready, now):
                    allowed.append(old.metadata.name)
                elif unavailable < max_unavailable:
                    candidates.append(old.metadata.name)
        remaining = max(0, min(max_unavailable - unavailable, len(candidates)))
        return Plan(delete=tuple(allowed + candidates[:remaining]))
    surged = 0
    allowed_nodes: list[str] = []
    candidate_nodes: list[str] = []
    old_to_delete: list[str] = []
    for name, pods in sorted(active.items()):
        new, old, ok = updated_pods_on_node(pods, hash_)
        if not ok:
            surged += 1
            continue
        if old is None:
            continue
        if new is None:
            if not is_pod_available(old, min_ready, now):
                allowed_nodes.append(name)
            elif surged < surge:
                candidate_nodes.append(name)
            continue
        if not is_pod_available(new, min_ready, now):
            surged += 1
            continue
        old_to_delete.append(old.metadata.name)
    remaining = max(0, min(surge - surged, len(candidate_nodes)))
    return Plan(
        create_on=tuple(allowed_nodes + candidate_nodes[:remaining]), delete=tuple(old_to_delete)
    )


def daemon_status(
    ds: apps_pb2.DaemonSet,
    nodes: Sequence[core_pb2.Node],
    by_node: dict[str, list[core_pb2.Pod]],
    hash_: str,
    now: float,
) -> apps_pb2.DaemonSetStatus:
    """updateDaemonSetStatus: per node, its oldest daemon pod."""
    st = apps_pb2.DaemonSetStatus()
    st.CopyFrom(ds.status)
    desired = current = misscheduled = ready = available = updated = 0
    for node in nodes:
        run, _ = should_run(ds, node)
        pods = [
            p
            for p in by_node.get(node.metadata.name, [])
            if not p.metadata.deletion_timestamp and p.status.phase not in ("Failed", "Succeeded")
        ]
        if not run:
            if pods:
                misscheduled += 1
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = oldest_first(pods)[0]
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, ds.spec.min_ready_seconds, now):
                available += 1
        if is_updated(pod, hash_):
            updated += 1
    st.desired_number_scheduled = desired
    st.current_number_scheduled = current
    st.number_misscheduled = misscheduled
    st.number_ready = ready
    st.number_available = available
    st.updated_number_scheduled = updated
    st.number_unavailable = desired - available
    st.observed_generation = ds.metadata.generation
    return st


# ============================================================================ controller


@dataclass
class DaemonSetConfig:
    """Settings of the DaemonSet controller."""

    workers: int = 2
    """DaemonSets synced at once (--concurrent-daemonset-syncs)."""

    burst_replicas: int = BURST_REPLICAS
    """Most pods one sync creates or deletes."""

    expectations_timeout: float = EXPECTATIONS_TIMEOUT
    """How long a sync waits for its own creations and deletions to be observed."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the pods and revisions of a deleted DaemonSet (kubera's GC may not run)."""

    record_events: bool = True
    """Write SuccessfulCreate / SuccessfulDelete / FailedCreate Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.burst_replicas < 1:
            raise ValueError(f"burst_replicas must be at least 1, got {self.burst_replicas}")
        if self.expectations_timeout <= 0:
            raise ValueError(
                f"expectations_timeout must be positive, got {self.expectations_timeout}"
            )
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


class DaemonSetController:
    """Keeps one daemon pod on every eligible node (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: DaemonSetConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or DaemonSetConfig()
        self.clock = clock or RealClock()
        self.ds_informer = informers.get(DAEMON_SETS)
        self.pod_informer = informers.get(PODS)
        self.node_informer = informers.get(NODES)
        self.revision_informer = informers.get(CONTROLLER_REVISIONS)
        self.queue: WorkQueue[str] = controller_queue(
            "daemonset",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.expectations = ControllerExpectations(self.clock, self.config.expectations_timeout)
        self.events = EventRecorder(
            client, "daemonset-controller", self.clock, enabled=self.config.record_events
        )
        self._ds_index = NamespaceIndex(self.ds_informer, apps_pb2.DaemonSet)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self._revision_index = NamespaceIndex(self.revision_informer, apps_pb2.ControllerRevision)
        self._dead: dict[str, set[str]] = {}
        self.ds_informer.add_handlers(
            Handlers(lambda o: self.queue.add(object_key(o)), self._update_ds, self._delete_ds)
        )
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))
        self.node_informer.add_handlers(
            Handlers(lambda _n: self._all(), self._update_node, lambda _n: self._all())
        )
        self.revision_informer.add_handlers(
            Handlers(self._owned, lambda _o, n: self._owned(n), self._owned)
        )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop,
                self.ds_informer.synced,
                self.pod_informer.synced,
                self.node_informer.synced,
                self.revision_informer.synced,
            ):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="daemonset"
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    # ------------------------------------------------------------------ events

    def _all(self) -> None:
        for obj in list(self.ds_informer.store.values()):
            self.queue.add(object_key(obj))

    def _update_node(self, old: Message, cur: Message) -> None:
        """shouldIgnoreNodeUpdate: only labels, taints and readiness matter."""
        o, n = narrow(old, core_pb2.Node), narrow(cur, core_pb2.Node)
        if (
            o.metadata.labels != n.metadata.labels
            or list(o.spec.taints) != list(n.spec.taints)
            or o.spec.unschedulable != n.spec.unschedulable
        ):
            self._all()

    def _update_ds(self, old: Message, cur: Message) -> None:
        if object_meta(old).uid != object_meta(cur).uid:
            self._delete_ds(old)
        self.queue.add(object_key(cur))

    def _delete_ds(self, obj: Message) -> None:
        key = object_key(obj)
        self.expectations.delete(key)
        if self.config.cascade_delete:
            self._dead.setdefault(key, set()).add(object_meta(obj).uid)
        self.queue.add(key)

    def _owner_key(self, obj: Message) -> str | None:
        ref = controller_of(obj)
        if ref is None or ref.kind != DAEMON_SETS.kind:
            return None
        key = f"{object_meta(obj).namespace}/{ref.name}"
        cached = self.ds_informer.store.get(key)
        if cached is None or object_meta(cached).uid != ref.uid:
            return None
        return key

    def _owned(self, obj: Message) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.queue.add(key)

    def _orphan(self, pod: core_pb2.Pod) -> None:
        for ds in self._ds_index.list(pod.metadata.namespace):
            sel = selector_for(ds.spec.selector)
            if sel is not None and not sel.is_empty() and sel.matches(pod.metadata.labels):
                self.queue.add(object_key(ds))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        return bool(
            object_meta(old).owner_references
            or object_meta(new).owner_references
            or object_meta(old).labels != object_meta(new).labels
        )

    def _add_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        if pod.metadata.deletion_timestamp:
            self._pod_gone(pod)
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)
        elif controller_of(pod) is None:
            self._orphan(pod)

    def _update_pod(self, old_obj: Message, cur_obj: Message) -> None:
        old, cur = narrow(old_obj, core_pb2.Pod), narrow(cur_obj, core_pb2.Pod)
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        if cur.metadata.deletion_timestamp and not old.metadata.deletion_timestamp:
            self._pod_gone(cur)
            return
        if controller_of(old) != controller_of(cur):
            self._owned(old)
        key = self._owner_key(cur)
        if key is not None:
            self.queue.add(key)
            if not is_pod_ready(old) and is_pod_ready(cur):
                ds = self.ds_informer.store.get(key)
                min_ready = narrow(ds, apps_pb2.DaemonSet).spec.min_ready_seconds if ds else 0
                if min_ready > 0:
                    self.queue.add_after(key, min_ready + 1.0)
        elif controller_of(cur) is None:
            self._orphan(cur)

    def _delete_pod(self, obj: Message) -> None:
        self._pod_gone(narrow(obj, core_pb2.Pod))

    def _pod_gone(self, pod: core_pb2.Pod) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, object_key(pod))
            self.queue.add(key)

    # ------------------------------------------------------------------ sync

    def _nodes(self) -> list[core_pb2.Node]:
        return [narrow(n, core_pb2.Node) for n in self.node_informer.store.values()]

    async def sync(self, key: str) -> None:
        cached = self.ds_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            self.expectations.delete(key)
            return
        ds = narrow(cached, apps_pb2.DaemonSet)
        selector = selector_for(ds.spec.selector)
        if selector is None or selector.is_empty():
            log.warning("daemonset %s has an invalid or empty selector; ignoring it", key)
            return
        if ds.metadata.deletion_timestamp:
            return
        ns = ds.metadata.namespace
        revisions: list[apps_pb2.ControllerRevision] = await claim(  # type: ignore[assignment]
            self.client,
            CONTROLLER_REVISIONS,
            ds,
            DAEMON_SETS,
            selector,
            self._revision_index.list(ns),
            recheck_owner(self.client, DAEMON_SETS, ds),
        )
        revisions = sort_revisions(revisions)
        cur = await self._history(ds, revisions)
        hash_ = cur.metadata.labels[CONTROLLER_REVISION_HASH_LABEL]
        pods: list[core_pb2.Pod] = await claim(  # type: ignore[assignment]
            self.client,
            PODS,
            ds,
            DAEMON_SETS,
            selector,
            self._pod_index.list(ns),
            recheck_owner(self.client, DAEMON_SETS, ds),
        )
        nodes = self._nodes()
        now = self.clock.now()
        if self.expectations.satisfied(key):
            plan = manage_plan(ds, nodes, self._by_node(pods), hash_, now)
            await self._sync_nodes(key, ds, plan, pods, hash_)
            if self.expectations.satisfied(key) and ds.spec.update_strategy.type == ROLLING_UPDATE:
                plan = rolling_update_plan(ds, nodes, self._by_node(pods), hash_, now)
                await self._sync_nodes(key, ds, plan, pods, hash_)
        await self._cleanup_history(ds, pods, revisions, cur)
        status = daemon_status(ds, nodes, self._by_node(pods), hash_, now)
        if status.collision_count != ds.status.collision_count:
            status.collision_count = ds.status.collision_count
        await self._write_status(ds, status)
        if ds.spec.min_ready_seconds > 0 and status.number_available < status.number_ready:
            self.queue.add_after(key, float(ds.spec.min_ready_seconds))

    @staticmethod
    def _by_node(pods: Sequence[core_pb2.Pod]) -> dict[str, list[core_pb2.Pod]]:
        """getNodesToDaemonPods: the pods by target node (pods with no target are skipped)."""
        out: dict[str, list[core_pb2.Pod]] = {}
        for p in pods:
            node = target_node(p)
            if node:
                out.setdefault(node, []).append(p)
        return out

    async def _history(
        self, ds: apps_pb2.DaemonSet, revisions: list[apps_pb2.ControllerRevision]
    ) -> apps_pb2.ControllerRevision:
        """constructHistory: the current template's revision, at the newest number."""
        collision = ds.status.collision_count if ds.status.HasField("collision_count") else 0
        number = next_revision(revisions)
        candidate = new_revision(ds, DAEMON_SETS, ds.spec.template, number, collision)
        equal = find_equal(revisions, candidate)
        if equal:
            newest = equal[-1]
            if revisions and newest is not revisions[-1]:
                newest = await bump_revision(self.client, newest, number)
            return newest
        created, used = await create_revision(
            self.client, ds, DAEMON_SETS, ds.spec.template, number, collision
        )
        if used != collision:
            ds.status.collision_count = used
        return created

    async def _sync_nodes(
        self,
        key: str,
        ds: apps_pb2.DaemonSet,
        plan: Plan,
        pods: Sequence[core_pb2.Pod],
        hash_: str,
    ) -> None:
        """syncNodes: delete the plan's pods, create a pod on each of its nodes (slow start);
        at most burst_replicas of each."""
        burst = self.config.burst_replicas
        create_on = list(plan.create_on[:burst])
        by_name = {p.metadata.name: p for p in pods}
        victims = [by_name[n] for n in dict.fromkeys(plan.delete) if n in by_name][:burst]
        self.expectations.expect_creations(key, len(create_on))
        self.expectations.expect_deletions(key, [object_key(p) for p in victims])
        errors: list[ApiError] = []

        async def delete(pod: core_pb2.Pod) -> None:
            try:
                await self.client.delete(
                    PODS, pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid
                )
            except ApiError as e:
                self.expectations.deletion_observed(key, object_key(pod))
                if not isinstance(e, NotFoundError):
                    self.events.event(ds, "Warning", "FailedDelete", f"Error deleting: {e}")
                    errors.append(e)
                return
            self.events.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")

        await asyncio.gather(*(delete(p) for p in victims))
        template = pod_template_for(ds, hash_)
        queue = list(create_on)

        async def create(n: int) -> tuple[int, ApiError | None]:
            batch, queue[:n] = queue[:n], []
            made: list[core_pb2.Pod] = []
            for node in batch:
                pod = core_pb2.Pod()
                pod.CopyFrom(template)
                node_name_affinity(pod.spec, node)
                made.append(pod)
            results = await self.client.batch_create(made)
            ok, first = 0, None
            for r in results:
                if r.error is None and r.object is not None:
                    ok += 1
                    self.events.event(
                        ds,
                        "Normal",
                        "SuccessfulCreate",
                        f"Created pod: {object_meta(r.object).name}",
                    )
                elif r.error is not None and is_namespace_terminating(r.error):
                    ok += 1
                elif r.error is not None:
                    self.events.event(ds, "Warning", "FailedCreate", f"Error creating: {r.error}")
                    first = first or r.error
            return ok, first

        made, err = await slow_start_batch(len(create_on), SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(len(create_on) - made):
            self.expectations.creation_observed(key)
        if err is not None:
            errors.append(err)
        if errors:
            raise errors[0]

    async def _cleanup_history(
        self,
        ds: apps_pb2.DaemonSet,
        pods: Sequence[core_pb2.Pod],
        revisions: Sequence[apps_pb2.ControllerRevision],
        cur: apps_pb2.ControllerRevision,
    ) -> None:
        """cleanupHistory: delete the oldest revisions no pod uses, beyond the limit."""
        live = {p.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) for p in pods}
        old = [
            r
            for r in revisions
            if r.metadata.name != cur.metadata.name
            and r.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) not in live
        ]
        limit = ds.spec.revision_history_limit if ds.spec.HasField("revision_history_limit") else 10
        for r in old[: max(0, len(old) - limit)]:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(
                    CONTROLLER_REVISIONS, r.metadata.name, r.metadata.namespace
                )

    async def _write_status(self, ds: apps_pb2.DaemonSet, status: apps_pb2.DaemonSetStatus) -> None:
        if status == ds.status:
            return
        target = narrow(codec.clone(ds), apps_pb2.DaemonSet)
        for attempt in range(2):
            target.status.CopyFrom(status)
            try:
                await self.client.update_status(target)
                return
            except NotFoundError:
                return
            except ApiError:
                if attempt == 1:
                    raise
                target = narrow(
                    await self.client.get(DAEMON_SETS, ds.metadata.name, ds.metadata.namespace),
                    apps_pb2.DaemonSet,
                )

    async def _cascade(self, key: str, current: Message | None) -> None:
        dead = self._dead.get(key)
        if not dead:
            return
        if current is not None:
            dead.discard(object_meta(current).uid)
        ns = split_key(key)[0]
        for kind, index in ((PODS, self._pod_index), (CONTROLLER_REVISIONS, self._revision_index)):
            for obj in index.list(ns):
                ref = controller_of(obj)
                meta = object_meta(obj)
                if ref is None or ref.uid not in dead or meta.deletion_timestamp:
                    continue
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(kind, meta.name, meta.namespace, uid=meta.uid)
        self._dead.pop(key, None)


__all__ = [
    "DaemonSetConfig",
    "DaemonSetController",
    "Plan",
    "add_daemon_tolerations",
    "daemon_pod_tolerations",
    "daemon_status",
    "manage_plan",
    "node_name_affinity",
    "pod_template_for",
    "rolling_update_plan",
    "should_run",
    "surge_and_unavailable",
    "target_node",
    "updated_pods_on_node",
]
