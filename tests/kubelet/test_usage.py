"""The per-pod usage model (kubera.io/usage): shapes, clipping, spikes and the sine wave,
errors that name the field path, template defaults by label, and the numpy table whose
per-node totals must equal the sum of every pod's own curve."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.api.helpers.usage import (
    RESOURCES,
    USAGE_ANNOTATION,
    ResourceUsage,
    UsageModel,
    UsageSpecError,
    parse_usage,
)
from services.kubelet import eviction as ev
from services.kubelet.usage import UsageTable, first_over, resolve_usage
from tests.profiles import examples

Mi, Gi = 2**20, 2**30


def model(spec: dict[str, object]) -> UsageModel:
    return parse_usage(json.dumps(spec))


# ======================================================================= curves

CURVES = [
    ("constant without a rate", {"start": "200Mi"}, [(0, 200 * Mi), (3600, 200 * Mi)]),
    ("a bare quantity is a constant", "1Gi", [(0, Gi), (1e6, Gi)]),
    (
        "linear growth per simulated second",
        {"start": "100Mi", "ratePerSecond": "10Mi"},
        [(0, 100 * Mi), (1, 110 * Mi), (2.5, 125 * Mi), (100, 1100 * Mi)],
    ),
    (
        "clipped to max",
        {"start": "200Mi", "ratePerSecond": "2Gi", "max": "8Gi"},
        [(0, 200 * Mi), (1, 200 * Mi + 2 * Gi), (4, 8 * Gi), (1e9, 8 * Gi)],
    ),
    (
        "a negative rate shrinks to zero and no further",
        {"start": "1Gi", "ratePerSecond": "-256Mi"},
        [(0, Gi), (2, 512 * Mi), (4, 0), (100, 0)],
    ),
    (
        "fractional units round down",
        {"start": "0", "ratePerSecond": "500m"},
        [(0, 0), (1, 0), (2, 1), (3, 1), (7, 3)],
    ),
    (
        "before the start time the curve is at its start",
        {"start": "5", "ratePerSecond": "1"},
        [(-10, 5), (0, 5)],
    ),
    (
        "a spike adds while at <= t < at + for",
        {"start": "100Mi", "spikes": [{"at": 30, "for": 10, "amount": "1Gi"}]},
        [(29.9, 100 * Mi), (30, 100 * Mi + Gi), (39.9, 100 * Mi + Gi), (40, 100 * Mi)],
    ),
    (
        "overlapping spikes add up and still respect max",
        {
            "start": "1Gi",
            "max": "3Gi",
            "spikes": [
                {"at": 0, "for": 10, "amount": "1Gi"},
                {"at": 5, "for": 10, "amount": "4Gi"},
            ],
        },
        [(1, 2 * Gi), (6, 3 * Gi), (12, 3 * Gi), (15, Gi)],
    ),
    (
        "periodic is a sine: zero at 0, amplitude at a quarter period, minus at three quarters",
        {"start": "1Gi", "periodic": {"periodSeconds": 60, "amplitude": "256Mi"}},
        [(0, Gi), (15, Gi + 256 * Mi), (30, Gi), (45, Gi - 256 * Mi), (60, Gi)],
    ),
    (
        "a sine below zero is clipped to zero",
        {"start": "10", "periodic": {"periodSeconds": 4, "amplitude": "100"}},
        [(3, 0), (1, 110)],
    ),
]


@pytest.mark.parametrize(("rule", "spec", "points"), CURVES, ids=[c[0] for c in CURVES])
def test_usage_curve(rule: str, spec: object, points: list[tuple[float, int]]) -> None:
    m = model({"memory": spec})
    for t, expected in points:
        got = m.at(t)["memory"]
        # sin(π) is 1.2e-16, not 0: allow the one unit a sine can round to
        assert abs(got - expected) <= (1 if "periodic" in str(spec) else 0), (rule, t, got)


def test_every_resource_is_reported_and_missing_ones_are_zero() -> None:
    m = model({"pids": "12", "inodes": {"start": "1k", "ratePerSecond": "10"}})
    assert m.at(10) == {"memory": 0, "ephemeral-storage": 0, "inodes": 1100, "pids": 12}
    assert UsageModel().at(100) == dict.fromkeys(RESOURCES, 0)


def test_parsed_text_is_cached_and_models_are_equal_by_value() -> None:
    text = json.dumps({"memory": {"start": "1Gi"}})
    assert parse_usage(text) is parse_usage(text)
    assert parse_usage({"memory": "1Gi"}) == parse_usage(text)


# ======================================================================= errors

ERRORS = [
    ({"memory": {"ratePerSecond": "fast"}}, 'memory.ratePerSecond: "fast": expected a quantity'),
    ({"memory": {"start": "-1Mi"}}, 'memory.start: "-1Mi": must not be negative'),
    ({"memory": {"max": True}}, "memory.max: True: expected a quantity"),
    ({"cpu": "1"}, "cpu: unknown resource; expected one of memory, ephemeral-storage"),
    ({"memory": {"rate": "1Mi"}}, "memory.rate: unknown field; expected one of start"),
    ({"memory": ["1Gi"]}, "memory: ['1Gi']: expected an object"),
    ({"memory": {"spikes": {"at": 1}}}, "memory.spikes: {'at': 1}: expected a list"),
    ({"memory": {"spikes": [{"at": 1, "for": 2}]}}, "memory.spikes[0].amount: required"),
    (
        {"memory": {"spikes": [{"at": -1, "for": 2, "amount": "1"}]}},
        "memory.spikes[0].at: -1: must be at least 0",
    ),
    (
        {"memory": {"spikes": [{"at": 1, "for": 0, "amount": "1"}]}},
        "memory.spikes[0].for: 0: must be positive",
    ),
    (
        {"memory": {"spikes": [{"at": "soon", "for": 1, "amount": "1"}]}},
        'memory.spikes[0].at: "soon": expected a number of seconds',
    ),
    (
        {"pids": {"periodic": {"periodSeconds": 0, "amplitude": "1"}}},
        "pids.periodic.periodSeconds: 0: must be positive",
    ),
    (
        {"pids": {"periodic": {"periodSeconds": 10}}},
        "pids.periodic.amplitude: required",
    ),
    (
        {"pids": {"periodic": {"periodSeconds": 10, "amplitude": "1", "phase": 2}}},
        "pids.periodic.phase: unknown field",
    ),
    # what would overflow the model's float sums (inf, then nan) or its timers
    (
        {"memory": "1e400"},
        'memory: "1e400": must be at most 9223372036854775807m (kubera holds quantities',
    ),
    (
        {"memory": {"ratePerSecond": "-1e400"}},
        'memory.ratePerSecond: "-1e400": must be at most 9223372036854775807m',
    ),
    (
        {"memory": {"spikes": [{"at": 0, "for": 1, "amount": "99999999999999999999999"}]}},
        'memory.spikes[0].amount: "99999999999999999999999": must be at most',
    ),
    (
        {"memory": {"spikes": [{"at": 1e300, "for": 1, "amount": "1"}]}},
        "memory.spikes[0].at: 1e+300: must be at most 2147483647 (kubera's limit)",
    ),
    (
        {"pids": {"periodic": {"periodSeconds": 1e-320, "amplitude": "1"}}},
        "pids.periodic.periodSeconds: 1e-320: must be at least 0.001 (kubera's limit)",
    ),
]


@pytest.mark.parametrize(("spec", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_spec_errors_name_the_field_path(spec: dict[str, object], message: str) -> None:
    with pytest.raises(UsageSpecError) as info:
        parse_usage(json.dumps(spec))
    assert str(info.value).startswith("kubera.io/usage: ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"memory": NaN}', 'kubera.io/usage: memory: nan: expected a quantity like "200Mi"'),
        ('{"memory": Infinity}', 'kubera.io/usage: memory: inf: expected a quantity like "200Mi"'),
        ("{memory: 1}", "kubera.io/usage: invalid JSON"),
        ('["memory"]', "kubera.io/usage: ['memory']: expected a JSON object"),
    ],
)
def test_annotation_must_be_a_json_object(text: str, message: str) -> None:
    with pytest.raises(UsageSpecError, match=message.replace("[", r"\[")):
        parse_usage(text)


# ===================================================================== defaults

DEFAULTS = [
    ({"app": "db"}, {"memory": {"start": "4Gi"}, "ephemeral-storage": "20Gi"}),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}, {"pids": "50"}),
    ({}, {"memory": "64Mi", "pids": "5"}),
]


@pytest.mark.parametrize(
    ("rule", "annotations", "labels", "expected"),
    [
        (
            "first matching default",
            {},
            {"app": "db", "tier": "web"},
            {"memory": 4 * Gi, "ephemeral-storage": 20 * Gi, "inodes": 0, "pids": 0},
        ),
        (
            "matchExpressions selectors work",
            {},
            {"tier": "web"},
            {"memory": 0, "ephemeral-storage": 0, "inodes": 0, "pids": 50},
        ),
        (
            "the empty selector matches everything",
            {},
            {"app": "cache"},
            {"memory": 64 * Mi, "ephemeral-storage": 0, "inodes": 0, "pids": 5},
        ),
        (
            "the annotation wins per resource, the default fills the rest",
            {USAGE_ANNOTATION: json.dumps({"memory": "1Gi", "inodes": "7"})},
            {"app": "db"},
            {"memory": Gi, "ephemeral-storage": 20 * Gi, "inodes": 7, "pids": 0},
        ),
    ],
)
def test_resolve_usage(
    rule: str,
    annotations: dict[str, str],
    labels: dict[str, str],
    expected: dict[str, int],
) -> None:
    assert resolve_usage(annotations, labels, DEFAULTS).at(0) == expected, rule


def test_no_annotation_and_no_matching_default_is_zero_usage() -> None:
    m = resolve_usage({}, {"app": "x"}, [({"app": "y"}, {"memory": "1Gi"})])
    assert m.is_empty
    assert m.at(100) == dict.fromkeys(RESOURCES, 0)


def test_bad_default_spec_is_reported_with_its_index() -> None:
    with pytest.raises(UsageSpecError, match=r"usageDefaults\[1\]\.usage: memory\.start"):
        resolve_usage({}, {"app": "x"}, [({"app": "y"}, {}), ({}, {"memory": {"start": "much"}})])


def test_bad_annotation_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="kubera.io/usage: memory"):
        resolve_usage({USAGE_ANNOTATION: '{"memory": "lots"}'}, {}, [])


# ======================================================================== table


def test_table_tracks_pods_per_node() -> None:
    table = UsageTable(capacity=1)  # forces growth
    table.add("a", 0, model({"memory": "1Gi"}), started_at=100.0)
    table.add("b", 2, model({"memory": {"start": "1Mi", "ratePerSecond": "1Mi"}}), 100.0)
    table.add("c", 2, model({"pids": "3"}), 150.0)
    totals = table.node_totals(110.0)
    assert list(totals["memory"]) == [Gi, 0, 11 * Mi]
    assert list(totals["pids"]) == [0, 0, 3]
    assert totals["memory"].dtype == np.int64
    assert table.pods_on_node(2) == {"b", "c"}
    assert len(table) == 3 and "a" in table


def test_removed_pods_no_longer_count_and_their_slot_is_reused() -> None:
    table = UsageTable(capacity=2)
    table.add("a", 0, model({"memory": "1Gi"}), 0.0)
    table.add("b", 0, model({"memory": "2Gi"}), 0.0)
    assert table.remove("a") is True
    assert table.remove("a") is False
    assert list(table.node_totals(0.0)["memory"]) == [2 * Gi]
    table.add("c", 1, model({"memory": "3Gi"}), 0.0)
    assert list(table.node_totals(0.0)["memory"]) == [2 * Gi, 3 * Gi]
    assert table.pod_usage("a", 0.0) == dict.fromkeys(RESOURCES, 0)


def test_adding_a_key_again_replaces_it() -> None:
    table = UsageTable()
    table.add("a", 0, model({"memory": "1Gi"}), 0.0)
    table.add("a", 1, model({"memory": "2Gi", "pids": "4"}), 0.0)
    totals = table.node_totals(0.0)
    assert list(totals["memory"]) == [0, 2 * Gi]
    assert table.pods_on_node(0) == set()
    assert table.pod_usage("a", 5.0)["pids"] == 4


def test_node_totals_length_can_be_fixed() -> None:
    table = UsageTable()
    table.add("a", 5, model({"memory": "1Gi"}), 0.0)
    assert len(table.node_totals(0.0)["memory"]) == 6
    assert list(table.node_totals(0.0, num_nodes=3)["memory"]) == [0, 0, 0]
    assert list(UsageTable().node_totals(0.0, num_nodes=2)["pids"]) == [0, 0]


quantities = st.integers(min_value=0, max_value=64 * Gi)
rates = st.integers(min_value=-64 * Mi, max_value=256 * Mi)
spike = st.fixed_dictionaries(
    {
        "at": st.integers(min_value=0, max_value=600),
        "for": st.integers(min_value=1, max_value=300),
        "amount": st.integers(min_value=-Gi, max_value=4 * Gi),
    }
)
resource_spec = st.fixed_dictionaries(
    {"start": quantities, "ratePerSecond": rates},
    optional={
        "max": quantities,
        "spikes": st.lists(spike, max_size=3),
        "periodic": st.fixed_dictionaries(
            {
                "periodSeconds": st.integers(min_value=1, max_value=900),
                "amplitude": st.integers(min_value=0, max_value=Gi),
            }
        ),
    },
)
usage_spec = st.dictionaries(st.sampled_from(RESOURCES), resource_spec)
pods_strategy = st.lists(
    st.tuples(
        usage_spec,
        st.integers(min_value=0, max_value=7),  # node index
        st.floats(min_value=0, max_value=1000, allow_nan=False),  # started at
    ),
    max_size=40,
)


@settings(max_examples=examples(150), deadline=None)
@given(
    pods=pods_strategy,
    now=st.floats(min_value=0, max_value=2000, allow_nan=False),
    removed=st.sets(st.integers(min_value=0, max_value=39), max_size=10),
)
def test_node_totals_equal_the_sum_of_each_pods_own_curve(
    pods: list[tuple[dict[str, object], int, float]], now: float, removed: set[int]
) -> None:
    table = UsageTable(capacity=4)
    expected = {r: [0] * 8 for r in RESOURCES}
    for i, (spec, node_index, started_at) in enumerate(pods):
        m = parse_usage(spec)
        table.add(f"p{i}", node_index, m, started_at)
        if i in removed:
            continue
        for r, v in m.at(now - started_at).items():
            expected[r][node_index] += v
    for i in removed:
        table.remove(f"p{i}")
    totals = table.node_totals(now, num_nodes=8)
    for r in RESOURCES:
        assert totals[r].tolist() == expected[r], r
    for i, (spec, _, started_at) in enumerate(pods):
        if i not in removed:
            assert table.pod_usage(f"p{i}", now) == parse_usage(spec).at(now - started_at)


def test_resource_usage_at_is_never_negative_nor_above_max() -> None:
    u = ResourceUsage(start=10.0, rate=-3.0, max=20.0, periodic=None)
    assert [u.at(t) for t in (0, 3, 4, 100)] == [10, 1, 0, 0]
    u = ResourceUsage(start=10.0, rate=3.0, max=20.0)
    assert u.at(1e12) == 20
    assert ResourceUsage(start=0, rate=1e30).at(1e30) == 2**62


def test_table_keeps_up_with_a_large_pool() -> None:
    rng = np.random.default_rng(7)
    table = UsageTable()
    linear = model({"memory": {"start": "100Mi", "ratePerSecond": "1Mi", "max": "2Gi"}})
    spiky = model({"memory": {"start": "100Mi", "spikes": [{"at": 5, "for": 5, "amount": "1Gi"}]}})
    nodes = rng.integers(0, 2000, size=30_000)
    for i, n in enumerate(nodes):
        table.add(f"p{i}", int(n), spiky if i % 100 == 0 else linear, 0.0)
    totals = table.node_totals(7.0, num_nodes=2000)
    expected = sum(m.at(7.0)["memory"] for m in [spiky] * 300 + [linear] * 29_700)
    assert int(totals["memory"].sum()) == expected


def test_pod_stats_built_from_a_usage_model() -> None:
    # The pool feeds the manager from the model: memory, ephemeral storage, inodes, pids.
    u = model({"memory": "3Gi", "ephemeral-storage": "2Gi", "pids": "40"}).at(0)
    p = ev.PodStats(
        key="ns/a",
        memory=u["memory"],
        ephemeral_storage=u["ephemeral-storage"],
        inodes=u["inodes"],
        pids=u["pids"],
        memory_request=Gi,
        containers=["app"],
    )
    assert ev.rank_memory_pressure([ev.PodStats("ns/idle"), p])[0] is p
    assert math.isclose(
        ev.pod_disk_usage(p, ev.rank_measures(ev.NODEFS_AVAILABLE, ev.FsLayout.SEPARATE_IMAGEFS))[
            0
        ],
        2 * Gi,
    )


@pytest.mark.parametrize(
    ("spec", "limit", "expected"),
    [
        ({"memory": {"start": "32Mi", "ratePerSecond": "1Mi"}}, 64 * 2**20, 32.0 + 2**-20),
        ({"memory": {"start": "80Mi"}}, 64 * 2**20, 0.0),
        ({"memory": {"start": "32Mi"}}, 64 * 2**20, None),
        ({"memory": {"start": "32Mi", "ratePerSecond": "1Mi", "max": "64Mi"}}, 64 * 2**20, None),
        (
            {"memory": {"start": "32Mi", "spikes": [{"at": 40, "for": 5, "amount": "64Mi"}]}},
            64 * 2**20,
            40.0,
        ),
        (
            {"memory": {"start": "32Mi", "periodic": {"periodSeconds": 60, "amplitude": "64Mi"}}},
            64 * 2**20,
            6.0,
        ),
        ({"pids": "10"}, 64 * 2**20, None),
    ],
    ids=[
        "linear",
        "over-at-start",
        "constant-under",
        "capped-at-the-limit",
        "spike",
        "wave",
        "no-memory",
    ],
)
def test_first_over_finds_when_usage_passes_a_limit(
    spec: dict, limit: float, expected: float | None
) -> None:
    """The time the OOM kill is queued for: exact for a line, the spike's start, the first
    whole second of a wave above the limit."""
    got = first_over(parse_usage(json.dumps(spec)), "memory", limit)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)
        assert parse_usage(json.dumps(spec)).at(got)["memory"] > limit
