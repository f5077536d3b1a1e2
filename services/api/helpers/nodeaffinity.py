"""Node selectors and a pod's required node affinity as matchers (upstream
k8s.io/component-helpers/scheduling/corev1/nodeaffinity).

The scheduler's NodeAffinity (Filter, Score, addedAffinity) and PodTopologySpread
(nodeAffinityPolicy) must agree on whether a node matches, so the matcher lives here once:

- nodeSelector: every label must be present with that value;
- required terms are ORed, the expressions (and fields) inside a term ANDed; an empty term
  matches nothing, and so does a term that fails to parse (an unknown operator, Gt/Lt with a
  non-integer value, a matchFields In/NotIn with other than one value) — lazily, the other
  terms still count (LazyErrorNodeSelector);
- matchFields knows `metadata.name`; a node without a name has no fields, and then field
  requirements are not checked (upstream extractNodeFields + nodeSelectorTerm.match);
- preferred terms add their weight when they match (weight 0 and empty terms are ignored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protos.kubera.v1 import core_pb2
from services.api.machinery.labels import Requirement, Selector, SelectorError

OBJECT_NAME_FIELD = "metadata.name"

_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


class NodeSelectorError(ValueError):
    """A node selector term that cannot be parsed."""


class _Term:
    """One parsed NodeSelectorTerm: a label selector and `metadata.name`-style field tests."""

    __slots__ = ("labels", "fields", "error")

    def __init__(self, term: core_pb2.NodeSelectorTerm) -> None:
        self.labels: Selector | None = None
        self.fields: tuple[tuple[str, bool, str], ...] = ()
        self.error: str | None = None
        try:
            if term.match_expressions:
                self.labels = Selector(tuple(_label_requirement(r) for r in term.match_expressions))
            self.fields = tuple(_field_requirement(r) for r in term.match_fields)
        except (SelectorError, NodeSelectorError) as err:
            self.error = str(err)

    def match(self, labels: Mapping[str, str], name: str) -> bool:
        """Parse errors are the caller's to check (`error`); such a term never matches."""
        if self.error is not None:
            return False
        if self.labels is not None and not self.labels.matches(labels):
            return False
        # Upstream compares fields only when the node has some (i.e. a name).
        if name and self.fields:
            for key, equal, value in self.fields:
                have = name if key == OBJECT_NAME_FIELD else ""
                if (have == value) != equal:
                    return False
        return True


def _label_requirement(r: core_pb2.NodeSelectorRequirement) -> Requirement:
    if r.operator not in _LABEL_OPERATORS:
        raise NodeSelectorError(f'"{r.operator}" is not a valid node selector operator')
    return Requirement(r.key, r.operator, tuple(r.values))


def _field_requirement(r: core_pb2.NodeSelectorRequirement) -> tuple[str, bool, str]:
    if r.operator not in ("In", "NotIn"):
        raise NodeSelectorError(f'"{r.operator}" is not a valid node field selector operator')
    if len(r.values) != 1:
        raise NodeSelectorError(
            f"unexpected number of value ({len(r.values)}) for node field selector "
            f'operator "{r.operator}"'
        )
    return r.key, r.operator == "In", r.values[0]


def _is_empty_term(term: core_pb2.NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


class NodeSelector:
    """A v1.NodeSelector made ready to match: terms ORed, empty terms dropped (they select
    nothing). Lazy about errors like upstream's LazyErrorNodeSelector: a bad term only fails
    itself; `match_with_error` reports errors when no term matched."""

    __slots__ = ("terms",)

    def __init__(self, ns: core_pb2.NodeSelector) -> None:
        self.terms = [_Term(t) for t in ns.node_selector_terms if not _is_empty_term(t)]

    @classmethod
    def strict(cls, ns: core_pb2.NodeSelector) -> NodeSelector:
        """NewNodeSelector: all parse errors up front (for configuration)."""
        sel = cls(ns)
        errors = [t.error for t in sel.terms if t.error is not None]
        if errors:
            raise NodeSelectorError("; ".join(errors))
        return sel

    def match_with_error(self, node: core_pb2.Node) -> tuple[bool, bool]:
        labels, name = node.metadata.labels, node.metadata.name
        errored = False
        for t in self.terms:
            if t.error is not None:
                errored = True
                continue
            if t.match(labels, name):
                return True, False
        return False, errored

    def match(self, node: core_pb2.Node) -> bool:
        return self.match_with_error(node)[0]


class RequiredNodeAffinity:
    """nodeSelector AND required node affinity of one pod (GetRequiredNodeAffinity)."""

    __slots__ = ("label_selector", "node_selector")

    def __init__(self, pod: core_pb2.Pod) -> None:
        self.label_selector: dict[str, str] | None = (
            dict(pod.spec.node_selector) if pod.spec.node_selector else None
        )
        self.node_selector: NodeSelector | None = None
        if has_required_node_affinity(pod):
            self.node_selector = NodeSelector(
                pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            )

    def match_with_error(self, node: core_pb2.Node) -> tuple[bool, bool]:
        if self.label_selector is not None:
            labels = node.metadata.labels
            for k, v in self.label_selector.items():
                if k not in labels or labels[k] != v:
                    return False, False
        if self.node_selector is not None:
            return self.node_selector.match_with_error(node)
        return True, False

    def match(self, node: core_pb2.Node) -> bool:
        """Parse errors are ignored (a bad term just does not match), as the Filter does."""
        return self.match_with_error(node)[0]


def get_required_node_affinity(pod: core_pb2.Pod) -> RequiredNodeAffinity:
    return RequiredNodeAffinity(pod)


class PreferredSchedulingTerms:
    """Weighted preferred terms; a node's score is the sum of the weights of matching terms."""

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[core_pb2.PreferredSchedulingTerm]) -> None:
        parsed: list[tuple[_Term, int]] = []
        errors: list[str] = []
        for t in terms:
            if t.weight == 0 or _is_empty_term(t.preference):
                continue
            term = _Term(t.preference)
            if term.error is not None:
                errors.append(term.error)
            else:
                parsed.append((term, t.weight))
        if errors:
            raise NodeSelectorError("; ".join(errors))
        self.terms = parsed

    def score(self, node: core_pb2.Node) -> int:
        labels, name = node.metadata.labels, node.metadata.name
        return sum(w for term, w in self.terms if term.match(labels, name))


def has_required_node_affinity(pod: core_pb2.Pod) -> bool:
    spec = pod.spec
    return (
        spec.HasField("affinity")
        and spec.affinity.HasField("node_affinity")
        and spec.affinity.node_affinity.HasField(
            "required_during_scheduling_ignored_during_execution"
        )
    )
