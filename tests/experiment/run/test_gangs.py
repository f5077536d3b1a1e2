"""The time to a whole gang bound (measures.PodTimeline.gangs), its DataItem
(kubera_gang_latency), and the DRA and gang experiment files: they load, and plan to
scheduler_perf's shapes."""

from __future__ import annotations

from typing import Any

import pytest

from kubera.experiment.measure.dataitems import kubera_items
from kubera.experiment.measure.measures import (
    POD_GROUP_LABEL,
    SCHEDULING_GROUP_KEY,
    PodTimeline,
    groups_short,
)
from kubera.experiment.measure.model import ExperimentResult, RunResult
from kubera.experiment.measure.verdict import summary
from kubera.experiment.run import dra
from kubera.experiment.run.runner import RunOptions, cluster_args
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import load, plan
from kubera.experiment.spec.objects import pod_doc, to_message
from services.kubelet.template import load_template, plan_nodes
from tests.experiment.configfiles import EXAMPLES, runs

# A recorded pod timeline: (uid, namespace, group or None, sent, first seen, bound or None).
RECORDED = [
    ("a0", "gangs", "gang-0", 1.0, 1.1, 2.0),
    ("a1", "gangs", "gang-0", 1.2, 1.3, 2.5),
    ("a2", "gangs", "gang-0", 1.4, 1.5, 3.0),  # gang-0: 1.0 → 3.0
    ("b0", "gangs", "gang-1", 4.0, 4.1, 4.5),
    ("b1", "gangs", "gang-1", 4.0, 4.1, None),  # gang-1: one member never bound
    ("c0", "other", "gang-0", 5.0, 5.1, 5.25),  # the same name in another namespace
    ("p0", "gangs", None, 0.5, 0.6, 0.7),  # not in a gang
]


def timeline(rows: list[tuple[Any, ...]] = RECORDED) -> PodTimeline:
    t = PodTimeline()
    for uid, ns, group, sent, seen, bound in rows:
        labels = {POD_GROUP_LABEL: group} if group else {}
        t.sent([f"{ns}/{uid}"], sent)
        t.observe(uid, f"{ns}/{uid}", "", "Pending", seen, labels)
        if bound is not None:
            t.observe(uid, f"{ns}/{uid}", "node-1", "Pending", bound, labels)
    return t


def test_a_gang_is_timed_from_its_first_member_sent_to_its_last_member_bound() -> None:
    gangs = {g.key: g for g in timeline().gangs()}
    assert sorted(gangs) == ["gangs/gang-0", "gangs/gang-1", "other/gang-0"]
    assert (gangs["gangs/gang-0"].first_created, gangs["gangs/gang-0"].last_bound) == (1.0, 3.0)
    assert (gangs["gangs/gang-1"].members, gangs["gangs/gang-1"].bound) == (2, 1)
    assert gangs["gangs/gang-1"].last_bound is None
    assert timeline().gang_latencies() == [2.0, 0.25]  # gang-1 is not whole: left out


def test_a_member_deleted_before_it_was_bound_left_its_gang() -> None:
    t = timeline()
    t.deleted("b1", 6.0)
    assert timeline().gang_latencies() == [2.0, 0.25]
    assert t.gang_latencies() == [2.0, 0.5, 0.25]  # gang-1 is now b0 alone: 4.0 → 4.5
    t.deleted("a2", 7.0)  # bound, then deleted: still the gang's
    assert t.gang_latencies() == [2.0, 0.5, 0.25]


def test_pods_without_the_label_make_no_gang() -> None:
    rows = [r for r in RECORDED if r[2] is None]
    assert timeline(rows).gangs() == []
    assert timeline(rows).gang_latencies() == []


@pytest.mark.parametrize(
    ("want", "bound", "short"),
    [
        ({"gangs/g0": 3}, {"gangs/g0": 3}, []),
        ({"gangs/g0": 3}, {"gangs/g0": 2}, ["gangs/g0"]),
        ({"gangs/g0": 3, "gangs/g1": 1}, {}, ["gangs/g0", "gangs/g1"]),
        ({"gangs/g0": 0}, {}, []),  # minMember 0: nothing to wait for
        ({"gangs/g0": 1}, {"other/g0": 5}, ["gangs/g0"]),  # namespaces apart
    ],
)
def test_wait_for_pod_groups_waits_for_groups_short_of_min_member(
    want: dict[str, int], bound: dict[str, int], short: list[str]
) -> None:
    assert groups_short(want, bound) == short


def test_bound_by_group_counts_each_groups_bound_pods() -> None:
    assert timeline().bound_by_group() == {"gangs/gang-0": 3, "gangs/gang-1": 1, "other/gang-0": 1}


def test_the_gang_data_item_reports_percentiles_max_and_count_in_ms() -> None:
    run = RunResult(id="GangScheduling/w", test_case="GangScheduling", workload="w")
    run.latency["gang"] = [float(i) for i in range(1, 101)]  # 1 s … 100 s
    (item,) = [i for i in kubera_items(run) if i.metric == "kubera_gang_latency"]
    assert item.unit == "ms"
    assert item.labels["Name"] == "GangScheduling/w"
    assert item.data["Perc50"] == 50_000.0
    assert item.data["Perc90"] == 90_000.0
    assert item.data["Perc99"] == 99_000.0
    assert item.data["Max"] == 100_000.0
    assert item.data["Count"] == 100.0
    assert RunResult.from_json(run.to_json()).latency["gang"] == run.latency["gang"]


def test_the_summary_table_says_how_fast_whole_gangs_were_bound() -> None:
    gangs = RunResult(id="G/w", test_case="G", workload="w", latency={"gang": [0.5, 1.0, 2.0]})
    plain = RunResult(id="P/w", test_case="P", workload="w", latency={"scheduling": [0.1]})
    table = summary(ExperimentResult(config="x.yaml", started="now", runs=[plain, gangs]))
    assert table.caption == (
        "G/w: whole gang bound in p50 1,000.0 ms, p90 2,000.0, p99 2,000.0, max 2,000.0 (3 gangs)"
    )
    no_gangs = summary(ExperimentResult(config="x.yaml", started="now", runs=[plain]))
    assert no_gangs.caption is None


def test_pods_of_a_scheduling_k8s_io_pod_group_make_a_gang_by_its_name() -> None:
    """spec.schedulingGroup.podGroupName: the collector keeps it under SCHEDULING_GROUP_KEY."""
    t = PodTimeline()
    for uid, sent, bound in (("g0", 1.0, 2.0), ("g1", 1.5, 2.5)):
        labels = {SCHEDULING_GROUP_KEY: "gang-0"}
        t.sent([f"ns/{uid}"], sent)
        t.observe(uid, f"ns/{uid}", "node-1", "Pending", bound, labels)
    assert [(g.key, g.members, g.first_created, g.last_bound) for g in t.gangs()] == [
        ("ns/gang-0", 2, 1.0, 2.5)
    ]
    assert t.gang_latencies() == [1.5]


def test_whole_groups_per_second_are_an_item_and_in_the_summary() -> None:
    run = RunResult(
        id="G/w", test_case="G", workload="w", latency={"gang": [0.5, 1.0], "gangSpan": [4.0]}
    )
    (item,) = [i for i in kubera_items(run) if i.metric == "kubera_gang_throughput"]
    assert (item.data, item.unit) == ({"Average": 0.5}, "groups/s")
    table = summary(ExperimentResult(config="x.yaml", started="now", runs=[run]))
    assert str(table.caption).endswith("(2 gangs, 0.5 groups/s)")


def test_a_run_without_gangs_has_no_gang_item() -> None:
    run = RunResult(id="T/w", test_case="T", workload="w", latency={"scheduling": [0.1]})
    assert "kubera_gang_latency" not in {i.metric for i in kubera_items(run)}


# ---------------------------------------------------------------- the experiment files


def _shape(ops: list[o.Op]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for op in ops:
        if isinstance(op, o.CreateResourceDriver):
            out.append((op.phase, (op.nodes, op.max_claims_per_node)))
        elif isinstance(op, o.CreatePods):
            out.append((op.phase, (op.namespace, op.count, op.steady_state, op.collect_metrics)))
        else:
            out.append((op.phase, getattr(op, "count", getattr(op, "namespace", None))))
    return out


SCHEDULING = "SchedulingWithResourceClaimTemplate"
STEADY = "SteadyStateClusterResourceClaimTemplate"


@pytest.mark.parametrize(
    ("run", "shape"),
    [
        (
            f"{SCHEDULING}/5000pods_500nodes",
            [
                ("createNodes[0]", 0),
                ("createNodes[1]", 500),
                ("createResourceDriver[2]", ("scheduler-perf-dra-*", 10)),
                ("createAny[3]", 1),
                ("createAny[4]", 1),
                ("createPods[5]", ("init", 2500, False, False)),
                ("createAny[6]", 1),
                ("createPods[7]", ("test", 2500, False, True)),
            ],
        ),
        (
            f"{STEADY}/half_500nodes",
            [
                ("createNodes[0]", 0),
                ("createNodes[1]", 500),
                ("createResourceDriver[2]", ("scheduler-perf-dra-*", 10)),
                ("createAny[3]", 1),
                ("createAny[4]", 2500),
                ("allocResourceClaims[5]", "init"),
                ("createAny[6]", 1),
                ("createPods[7]", ("test", 10, True, True)),
            ],
        ),
        (
            "GangScheduling/10gangs_1000pods_5000nodes",
            [
                ("createNodes[0]", 5000),
                ("createAny[1]", 10),
                ("createPods[2]", ("gangs", 10_000, False, True)),
                ("waitForPodGroups[3]", "gangs"),
            ],
        ),
        (
            "GangScheduling/1000gangs_3pods_5000nodes",
            [
                ("createNodes[0]", 5000),
                ("createAny[1]", 1000),
                ("createPods[2]", ("gangs", 3000, False, True)),
                ("waitForPodGroups[3]", "gangs"),
            ],
        ),
    ],
)
def test_the_figure_workloads_plan_to_upstreams_shapes(run: str, shape: list[Any]) -> None:
    planned = {**runs(load(str(EXAMPLES / "dra.yaml"))), **runs(load(str(EXAMPLES / "gang.yaml")))}
    assert _shape(planned[run]) == shape


@pytest.mark.parametrize(
    ("run", "threshold"),
    [
        (f"{SCHEDULING}/5000pods_500nodes", 56.0),
        (f"{STEADY}/empty_500nodes", 64.0),
        (f"{STEADY}/half_500nodes", 60.0),
        (f"{STEADY}/full_500nodes", 60.0),
    ],
)
def test_the_dra_figures_carry_upstreams_thresholds(run: str, threshold: float) -> None:
    e = load(str(EXAMPLES / "dra.yaml"))
    found = {f"{tc.name}/{w.name}": w.threshold for tc, w in e.runs()}
    assert found[run] == threshold


def test_full_clusters_leave_room_for_exactly_the_ten_steady_pods() -> None:
    full = [w for _, w in load(str(EXAMPLES / "dra.yaml")).runs() if w.name.startswith("full_")]
    assert full
    for w in full:
        p = w.params
        assert p["nodesWithDRA"] * p["maxClaimsPerNode"] - p["initClaims"] == 10


def test_gang_pods_are_consecutive_and_their_groups_need_them_all() -> None:
    planned = runs(load(str(EXAMPLES / "gang.yaml")))["GangScheduling/1000gangs_3pods_5000nodes"]
    groups, pods = planned[1], planned[2]
    assert isinstance(groups, o.CreateAny) and isinstance(pods, o.CreatePods)
    group = to_message(groups.template.render(7, groups.count, groups.template_params))
    assert (group.metadata.name, group.spec.min_member) == ("gang-7", 3)  # type: ignore[attr-defined]
    docs = [pod_doc(pods.pod_template, i, pods.count, pods.template_params) for i in range(7)]
    members = [
        pod_doc(pods.pod_template, i, pods.count, pods.template_params)["metadata"]["labels"][
            POD_GROUP_LABEL
        ]
        for i in range(pods.count)
    ]
    # the profile that runs Coscheduling (kubera's second default profile)
    assert {d["spec"]["schedulerName"] for d in docs} == {"scheduler-plugins-scheduler"}
    assert members[:7] == ["gang-0"] * 3 + ["gang-1"] * 3 + ["gang-2"]
    assert {members.count(f"gang-{g}") for g in range(groups.count)} == {3}


@pytest.mark.parametrize(
    ("file", "run", "flags", "absent"),
    [
        # claims need the controller-manager, so nodes with leases: hollow, named for the glob
        (
            "dra.yaml",
            f"{SCHEDULING}/5000pods_500nodes",
            ["--nodes", "500", "--node-template", "--controller-managers"],
            "--no-controllers",
        ),
        ("dra.yaml", f"{STEADY}/full_500nodes", ["--nodes", "500"], "--no-controllers"),
        # gangs: plain Node objects and no controller-manager, as scheduler_perf runs
        ("gang.yaml", "GangScheduling/10gangs_1000pods_5000nodes", ["--no-controllers"], "0x"),
    ],
)
def test_the_figures_clusters(file: str, run: str, flags: list[str], absent: str) -> None:
    e = load(str(EXAMPLES / file))
    ((tc, w),) = [(tc, w) for tc, w in e.runs() if f"{tc.name}/{w.name}" == run]
    args = cluster_args(w.cluster, plan(tc, w), RunOptions())
    assert all(f in args for f in flags), args
    assert absent not in args
    if w.cluster.hollow_nodes:
        with open(args[args.index("--node-template") + 1]) as f:
            names = [p.name for p in plan_nodes(load_template(f.read()), 3)]
        assert dra.matching_nodes("scheduler-perf-dra-*", names) == names  # the driver's glob
