"""DynamicResources Score (upstream dynamicresources.go Score/computeScore/NormalizeScore):
a firstAvailable request scores 8 - i for the subrequest i its allocation used, summed over
requests and claims; an allocated claim counts with its own allocation; the best node
normalizes to 100; the DRAPrioritizedList gate off scores nothing. The rows restate
computeScore's cases as data; then the plugin over the real Allocator on two nodes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format

from protos.kubera.v1 import resource_pb2
from services.api.features import DRA_PRIORITIZED_LIST
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.dynamicresources import Args, DynamicResources
from services.scheduler.plugins.dynamicresources.scoring import compute_score
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker
from tests.builders import (
    MakeNode,
    MakePod,
    device_class,
    exact_request,
    gpu,
    resource_claim,
    resource_slice,
)
from tests.scheduler.plugins.dynamicresources._fakes import FakeHandle

Json = dict[str, Any]
NS, CLASS = "default", "gpu"


def first(name: str, *subs: str) -> Json:
    return {"name": name, "firstAvailable": [{"name": s, "deviceClassName": CLASS} for s in subs]}


def claim(name: str, *requests: Json) -> resource_pb2.ResourceClaim:
    return resource_claim(name, NS, *requests)


def allocation(*requests: str) -> resource_pb2.AllocationResult:
    """An allocation whose results name `requests` (request or request/subrequest)."""
    results = [
        {"request": r, "driver": "d", "pool": "p", "device": f"dev-{i}"}
        for i, r in enumerate(requests)
    ]
    return json_format.ParseDict({"devices": {"results": results}}, resource_pb2.AllocationResult())


def allocated(c: resource_pb2.ResourceClaim, *requests: str) -> resource_pb2.ResourceClaim:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    out.status.allocation.CopyFrom(allocation(*requests))
    return out


THREE = first("req-0", "sub-0", "sub-1", "sub-2")
EIGHT = first("req-0", *(f"sub-{i}" for i in range(8)))
PLAIN = claim("plain", exact_request("req-0", CLASS))
ONE_LIST = claim("one", THREE)
TWO_LISTS = claim("two", THREE, first("req-1", "sub-0", "sub-1"))
MIXED = claim("mixed", exact_request("req-0", CLASS), first("req-1", "sub-0", "sub-1"))

# (claims, claims allocated in this cycle, Filter's allocations on the node, score)
ROWS: dict[str, tuple[list[Any], list[Any], list[Any], int]] = {
    "exact-requests-score-nothing": ([PLAIN], [PLAIN], [allocation("req-0")], 0),
    "first-subrequest-scores-8": ([ONE_LIST], [ONE_LIST], [allocation("req-0/sub-0")], 8),
    "second-subrequest-scores-7": ([ONE_LIST], [ONE_LIST], [allocation("req-0/sub-1")], 7),
    "third-subrequest-scores-6": ([ONE_LIST], [ONE_LIST], [allocation("req-0/sub-2")], 6),
    "last-of-eight-scores-1": (
        [claim("eight", EIGHT)],
        None,  # filled below: the claim itself
        [allocation("req-0/sub-7")],
        1,
    ),
    "two-lists-in-one-claim-add-up": (
        [TWO_LISTS],
        [TWO_LISTS],
        [allocation("req-0/sub-0", "req-1/sub-1")],
        8 + 7,
    ),
    "exact-request-beside-a-list-counts-the-list-only": (
        [MIXED],
        [MIXED],
        [allocation("req-0", "req-1/sub-1")],
        7,
    ),
    "a-subrequest-with-several-devices-counts-once": (
        [ONE_LIST],
        [ONE_LIST],
        [allocation("req-0/sub-1", "req-0/sub-1")],
        7,
    ),
    "claims-add-up": (
        [ONE_LIST, TWO_LISTS],
        [ONE_LIST, TWO_LISTS],
        [allocation("req-0/sub-2"), allocation("req-0/sub-0", "req-1/sub-0")],
        6 + 8 + 8,
    ),
    # upstream's fix for claims allocated in an earlier cycle (e.g. a pod group's):
    # their own allocation counts, and Filter's allocations index the others only.
    "allocated-claim-counts-with-its-own-allocation": (
        [allocated(TWO_LISTS, "req-0/sub-1", "req-1/sub-1"), ONE_LIST],
        [ONE_LIST],
        [allocation("req-0/sub-0")],
        7 + 7 + 8,
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_compute_score(name: str) -> None:
    claims, to_allocate, allocations, want = ROWS[name]
    assert compute_score(claims, to_allocate or claims, allocations) == want


def test_fewer_allocations_than_claims_to_allocate_is_an_error() -> None:
    with pytest.raises(ValueError, match="smaller than number of claims"):
        compute_score([ONE_LIST, TWO_LISTS], [ONE_LIST, TWO_LISTS], [allocation("req-0/sub-0")])


# ------------------------------------------------------------------- the plugin, two nodes

BIG, SMALL = "big-gpu", "small-gpu"
BIG_CLASS = device_class(BIG, 'device.attributes["gpu.example.com"].model == "H100"')
SMALL_CLASS = device_class(SMALL, 'device.attributes["gpu.example.com"].model == "T4"')
PREFER_BIG = resource_claim(
    "c",
    NS,
    {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": BIG},
            {"name": "small", "deviceClassName": SMALL},
        ],
    },
)
NODES = ("node-big", "node-small", "node-both")
SLICES = [
    resource_slice("s-big", node="node-big", devices=[gpu("g0", model="H100")]),
    resource_slice("s-small", node="node-small", devices=[gpu("g0", model="T4")]),
    resource_slice(
        "s-both", node="node-both", devices=[gpu("g0", model="T4"), gpu("g1", model="H100")]
    ),
]


def plugin(gates: dict[str, bool] | None = None) -> DynamicResources:
    return DynamicResources(
        Args(),
        claims={f"{NS}/c": PREFER_BIG},
        slices={s.metadata.name: s for s in SLICES},
        classes={c.metadata.name: c for c in (BIG_CLASS, SMALL_CLASS)},
        handle=FakeHandle(),
        tracker=ClaimTracker({f"{NS}/c": PREFER_BIG}),
        gates=gates,
    )


def scores(pl: DynamicResources, pod: Any) -> dict[str, int]:
    """PreFilter, Filter on every node, Score and NormalizeScore (the NodeScore-list form and
    the row form must agree)."""
    state, pi = CycleState(), PodInfo(pod)
    nodes = [NodeInfo(MakeNode().name(n).obj()) for n in NODES]
    _, st = pl.pre_filter(state, pi, nodes)
    assert st.is_success() or st.is_skip(), st
    for ni in nodes:
        assert pl.filter(state, pi, ni).is_success()
    raw = []
    for ni in nodes:
        s, st = pl.score(state, pi, ni)
        assert st.is_success(), st
        raw.append(NodeScore(ni.name, s))
    rows = pl.score_rows(state, pi, object(), np.arange(len(nodes)))
    assert rows is None or rows.tolist() == [ns.score for ns in raw]
    by_rows = pl.normalize_rows(state, pi, np.array([ns.score for ns in raw], np.int64))
    assert pl.normalize_score(state, pi, raw).is_success()
    assert by_rows.tolist() == [ns.score for ns in raw]
    return {ns.name: ns.score for ns in raw}


POD = MakePod().name("p").namespace(NS).uid("u").resource_claim("gpu", claim="c").obj()


def test_the_node_that_fits_the_first_alternative_scores_best() -> None:
    # 8 points where big-gpu was allocated, 7 where only small-gpu was: 100 and 87.
    assert scores(plugin(), POD) == {"node-big": 100, "node-small": 87, "node-both": 100}


def test_gate_off_scores_every_node_zero() -> None:
    # Off, a firstAvailable request is an allocation error; no node scores anything.
    pl = plugin({DRA_PRIORITIZED_LIST: False})
    state, pi = CycleState(), PodInfo(POD)
    node = NodeInfo(MakeNode().name("node-big").obj())
    pl.pre_filter(state, pi, [node])
    assert pl.score(state, pi, node)[0] == 0
    assert pl.score_rows(state, pi, object(), np.arange(1)).tolist() == [0]


def test_a_pod_without_claims_scores_zero_without_per_node_calls() -> None:
    pl = plugin()
    state, pod = CycleState(), MakePod().name("q").namespace(NS).uid("v").obj()
    pi = PodInfo(pod)
    _, st = pl.pre_filter(state, pi, [])
    assert st.is_skip()
    assert pl.score_rows(state, pi, object(), np.arange(3)).tolist() == [0, 0, 0]
    got, st = pl.score(state, pi, NodeInfo(MakeNode().name("n").obj()))
    assert (got, st.is_success()) == (0, True)
