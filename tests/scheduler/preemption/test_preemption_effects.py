"""Preemption around the dry runs: who may preempt (upstream TestPodEligibleToPreemptOthers),
what it writes (prepareCandidate: DisruptionTarget, Preempted event, delete, cleared
nominations), the nominated pods' two-pass filter, DefaultPreemptionArgs validation, and the
decision as `kubera explain pod` prints it."""

from __future__ import annotations

import asyncio

import pytest

from kubera.cli.scheduling import render_attempts
from protos.kubera.v1 import core_pb2
from services.scheduler.config import load
from services.scheduler.framework.interface import PostFilterResult
from services.scheduler.framework.nominator import Nominator, run_filter_with_nominated_pods
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import NodeInfo, PodInfo
from services.scheduler.plugins import defaultpreemption
from services.scheduler.preemption import (
    POLICY_NEVER,
    TERMINATING_ON_NOMINATED,
    Candidate,
    pod_eligible_to_preempt_others,
    prepare_candidate,
)
from services.scheduler.server import attempt_to_proto
from services.scheduler.trace import Attempt
from tests.scheduler.preemption._harness import (
    HIGH,
    LOW,
    MID,
    ONE_POD,
    VERY_LARGE,
    FakeClient,
    Harness,
    node,
    pod,
)


def terminating(p: core_pb2.Pod, *, by_preemption: bool = True) -> core_pb2.Pod:
    p.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    if by_preemption:
        c = p.status.conditions.add()
        c.type, c.status, c.reason = "DisruptionTarget", "True", "PreemptionByScheduler"
    return p


def nominated(p: core_pb2.Pod, node_name: str) -> core_pb2.Pod:
    p.status.nominated_node_name = node_name
    return p


# ====================================================== TestPodEligibleToPreemptOthers

ELIGIBILITY_CASES = [
    (
        "Pod with nominated node",
        nominated(pod("p", HIGH), "node1"),
        [terminating(pod("p1", LOW, node_name="node1"))],
        None,
        (False, TERMINATING_ON_NOMINATED),
    ),
    (
        "Pod with nominated node, but without nominated node status",
        nominated(pod("p", HIGH), "node1"),
        [terminating(pod("p1", LOW, node_name="node1"))],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (True, ""),
    ),
    ("Pod without nominated node", pod("p", HIGH), [], None, (True, "")),
    (
        "Pod with 'PreemptNever' preemption policy",
        pod("p", HIGH, preemptionPolicy="Never"),
        [],
        None,
        (False, POLICY_NEVER),
    ),
    (
        "victim Pods terminating but not due to preemption",
        nominated(pod("p", HIGH), "node1"),
        [terminating(pod("p1", LOW, node_name="node1"), by_preemption=False)],
        None,
        (True, ""),
    ),
    (
        "a higher-priority pod terminating by preemption does not make it wait",
        nominated(pod("p", MID), "node1"),
        [terminating(pod("p1", HIGH, node_name="node1"))],
        None,
        (True, ""),
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "pods", "nominated_status", "want"),
    ELIGIBILITY_CASES,
    ids=[c[0] for c in ELIGIBILITY_CASES],
)
def test_pod_eligible_to_preempt_others(
    name: str,
    p: core_pb2.Pod,
    pods: list[core_pb2.Pod],
    nominated_status: Status | None,
    want: tuple[bool, str],
) -> None:
    ni = NodeInfo(node("node1", VERY_LARGE))
    for q in pods:
        ni.add_pod(PodInfo(q))
    nodes = {"node1": ni}
    assert pod_eligible_to_preempt_others(PodInfo(p), nodes.get, nominated_status) == want


# ========================================================================= effects


def test_prepare_candidate_marks_deletes_and_records_each_victim() -> None:
    client = FakeClient()
    preemptor = pod("p", HIGH)
    victims = [pod("v1", LOW, node_name="node1"), pod("v2", LOW, node_name="node1")]
    forgotten: list[str] = []
    problems = asyncio.run(
        prepare_candidate(
            client,
            scheduler_name="default-scheduler",
            preemptor=preemptor,
            candidate=Candidate("node1", victims),
            now=1_800_000_000.0,
            reject_waiting_pod=lambda uid: False,
            nominated_on_node=[
                PodInfo(nominated(pod("lower", LOW), "node1")),
                PodInfo(nominated(pod("equal", HIGH), "node1")),
            ],
            forget_nomination=forgotten.append,
        )
    )
    assert problems == []
    assert client.deleted == ["v1", "v2"]
    conds = [patch["status"]["conditions"] for name, patch in client.patches if name == "v1"][0]
    assert conds[-1]["type"] == "DisruptionTarget" and conds[-1]["status"] == "True"
    assert conds[-1]["reason"] == "PreemptionByScheduler"
    assert conds[-1]["message"] == (
        "default-scheduler: preempting to accommodate a higher priority pod"
    )
    events = [(e.involved_object.name, e.reason, e.type, e.message) for e in client.created]
    assert events == [
        ("v1", "Preempted", "Normal", "Preempted by pod p on node node1"),
        ("v2", "Preempted", "Normal", "Preempted by pod p on node node1"),
    ]
    # only the lower-priority nominated pod loses its nomination
    assert forgotten == ["lower"]
    assert ("lower", {"status": {"nominatedNodeName": ""}}) in client.patches
    assert all(name != "equal" for name, _ in client.patches)


def test_prepare_candidate_rejects_a_waiting_victim_instead_of_deleting_it() -> None:
    client = FakeClient()
    asyncio.run(
        prepare_candidate(
            client,
            scheduler_name="default-scheduler",
            preemptor=pod("p", HIGH),
            candidate=Candidate("node1", [pod("v1", LOW, node_name="node1")]),
            now=0.0,
            reject_waiting_pod=lambda uid: uid == "v1",
            nominated_on_node=[],
            forget_nomination=lambda uid: None,
        )
    )
    assert client.deleted == [] and client.patches == []


def test_prepare_candidate_skips_a_victim_already_gone() -> None:
    client = FakeClient(missing=["v1"])
    problems = asyncio.run(
        prepare_candidate(
            client,
            scheduler_name="default-scheduler",
            preemptor=pod("p", HIGH),
            candidate=Candidate(
                "node1", [pod("v1", LOW, node_name="node1"), pod("v2", LOW, node_name="node1")]
            ),
            now=0.0,
            reject_waiting_pod=lambda uid: False,
            nominated_on_node=[],
            forget_nomination=lambda uid: None,
        )
    )
    assert problems == [] and client.deleted == ["v2"]


def test_post_filter_preempts_and_nominates_through_the_client() -> None:
    h = Harness([node("node1", ONE_POD)], [pod("p1", LOW, node_name="node1")])
    state, pi = h.state_for(pod("p", HIGH))
    result, st = asyncio.run(h.plugin.post_filter(state, pi, {"node1": Status(Code.UNSCHEDULABLE)}))
    assert st.is_success() and result == PostFilterResult("node1")
    assert h.client.deleted == ["p1"]
    decision = state.get(defaultpreemption.DECISION_KEY)
    assert decision.node == "node1" and decision.victims == ["default/p1"]
    assert h.plugin.attempts == 1


def test_post_filter_without_candidate_clears_the_pods_nomination() -> None:
    h = Harness([node("node1", ONE_POD)], [pod("p1", HIGH, node_name="node1")])
    p = nominated(pod("p", HIGH), "node1")
    h.nominator.add(PodInfo(p), "node1")
    state, pi = h.state_for(p)
    result, st = asyncio.run(h.plugin.post_filter(state, pi, {"node1": Status(Code.UNSCHEDULABLE)}))
    assert result == PostFilterResult("") and st.code == Code.UNSCHEDULABLE
    assert h.nominator.node_of("p") == ""


# ================================================== nominated pods: two-pass filter


def test_nominated_pods_count_for_pods_of_equal_or_lower_priority() -> None:
    h = Harness([node("node1", ONE_POD)])
    ni = h.snapshot().list()[0]
    nominator = Nominator()
    nominator.add(PodInfo(nominated(pod("nom", MID), "node1")), "node1")
    for name, prio, fits in (("lower", LOW, False), ("equal", MID, False), ("higher", HIGH, True)):
        state, pi = h.state_for(pod(name, prio))
        st = run_filter_with_nominated_pods(h.fwk, state, pi, ni, nominator.pods_on("node1"))
        assert st.is_success() == fits, name
        if not fits:
            assert st.reasons == ("Too many pods",)


def test_a_nominated_pod_does_not_count_against_itself() -> None:
    h = Harness([node("node1", ONE_POD)])
    ni = h.snapshot().list()[0]
    p = nominated(pod("nom", MID), "node1")
    state, pi = h.state_for(p)
    assert run_filter_with_nominated_pods(h.fwk, state, pi, ni, [PodInfo(p)]).is_success()


def test_nominator_follows_the_pods_status_and_binding() -> None:
    n = Nominator()
    p = nominated(pod("p", HIGH), "node1")
    n.pod_seen(None, p)
    assert n.node_of("p") == "node1" and [q.uid for q in n.pods_on("node1")] == ["p"]
    cleared = pod("p", HIGH)
    n.pod_seen(p, cleared)
    assert n.node_of("p") == "" and n.pods_on("node1") == []
    n.pod_seen(None, p)
    bound = pod("p", HIGH, node_name="node2")
    n.pod_seen(p, bound)
    assert len(n) == 0


# ================================================= DefaultPreemptionArgs validation

ARGS_CASES = [
    ({}, ""),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 100}, ""),
    ({"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0}, ""),
    (
        {"minCandidateNodesPercentage": -1},
        "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
    ),
    (
        {"minCandidateNodesPercentage": 900},
        "minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
    ),
    (
        {"minCandidateNodesAbsolute": -1},
        "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
    ),
    (
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
        "minCandidateNodesAbsolute",
    ),
]


@pytest.mark.parametrize(("args", "want"), ARGS_CASES, ids=[str(c[0]) for c in ARGS_CASES])
def test_default_preemption_args_are_validated_as_upstream(args: dict, want: str) -> None:
    import yaml

    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "DefaultPreemption", "args": args}],
            }
        ],
    }
    if not want:
        cfg = load.load_config(yaml.safe_dump(doc))
        got = cfg.profiles[0].plugin_config["DefaultPreemption"]
        assert got == defaultpreemption.Args(
            args.get("minCandidateNodesPercentage", 10), args.get("minCandidateNodesAbsolute", 100)
        )
    else:
        with pytest.raises(ValueError, match=None) as e:
            load.load_config(yaml.safe_dump(doc))
        assert want in str(e.value)


# ======================================================================= explain


def test_explain_shows_candidates_considered_and_victims_chosen() -> None:
    h = Harness(
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        [pod("p1", MID, node_name="node1"), pod("p2", LOW, node_name="node2")],
    )
    state, pi = h.state_for(pod("p", HIGH))
    statuses = {"node1": Status(Code.UNSCHEDULABLE), "node2": Status(Code.UNSCHEDULABLE)}
    asyncio.run(h.plugin.post_filter(state, pi, statuses))
    a = Attempt("default/p", "p", "default-scheduler", 1, 1_800_000_000.0, "unschedulable")
    a.preemption = state.get(defaultpreemption.DECISION_KEY)
    text = render_attempts("default/p", [attempt_to_proto(a)])
    assert "preemption: 2 node(s) where it might help, 2 dry run(s), 2 candidate(s)" in text
    assert "node1: 1 victim(s) [default/p1], 0 PDB violation(s)" in text
    assert "node2: 1 victim(s) [default/p2], 0 PDB violation(s)  ← chosen" in text
    assert "nominated node2; preempting default/p2" in text
    assert "chosen by: lowest highest victim priority" in text


def test_explain_says_why_a_pod_may_not_preempt() -> None:
    h = Harness([node("node1", ONE_POD)], [pod("p1", LOW, node_name="node1")])
    state, pi = h.state_for(pod("p", HIGH, preemptionPolicy="Never"))
    asyncio.run(h.plugin.post_filter(state, pi, {"node1": Status(Code.UNSCHEDULABLE)}))
    a = Attempt("default/p", "p", "default-scheduler", 1, 1_800_000_000.0, "unschedulable")
    a.preemption = state.get(defaultpreemption.DECISION_KEY)
    assert "preemption: not eligible due to preemptionPolicy=Never." in render_attempts(
        "default/p", [attempt_to_proto(a)]
    )


def test_a_nominated_pod_takes_its_nominated_node_when_it_fits_there() -> None:
    from services.scheduler.queue.nomination import evaluate_nominated_node

    h = Harness(
        [node("node1", ONE_POD), node("node2", ONE_POD)], [pod("p1", LOW, node_name="node1")]
    )
    by_name = {ni.name: ni for ni in h.snapshot().list()}
    for target, want in (("node2", "node2"), ("node1", None), ("gone", None)):
        state, pi = h.state_for(nominated(pod("p", HIGH), target))
        ni, st = evaluate_nominated_node(h.fwk, state, pi, by_name.get, None, Nominator())
        assert (ni.name if ni else None) == want, target
        assert st.code != Code.ERROR
