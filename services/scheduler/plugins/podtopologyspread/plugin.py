"""PodTopologySpread: keep matching pods evenly spread over topology domains.

Upstream plugins/podtopologyspread (common.go, filtering.go, scoring.go, plugin.go).

A constraint (maxSkew, topologyKey, whenUnsatisfiable, labelSelector, minDomains,
matchLabelKeys, nodeAffinityPolicy, nodeTaintsPolicy) counts, per domain (a value of
topologyKey), the pods in the incoming pod's namespace that its selector matches (terminating
pods excluded; an empty selector counts nothing, a missing one matches nothing, both as
upstream). matchLabelKeys add `key=<incoming pod's value>` to the selector.

Which nodes count: only nodes carrying *every* constraint's topology key; and, per constraint,
with nodeAffinityPolicy Honor (the default) only nodes the pod's nodeSelector / required node
affinity admits, with nodeTaintsPolicy Honor (default Ignore) only nodes whose NoSchedule /
NoExecute taints the pod tolerates. Those nodes' domains are the eligible domains.

Filter (DoNotSchedule constraints only):
    skew = count(node's domain) + (1 if the pod matches the selector) - global minimum
where the global minimum is the smallest count over eligible domains, or 0 when there are
fewer eligible domains than minDomains (default 1). skew > maxSkew: Unschedulable "node(s)
didn't match pod topology spread constraints"; a node without the topology key:
UnschedulableAndUnresolvable "... (missing required label)".

Score (ScheduleAnyway constraints), over the nodes that passed Filter:
    raw(node) = round(sum over constraints of count(domain) * log(#domains + 2) + maxSkew - 1)
#domains being the candidate nodes' distinct values (for kubernetes.io/hostname the number of
candidate nodes); counts come from every node in the cluster. NormalizeScore reverses it:
100 * (max + min - raw) / max, nodes missing a key score 0, all-zero raw scores give 100.

Default constraints apply to pods that set none. defaultingType System uses upstream's
(hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway, and nodes need not carry both keys
to be scored); List uses Args.default_constraints. Upstream selects the spread group with the
merged selectors of the Services, ReplicationControllers, ReplicaSets and StatefulSets that
own the pod. Kubera has no Services and plugins see no workload listers, so here a pod gets
default constraints only when it has an ownerReference of kind ReplicaSet, StatefulSet or
ReplicationController, and the group is the pods carrying all of its labels
(`Selector.from_set(pod labels)`): a controller's pods share its template labels (for a
Deployment's ReplicaSet including pod-template-hash), and its selector is a subset of them, so
this selects the controller's pods (plus any pod labelled as a superset, as the owner's
selector would too). A pod with no labels gets no defaults (upstream: empty selector).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.labels import Requirement, Selector, SelectorError, from_label_selector
from services.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    Handle,
    NodeScore,
    PreFilterResult,
)
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins._nodematch import RequiredNodeAffinity
from services.scheduler.plugins.helpers import (
    NODE,
    POD,
    do_not_schedule_taints_filter,
    find_matching_untolerated_taint,
)

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

#: Owner kinds whose pods get default constraints (upstream: plus Services, see above).
DEFAULTED_OWNER_KINDS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


def _system_default_constraints() -> list[core_pb2.TopologySpreadConstraint]:
    return [
        core_pb2.TopologySpreadConstraint(
            topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=3
        ),
        core_pb2.TopologySpreadConstraint(
            topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=5
        ),
    ]


@dataclass
class Args:
    """PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1)."""

    #: Constraints for pods that set none, as in the API but without labelSelector (the group
    #: is deduced per pod). Dicts in Kubernetes JSON (camelCase) or messages. Only used with
    #: defaulting_type "List".
    default_constraints: list[core_pb2.TopologySpreadConstraint | dict[str, Any]] = field(
        default_factory=list
    )
    #: "System": upstream's built-in defaults (hostname 3, zone 5, ScheduleAnyway);
    #: "List": default_constraints (empty: no defaults).
    defaulting_type: str = SYSTEM_DEFAULTING

    def __post_init__(self) -> None:
        errs = validate_args(self)
        if errs:
            raise ValueError("; ".join(errs))

    def constraints(self) -> list[core_pb2.TopologySpreadConstraint]:
        """default_constraints as messages."""
        out = []
        for c in self.default_constraints:
            if isinstance(c, core_pb2.TopologySpreadConstraint):
                out.append(c)
            else:
                out.append(json_format.ParseDict(c, core_pb2.TopologySpreadConstraint()))
        return out


def validate_args(args: Args) -> list[str]:
    """ValidatePodTopologySpreadArgs, with its wording."""
    errs: list[str] = []
    if args.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(
            f'defaultingType: Unsupported value: "{args.defaulting_type}": '
            'supported values: "List", "System"'
        )
    elif args.defaulting_type == SYSTEM_DEFAULTING and args.default_constraints:
        errs.append(
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'
        )
    try:
        constraints = args.constraints()
    except json_format.ParseError as e:
        return [*errs, f"defaultConstraints: {e}"]
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        p = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            errs.append(f"{p}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
        if not c.topology_key:
            errs.append(f"{p}.topologyKey: Required value: can not be empty")
        if c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errs.append(
                f'{p}.whenUnsatisfiable: Unsupported value: "{c.when_unsatisfiable}": '
                'supported values: "DoNotSchedule", "ScheduleAnyway"'
            )
        if c.HasField("label_selector"):
            errs.append(
                f"{p}.labelSelector: Forbidden: constraint must not define a selector, "
                "as they deduced for each pod"
            )
        key = (c.topology_key, c.when_unsatisfiable)
        if key in seen:
            errs.append(f"{p}: Duplicate value: {{{key[0]}, {key[1]}}}")
        seen.add(key)
    return errs


# ----------------------------------------------------------------------------- constraints


class _Nothing(Selector):
    """A nil labelSelector: matches no pod (upstream labels.Nothing())."""

    def matches(self, labels: Mapping[str, str]) -> bool:  # type: ignore[override]
        return False


_NOTHING = _Nothing()


@dataclass(frozen=True)
class Constraint:
    """A TopologySpreadConstraint ready to evaluate (upstream topologySpreadConstraint)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def counts(self, pod: core_pb2.Pod, namespace: str) -> bool:
        """Whether an existing pod counts in its domain (countPodsMatchSelector's rule: an
        empty selector counts nothing, though the incoming pod still "matches" it)."""
        if self.selector.is_empty():
            return False
        meta = pod.metadata
        return (
            not meta.deletion_timestamp
            and meta.namespace == namespace
            and self.selector.matches(meta.labels)
        )


def _selector(c: core_pb2.TopologySpreadConstraint, pod_labels: Mapping[str, str]) -> Selector:
    if not c.HasField("label_selector"):
        return _NOTHING  # matchLabelKeys cannot widen a nil selector (upstream)
    ls = c.label_selector
    sel = from_label_selector(
        dict(ls.match_labels),
        [(e.key, e.operator, list(e.values)) for e in ls.match_expressions],
    )
    extra = [Requirement(k, "=", (pod_labels[k],)) for k in c.match_label_keys if k in pod_labels]
    return Selector((*sel.requirements, *extra)) if extra else sel


def _constraint(
    c: core_pb2.TopologySpreadConstraint, pod_labels: Mapping[str, str], selector: Selector | None
) -> Constraint:
    return Constraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        selector=selector if selector is not None else _selector(c, pod_labels),
        min_domains=c.min_domains if c.HasField("min_domains") else 1,
        node_affinity_policy=c.node_affinity_policy or HONOR,
        node_taints_policy=c.node_taints_policy or IGNORE,
    )


def default_selector(pod: core_pb2.Pod) -> Selector:
    """The spread group for default constraints (see the module docstring); empty: none."""
    meta = pod.metadata
    if not meta.labels or not any(o.kind in DEFAULTED_OWNER_KINDS for o in meta.owner_references):
        return Selector()
    try:
        return Selector.from_set(dict(meta.labels))
    except SelectorError:
        return Selector()


def _keys_present(labels: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints: every constraint's key is on the node."""
    return all(c.topology_key in labels for c in constraints)


class _NodeEligibility:
    """Per-pod node inclusion (matchNodeInclusionPolicies), each check run once per node."""

    __slots__ = ("_pod", "_affinity", "_aff", "_taint")

    def __init__(self, pod: core_pb2.Pod) -> None:
        self._pod = pod
        self._affinity = RequiredNodeAffinity(pod)
        self._aff: dict[str, bool] = {}
        self._taint: dict[str, bool] = {}

    def ok(self, c: Constraint, node: core_pb2.Node) -> bool:
        name = node.metadata.name
        if c.node_affinity_policy == HONOR:
            got = self._aff.get(name)
            if got is None:
                got = self._aff[name] = self._affinity.match(node)
            if not got:
                return False
        if c.node_taints_policy == HONOR:
            got = self._taint.get(name)
            if got is None:
                got = self._taint[name] = (
                    find_matching_untolerated_taint(
                        node.spec.taints, self._pod.spec.tolerations, do_not_schedule_taints_filter
                    )
                    is None
                )
            if not got:
                return False
        return True


# ---------------------------------------------------------------------------- states


class _PreFilterState:
    """Per hard constraint: domain value -> matching pods (every eligible domain present, 0
    included); the global minimum cached until the counts change."""

    __slots__ = ("constraints", "counts", "_min", "eligibility")

    def __init__(self, constraints: list[Constraint], eligibility: _NodeEligibility | None) -> None:
        self.constraints = constraints
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self._min: list[int | None] = [None] * len(constraints)
        self.eligibility = eligibility

    def clone(self) -> _PreFilterState:
        c = _PreFilterState(self.constraints, self.eligibility)
        c.counts = [dict(m) for m in self.counts]
        c._min = list(self._min)
        return c

    def min_match(self, i: int) -> int:
        """The global minimum, 0 when fewer eligible domains than minDomains."""
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            return 0
        m = self._min[i]
        if m is None:
            m = self._min[i] = min(counts.values())
        return m

    def update_with_pod(
        self, other: core_pb2.Pod, incoming: core_pb2.Pod, node: core_pb2.Node, delta: int
    ) -> None:
        if other.metadata.namespace != incoming.metadata.namespace:
            return
        labels = node.metadata.labels
        if not _keys_present(labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not c.counts(other, incoming.metadata.namespace):
                continue
            if self.eligibility is not None and not self.eligibility.ok(c, node):
                continue
            value = labels[c.topology_key]
            self.counts[i][value] = self.counts[i].get(value, 0) + delta
            self._min[i] = None


class _PreScoreState:
    __slots__ = ("constraints", "ignored", "counts", "weights")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        #: Candidate nodes missing some topology key: they score 0.
        self.ignored: set[str] = set()
        #: Per soft constraint: domain value -> matching pods (not for hostname: per node).
        self.counts: list[dict[str, int]] = []
        #: Per soft constraint: log(#domains + 2).
        self.weights: list[float] = []

    def clone(self) -> _PreScoreState:
        return self  # read-only after PreScore


# -------------------------------------------------------------------------------- plugin


class PodTopologySpread:
    """PreFilterPlugin (+ add_pod/remove_pod extensions), FilterPlugin, PreScorePlugin,
    ScorePlugin, NormalizeScorePlugin, EnqueueExtensions."""

    name = NAME

    def __init__(self, args: Args, handle: Handle | None) -> None:
        self.args = args
        self.handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = (
            _system_default_constraints() if self.system_defaulted else args.constraints()
        )

    def get_constraints(self, pod: core_pb2.Pod, action: str) -> list[Constraint]:
        """The pod's constraints with whenUnsatisfiable == action, else its defaults."""
        labels = pod.metadata.labels
        if pod.spec.topology_spread_constraints:
            return [
                _constraint(c, labels, None)
                for c in pod.spec.topology_spread_constraints
                if (c.when_unsatisfiable or DO_NOT_SCHEDULE) == action
            ]
        wanted = [c for c in self.default_constraints if c.when_unsatisfiable == action]
        if not wanted:
            return []
        selector = default_selector(pod)
        if selector.is_empty():
            return []
        return [_constraint(c, labels, selector) for c in wanted]

    # ---------------------------------------------------------------- PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as e:
            return None, Status.as_error(e, plugin=NAME)
        if not constraints:
            state.write(PRE_FILTER_STATE_KEY, _PreFilterState([], None))
            return None, Status.skip(plugin=NAME)

        eligibility = _NodeEligibility(pod)
        s = _PreFilterState(constraints, eligibility)
        namespace = pod.metadata.namespace
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.metadata.labels
            if not _keys_present(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not eligibility.ok(c, node):
                    continue
                value = labels[c.topology_key]
                n = sum(1 for p in ni.pods if c.counts(p.pod, namespace))
                s.counts[i][value] = s.counts[i].get(value, 0) + n
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, Status.success()

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        """PreFilterExtensions.AddPod (preemption's what-if)."""
        return self._update(state, pod_to_schedule, pod_to_add, node_info, 1)

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodInfo,
        pod_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        """PreFilterExtensions.RemovePod."""
        return self._update(state, pod_to_schedule, pod_to_remove, node_info, -1)

    def _update(
        self, state: CycleState, incoming: PodInfo, other: PodInfo, node_info: NodeInfo, d: int
    ) -> Status:
        s: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing(PRE_FILTER_STATE_KEY)
        if node_info.node is not None:
            s.update_with_pod(other.pod, incoming.pod, node_info.node, d)
        return Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.as_error(LookupError("node not found"), plugin=NAME)
        s: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing(PRE_FILTER_STATE_KEY)
        labels = node.metadata.labels
        pod_labels = pod_info.pod.metadata.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
            self_match = 1 if c.selector.matches(pod_labels) else 0
            skew = s.counts[i].get(value, 0) + self_match - s.min_match(i)
            if skew > c.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
        return Status.success()

    # ------------------------------------------------------------------- PreScore / Score
    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        s = _PreScoreState()
        state.write(PRE_SCORE_STATE_KEY, s)
        all_nodes = self.handle.snapshot().list() if self.handle is not None else nodes
        if not all_nodes:
            return Status.skip(plugin=NAME)
        pod = pod_info.pod
        try:
            s.constraints = self.get_constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as e:
            return Status.as_error(e, plugin=NAME)
        if not s.constraints:
            return Status.skip(plugin=NAME)

        # With the system defaults, nodes need not carry every key (a zoneless node still
        # gets hostname spreading).
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        s.counts = [{} for _ in s.constraints]
        sizes = [0] * len(s.constraints)
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.metadata.labels
            if require_all and not _keys_present(labels, s.constraints):
                s.ignored.add(node.metadata.name)
                continue
            for i, c in enumerate(s.constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # counted per node in Score
                value = labels.get(c.topology_key, "")
                if value not in s.counts[i]:
                    s.counts[i][value] = 0
                    sizes[i] += 1
        for i, c in enumerate(s.constraints):
            size = len(nodes) - len(s.ignored) if c.topology_key == LABEL_HOSTNAME else sizes[i]
            s.weights.append(math.log(size + 2))

        eligibility = _NodeEligibility(pod)
        namespace = pod.metadata.namespace
        for ni in all_nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.metadata.labels
            if require_all and not _keys_present(labels, s.constraints):
                continue
            for i, c in enumerate(s.constraints):
                if not eligibility.ok(c, node):
                    continue
                value = labels.get(c.topology_key, "")
                if value not in s.counts[i]:
                    continue  # not a candidate's domain (and hostname: counted in Score)
                s.counts[i][value] += sum(1 for p in ni.pods if c.counts(p.pod, namespace))
        return Status.success()

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=NAME)
        s: _PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, _missing(PRE_SCORE_STATE_KEY)
        if node.metadata.name in s.ignored:
            return 0, Status.success()
        labels = node.metadata.labels
        namespace = pod_info.pod.metadata.namespace
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = sum(1 for p in node_info.pods if c.counts(p.pod, namespace))
            else:
                cnt = s.counts[i].get(value, 0)
            total += cnt * s.weights[i] + (c.max_skew - 1)
        return math.floor(total + 0.5), Status.success()  # Go math.Round (total >= 0)

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        s: _PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return _missing(PRE_SCORE_STATE_KEY)
        valid = [ns.score for ns in scores if ns.name not in s.ignored]
        lo = min(valid, default=0)
        hi = max(valid, default=0)
        for ns in scores:
            if ns.name in s.ignored:
                ns.score = 0
            elif hi == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = MAX_NODE_SCORE * (hi + lo - ns.score) // hi
        return Status.success()

    # ---------------------------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Add / UpdatePodLabel / Delete of bound pods change counts; UpdatePodTolerations
            # of the rejected pod itself matters under nodeTaintsPolicy Honor.
            ClusterEventWithHint(
                ClusterEvent(
                    POD,
                    ActionType.ADD
                    | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATIONS
                    | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # A node add/delete/relabel/retaint may change the domains.
            ClusterEventWithHint(
                ClusterEvent(
                    NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
    ) -> QueueingHint:
        """Upstream isSchedulableAfterPodChange: only the pod itself or bound pods in its
        namespace matter; Queue when one that matches a hard constraint's selector appears
        or goes, when a label change flips a selector match, or when the pod itself gets new
        tolerations while a constraint honours taints."""
        for other in (old, new):
            if other is not None and not _involved(other, pod):
                return QueueingHint.SKIP
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            if (
                new.metadata.uid == pod.metadata.uid
                and list(new.spec.tolerations) != list(old.spec.tolerations)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(new.metadata.labels) == dict(old.metadata.labels):
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(old.metadata.labels) != c.selector.matches(
                    new.metadata.labels
                ):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = new if new is not None else old
        if changed is not None and any(
            c.selector.matches(changed.metadata.labels) for c in constraints
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
    ) -> QueueingHint:
        """Upstream isSchedulableAfterNodeChange: Queue when a node with every topology key
        appears or disappears, gains or loses the keys, changes a key's value or its taints."""
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        old_ok = old is not None and _keys_present(old.metadata.labels, constraints)
        new_ok = new is not None and _keys_present(new.metadata.labels, constraints)
        if old is not None and new is not None:
            if old_ok != new_ok:
                return QueueingHint.QUEUE
            if new_ok and (
                any(
                    old.metadata.labels.get(c.topology_key)
                    != new.metadata.labels.get(c.topology_key)
                    for c in constraints
                )
                or list(old.spec.taints) != list(new.spec.taints)
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if (new_ok or old_ok) else QueueingHint.SKIP


def _involved(other: core_pb2.Pod, pod: core_pb2.Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or a bound pod in its namespace."""
    return other.metadata.uid == pod.metadata.uid or (
        bool(other.spec.node_name) and other.metadata.namespace == pod.metadata.namespace
    )


def _missing(key: str) -> Status:
    return Status.as_error(KeyError(f"error reading {key!r} from cycleState"), plugin=NAME)


def new(args: Args | None, handle: Any) -> PodTopologySpread:
    return PodTopologySpread(args if args is not None else Args(), handle)
