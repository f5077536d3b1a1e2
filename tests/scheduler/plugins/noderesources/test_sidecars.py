"""Sidecars (init containers with restartPolicy Always) in NodeResourcesFit: Filter counts
them for the incoming pod and for pods on the node, and scoring's non-zero requests add
them too (upstream fit_test.go TestRestartableInitContainers, resource_allocation with
PodRequests)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins import noderesources as nr
from tests.builders import MakeNode, MakePod

Req = Mapping[str, str]


def with_sidecar(
    regular: Req | None, sidecar: Req | None, *, uid: str = "p", node: str = ""
) -> PodInfo:
    """fit_test.go newPodWithRestartableInitContainers: one regular container and one
    sidecar, each with `requests` when given."""
    b = MakePod().name(uid).uid(uid).node(node)
    b.container("regular", requests=regular)
    b.init_container("restartable-init", requests=sidecar, restart_policy="Always")
    return PodInfo(b.obj())


def plain(regular: Req, *, uid: str = "p", node: str = "") -> PodInfo:
    return PodInfo(MakePod().name(uid).uid(uid).node(node).container("c", requests=regular).obj())


def node_info(allocatable: Req, *existing: PodInfo) -> NodeInfo:
    ni = NodeInfo(MakeNode().name("n").allocatable(allocatable).capacity(allocatable).obj())
    for e in existing:
        ni.add_pod(e)
    return ni


# fit_test.go TestRestartableInitContainers: a node with 2m of cpu and room for one pod.
TWO_MILLI_CPU = {"cpu": "2m", "pods": "1"}

FILTER = [
    pytest.param(
        with_sidecar(None, None),
        TWO_MILLI_CPU,
        (),
        (),
        id="a pod with a sidecar and no requests fits",
    ),
    pytest.param(
        with_sidecar({"cpu": "1m"}, {"cpu": "1m"}),
        TWO_MILLI_CPU,
        (),
        (),
        id="fits when regular + sidecar do not exceed allocatable",
    ),
    pytest.param(
        with_sidecar({"cpu": "1m"}, {"cpu": "2m"}),
        TWO_MILLI_CPU,
        (),
        ("Insufficient cpu",),
        id="Insufficient cpu (unresolvable) when regular + sidecar exceed allocatable",
    ),
    pytest.param(
        plain({"cpu": "1m"}),
        {"cpu": "2m", "pods": "2"},
        (with_sidecar({"cpu": "500u"}, {"cpu": "1m"}, uid="e", node="n"),),
        ("Insufficient cpu",),
        id="a pod on the node counts its sidecar: 1m + (1m + 1m) > 2m",
    ),
    pytest.param(
        plain({"memory": "1Gi"}),
        {"memory": "3Gi", "pods": "2"},
        (with_sidecar({"memory": "1Gi"}, {"memory": "1Gi"}, uid="e", node="n"),),
        (),
        id="a pod on the node with a sidecar leaves the rest free: 1Gi + 2Gi fits 3Gi",
    ),
]


@pytest.mark.parametrize(("pi", "allocatable", "existing", "reasons"), FILTER)
def test_filter_counts_sidecars(
    pi: PodInfo, allocatable: Req, existing: tuple[PodInfo, ...], reasons: tuple[str, ...]
) -> None:
    pl = nr.new(None, None)
    state = CycleState()
    _, st = pl.pre_filter(state, pi, [])
    assert st.is_success()
    got = pl.filter(state, pi, node_info(allocatable, *existing))
    assert got.reasons == reasons
    if not reasons:
        assert got.code == Code.SUCCESS
    elif existing:  # room taken by pods on the node: preemption may help
        assert got.code == Code.UNSCHEDULABLE
    else:  # the pod alone exceeds allocatable
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pre_filter_requests_include_the_sidecar() -> None:
    pi = with_sidecar({"cpu": "1", "memory": "1Gi"}, {"cpu": "500m", "memory": "512Mi"})
    assert (pi.requests.milli_cpu, pi.requests.memory) == (1500, (1 << 30) + (512 << 20))


SCORE = [
    # LeastAllocated on a 4-cpu / 4Gi node: the incoming pod's non-zero requests.
    pytest.param(
        with_sidecar({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
        (),
        50,
        id="the incoming pod's sidecar adds to its score requests: (2/4 free) -> 50",
    ),
    pytest.param(
        with_sidecar(None, None),
        (),
        # 200m of 4 cpu -> 95; 400Mi of 4Gi -> (4096-400)*100//4096 = 90; mean 92
        92,
        id="a sidecar without requests adds the 100m / 200Mi defaults",
    ),
    pytest.param(
        plain({"cpu": "1", "memory": "1Gi"}),
        (with_sidecar({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, uid="e"),),
        25,
        id="a pod on the node counts its sidecar in the node's non-zero requests",
    ),
]


@pytest.mark.parametrize(("pi", "existing", "want"), SCORE)
def test_least_allocated_counts_sidecars(
    pi: PodInfo, existing: tuple[PodInfo, ...], want: int
) -> None:
    ni = node_info({"cpu": "4", "memory": "4Gi", "pods": "10"}, *existing)
    pl = nr.new(None, None)
    state = CycleState()
    assert pl.pre_score(state, pi, [ni]).is_success()
    score, st = pl.score(state, pi, ni)
    assert st.is_success()
    assert score == want
