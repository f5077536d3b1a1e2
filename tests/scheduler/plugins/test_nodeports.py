"""NodePorts: hostPorts must be free; 0.0.0.0 conflicts with every IP of the same port."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.hostports import host_ports
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


# Which containers hold host ports (upstream schedutil.GetHostPorts, used by NodePorts for
# the incoming pod and by NodeInfo for the pods on a node): regular containers and sidecars
# (init containers with restartPolicy Always); an ordinary init container has exited first.
Ports = list[dict[str, object]]


def shaped(kind: str, ports: Ports, uid: str = "p", node: str = "") -> core_pb2.Pod:
    b = MakePod().name(uid).uid(uid).node(node)
    if kind == "container":
        b.container("c", ports=ports)
    else:
        b.container("c")
        b.init_container("i", ports=ports, restart_policy="Always" if kind == "sidecar" else "")
    return b.obj()


INIT_CASES = [
    ("init", [p(8080)], "container", [p(8080)], True, "an incoming init container's port is free"),
    ("container", [p(8080)], "init", [p(8080)], True, "an init container on the node holds none"),
    ("init", [p(8080)], "init", [p(8080)], True, "two init containers never conflict"),
    ("sidecar", [p(8080)], "container", [p(8080)], False, "an incoming sidecar's port conflicts"),
    ("container", [p(8080)], "sidecar", [p(8080)], False, "a sidecar on the node holds its port"),
    ("sidecar", [p(8080)], "sidecar", [p(8081)], True, "sidecars on different ports"),
]


@pytest.mark.parametrize(
    ("kind", "want", "used_kind", "used", "fits", "rule"),
    INIT_CASES,
    ids=[c[5] for c in INIT_CASES],
)
def test_filter_counts_containers_and_sidecars_only(
    kind: str, want: Ports, used_kind: str, used: Ports, fits: bool, rule: str
) -> None:
    pl = nodeports.new(None, None)
    state = CycleState()
    pi = PodInfo(shaped(kind, want))
    _, st = pl.pre_filter(state, pi, [])
    if kind == "init":  # no port the pod holds while running: nothing to filter
        assert st.is_skip()
        return
    assert st.is_success()
    got = pl.filter(state, pi, node_with(shaped(used_kind, used, uid="e", node="n")))
    assert got.is_success() is fits


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        ("container", QueueingHint.QUEUE),
        ("sidecar", QueueingHint.QUEUE),
        ("init", QueueingHint.SKIP),
    ],
    ids=[
        "deleted container port",
        "deleted sidecar port",
        "deleted init container port frees nothing",
    ],
)
def test_hint_counts_containers_and_sidecars_only(kind: str, want: QueueingHint) -> None:
    pod_ev = nodeports.new(None, None).events_to_register()[0]
    assert pod_ev.hint is not None
    deleted = shaped(kind, [p(8080)], uid="d", node="n")
    assert pod_ev.hint(pod([p(8080)]), deleted, None) == want


def test_host_ports_lists_sidecars_then_containers_sanitised() -> None:
    b = MakePod().name("p").container("c", ports=[p(80), {"containerPort": 81}])
    b.init_container("init", ports=[p(70)])
    b.init_container("sidecar", ports=[p(90, "UDP", "10.0.0.1")], restart_policy="Always")
    assert host_ports(b.obj()) == [("10.0.0.1", "UDP", 90), ("0.0.0.0", "TCP", 80)]
