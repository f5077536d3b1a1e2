"""A pod's required node affinity (nodeSelector + requiredDuringScheduling terms) as a matcher.

PodTopologySpread's nodeAffinityPolicy must decide whether a node *would* pass NodeAffinity
without depending on that plugin (upstream uses the shared component-helpers
`nodeaffinity.GetRequiredNodeAffinity`). This is that helper, private to the plugins package so
no plugin imports another. (Taint toleration, for nodeTaintsPolicy, is shared in helpers.)

Semantics follow upstream:
- nodeSelector: every key=value must be on the node.
- required node affinity: terms are ORed; within a term matchExpressions and matchFields are
  ANDed; a term with neither matches nothing; a term that does not parse (e.g. Gt with a
  non-integer) matches nothing (upstream's "lazy error" selector ignores such terms).
  matchFields supports `metadata.name` with In / NotIn and exactly one value.
"""

from __future__ import annotations

from collections.abc import Mapping

from protos.kubera.v1 import core_pb2
from services.api.labels import Requirement, SelectorError

_NODE_FIELDS = ("metadata.name",)


class _Term:
    """One NodeSelectorTerm, parsed once; `valid` is False when it cannot match anything."""

    __slots__ = ("exprs", "fields", "valid")

    def __init__(self, term: core_pb2.NodeSelectorTerm) -> None:
        self.exprs: list[Requirement] = []
        self.fields: list[tuple[str, bool, str]] = []  # (field, equal?, value)
        self.valid = bool(term.match_expressions or term.match_fields)
        try:
            for r in term.match_expressions:
                self.exprs.append(Requirement(r.key, r.operator, tuple(r.values)))
        except SelectorError:
            self.valid = False
        for r in term.match_fields:
            if r.operator not in ("In", "NotIn") or len(r.values) != 1:
                self.valid = False
                continue
            self.fields.append((r.key, r.operator == "In", r.values[0]))

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if not self.valid:
            return False
        for key, equal, value in self.fields:
            have = name if key in _NODE_FIELDS else ""
            if (have == value) != equal:
                return False
        return all(r.matches(labels) for r in self.exprs)


class RequiredNodeAffinity:
    """A pod's nodeSelector plus required node affinity, parsed once per pod
    (upstream nodeaffinity.RequiredNodeAffinity)."""

    __slots__ = ("_selector", "_terms")

    def __init__(self, pod: core_pb2.Pod) -> None:
        self._selector: dict[str, str] = dict(pod.spec.node_selector)
        self._terms: list[_Term] | None = None
        na = pod.spec.affinity.node_affinity
        if na.HasField("required_during_scheduling_ignored_during_execution"):
            req = na.required_during_scheduling_ignored_during_execution
            self._terms = [_Term(t) for t in req.node_selector_terms]

    def match(self, node: core_pb2.Node) -> bool:
        labels = node.metadata.labels
        for k, v in self._selector.items():
            if labels.get(k) != v:
                return False
        if self._terms is None:
            return True
        name = node.metadata.name
        return any(t.matches(labels, name) for t in self._terms)
