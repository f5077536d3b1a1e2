"""InterPodAffinity: required affinity / anti-affinity / existing pods' anti-affinity, namespaces
and namespaceSelector, matchLabelKeys / mismatchLabelKeys, the first-pod-of-a-series rule,
preferred weights and their normalisation, queueing hints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, PodInfo, QueueingHint
from services.scheduler.plugins import interpodaffinity as ipa
from tests.builders import MakeNode, MakePod
from tests.scheduler.plugins._fakes import FakeHandle, fake_handle

Json = dict[str, Any]
ZONE = "zone"
HOST = "kubernetes.io/hostname"
AFF = ipa.ERR_REASON_AFFINITY_RULES_NOT_MATCH
ANTI = ipa.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
EXISTING = ipa.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH


# --------------------------------------------------------------------------- fixtures


def mk_pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    *,
    node: str = "",
    ns: str = "default",
    affinity: Json | None = None,
) -> core_pb2.Pod:
    p = MakePod().name(name).namespace(ns).uid(f"uid-{ns}-{name}").labels(labels or {}).node(node)
    if affinity:
        p.affinity(affinity)
    return p.obj()


def term(
    key: str,
    match_labels: dict[str, str] | None = None,
    *,
    exprs: list[Json] | None = None,
    **extra: Any,
) -> Json:
    sel: Json = {}
    if match_labels:
        sel["matchLabels"] = match_labels
    if exprs:
        sel["matchExpressions"] = exprs
    return {"labelSelector": sel, "topologyKey": key, **extra}


def weighted(weight: int, t: Json) -> Json:
    return {"weight": weight, "podAffinityTerm": t}


def required(*, aff: Sequence[Json] = (), anti: Sequence[Json] = ()) -> Json:
    out: Json = {}
    if aff:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(aff)}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    return out


def preferred(*, aff: Sequence[Json] = (), anti: Sequence[Json] = ()) -> Json:
    out: Json = {}
    if aff:
        out["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": list(aff)}
    if anti:
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": list(anti)}
    return out


def cluster(
    nodes: dict[str, dict[str, str]],
    pods: Sequence[core_pb2.Pod] = (),
    ns_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> FakeHandle:
    return fake_handle(
        [MakeNode().name(name).labels(labels).obj() for name, labels in nodes.items()],
        pods,
        ns_labels,
    )


def run_filter(handle: FakeHandle, pod: core_pb2.Pod) -> dict[str, tuple[Code, str]]:
    pl = ipa.new(ipa.Args(), handle)
    state = CycleState()
    pi = PodInfo(pod)
    nodes = handle.snapshot().list()
    _, st = pl.pre_filter(state, pi, nodes)
    assert st.is_success() or st.is_skip(), st
    out = {}
    for ni in nodes:
        s = pl.filter(state, pi, ni)
        out[ni.name] = (s.code, s.message)
    return out


OK = (Code.SUCCESS, "")


def rej(reason: str) -> tuple[Code, str]:
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if reason == AFF else Code.UNSCHEDULABLE
    return code, reason


# ----------------------------------------------------------------------------- Filter

THREE_NODES = {"n1": {ZONE: "z1", HOST: "n1"}, "n2": {ZONE: "z1", HOST: "n2"}, "n3": {ZONE: "z2"}}

FILTER_CASES = [
    pytest.param(
        THREE_NODES,
        [mk_pod("db", {"app": "db"}, node="n1")],
        mk_pod(labels={"app": "web"}, affinity=required(aff=[term(ZONE, {"app": "db"})])),
        {},
        {"n1": OK, "n2": OK, "n3": rej(AFF)},
        id="affinity co-locates in the zone of a matching pod, any node of that zone",
    ),
    pytest.param(
        {"n1": {ZONE: "z1"}, "n2": {"other": "x"}},
        [mk_pod("db", {"app": "db"}, node="n1")],
        mk_pod(affinity=required(aff=[term(ZONE, {"app": "db"})])),
        {},
        {"n1": OK, "n2": rej(AFF)},
        id="affinity rejects a node without the topology key as unresolvable",
    ),
    pytest.param(
        THREE_NODES,
        [
            mk_pod("db", {"app": "db"}, node="n1"),
            mk_pod("cache", {"app": "cache"}, node="n3"),
        ],
        mk_pod(affinity=required(aff=[term(ZONE, {"app": "db"}), term(ZONE, {"app": "cache"})])),
        {},
        {"n1": rej(AFF), "n2": rej(AFF), "n3": rej(AFF)},
        id="affinity needs one pod matching all terms, not one pod per term",
    ),
    pytest.param(
        THREE_NODES,
        [mk_pod("web1", {"app": "web"}, node="n1")],
        mk_pod(labels={"app": "web"}, affinity=required(anti=[term(HOST, {"app": "web"})])),
        {},
        {"n1": rej(ANTI), "n2": OK, "n3": OK},
        id="anti-affinity keeps off the node (hostname domain) running a matching pod",
    ),
    pytest.param(
        THREE_NODES,
        [mk_pod("web1", {"app": "web"}, node="n1")],
        mk_pod(labels={"app": "web"}, affinity=required(anti=[term(ZONE, {"app": "web"})])),
        {},
        {"n1": rej(ANTI), "n2": rej(ANTI), "n3": OK},
        id="anti-affinity by zone keeps off every node of the zone",
    ),
    # Upstream filtering_test.go, "verify that PodAntiAffinity from existing pod is respected
    # when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with
    # the existing pod".
    pytest.param(
        THREE_NODES,
        [
            mk_pod(
                "guard",
                {"app": "guard"},
                node="n1",
                affinity=required(anti=[term(ZONE, {"app": "web"})]),
            )
        ],
        mk_pod(labels={"app": "web"}),
        {},
        {"n1": rej(EXISTING), "n2": rej(EXISTING), "n3": OK},
        id="existing pod's required anti-affinity repels a matching incoming pod (symmetry)",
    ),
    pytest.param(
        THREE_NODES,
        [
            mk_pod(
                "guard",
                {"app": "guard"},
                node="n1",
                ns="other",
                affinity=required(anti=[term(ZONE, {"app": "web"})]),
            )
        ],
        mk_pod(labels={"app": "web"}),
        {},
        {"n1": OK, "n2": OK, "n3": OK},
        id="existing pod's anti-affinity term defaults to its own namespace",
    ),
    # Upstream filtering_test.go, "Does not satisfy the PodAffinity with labelSelector because
    # of diff Namespace".
    pytest.param(
        THREE_NODES,
        [mk_pod("db", {"app": "db"}, node="n1", ns="other")],
        mk_pod(affinity=required(aff=[term(ZONE, {"app": "db"})])),
        {},
        {"n1": rej(AFF), "n2": rej(AFF), "n3": rej(AFF)},
        id="affinity term without namespaces only sees the pod's own namespace",
    ),
    pytest.param(
        THREE_NODES,
        [mk_pod("db", {"app": "db"}, node="n1", ns="other")],
        mk_pod(affinity=required(aff=[term(ZONE, {"app": "db"}, namespaces=["other"])])),
        {},
        {"n1": OK, "n2": OK, "n3": rej(AFF)},
        id="affinity term's namespaces list selects pods there",
    ),
    pytest.param(
        THREE_NODES,
        [mk_pod("db", {"app": "db"}, node="n1", ns="other")],
        mk_pod(
            affinity=required(
                aff=[term(ZONE, {"app": "db"}, namespaceSelector={"matchLabels": {"team": "a"}})]
            )
        ),
        {"other": {"team": "a"}},
        {"n1": OK, "n2": OK, "n3": rej(AFF)},
        id="namespaceSelector matches the existing pod's namespace labels",
    ),
    pytest.param(
        THREE_NODES,
        [mk_pod("db", {"app": "db"}, node="n1", ns="other")],
        mk_pod(
            affinity=required(
                aff=[term(ZONE, {"app": "db"}, namespaceSelector={"matchLabels": {"team": "a"}})]
            )
        ),
        {"other": {"team": "b"}},
        {"n1": rej(AFF), "n2": rej(AFF), "n3": rej(AFF)},
        id="namespaceSelector not matching the namespace's labels selects nothing there",
    ),
    pytest.param(
        THREE_NODES,
        [mk_pod("db", {"app": "db"}, node="n3", ns="unknown-ns")],
        mk_pod(affinity=required(aff=[term(ZONE, {"app": "db"}, namespaceSelector={})])),
        {},
        {"n1": rej(AFF), "n2": rej(AFF), "n3": OK},
        id="empty namespaceSelector selects every namespace",
    ),
    pytest.param(
        THREE_NODES,
        [
            mk_pod(
                "guard",
                {"app": "guard"},
                node="n3",
                ns="other",
                affinity=required(
                    anti=[term(ZONE, {"app": "web"}, namespaceSelector={"matchLabels": {"t": "1"}})]
                ),
            )
        ],
        mk_pod(labels={"app": "web"}, ns="mine"),
        {"mine": {"t": "1"}},
        {"n1": OK, "n2": OK, "n3": rej(EXISTING)},
        id="existing pod's namespaceSelector matches the incoming pod's namespace labels",
    ),
    pytest.param(
        {"n1": {HOST: "n1"}, "n2": {HOST: "n2"}},
        [
            mk_pod("old", {"app": "web", "pod-template-hash": "v1"}, node="n1"),
            mk_pod("new", {"app": "web", "pod-template-hash": "v2"}, node="n2"),
        ],
        mk_pod(
            labels={"app": "web", "pod-template-hash": "v2"},
            affinity=required(
                aff=[term(HOST, {"app": "web"}, matchLabelKeys=["pod-template-hash"])]
            ),
        ),
        {},
        {"n1": rej(AFF), "n2": OK},
        id="matchLabelKeys narrows affinity to pods with the incoming pod's value",
    ),
    pytest.param(
        {"n1": {"pool": "p1"}, "n2": {"pool": "p2"}, "n3": {"pool": "p3"}},
        [
            mk_pod("b", {"tenant": "b"}, node="n1"),
            mk_pod("a", {"tenant": "a"}, node="n2"),
        ],
        mk_pod(
            labels={"tenant": "a"},
            affinity=required(
                anti=[
                    term(
                        "pool",
                        exprs=[{"key": "tenant", "operator": "Exists"}],
                        mismatchLabelKeys=["tenant"],
                    )
                ]
            ),
        ),
        {},
        {"n1": rej(ANTI), "n2": OK, "n3": OK},
        id="mismatchLabelKeys: anti-affinity only against other tenants' pods",
    ),
    # Upstream filtering_test.go, "satisfies the PodAffinity because of the first pod rule"
    # family (the pod matches its own terms and no pod in the cluster matches them).
    pytest.param(
        {"n1": {ZONE: "z1"}, "n2": {ZONE: "z2"}, "n3": {}},
        [mk_pod("other", {"app": "x"}, node="n1")],
        mk_pod(labels={"app": "db"}, affinity=required(aff=[term(ZONE, {"app": "db"})])),
        {},
        {"n1": OK, "n2": OK, "n3": rej(AFF)},
        id="first pod of a series: allowed on any node having all topology keys",
    ),
    pytest.param(
        {"n1": {ZONE: "z1"}, "n2": {ZONE: "z2"}},
        [],
        mk_pod(labels={"app": "web"}, affinity=required(aff=[term(ZONE, {"app": "db"})])),
        {},
        {"n1": rej(AFF), "n2": rej(AFF)},
        id="first-pod rule needs the pod to match its own terms",
    ),
    pytest.param(
        {"n1": {ZONE: "z1"}, "n2": {ZONE: "z2"}},
        [mk_pod("db", {"app": "db"}, node="n1")],
        mk_pod(labels={"app": "db"}, affinity=required(aff=[term(ZONE, {"app": "db"})])),
        {},
        {"n1": OK, "n2": rej(AFF)},
        id="first-pod rule off once any pod in the cluster matches",
    ),
    pytest.param(
        {"n1": {ZONE: "z1", HOST: "n1"}, "n2": {ZONE: "z1", HOST: "n2"}},
        [mk_pod("db", {"app": "db"}, node="n1")],
        mk_pod(
            labels={"app": "web"},
            affinity=required(aff=[term(ZONE, {"app": "db"})], anti=[term(HOST, {"app": "db"})]),
        ),
        {},
        {"n1": rej(ANTI), "n2": OK},
        id="affinity and anti-affinity together: same zone, other node",
    ),
]


@pytest.mark.parametrize("nodes,pods,incoming,ns_labels,want", FILTER_CASES)
def test_filter(
    nodes: dict[str, dict[str, str]],
    pods: list[core_pb2.Pod],
    incoming: core_pb2.Pod,
    ns_labels: dict[str, dict[str, str]],
    want: dict[str, tuple[Code, str]],
) -> None:
    assert run_filter(cluster(nodes, pods, ns_labels), incoming) == want


def test_pre_filter_skips_pod_without_terms_and_no_existing_anti_affinity() -> None:
    handle = cluster(THREE_NODES, [mk_pod("db", {"app": "db"}, node="n1")])
    pl = ipa.new(None, handle)
    state = CycleState()
    _, st = pl.pre_filter(state, PodInfo(mk_pod()), handle.snapshot().list())
    assert st.is_skip()
    # Filter run regardless still admits every node.
    assert all(
        pl.filter(state, PodInfo(mk_pod()), ni).is_success() for ni in handle.snapshot().list()
    )


def test_remove_pod_lifts_anti_affinity_for_preemption() -> None:
    victim = mk_pod("web1", {"app": "web"}, node="n1")
    handle = cluster(THREE_NODES, [victim])
    pl = ipa.new(None, handle)
    pi = PodInfo(
        mk_pod(labels={"app": "web"}, affinity=required(anti=[term(HOST, {"app": "web"})]))
    )
    state = CycleState()
    n1 = handle.snapshot().get("n1")
    assert n1 is not None
    pl.pre_filter(state, pi, handle.snapshot().list())
    assert pl.filter(state, pi, n1).code == Code.UNSCHEDULABLE
    trial = state.clone()
    assert pl.remove_pod(trial, pi, PodInfo(victim), n1).is_success()
    assert pl.filter(trial, pi, n1).is_success()
    assert pl.filter(state, pi, n1).code == Code.UNSCHEDULABLE  # the clone is independent
    assert pl.add_pod(trial, pi, PodInfo(victim), n1).is_success()
    assert pl.filter(trial, pi, n1).code == Code.UNSCHEDULABLE


# ------------------------------------------------------------------------------ Score


def run_score(
    handle: FakeHandle, pod: core_pb2.Pod, args: ipa.Args | None = None
) -> tuple[Status, dict[str, int], dict[str, int]]:
    """(PreScore status, raw scores, normalised scores)."""
    pl = ipa.new(args, handle)
    state = CycleState()
    pi = PodInfo(pod)
    nodes = handle.snapshot().list()
    st = pl.pre_score(state, pi, nodes)
    if not st.is_success():
        return st, {}, {}
    scores = []
    for ni in nodes:
        raw, s = pl.score(state, pi, ni)
        assert s.is_success()
        scores.append(NodeScore(ni.name, raw))
    raws = {ns.name: ns.score for ns in scores}
    assert pl.normalize_score(state, pi, scores).is_success()
    return st, raws, {ns.name: ns.score for ns in scores}


S1 = {"security": "S1"}
S2 = {"security": "S2"}
CHINA, INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}
STAY_WITH_S1_AWAY_FROM_S2 = preferred(
    aff=[weighted(8, term("region", S1))], anti=[weighted(5, term("az", S2))]
)
HARD_AFFINITY = required(
    aff=[
        term("region", exprs=[{"key": "security", "operator": "In", "values": ["S1", "value2"]}]),
        term(
            "region",
            exprs=[
                {"key": "security", "operator": "Exists"},
                {"key": "wrongkey", "operator": "DoesNotExist"},
            ],
        ),
    ]
)

SCORE_CASES = [
    # Upstream scoring_test.go TestPreferredAffinity, "Affinity: different Label operators and
    # values for pod affinity scheduling preference, including some match failures":
    # region China +2, India +8 +2, node3 has no region -> 2/10/0 -> 20/100/0.
    pytest.param(
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        [
            mk_pod("a", S1, node="node1"),
            mk_pod("b", S2, node="node2"),
            mk_pod("c", S1, node="node3"),
        ],
        mk_pod(
            labels=S1,
            affinity=preferred(
                aff=[
                    weighted(
                        8,
                        term(
                            "region",
                            exprs=[
                                {"key": "security", "operator": "NotIn", "values": ["S1"]},
                                {"key": "security", "operator": "In", "values": ["S2"]},
                            ],
                        ),
                    ),
                    weighted(
                        2,
                        term(
                            "region",
                            exprs=[
                                {"key": "security", "operator": "Exists"},
                                {"key": "wrongkey", "operator": "DoesNotExist"},
                            ],
                        ),
                    ),
                ]
            ),
        ),
        None,
        {"node1": 2, "node2": 10, "node3": 0},
        {"node1": 20, "node2": 100, "node3": 0},
        id="preferred weights sum per domain and normalise min-max (upstream)",
    ),
    # Upstream "Affinity and Anti Affinity and symmetry: considered only
    # preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity &
    # symmetry": weights 8, -5, 8 (symmetry), -5 (anti symmetry).
    pytest.param(
        {"node1": CHINA, "node2": AZ1, "node3": INDIA, "node4": AZ2},
        [
            mk_pod("a", S1, node="node1"),
            mk_pod("b", S2, node="node2"),
            mk_pod("c", node="node3", affinity=STAY_WITH_S1_AWAY_FROM_S2),
            mk_pod("d", node="node4", affinity=preferred(anti=[weighted(5, term("az", S1))])),
        ],
        mk_pod(labels=S1, affinity=STAY_WITH_S1_AWAY_FROM_S2),
        None,
        {"node1": 8, "node2": -5, "node3": 8, "node4": -5},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
        id="incoming and existing pods' preferred terms, affinity plus and anti minus (upstream)",
    ),
    # Upstream "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in
    # pod affinity symmetry": both existing pods carry two hard terms the incoming pod matches,
    # each counting hardPodAffinityWeight (1) in its region.
    pytest.param(
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        [
            mk_pod("a", S1, node="node1", affinity=HARD_AFFINITY),
            mk_pod("b", S2, node="node2", affinity=HARD_AFFINITY),
        ],
        mk_pod(labels=S1),
        None,
        {"node1": 2, "node2": 2, "node3": 0},
        {"node1": 100, "node2": 100, "node3": 0},
        id="existing pods' required affinity scores hardPodAffinityWeight (upstream)",
    ),
    pytest.param(
        {"node1": CHINA, "node2": INDIA, "node3": AZ1},
        [
            mk_pod(
                "a",
                S2,
                node="node1",
                affinity=required(aff=[term("region", S1)]),
            ),
            mk_pod("b", S2, node="node2", affinity=required(aff=[term("region", S1)])),
            mk_pod("c", S2, node="node2", affinity=required(aff=[term("region", S1)])),
        ],
        mk_pod(labels=S1),
        ipa.Args(hard_pod_affinity_weight=5),
        {"node1": 5, "node2": 10, "node3": 0},
        {"node1": 50, "node2": 100, "node3": 0},
        id="hardPodAffinityWeight scales per matching existing pod",
    ),
    pytest.param(
        {"n1": {ZONE: "z1"}, "n2": {ZONE: "z2"}, "n3": {"x": "y"}},
        [mk_pod("a", {"app": "db"}, node="n1"), mk_pod("b", {"app": "cache"}, node="n2")],
        mk_pod(
            affinity=preferred(
                aff=[
                    weighted(5, term(ZONE, {"app": "db"})),
                    weighted(3, term(ZONE, {"app": "db"})),
                ],
                anti=[weighted(2, term(ZONE, {"app": "cache"}))],
            )
        ),
        None,
        {"n1": 8, "n2": -2, "n3": 0},
        {"n1": 100, "n2": 0, "n3": 20},
        id="negative anti-affinity sums shift the minimum: 0 lands at 20",
    ),
    pytest.param(
        {"n1": {ZONE: "z1"}, "n2": {ZONE: "z2"}},
        [mk_pod("a", {"app": "db"}, node="n1", ns="other")],
        mk_pod(
            affinity=preferred(
                aff=[
                    weighted(
                        4, term(ZONE, {"app": "db"}, namespaceSelector={"matchLabels": {"t": "1"}})
                    )
                ]
            )
        ),
        None,
        None,
        None,
        id="preferred term whose namespaceSelector matches nothing: PreScore skips",
    ),
]


@pytest.mark.parametrize("nodes,pods,incoming,args,want_raw,want", SCORE_CASES)
def test_score(
    nodes: dict[str, dict[str, str]],
    pods: list[core_pb2.Pod],
    incoming: core_pb2.Pod,
    args: ipa.Args | None,
    want_raw: dict[str, int] | None,
    want: dict[str, int] | None,
) -> None:
    st, raw, got = run_score(cluster(nodes, pods), incoming, args)
    if want is None:
        assert st.is_skip()
        return
    assert st.is_success()
    assert raw == want_raw
    assert got == want


def test_hard_pod_affinity_weight_zero_ignores_existing_required_terms() -> None:
    handle = cluster(
        {"node1": CHINA, "node2": INDIA},
        [mk_pod("a", S2, node="node1", affinity=required(aff=[term("region", S1)]))],
    )
    st, _, _ = run_score(handle, mk_pod(labels=S1), ipa.Args(hard_pod_affinity_weight=0))
    assert st.is_skip()


@pytest.mark.parametrize(
    "incoming,skips",
    [
        pytest.param(mk_pod(labels=S1), True, id="ignore existing preferred terms: pod has none"),
        pytest.param(
            mk_pod(labels=S1, affinity=preferred(aff=[weighted(1, term("region", S2))])),
            False,
            id="ignore existing preferred terms: still scored when the pod has its own",
        ),
    ],
)
def test_ignore_preferred_terms_of_existing_pods(incoming: core_pb2.Pod, skips: bool) -> None:
    handle = cluster(
        {"node1": CHINA, "node2": INDIA},
        [
            mk_pod(
                "a", S2, node="node1", affinity=preferred(aff=[weighted(5, term("region", S1))])
            ),
        ],
    )
    st, _, got = run_score(handle, incoming, ipa.Args(ignore_preferred_terms_of_existing_pods=True))
    assert st.is_skip() == skips
    if not skips:
        assert got == {"node1": 100, "node2": 0}


def test_args_reject_hard_weight_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"not in valid range \[0, 100\]"):
        ipa.Args(hard_pod_affinity_weight=101)


# ----------------------------------------------------------------------------- hints

WANTS_DB = mk_pod(
    "w",
    {"app": "web"},
    affinity=required(aff=[term(ZONE, {"app": "db"})], anti=[term(HOST, {"app": "web"})]),
)


@pytest.mark.parametrize(
    "old,new,want",
    [
        pytest.param(
            None,
            mk_pod("db", {"app": "db"}, node="n1"),
            QueueingHint.QUEUE,
            id="bound pod matching our affinity added: queue",
        ),
        pytest.param(
            None, mk_pod("db", {"app": "db"}), QueueingHint.SKIP, id="unscheduled pod added: skip"
        ),
        pytest.param(
            None,
            mk_pod("x", {"app": "x"}, node="n1"),
            QueueingHint.SKIP,
            id="bound pod not matching our affinity added: skip",
        ),
        pytest.param(
            mk_pod("web", {"app": "web"}, node="n1"),
            None,
            QueueingHint.QUEUE,
            id="pod matching our anti-affinity deleted: queue",
        ),
        pytest.param(
            mk_pod(
                "g", {"app": "g"}, node="n1", affinity=required(anti=[term(ZONE, {"app": "web"})])
            ),
            None,
            QueueingHint.QUEUE,
            id="pod whose anti-affinity repelled us deleted: queue",
        ),
        pytest.param(
            mk_pod("x", {"app": "x"}, node="n1"),
            mk_pod("x", {"app": "db"}, node="n1"),
            QueueingHint.QUEUE,
            id="label update makes a bound pod match our affinity: queue",
        ),
        pytest.param(
            mk_pod("x", {"app": "web"}, node="n1"),
            mk_pod("x", {"app": "other"}, node="n1"),
            QueueingHint.QUEUE,
            id="label update stops a bound pod matching our anti-affinity: queue",
        ),
    ],
)
def test_pod_change_hint(
    old: core_pb2.Pod | None, new: core_pb2.Pod | None, want: QueueingHint
) -> None:
    pl = ipa.new(None, cluster({}))
    assert pl.is_schedulable_after_pod_change(WANTS_DB, old, new) == want


@pytest.mark.parametrize(
    "labels,want",
    [
        pytest.param(
            {ZONE: "z9"}, QueueingHint.QUEUE, id="node with an affinity topology key: queue"
        ),
        pytest.param({"other": "x"}, QueueingHint.SKIP, id="node without our topology keys: skip"),
    ],
)
def test_node_change_hint(labels: dict[str, str], want: QueueingHint) -> None:
    node = json_format.ParseDict({"metadata": {"name": "n9", "labels": labels}}, core_pb2.Node())
    pl = ipa.new(None, cluster({}))
    assert pl.is_schedulable_after_node_change(WANTS_DB, None, node) == want


# ------------------------------------------------- unparsable terms, nothing to score
# filtering_test.go "invalid Affinity/AntiAffinity fails PreFilter" and scoring_test.go
# "invalid Affinity/AntiAffinity fails PreScore": the plugin answers with a Status (a term
# stored without validation), nothing raises.

BAD_VALUE = term(
    "zone", exprs=[{"key": "security", "operator": "In", "values": ["{{.bad-value.}}"]}]
)
BAD_OPERATOR = term("zone", exprs=[{"key": "security", "operator": "Bogus", "values": ["a"]}])
BAD_VALUE_ERR = (
    'matchExpressions[0].values[0]: Invalid value: "{{.bad-value.}}": a valid label must be '
)
BAD_OPERATOR_ERR = (
    'matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector operator'
)

INVALID_REQUIRED = [
    pytest.param(required(aff=[BAD_VALUE]), BAD_VALUE_ERR, id="invalid affinity fails PreFilter"),
    pytest.param(
        required(anti=[BAD_VALUE]), BAD_VALUE_ERR, id="invalid anti-affinity fails PreFilter"
    ),
    pytest.param(
        required(aff=[BAD_OPERATOR]), BAD_OPERATOR_ERR, id="invalid operator fails PreFilter"
    ),
    pytest.param(
        preferred(aff=[weighted(1, BAD_VALUE)]),
        BAD_VALUE_ERR,
        id="an invalid preferred term fails PreFilter too (the pod cannot be parsed)",
    ),
]


@pytest.mark.parametrize(("affinity", "err"), INVALID_REQUIRED)
def test_unparsable_term_is_unresolvable_from_pre_filter(affinity: Json, err: str) -> None:
    handle = cluster({"node1": CHINA})
    pi = PodInfo(mk_pod(labels=S1, affinity=affinity))
    assert pi.problems == ()  # not the scheduler's InvalidPodError: the plugin's answer
    _, st = ipa.new(ipa.Args(), handle).pre_filter(CycleState(), pi, handle.snapshot().list())
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.plugin == ipa.NAME
    assert st.message.startswith("parsing pod: " + err)


INVALID_PREFERRED = [
    pytest.param(
        preferred(aff=[weighted(1, BAD_VALUE)]), BAD_VALUE_ERR, id="invalid affinity fails PreScore"
    ),
    pytest.param(
        preferred(anti=[weighted(1, BAD_VALUE)]),
        BAD_VALUE_ERR,
        id="invalid anti-affinity fails PreScore",
    ),
]


@pytest.mark.parametrize(("affinity", "err"), INVALID_PREFERRED)
def test_unparsable_term_is_an_error_from_pre_score(affinity: Json, err: str) -> None:
    handle = cluster({"node1": CHINA, "node2": INDIA})
    st, _, _ = run_score(handle, mk_pod(labels=S1, affinity=affinity))
    assert st.code == Code.ERROR
    assert st.plugin == ipa.NAME
    assert st.message.startswith("failed to parse pod: " + err)


def test_pre_score_skips_without_nodes() -> None:
    handle = cluster({"node1": CHINA})
    pi = PodInfo(mk_pod(labels=S1, affinity=STAY_WITH_S1_AWAY_FROM_S2))
    assert ipa.new(ipa.Args(), handle).pre_score(CycleState(), pi, []).is_skip()


SKIP_CASES = [
    pytest.param(
        [mk_pod("a", S1, node="node1")],
        mk_pod(labels=S1),
        id="no terms on the pod and no existing pod with affinity: Skip",
    ),
    pytest.param(
        [mk_pod("a", S2, node="node1", affinity=preferred(aff=[weighted(5, term("region", S2))]))],
        mk_pod(labels=S1),
        id="existing pods' terms that the pod does not match: Skip",
    ),
    pytest.param(
        [mk_pod("a", S1, node="node1")],
        mk_pod(labels=S1, affinity=required(aff=[term("region", S1)])),
        id="only required terms on the pod: nothing for Score, Skip",
    ),
]


@pytest.mark.parametrize(("pods", "incoming"), SKIP_CASES)
def test_pre_score_skips_when_nothing_to_score(
    pods: list[core_pb2.Pod], incoming: core_pb2.Pod
) -> None:
    st, _, _ = run_score(cluster({"node1": CHINA, "node2": INDIA}, pods), incoming)
    assert st.is_skip()
