"""The input limits of services/api/machinery/limits.py, shared by the apiserver and the CLI, and
the chunking that keeps kubera's own requests under them."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import any_pb2
from google.protobuf.descriptor import Descriptor

from kubera.cli import manifests
from kubera.errors import CliError
from services.api.machinery.kinds import KINDS
from services.api.machinery.limits import (
    MAX_BATCH_ITEMS,
    MAX_DEPTH,
    MAX_REQUEST_BYTES,
    DepthError,
    depth_exceeds,
    loads_json,
)
from services.apiserver.batch import BATCH_CHUNK, BATCH_CHUNK_BYTES, chunks
from services.client import batches


def nested(depth: int) -> Any:
    """`depth` levels: dicts and lists alternating, a scalar at the bottom."""
    value: Any = 1
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


@pytest.mark.parametrize(
    ("value", "exceeds"),
    [
        (1, False),
        ({}, False),
        (nested(MAX_DEPTH), False),
        (nested(MAX_DEPTH + 1), True),
        ({"wide": [{"x": 1}] * 10_000}, False),
        ([nested(3), nested(MAX_DEPTH + 1)], True),
    ],
    ids=["scalar", "empty", "at-the-cap", "one-past", "wide-not-deep", "deep-sibling"],
)
def test_depth_counts_nesting_levels_of_dicts_and_lists(value: Any, exceeds: bool) -> None:
    assert depth_exceeds(value) is exceeds


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 50_000])
def test_json_past_the_cap_is_a_depth_error_never_a_recursion_error(depth: int) -> None:
    with pytest.raises(
        DepthError, match=rf"^the patch is nested too deeply \(more than {MAX_DEPTH} levels\)$"
    ):
        loads_json("[" * depth + "]" * depth, "the patch")


@pytest.mark.parametrize(
    ("source", "depth"),
    [
        ("deep.json", MAX_DEPTH + 1),
        ("deep.json", 50_000),
        ("deep.yaml", MAX_DEPTH + 1),
        ("deep.yaml", 400),  # (PyYAML takes seconds past ~1,000 levels)
    ],
)
def test_the_cli_refuses_a_deep_manifest_with_the_same_cap(source: str, depth: int) -> None:
    text = "[" * depth + "]" * depth

    with pytest.raises(CliError) as e:
        manifests.parse(source, text)

    assert (
        str(e.value)
        == f"{source}: the document is nested too deeply (more than {MAX_DEPTH} levels)"
    )


def _depth(desc: Descriptor, seen: frozenset[str] = frozenset()) -> int:
    """JSON nesting levels of the deepest field path of a message (maps and lists count)."""
    if desc.full_name in seen or desc.full_name.startswith("google.protobuf."):
        return 1
    deepest = 0
    for f in desc.fields:
        extra = 1 if f.is_repeated else 0  # a list level (a map's own level is its entry)
        if f.message_type is None:
            deepest = max(deepest, extra)
        elif f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            sub = _depth(vf.message_type, seen | {desc.full_name}) if vf.message_type else 0
            deepest = max(deepest, 1 + sub)
        else:
            deepest = max(deepest, extra + _depth(f.message_type, seen | {desc.full_name}))
    return 1 + deepest


def test_every_kind_nests_well_inside_the_cap() -> None:
    deepest = max(_depth(k.message.DESCRIPTOR) for k in KINDS)
    assert deepest <= MAX_DEPTH // 4, deepest


def _anys(*sizes: int) -> list[any_pb2.Any]:
    return [any_pb2.Any(type_url="t", value=b"x" * n) for n in sizes]


@pytest.mark.parametrize(
    ("sizes", "want"),
    [
        ([], []),
        ([10] * (MAX_BATCH_ITEMS * 2 + 1), [MAX_BATCH_ITEMS, MAX_BATCH_ITEMS, 1]),
        ([MAX_REQUEST_BYTES // 3] * 4, [2, 2]),
        ([MAX_REQUEST_BYTES] + [10], [1, 1]),  # one over the cap alone: the server says so
    ],
    ids=["empty", "by-count", "by-bytes", "oversized-alone"],
)
def test_the_client_cuts_batches_under_the_item_and_byte_caps(
    sizes: list[int], want: list[int]
) -> None:
    got = [end - start for start, end in batches(_anys(*sizes))]
    assert got == want
    assert sum(got) == len(sizes)


@pytest.mark.parametrize(
    ("sizes", "want"),
    [
        ([1] * (BATCH_CHUNK + 1), [BATCH_CHUNK, 1]),
        ([BATCH_CHUNK_BYTES // 2 + 1] * 3, [1, 1, 1]),
        ([BATCH_CHUNK_BYTES * 2, 1, 1], [1, 2]),
    ],
    ids=["by-count", "by-bytes", "oversized-alone"],
)
def test_batch_txns_stay_under_etcd_limits(sizes: list[int], want: list[int]) -> None:
    assert [len(c) for c in chunks(sizes, lambda n: n)] == want
