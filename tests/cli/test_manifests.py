"""Reading manifests: documents, lists, YAML as Kubernetes reads it, errors with positions."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kubera import manifests
from kubera.errors import CliError


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
        ("true", "warn"),
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
