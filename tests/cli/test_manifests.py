"""Reading manifests: documents, lists, YAML as Kubernetes reads it, errors with positions."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from pathlib import Path

import pytest

from kubera.cli import manifests
from kubera.errors import CliError
from services.api.machinery import yamlload


def test_empty_documents_are_skipped_and_documents_keep_their_index() -> None:
    docs = manifests.parse("x.yaml", "---\n# only a comment\n---\na: 1\n---\n---\nb: 2\n")
    assert [(d.index, d.doc) for d in docs] == [(2, {"a": 1}), (4, {"b": 2})]
    assert docs[0].where == "x.yaml (document 2)"


def test_a_single_document_is_named_by_its_file_alone() -> None:
    (doc,) = manifests.parse("x.yaml", "kind: Pod\nmetadata: {name: a}\n")
    assert (doc.where, doc.what) == ("x.yaml", 'Pod "a"')


def test_a_list_is_expanded_into_its_items() -> None:
    docs = manifests.parse("l.yaml", "kind: List\nitems:\n- {kind: Pod}\n- {kind: Node}\n")
    assert [d.doc["kind"] for d in docs] == ["Pod", "Node"]
    assert docs[1].where == "l.yaml (items[1])"


def test_timestamps_stay_strings_as_in_kubernetes() -> None:
    (doc,) = manifests.parse("x.yaml", "a: 2024-01-01\nb: 2024-01-01T00:00:00Z\n")
    assert doc.doc == {"a": "2024-01-01", "b": "2024-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("x.yaml", "a: b: c\n", "x.yaml: line 1, column 5: mapping values are not allowed here"),
        ("x.yaml", "a: [1, 2\n", "x.yaml: line 2, column 1:"),
        ("x.yaml", "a: 1\na: 2\n", 'x.yaml: line 2, column 1: mapping key "a" already defined'),
        ("x.json", '{"a": }', "x.json: line 1, column 7: Expecting value"),
        ("x.yaml", "kind: List\nitems: 3\n", "x.yaml: a List's items must be an array"),
        (
            "x.yaml",
            "a: 1\nb: \x07\n",
            "x.yaml: line 2, column 4: unacceptable character #x0007: special characters",
        ),
        ("x.yaml", "\x00", "x.yaml: line 1, column 1: unacceptable character #x0000"),
    ],
)
def test_unreadable_manifests_name_the_file_and_position(
    name: str, text: str, message: str
) -> None:
    with pytest.raises(CliError) as e:
        manifests.parse(name, text)
    assert str(e.value).startswith(message)


def test_directories_are_read_sorted_and_recursively_only_with_r(tmp_path: Path) -> None:
    for rel in ("b.yaml", "a.json", "c.yml", "skip.txt", "sub/d.yaml"):
        p = tmp_path / rel
        p.parent.mkdir(exist_ok=True)
        p.write_text(json.dumps({"kind": rel}))
    flat = manifests.load([str(tmp_path)])
    assert [d.doc["kind"] for d in flat] == ["a.json", "b.yaml", "c.yml"]
    deep = manifests.load([str(tmp_path)], recursive=True)
    assert [d.doc["kind"] for d in deep][-1] == "sub/d.yaml"


def test_stdin_is_read_for_dash() -> None:
    docs = manifests.load(["-"], stdin=io.StringIO("kind: Pod\n"))
    assert docs[0].source == "STDIN"


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("true", "strict"),
        ("warn", "warn"),
        ("strict", "strict"),
        ("false", "ignore"),
        ("ignore", "ignore"),
    ],
)
def test_validate_accepts_kubectls_spellings(text: str, mode: str) -> None:
    assert manifests.validate_mode(text) == mode


def test_unknown_fields_are_warned_about_with_their_source() -> None:
    (doc,) = manifests.parse(
        "p.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {foo: 1, containers: []}\n",
    )
    err = io.StringIO()
    (m,) = manifests.decode_all([doc], "warn", warn=err)
    assert m.unknown_fields == ("spec.foo",)
    assert err.getvalue() == 'Warning: unknown field "spec.foo" in p.yaml (Pod "p")\n'
    err = io.StringIO()
    manifests.decode_all([doc], "ignore", warn=err)
    assert err.getvalue() == ""


# ------------------------------------------------------------- aliasing
# go-yaml's alias budget (yaml.v2/v3 decode.go), which kubectl reads YAML with; the
# documents are go-yaml's own test cases (decode_test.go, limit_test.go) where they fit
# in a fast test.

#: decode_test.go's "billion laughs": 9 levels of 9 aliases, ~387 million nodes expanded.
LAUGHS = "a: &a [00,00,00,00,00,00,00,00,00]\n" + "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def _maps(kib: int) -> str:
    """limit_test.go's "N kb of maps": one anchored list of single-key maps, no alias."""
    return "a: &a [{a}" + ",{a}" * (kib * 1024 // 4 - 1) + "]"


def _aliases(anchored: int, aliases: int) -> str:
    """An anchored list of `anchored` scalars referenced `aliases` times."""
    return f"a: &a [{', '.join(['x'] * anchored)}]\nb: [{', '.join(['*a'] * aliases)}]\n"


@pytest.mark.parametrize(
    ("decodes", "ratio"),
    [
        (0, 0.99),
        (400_000, 0.99),
        (2_200_000, 0.545),
        (4_000_000, 0.10),
        (40_000_000, 0.10),
    ],
)
def test_the_allowed_alias_ratio_tapers_from_99_to_10_percent_as_go_yaml(
    decodes: int, ratio: float
) -> None:
    assert yamlload.allowed_alias_ratio(decodes) == pytest.approx(ratio)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            LAUGHS,
            # d's 4th alias: 4,630 of 4,671 decode operations aliased (> 99%), as go-yaml
            # counts them (one per node, an alias as one plus its target's expanded size).
            "laughs.yaml (document 1): line 4, column 17: document contains excessive aliasing "
            "(4,630 of 4,671 nodes so far come from aliases; at most 99% may)",
        ),
        (
            "kind: Pod\n---\n" + LAUGHS,
            "laughs.yaml (document 2): line 6, column 17: document contains excessive aliasing",
        ),
        (
            "a: &x {b: *x}\n",
            "laughs.yaml (document 1): line 1, column 11: anchor 'x' value contains itself",
        ),
        (
            "a: &x [1, [2, *x]]\n",
            "laughs.yaml (document 1): line 1, column 15: anchor 'x' value contains itself",
        ),
    ],
    ids=["billion-laughs", "second-document-named", "self-containing-map", "nested-self"],
)
def test_excessive_aliasing_is_refused_in_one_line_naming_file_and_document(
    text: str, message: str
) -> None:
    with pytest.raises(CliError) as e:
        manifests.parse("laughs.yaml", text)
    assert str(e.value).startswith(message)
    assert "\n" not in str(e.value)


def _refuse_bomb() -> tuple[float, int]:
    """Parse a bomb of 12 levels of 10 aliases (10^12 nodes expanded), which must be
    refused; the seconds it took and the peak of the bytes allocated meanwhile."""
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*{prev}'] * 10)}]\n"
        for i, prev in enumerate(["a"] + [f"l{i}" for i in range(11)])
    )
    assert len(bomb) < 1024
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(CliError, match="excessive aliasing"):
            manifests.parse("bomb.yaml", bomb)
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return elapsed, peak


def test_a_bomb_is_refused_before_it_is_expanded() -> None:
    """12 levels of 10 aliases (10^12 nodes expanded): refused in KiB."""
    _, peak = _refuse_bomb()
    assert peak < 2 * 1024 * 1024


@pytest.mark.bench  # a wall-clock bound: run with -m bench on a quiet machine
def test_a_bomb_is_refused_in_milliseconds() -> None:
    elapsed, _ = _refuse_bomb()
    assert elapsed < 1.0


@pytest.mark.parametrize(
    "text",
    [
        _maps(1),
        _maps(10),
        _aliases(49, 100),  # 5,000 of 5,156 nodes from aliases: 97%
        _aliases(9, 90),  # 900 aliased, 1,005 in all: 89.6%
        _aliases(1000, 1),  # one alias, a large target
        LAUGHS.split("d:")[0],  # the first three levels of the laughs: 990 of 1,027
    ],
    ids=["1kb-of-maps", "10kb-of-maps", "97-percent", "90-percent", "one-big-alias", "3-levels"],
)
def test_aliasing_within_the_budget_is_read(text: str) -> None:
    (doc,) = manifests.parse("ok.yaml", text)
    assert isinstance(doc.doc, dict)


def test_anchors_and_merge_keys_in_a_real_manifest_still_work() -> None:
    text = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &labels {app: web, tier: front}
spec:
  replicas: 2
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers:
      - &app
        name: app
        image: registry.k8s.io/pause:3.9
        resources: &res
          requests: {cpu: 100m, memory: 64Mi}
      - <<: *app
        name: sidecar
        resources:
          <<: *res
          limits: {cpu: 200m}
"""
    (m,) = manifests.decode_all(manifests.parse("web.yaml", text), "strict")
    spec = m.obj.spec  # type: ignore[attr-defined]
    assert dict(spec.selector.match_labels) == {"app": "web", "tier": "front"}
    assert dict(spec.template.metadata.labels) == {"app": "web", "tier": "front"}
    sidecar = spec.template.spec.containers[1]
    assert (sidecar.name, sidecar.image) == ("sidecar", "registry.k8s.io/pause:3.9")
    assert sidecar.resources.requests["cpu"] == "100m"
    assert sidecar.resources.limits["cpu"] == "200m"


def test_a_field_name_with_a_newline_is_named_in_one_line() -> None:
    docs = manifests.parse(
        "x.yaml", 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nspec: {"a\\nb": 1}\n'
    )
    with pytest.raises(CliError) as e:
        manifests.decode_all(docs, "strict")
    assert (
        str(e.value) == 'x.yaml: Namespace "a": strict decoding error: unknown field "spec.a\\nb"'
    )
    err = io.StringIO()
    manifests.decode_all(docs, "warn", warn=err)
    assert err.getvalue().count("\n") == 1
