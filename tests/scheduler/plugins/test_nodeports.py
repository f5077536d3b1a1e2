"""NodePorts: hostPorts must be free; 0.0.0.0 conflicts with every IP of the same port."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import nodeports
from tests.builders import MakeNode, MakePod


def pod(ports: list[dict[str, object]], uid: str = "p", node: str = "") -> core_pb2.Pod:
    return MakePod().name(uid).uid(uid).node(node).container("c", ports=ports).obj()


def p(port: int, proto: str = "", ip: str = "") -> dict[str, object]:
    d: dict[str, object] = {"containerPort": port, "hostPort": port}
    if proto:
        d["protocol"] = proto
    if ip:
        d["hostIP"] = ip
    return d


def node_with(*existing: core_pb2.Pod) -> NodeInfo:
    ni = NodeInfo(MakeNode().name("n").obj())
    for e in existing:
        ni.add_pod(PodInfo(e))
    return ni


CASES = [
    ([p(8080)], [], True, "nothing used"),
    ([p(8080)], [p(8080)], False, "same port, both wildcard"),
    ([p(8080)], [p(8081)], True, "different port"),
    ([p(8080, "UDP")], [p(8080)], True, "same port, different protocol"),
    ([p(8080, ip="10.0.0.1")], [p(8080, ip="10.0.0.2")], True, "same port on different IPs"),
    ([p(8080, ip="10.0.0.1")], [p(8080, ip="10.0.0.1")], False, "same port on the same IP"),
    ([p(8080, ip="10.0.0.1")], [p(8080)], False, "specific IP against a used wildcard"),
    ([p(8080)], [p(8080, ip="10.0.0.2")], False, "wildcard against a used specific IP"),
    ([p(8080, "TCP", "0.0.0.0")], [p(8080)], False, "explicit 0.0.0.0/TCP equals the defaults"),
]


@pytest.mark.parametrize(("want", "used", "fits", "rule"), CASES, ids=[c[3] for c in CASES])
def test_filter(
    want: list[dict[str, object]], used: list[dict[str, object]], fits: bool, rule: str
) -> None:
    pl = nodeports.new(None, None)
    state = CycleState()
    pi = PodInfo(pod(want))
    _, st = pl.pre_filter(state, pi, [])
    assert st.is_success()
    existing = [pod(used, uid="e")] if used else []
    got = pl.filter(state, pi, node_with(*existing))
    if fits:
        assert got.is_success()
    else:
        assert got.code == Code.UNSCHEDULABLE
        assert got.reasons == ("node(s) didn't have free ports for the requested pod ports",)


def test_pre_filter_skips_pods_without_host_ports() -> None:
    _, st = nodeports.new(None, None).pre_filter(CycleState(), PodInfo(pod([])), [])
    assert st.is_skip()


def test_filter_without_pre_filter_is_an_error() -> None:
    st = nodeports.new(None, None).filter(CycleState(), PodInfo(pod([p(80)])), node_with())
    assert st.code == Code.ERROR


HINTS = [
    (pod([p(8080)], uid="d", node="n"), QueueingHint.QUEUE, "deleted bound pod held the port"),
    (pod([p(9090)], uid="d", node="n"), QueueingHint.SKIP, "deleted bound pod held other ports"),
    (pod([], uid="d", node="n"), QueueingHint.SKIP, "deleted pod had no host ports"),
    (pod([p(8080)], uid="d"), QueueingHint.SKIP, "deleted pod was never on a node"),
]


@pytest.mark.parametrize(("deleted", "want", "rule"), HINTS, ids=[c[2] for c in HINTS])
def test_hint_pod_deleted(deleted: core_pb2.Pod, want: QueueingHint, rule: str) -> None:
    pod_ev = nodeports.new(None, None).events_to_register()[0]
    assert pod_ev.hint is not None
    assert pod_ev.hint(pod([p(8080)]), deleted, None) == want
