"""PodTopologySpread's common part (upstream podtopologyspread/common.go): its args, the
constraints as evaluated, and which nodes count.

A constraint (maxSkew, topologyKey, whenUnsatisfiable, labelSelector, minDomains,
matchLabelKeys, nodeAffinityPolicy, nodeTaintsPolicy) counts, per domain (a value of
topologyKey), the pods in the incoming pod's namespace that its selector matches (terminating
pods excluded; an empty selector counts nothing, a missing one matches nothing, both as
upstream). matchLabelKeys add `key=<incoming pod's value>` to the selector.

Which nodes count: only nodes carrying *every* constraint's topology key; and, per constraint,
with nodeAffinityPolicy Honor (the default) only nodes the pod's nodeSelector / required node
affinity admits, with nodeTaintsPolicy Honor (default Ignore) only nodes whose NoSchedule /
NoExecute taints the pod tolerates. Those nodes' domains are the eligible domains.

Default constraints apply to pods that set none. defaultingType System uses upstream's
(hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway, and nodes need not carry both keys
to be scored); List uses Args.default_constraints. The spread group of default constraints
is upstream's helper.DefaultSelector (`default_selector` with `WorkloadListers`): the merged
selectors of the Services in the pod's namespace that select it, plus the selector of its
controlling ReplicaSet or StatefulSet (ReplicationControllers are not served); an empty
result means no default constraints. Without listers (a handle with no informers, as in the
framework's unit tests) the group is approximated: a pod with an ownerReference of kind
ReplicaSet, StatefulSet or ReplicationController spreads with the pods carrying all of its
labels (`Selector.from_set(pod labels)`; a controller's pods share its template labels, and
its selector is a subset of them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.helpers.nodeaffinity import RequiredNodeAffinity
from services.api.helpers.taints import find_matching_untolerated_taint
from services.api.helpers.wellknown import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from services.api.machinery.labels import Requirement, Selector, SelectorError, from_label_selector
from services.scheduler.framework.status import Status
from services.scheduler.plugins.helpers import do_not_schedule_taints_filter

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

#: Owner kinds whose pods get default constraints (upstream: plus Services, see above).
DEFAULTED_OWNER_KINDS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


def system_default_constraints() -> list[core_pb2.TopologySpreadConstraint]:
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


def build_constraint(
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


@dataclass(frozen=True)
class WorkloadListers:
    """The stores (``namespace/name`` -> object) DefaultSelector reads: the scheduler's
    informers of Services, ReplicaSets and (when served) StatefulSets."""

    services: Mapping[str, Any]
    replica_sets: Mapping[str, Any]
    stateful_sets: Mapping[str, Any] | None = None


#: The owners whose selector DefaultSelector adds: (apiVersion, kind) -> WorkloadListers field.
_SELECTOR_OWNERS = {
    ("apps/v1", "ReplicaSet"): "replica_sets",
    ("apps/v1", "StatefulSet"): "stateful_sets",
}


def default_selector(pod: core_pb2.Pod, listers: WorkloadListers | None = None) -> Selector:
    """The spread group for default constraints (see the module docstring); empty: none."""
    meta = pod.metadata
    if listers is None:
        if not meta.labels or not any(
            o.kind in DEFAULTED_OWNER_KINDS for o in meta.owner_references
        ):
            return Selector()
        try:
            return Selector.from_set(dict(meta.labels))
        except SelectorError:
            return Selector()
    merged: dict[str, str] = {}
    prefix = f"{meta.namespace}/"
    for key, svc in listers.services.items():
        # GetPodServices: a service without selector selects nothing.
        selects = key.startswith(prefix) and bool(svc.spec.selector)
        if selects and Selector.from_set(svc.spec.selector).matches(meta.labels):
            merged.update(svc.spec.selector)
    selector = Selector.from_set(merged)
    owner = next(
        (o for o in meta.owner_references if o.HasField("controller") and o.controller), None
    )
    field_name = _SELECTOR_OWNERS.get((owner.api_version, owner.kind)) if owner else None
    store = getattr(listers, field_name) if field_name else None
    workload = store.get(prefix + owner.name) if store is not None and owner else None
    if workload is not None:
        sel = workload.spec.selector
        try:
            other = from_label_selector(
                dict(sel.match_labels),
                [(e.key, e.operator, tuple(e.values)) for e in sel.match_expressions],
            )
        except SelectorError:
            return selector
        selector = Selector((*selector.requirements, *other.requirements))
    return selector


def keys_present(labels: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints: every constraint's key is on the node."""
    return all(c.topology_key in labels for c in constraints)


class NodeEligibility:
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


def missing_state(key: str) -> Status:
    return Status.as_error(KeyError(f"error reading {key!r} from cycleState"), plugin=NAME)
