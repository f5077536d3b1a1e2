"""Reading YAML the way Kubernetes does (sigs.k8s.io/yaml over go-yaml), for everything a
user hands kubera as YAML: manifests (`kubera apply`), node templates and
KubeSchedulerConfigurations. Timestamps stay strings, duplicate keys are errors, and
aliases are budgeted as go-yaml budgets them, so a 400-byte "billion laughs" document is
refused while it is composed, before anything is expanded.
"""

from __future__ import annotations

from typing import Any

import yaml

from services.api.machinery.limits import DepthError

#: go-yaml's alias budget (yaml.v2/v3 decode.go, what kubectl reads YAML with through
#: sigs.k8s.io/yaml): once a document has made more than 1,000 decode operations and more
#: than 100 of them came from expanding aliases, the share from aliases may be at most
#: 99% up to 400,000 operations, tapering linearly to 10% at 4,000,000 and beyond.
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
_MIN_ALIAS_COUNT = 100
_MIN_DECODE_COUNT = 1000


def allowed_alias_ratio(decode_count: int) -> float:
    """The share of a document's decode operations that may come from aliases (go-yaml's
    allowedAliasRatio)."""
    if decode_count <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * (decode_count - ALIAS_RATIO_RANGE_LOW) / span


class KubeLoader(yaml.SafeLoader):
    """SafeLoader as Kubernetes reads YAML: timestamps stay strings (sigs.k8s.io/yaml turns
    them into JSON strings, and the API's time fields are strings), duplicate keys are
    errors (as in go-yaml) instead of the last one silently winning (a key may still
    override one merged in with `<<`), and aliases are budgeted as go-yaml budgets them.

    PyYAML shares an aliased node instead of copying it, so loading a "billion laughs"
    document is cheap, but everything after it (the codec, the apply merge, JSON) walks
    the expanded tree. So the composer counts, per document and without expanding
    anything, the decode operations go-yaml would make: one per node, and for an alias
    one plus the expanded size of the node it names (every node under it counting as
    aliased). The expanded size of an anchored node is known once it is composed (the
    count it added), so the check is O(document) and refuses a bomb at its first alias
    over the budget, before any construction. An alias to a node that is still being
    composed (`a: &x {b: *x}`) is refused too, as go-yaml v3 refuses it; PyYAML would
    build a cycle that nothing downstream can walk. (One difference: go-yaml does not
    count a `<<` merge key itself; here it is one operation like any key.)"""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        #: 1-based index of the document being composed (for error messages).
        self.document_index = 0
        self._decodes = 0
        self._aliased = 0
        #: Expanded size of each anchored node composed so far in this document.
        self._sizes: dict[str, int] = {}
        #: Set when the alias budget (or a self-containing anchor) refused the document.
        self.aliasing_refused = False

    def compose_document(self) -> yaml.Node | None:
        self.document_index += 1
        self._decodes = 1  # go-yaml's document node
        self._aliased = 0
        self._sizes = {}
        return super().compose_document()  # type: ignore[no-untyped-call,no-any-return]

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = event.anchor
        if isinstance(event, yaml.AliasEvent):
            if anchor in self.anchors:  # an unknown one is the base class's error
                size = self._sizes.get(anchor)
                if size is None:
                    self.aliasing_refused = True
                    raise yaml.composer.ComposerError(
                        None, None, f"anchor {anchor!r} value contains itself", event.start_mark
                    )
                self._count(1 + size, size, event.start_mark)
            return super().compose_node(parent, index)  # type: ignore[no-untyped-call,no-any-return]
        before = self._decodes
        self._count(1, 0, event.start_mark)
        node: yaml.Node = super().compose_node(parent, index)  # type: ignore[no-untyped-call]
        if anchor is not None:
            self._sizes[anchor] = self._decodes - before
        return node

    def _count(self, decodes: int, aliased: int, mark: yaml.Mark) -> None:
        self._decodes += decodes
        self._aliased += aliased
        if (
            self._aliased > _MIN_ALIAS_COUNT
            and self._decodes > _MIN_DECODE_COUNT
            and self._aliased / self._decodes > allowed_alias_ratio(self._decodes)
        ):
            self.aliasing_refused = True
            raise yaml.composer.ComposerError(
                None,
                None,
                f"document contains excessive aliasing ({self._aliased:,} of "
                f"{self._decodes:,} nodes so far come from aliases; at most "
                f"{allowed_alias_ratio(self._decodes):.0%} may)",
                mark,
            )

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<`: merged keys may be overridden (the base class merges)
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key; the base class reports it
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f'mapping key "{key}" already defined at line {first.start_mark.line + 1}',
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def safe_load(text: str) -> Any:
    """The one document of `text` (None when empty), read by KubeLoader. Every refusal is
    a yaml.YAMLError (too deep a document included), so callers keep one except clause."""
    loader = KubeLoader(text)
    try:
        return loader.get_single_data()  # type: ignore[no-untyped-call]
    except RecursionError:
        raise yaml.YAMLError(str(DepthError("the document"))) from None
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]
