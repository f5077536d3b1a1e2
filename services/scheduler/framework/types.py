"""The framework's data: PodInfo, NodeInfo, QueuedPodInfo, CycleState, events.

NodeInfo aggregates what the scheduler needs per node (upstream framework/types.go):
the pods on it, pods with (anti-)affinity, requested resources (with pod overhead) and
the non-zero requests used for scoring, and a `generation` bumped on every change so the
cache can copy only what changed into the next snapshot.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntFlag
from typing import Any

from protos.kubera.v1 import core_pb2, meta_pb2
from services.api.helpers.hostports import HostPort, host_ports
from services.api.helpers.resources import Resource, pod_non_zero_requests, pod_requests
from services.api.machinery.labels import Selector, from_label_selector

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing number: any NodeInfo change gets a fresh one."""
    return next(_generation)


@dataclass(frozen=True)
class AffinityTerm:
    """A PodAffinityTerm made ready to match: its selector, namespaces and topology key.
    matchLabelKeys / mismatchLabelKeys are merged into the selector from the incoming pod's
    labels, as kube-apiserver does for pods created with them."""

    selector: Selector
    namespaces: frozenset[str]
    namespace_selector: (
        Selector | None
    )  # None: only `namespaces` (and the pod's own when both empty)
    topology_key: str
    weight: int = 0

    def matches_namespace(self, namespace: str, namespace_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces:
            return True
        if self.namespace_selector is not None and namespace_labels is not None:
            return self.namespace_selector.matches(namespace_labels)
        return False

    def matches(self, pod: core_pb2.Pod, namespace_labels: Mapping[str, str] | None = None) -> bool:
        return self.matches_namespace(
            pod.metadata.namespace, namespace_labels
        ) and self.selector.matches(pod.metadata.labels)


def _selector_parts(
    sel: meta_pb2.LabelSelector,
) -> tuple[dict[str, str], list[tuple[str, str, list[str]]]]:
    return dict(sel.match_labels), [
        (e.key, e.operator, list(e.values)) for e in sel.match_expressions
    ]


def affinity_term(
    pod: core_pb2.Pod, term: core_pb2.PodAffinityTerm, weight: int = 0
) -> AffinityTerm:
    labels, exprs = (
        _selector_parts(term.label_selector) if term.HasField("label_selector") else ({}, [])
    )
    for key in term.match_label_keys:
        if key in pod.metadata.labels:
            exprs.append((key, "In", [pod.metadata.labels[key]]))
    for key in term.mismatch_label_keys:
        if key in pod.metadata.labels:
            exprs.append((key, "NotIn", [pod.metadata.labels[key]]))
    if term.HasField("label_selector") or exprs:
        selector = from_label_selector(labels, exprs)
    else:
        selector = _NOTHING
    ns_selector = None
    if term.HasField("namespace_selector"):
        nl, ne = _selector_parts(term.namespace_selector)
        ns_selector = from_label_selector(nl, ne)
    namespaces = frozenset(term.namespaces)
    if not namespaces and ns_selector is None:
        namespaces = frozenset([pod.metadata.namespace])
    return AffinityTerm(selector, namespaces, ns_selector, term.topology_key, weight)


class _MatchNothing(Selector):
    def matches(self, labels: Mapping[str, str]) -> bool:  # type: ignore[override]
        return False


#: A term without a labelSelector matches no pods (upstream: a nil selector selects nothing).
_NOTHING = _MatchNothing()


#: PodInfo's derived fields, in slot order from `problems` to `ports`.
_Derived = tuple[
    tuple[str, ...],
    str,
    Resource,
    tuple[int, int],
    list[AffinityTerm],
    list[AffinityTerm],
    list[AffinityTerm],
    list[AffinityTerm],
    list[HostPort],
]

#: Derived fields by what they are derived from: the spec's bytes (and the namespace and
#: labels when the pod has pod (anti-)affinity, which its terms read). Pods of one
#: template (a Deployment's replicas, a load test) derive them once; each PodInfo gets
#: its own containers of them (the terms themselves are frozen). Cleared when full.
_DERIVED: dict[Any, _Derived] = {}
DERIVED_MEMO_SIZE = 4096


def _derive(pod: core_pb2.Pod) -> _Derived:
    """What PodInfo derives from a pod (see its slots)."""
    #: What validation would have refused in this pod (it was stored some other way):
    #: the scheduler does not place such a pod (an Error attempt naming the fields);
    #: the cache still counts it, as `pod_requests` says, if it is bound already.
    problems: list[str] = []
    requests = pod_requests(pod, problems)
    non_zero = pod_non_zero_requests(pod)
    aff = pod.spec.affinity
    pa, paa = aff.pod_affinity, aff.pod_anti_affinity
    affinity_error = ""
    try:
        required_affinity = [
            affinity_term(pod, t) for t in pa.required_during_scheduling_ignored_during_execution
        ]
        required_anti_affinity = [
            affinity_term(pod, t) for t in paa.required_during_scheduling_ignored_during_execution
        ]
        preferred_affinity = [
            affinity_term(pod, w.pod_affinity_term, w.weight)
            for w in pa.preferred_during_scheduling_ignored_during_execution
        ]
        preferred_anti_affinity = [
            affinity_term(pod, w.pod_affinity_term, w.weight)
            for w in paa.preferred_during_scheduling_ignored_during_execution
        ]
    except ValueError as e:  # SelectorError: a selector validation would have refused
        # InterPodAffinity answers for it (PreFilter UnschedulableAndUnresolvable,
        # PreScore Error), as upstream's plugin does when NewPodInfo fails.
        affinity_error = str(e)
        required_affinity, required_anti_affinity = [], []
        preferred_affinity, preferred_anti_affinity = [], []
    return (
        tuple(problems),
        affinity_error,
        requests,
        non_zero,
        required_affinity,
        required_anti_affinity,
        preferred_affinity,
        preferred_anti_affinity,
        host_ports(pod),
    )


class PodInfo:
    """A pod with what the framework derives from it once (requests, parsed terms)."""

    __slots__ = (
        "pod",
        "problems",
        "affinity_error",
        "requests",
        "non_zero",
        "required_affinity",
        "required_anti_affinity",
        "preferred_affinity",
        "preferred_anti_affinity",
        "ports",
        "signature",
        "spec_bytes",
    )

    def __init__(self, pod: core_pb2.Pod) -> None:
        self.pod = pod
        #: The equivalence signature (equivalence.pod_signature), once computed; it is
        #: derived from the spec, so a PodInfo of another spec must not carry it over.
        self.signature: bytes | None = None
        #: The spec's deterministic serialisation: what everything below is derived from
        #: (with the namespace and labels, for pod affinity terms).
        #: (None on an assumed copy, PodInfo.assigned: nothing reads it there.)
        spec_bytes = pod.spec.SerializeToString(deterministic=True)
        self.spec_bytes: bytes | None = spec_bytes
        aff = pod.spec.affinity
        key: bytes | tuple[bytes, str, tuple[tuple[str, str], ...]] = spec_bytes
        if aff.HasField("pod_affinity") or aff.HasField("pod_anti_affinity"):
            labels = tuple(sorted(pod.metadata.labels.items()))
            key = (spec_bytes, pod.metadata.namespace, labels)
        derived = _DERIVED.get(key)
        if derived is None:
            derived = _derive(pod)
            if len(_DERIVED) >= DERIVED_MEMO_SIZE:
                _DERIVED.clear()
            _DERIVED[key] = derived
        # Fresh containers of the memoised values: a PodInfo derived anew owns its own
        # (one made by assigned/updated shares its source's, see _with_pod).
        (problems, error, requests, non_zero, req_aff, req_anti, pref_aff, pref_anti, ports) = (
            derived
        )
        self.problems = problems
        self.affinity_error = error
        self.requests = requests.clone()
        self.non_zero = non_zero
        self.required_affinity = list(req_aff)
        self.required_anti_affinity = list(req_anti)
        self.preferred_affinity = list(pref_aff)
        self.preferred_anti_affinity = list(pref_anti)
        self.ports = list(ports)

    def assigned(self, node_name: str) -> PodInfo:
        """A PodInfo of a copy of the pod with spec.nodeName set (the assumed pod). What is
        derived from the pod does not depend on its node, so it is shared, not derived again."""
        pod = core_pb2.Pod()
        pod.CopyFrom(self.pod)
        pod.spec.node_name = node_name
        out = self._with_pod(pod)
        out.signature = None  # the signature includes spec.nodeName
        out.spec_bytes = None
        return out

    def updated(self, pod: core_pb2.Pod) -> PodInfo:
        """A PodInfo of `pod`, a newer version of this one's pod: what was derived is shared
        when everything it is derived from (spec, namespace, labels) is unchanged."""
        old = self.pod.metadata
        if (
            pod.spec == self.pod.spec
            and pod.metadata.namespace == old.namespace
            and dict(pod.metadata.labels) == dict(old.labels)
        ):
            return self._with_pod(pod)
        return PodInfo(pod)

    def _with_pod(self, pod: core_pb2.Pod) -> PodInfo:
        out = PodInfo.__new__(PodInfo)
        for name in PodInfo.__slots__:
            setattr(out, name, getattr(self, name))
        out.pod = pod
        return out

    @property
    def key(self) -> str:
        return f"{self.pod.metadata.namespace}/{self.pod.metadata.name}"

    @property
    def uid(self) -> str:
        return self.pod.metadata.uid

    def has_affinity(self) -> bool:
        return bool(
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


class NodeInfo:
    """Everything about one node the scheduler uses; `generation` changes on every change."""

    def __init__(self, node: core_pb2.Node | None = None) -> None:
        self.node: core_pb2.Node | None = None
        #: The node's name, kept as a plain attribute: read millions of times per second.
        self.name = ""
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports: set[tuple[str, str, int]] = set()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)

    def set_node(self, node: core_pb2.Node) -> None:
        self.node = node
        self.name = node.metadata.name
        self.allocatable = Resource.from_list(node.status.allocatable)
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.name = ""
        self.generation = next_generation()

    def add_pod(self, pi: PodInfo) -> None:
        self.pods.append(pi)
        if pi.has_affinity():
            self.pods_with_affinity.append(pi)
        if pi.required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)
        self.requested.add(pi.requests)
        self.non_zero_requested.milli_cpu += pi.non_zero[0]
        self.non_zero_requested.memory += pi.non_zero[1]
        self.used_ports.update(pi.ports)
        self.generation = next_generation()

    def remove_pod(self, pod: core_pb2.Pod) -> bool:
        uid = pod.metadata.uid
        for i, pi in enumerate(self.pods):
            if pi.uid == uid:
                del self.pods[i]
                # Only lists the pod can be in are rebuilt (preemption's dry runs remove and
                # re-add pods many times per attempt).
                if pi.has_affinity():
                    self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
                if pi.required_anti_affinity:
                    self.pods_with_required_anti_affinity = [
                        p for p in self.pods_with_required_anti_affinity if p.uid != uid
                    ]
                self.requested.sub(pi.requests)
                self.non_zero_requested.milli_cpu -= pi.non_zero[0]
                self.non_zero_requested.memory -= pi.non_zero[1]
                if pi.ports:
                    self.used_ports = {p for q in self.pods for p in q.ports}
                self.generation = next_generation()
                return True
        return False

    def clone(self) -> NodeInfo:
        """A copy for a snapshot: lists are copied, PodInfos and the Node are shared (immutable)."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = set(self.used_ports)
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable.clone()
        c.generation = self.generation
        return c


class CycleState:
    """Per-attempt scratch data keyed by plugin name (PreFilter writes, Filter reads)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        #: PreBind plugins whose PreBindPreFlight said Skip: their PreBind does not run.
        self.skip_pre_bind_plugins: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """Raises KeyError (an Error status for the caller) when PreFilter did not run."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def clone(self) -> CycleState:
        c = CycleState()
        c._data = {
            k: (v.clone() if hasattr(v, "clone") else copy.copy(v)) for k, v in self._data.items()
        }
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        return c


@dataclass
class QueuedPodInfo:
    """A pod in the scheduling queue, with its attempt history."""

    pod_info: PodInfo
    #: When it last entered the queue (for QueueSort's "earlier first").
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    #: Plugins that rejected it in its last attempt: only their events can help it.
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    #: The PreEnqueue plugin keeping it out of activeQ, when gated.
    gating_plugin: str = ""

    @property
    def pod(self) -> core_pb2.Pod:
        return self.pod_info.pod

    @property
    def key(self) -> str:
        return self.pod_info.key


class ActionType(IntFlag):
    """What happened to a resource (upstream framework.ActionType)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    UPDATE_NODE_DECLARED_FEATURE = 4096
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_NODE_DECLARED_FEATURE
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True)
class ClusterEvent:
    """A change the queue reacts to: resource ("Pod", "AssignedPod", "Node", ...) + action."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether `other` (what happened) is covered by self (what a plugin registered)."""
        return (self.resource in ("*", other.resource)) and bool(self.action & other.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name}"


class QueueingHint(IntFlag):
    SKIP = 0
    QUEUE = 1


#: hint(pod, old_obj, new_obj) -> QueueingHint: may this event make `pod` schedulable?
QueueingHintFn = Callable[[core_pb2.Pod, Any, Any], QueueingHint]


#: affected(old_obj, new_obj) -> the index keys of the waiting pods this event may concern
#: (None: any pod may be concerned).
AffectedFn = Callable[[Any, Any], Iterable[str] | None]
#: pod_keys(pod) -> the index keys under which the queue files this waiting pod.
PodKeysFn = Callable[[core_pb2.Pod], Iterable[str]]


@dataclass(frozen=True)
class ClusterEventWithHint:
    """A registered event, its hint, and optionally a narrowing of the pods it is asked for.

    With `affected` and `pod_keys` set, the registering plugin promises: for an event where
    affected(old, new) returns keys K, the hint says SKIP for every pod P with
    pod_keys(P) disjoint from K. The queue then runs the hint only on the waiting pods filed
    under a key in K (an index kept by the queue) instead of on every waiting pod.
    pod_keys must depend on the pod object alone (the queue refiles a pod whenever its
    object changes)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always queue
    affected: AffectedFn | None = None
    pod_keys: PodKeysFn | None = None


def node_infos_by_name(infos: Iterable[NodeInfo]) -> dict[str, NodeInfo]:
    return {ni.name: ni for ni in infos}
