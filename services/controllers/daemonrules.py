"""The pure rules of the DaemonSet controller (services/controllers/daemonset.py; upstream's
pkg/controller/daemon/util and the plans of daemon_controller.go and update.go): which
nodes should run a daemon pod, the pod made for a node (its tolerations and its
`matchFields metadata.name` affinity), which pods are updated, and the create/delete plans
of one sync and of a rolling update, and the status. No I/O: the controller reads the
informers and writes what these functions decide."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.helpers.nodeaffinity import OBJECT_NAME_FIELD, get_required_node_affinity
from services.api.helpers.taints import find_matching_untolerated_taint
from services.api.helpers.wellknown import (
    DAEMON_SET_TEMPLATE_GENERATION,
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
)
from services.api.machinery.kinds import BY_KIND
from services.controllers.controller_utils import (
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    timestamp,
)
from services.controllers.deployment.util import scaled_value
from services.controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
)

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
DAEMON_SETS = BY_KIND["DaemonSet"]
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
#: The pod label carrying the DaemonSet's template generation (the annotation
#: DAEMON_SET_TEMPLATE_GENERATION the apiserver sets; extensions.DaemonSetTemplateGenerationKey,
#: deprecated upstream, still written).
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
#: Upstream's BurstReplicas for daemon sets.
BURST_REPLICAS = 250


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
    generation = ds.metadata.annotations.get(DAEMON_SET_TEMPLATE_GENERATION)
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


#: The failed-pod back-off per DaemonSet and node (upstream's failedPodsBackoff:
#: flowcontrol.NewBackOff(1*time.Second, 15*time.Minute)), and how often it forgets
#: entries that expired (BackoffGCInterval).
FAILED_POD_BACKOFF_INITIAL = 1.0
FAILED_POD_BACKOFF_MAX = 15 * 60.0
BACKOFF_GC_INTERVAL = 60.0
#: Event reasons (FailedDaemonPodReason, SucceededDaemonPodReason).
REASON_FAILED_DAEMON_POD = "FailedDaemonPod"
REASON_SUCCEEDED_DAEMON_POD = "SucceededDaemonPod"


@dataclass
class FailedPodsBackoff:
    """client-go's flowcontrol.Backoff (util/flowcontrol/backoff.go, without jitter), one
    entry per key: `next` starts an entry at `initial` or doubles it up to `maximum`; an
    entry not updated for twice `maximum` has expired (starts again, or is collected by
    `gc`). Times are the controller clock's."""

    initial: float = FAILED_POD_BACKOFF_INITIAL
    maximum: float = FAILED_POD_BACKOFF_MAX
    #: key -> (current delay, time of the last `next`)
    entries: dict[str, tuple[float, float]] = field(default_factory=dict)

    def _expired(self, now: float, updated: float) -> bool:
        return now - updated > 2 * self.maximum

    def get(self, key: str) -> float:
        """The current delay of `key` (0 without an entry)."""
        entry = self.entries.get(key)
        return entry[0] if entry else 0.0

    def next(self, key: str, now: float) -> None:
        entry = self.entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            delay = self.initial
        else:
            delay = min(entry[0] * 2, self.maximum)
        self.entries[key] = (delay, now)

    def in_backoff_since_update(self, key: str, now: float) -> bool:
        """IsInBackOffSinceUpdate: less than the delay has passed since the last `next`."""
        entry = self.entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            return False
        return now - entry[1] < entry[0]

    def gc(self, now: float) -> None:
        for key in [k for k, (_, updated) in self.entries.items() if self._expired(now, updated)]:
            del self.entries[key]


def failed_pods_backoff_key(ds: apps_pb2.DaemonSet, node_name: str) -> str:
    """failedPodsBackoffKey: the DaemonSet's uid, observed generation and the node."""
    return f"{ds.metadata.uid}/{ds.status.observed_generation}/{node_name}"


@dataclass(frozen=True)
class Plan:
    """What one sync does: nodes to create a pod on, pods (names) to delete; the events
    to write about them ((type, reason, message)) and, when a failed pod waits out its
    back-off, how long until the DaemonSet should be synced again (0: no need)."""

    create_on: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    events: tuple[tuple[str, str, str], ...] = ()
    requeue_after: float = 0.0


def manage_plan(
    ds: apps_pb2.DaemonSet,
    nodes: Sequence[core_pb2.Node],
    by_node: dict[str, list[core_pb2.Pod]],
    hash_: str,
    now: float,
    backoff: FailedPodsBackoff | None = None,
) -> Plan:
    """manage + podsShouldBeOnNode: create where a pod should run and none does; delete
    where none should, terminated pods, and surplus pods on one node. Unscheduled pods
    whose node no longer exists are deleted. A Failed pod is deleted only outside its
    node's back-off (`backoff`, which this advances: the kubelet may be rejecting the
    pod, so deleting and recreating it at once would loop hot); within it, the plan
    asks to be synced again when the back-off ends. Without `backoff`, at once."""
    create: list[str] = []
    delete: list[str] = []
    events: list[tuple[str, str, str]] = []
    requeue = 0.0
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
            where = f"{p.metadata.namespace}/{p.metadata.name} on node {name}"
            if p.status.phase == "Failed":
                if backoff is not None:
                    key = failed_pods_backoff_key(ds, name)
                    if backoff.in_backoff_since_update(key, now):
                        delay = backoff.get(key)
                        requeue = min(requeue, delay) if requeue else delay
                        continue
                    backoff.next(key, now)
                msg = f"Found failed daemon pod {where}, will try to kill it"
                events.append(("Warning", REASON_FAILED_DAEMON_POD, msg))
                delete.append(p.metadata.name)
            elif p.status.phase == "Succeeded":
                msg = f"Found succeeded daemon pod {where}, will try to delete it"
                events.append(("Normal", REASON_SUCCEEDED_DAEMON_POD, msg))
                delete.append(p.metadata.name)
            else:
                running.append(p)
        if not allows_surge(ds):
            if len(running) > 1:
                delete += [p.metadata.name for p in oldest_first(running)[1:]]
            continue
        if len(running) <= 1:
            if not running and run:
                create.append(name)  # surging: at least one pod that is not going
            continue
        running = oldest_first(running)
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
    return Plan(tuple(create), tuple(delete), tuple(events), requeue)


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
