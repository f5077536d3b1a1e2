"""The EndpointSlice controller (services/controllers/endpointslice.py) and the service
account controller (services/controllers/serviceaccount.py).

Pure-rule cases from upstream's staging/src/k8s.io/endpointslice/utils_test.go
(TestPodToEndpoint: ready, unready, terminating, publishNotReadyAddresses, hostname with
subdomain) and pkg/api/v1/pod/util_test.go (TestFindPort); the controller against a real
apiserver as in pkg/controller/endpointslice/endpointslice_controller_test.go
(TestSyncServiceWithSelector, TestSyncServicePodSelection, TestSyncServiceMissing,
placeholder slices) and serviceaccounts_controller_test.go (TestServiceAccountCreation).
"""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, discovery_pb2, service_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.controllers.endpointslice import (
    CONTROLLER_NAME,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    EndpointSliceConfig,
    EndpointSliceController,
    desired_slices,
    find_port,
    place_endpoints,
    pod_endpoint,
)
from services.controllers.serviceaccount import ServiceAccountController
from tests.builders import MakeNode, MakePod
from tests.controllers.conftest import NS, ControllerCluster

SERVICES, SLICES = BY_KIND["Service"], BY_KIND["EndpointSlice"]
SAS, NAMESPACES = BY_KIND["ServiceAccount"], BY_KIND["Namespace"]


def svc(name: str = "foo", **spec: Any) -> service_pb2.Service:
    spec.setdefault("selector", {"app": "web"})
    spec.setdefault("ports", [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}])
    doc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }
    return codec.decode(doc, validate="strict").obj  # type: ignore[return-value]


def pod(
    name: str = "p1",
    *,
    ip: str = "10.0.0.1",
    ready: bool = True,
    terminating: bool = False,
    phase: str = "Running",
    labels: dict[str, str] | None = None,
) -> core_pb2.Pod:
    b = MakePod().name(name).namespace(NS).uid(f"uid-{name}").labels(labels or {"app": "web"})
    b = b.node("n1").phase(phase).condition("Ready", "True" if ready else "False")
    if terminating:
        b = b.deletion_timestamp("2026-01-01T00:00:00Z")
    p: core_pb2.Pod = b.obj()
    if ip:
        p.status.pod_ip = ip
        p.status.pod_ips.add(ip=ip)
    return p


# (case, pod, publishNotReadyAddresses, expected (ready, serving, terminating))
CONDITIONS = [
    ("ready pod", pod(), False, (True, True, False)),
    ("unready pod", pod(ready=False), False, (False, False, False)),
    ("unready pod, publishNotReadyAddresses", pod(ready=False), True, (True, True, False)),
    ("ready terminating pod", pod(terminating=True), False, (False, True, True)),
    ("unready terminating pod", pod(ready=False, terminating=True), False, (False, False, True)),
    ("terminating pod, publishNotReadyAddresses", pod(ready=False, terminating=True), True, (True, True, True)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "p", "publish", "want"), CONDITIONS, ids=[c[0] for c in CONDITIONS]
)
def test_endpoint_conditions_follow_readiness_and_termination(
    case: str, p: core_pb2.Pod, publish: bool, want: tuple[bool, bool, bool]
) -> None:
    s = svc(publishNotReadyAddresses=publish)
    node = MakeNode().name("n1").label("topology.kubernetes.io/zone", "us-a").obj()
    ep = pod_endpoint(s, p, node)
    c = ep.conditions
    assert (c.ready, c.serving, c.terminating) == want
    assert list(ep.addresses) == ["10.0.0.1"]
    assert (ep.node_name, ep.zone) == ("n1", "us-a")
    assert (ep.target_ref.kind, ep.target_ref.name, ep.target_ref.uid) == ("Pod", "p1", "uid-p1")
    assert not ep.HasField("hostname")


def test_hostname_only_when_the_subdomain_names_the_service() -> None:
    p = pod()
    p.spec.hostname, p.spec.subdomain = "web-0", "foo"
    assert pod_endpoint(svc("foo"), p, None).hostname == "web-0"
    assert not pod_endpoint(svc("bar"), p, None).HasField("hostname")


def _port(target: str, protocol: str = "TCP") -> service_pb2.ServicePort:
    return service_pb2.ServicePort(port=80, protocol=protocol, target_port=target)


FIND_PORT = [
    ("a numeric target port as is", "8080", "TCP", 8080),
    ("a named port by name", "http", "TCP", 9090),
    ("a named port of another protocol is none", "http", "UDP", None),
    ("a name the pod lacks is none", "nope", "TCP", None),
    ("a sidecar's port counts", "side", "TCP", 7070),
]


@pytest.mark.parametrize(
    ("case", "target", "protocol", "want"), FIND_PORT, ids=[c[0] for c in FIND_PORT]
)
def test_find_port(case: str, target: str, protocol: str, want: int | None) -> None:
    p = pod()
    p.spec.containers.add(
        name="c", ports=[core_pb2.ContainerPort(name="http", container_port=9090, protocol="TCP")]
    )
    p.spec.init_containers.add(
        name="s",
        restart_policy="Always",
        ports=[core_pb2.ContainerPort(name="side", container_port=7070)],
    )
    assert find_port(p, _port(target, protocol)) == want


def test_desired_slices_skip_unselected_ipless_and_terminal_pods_and_split_by_size() -> None:
    pods = [
        pod("a", ip="10.0.0.1"),
        pod("b", ip="10.0.0.2", ready=False),
        pod("c", ip=""),
        pod("d", ip="10.0.0.4", phase="Succeeded"),
        pod("e", ip="10.0.0.5", labels={"app": "other"}),
        pod("f", ip="10.0.0.6", terminating=True),
    ]
    [(ports, eps)] = desired_slices(svc(), pods, {})
    assert ports == (("http", "TCP", 8080, None),)
    assert [e.target_ref.name for e in eps] == ["a", "b", "f"]
    split = desired_slices(svc(), pods, {}, max_per_slice=2)
    assert [[e.target_ref.name for e in eps] for _, eps in split] == [["a", "b"], ["f"]]


def test_no_endpoints_leaves_one_placeholder() -> None:
    assert desired_slices(svc(), [], {}) == [((), [])]


def test_pods_resolving_ports_differently_get_separate_slices() -> None:
    s = svc(ports=[{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}])
    a, b = pod("a"), pod("b", ip="10.0.0.2")
    a.spec.containers.add(
        name="c", ports=[core_pb2.ContainerPort(name="http", container_port=8080, protocol="TCP")]
    )
    b.spec.containers.add(
        name="c", ports=[core_pb2.ContainerPort(name="http", container_port=9090, protocol="TCP")]
    )
    got = {ports: [e.target_ref.name for e in eps] for ports, eps in desired_slices(s, [a, b], {})}
    assert got == {(("http", "TCP", 8080, None),): ["a"], (("http", "TCP", 9090, None),): ["b"]}


def test_config_bounds_max_endpoints_per_slice() -> None:
    with pytest.raises(ValueError, match="max_endpoints_per_slice"):
        EndpointSliceConfig(max_endpoints_per_slice=0)


# ------------------------------------------------------------ against an apiserver


def slices_of(
    cluster: ControllerCluster, informer: Any, name: str
) -> list[discovery_pb2.EndpointSlice]:
    return [s for s in informer.store.values() if s.metadata.labels.get(LABEL_SERVICE_NAME) == name]


async def running_pod(cluster: ControllerCluster, name: str, ip: str, *, ready: bool) -> None:
    p = await cluster.pod(name, {"app": "web"})
    await cluster.bind(p, "n1")
    fresh: Any = await cluster.client.get(BY_KIND["Pod"], name, NS)
    fresh.status.phase = "Running"
    fresh.status.pod_ip = ip
    fresh.status.pod_ips.add(ip=ip)
    fresh.status.conditions.add(type="Ready", status="True" if ready else "False")
    await cluster.client.update_status(fresh)


async def test_controller_writes_slices_of_ready_and_unready_pods(
    cluster: ControllerCluster,
) -> None:
    controller = EndpointSliceController(cluster.client, cluster.informers)
    slices = cluster.informers.get(SLICES)
    await cluster.node("n1")
    await cluster.start(controller)
    s: Any = await cluster.client.create(svc())
    await cluster.until(lambda: len(slices_of(cluster, slices, "foo")) == 1)
    [placeholder] = slices_of(cluster, slices, "foo")
    assert not placeholder.endpoints and not placeholder.ports

    await running_pod(cluster, "a", "10.1.0.1", ready=True)
    await running_pod(cluster, "b", "10.1.0.2", ready=False)

    def both() -> bool:
        got = slices_of(cluster, slices, "foo")
        return len(got) == 1 and len(got[0].endpoints) == 2

    await cluster.until(both)
    [eps] = slices_of(cluster, slices, "foo")
    assert eps.metadata.name.startswith("foo-")
    assert eps.address_type == "IPv4"
    assert eps.metadata.labels[LABEL_MANAGED_BY] == CONTROLLER_NAME
    ref = eps.metadata.owner_references[0]
    assert (ref.kind, ref.name, ref.uid, ref.controller) == ("Service", "foo", s.metadata.uid, True)
    got = {e.target_ref.name: (list(e.addresses), e.conditions.ready) for e in eps.endpoints}
    assert got == {"a": (["10.1.0.1"], True), "b": (["10.1.0.2"], False)}
    assert [(p.name, p.port, p.protocol) for p in eps.ports] == [("http", 8080, "TCP")]
    assert codec.encode(eps)["endpoints"][0]["conditions"] == {
        "ready": True,
        "serving": True,
        "terminating": False,
    }

    await cluster.client.delete(BY_KIND["Pod"], "a", NS, grace_period_seconds=0)
    await cluster.until(
        lambda: (
            [e.target_ref.name for s in slices_of(cluster, slices, "foo") for e in s.endpoints]
            == ["b"]
        )
    )

    await cluster.client.delete(SERVICES, "foo", NS)
    await cluster.until(lambda: not slices_of(cluster, slices, "foo"))


async def test_service_without_selector_gets_no_slices(cluster: ControllerCluster) -> None:
    # One worker: the queue is FIFO, so "bare" is synced before "sel".
    controller = EndpointSliceController(
        cluster.client, cluster.informers, config=EndpointSliceConfig(workers=1)
    )
    slices = cluster.informers.get(SLICES)
    await cluster.start(controller)
    await cluster.client.create(svc("bare", selector={}))
    await cluster.client.create(svc("sel"))
    await cluster.until(lambda: len(slices_of(cluster, slices, "sel")) == 1)
    assert not slices_of(cluster, slices, "bare")


async def test_every_namespace_gets_a_default_service_account(cluster: ControllerCluster) -> None:
    controller = ServiceAccountController(cluster.client, cluster.informers)
    sas = cluster.informers.get(SAS)
    await cluster.start(controller)
    await cluster.until(lambda: f"{NS}/default" in sas.store and "kube-system/default" in sas.store)
    ns = NAMESPACES.new()
    ns.metadata.name = "team"  # type: ignore[attr-defined]
    await cluster.client.create(ns)
    await cluster.until(lambda: "team/default" in sas.store)
    first = sas.store["team/default"].metadata.uid
    await cluster.client.delete(SAS, "default", "team")
    await cluster.until(
        lambda: "team/default" in sas.store and sas.store["team/default"].metadata.uid != first
    )


async def test_pod_updates_matter_only_where_a_service_selects(cluster: ControllerCluster) -> None:
    """The pod informer's filter: a namespace whose only service has no selector (the
    `kubernetes` service in default) lets no pod status write through."""
    controller = EndpointSliceController(cluster.client, cluster.informers)
    services = cluster.informers.get(SERVICES)
    await cluster.start(controller)
    await cluster.until(lambda: f"{NS}/kubernetes" in services.store)
    before, after = pod("a", ip=""), pod("a", ip="10.0.0.9")
    assert not controller.wants_pod_update(before, after)
    await cluster.client.create(svc())
    await cluster.until(lambda: f"{NS}/foo" in services.store)
    assert controller.wants_pod_update(before, after)
    assert not controller.wants_pod_update(after, after)


# ------------------------------------------------------------ placement


PORTS = (("http", "TCP", 8080, None),)


def _ep(uid: str, ready: bool = True) -> discovery_pb2.Endpoint:
    return discovery_pb2.Endpoint(
        addresses=[f"10.0.0.{uid}"],
        conditions=discovery_pb2.EndpointConditions(ready=ready),
        target_ref=core_pb2.ObjectReference(kind="Pod", name=f"p{uid}", uid=uid),
    )


def _slice(name: str, uids: list[str], ports: Any = PORTS) -> discovery_pb2.EndpointSlice:
    s = discovery_pb2.EndpointSlice(address_type="IPv4")
    s.metadata.name = name
    for n, protocol, port, _ in ports:
        s.ports.add(name=n, protocol=protocol, port=port)
    s.endpoints.extend(_ep(u) for u in uids)
    return s


def _shape(plan: Any) -> list[tuple[str | None, list[str]]]:
    return [
        (cur.metadata.name if cur is not None else None, [e.target_ref.uid for e in eps])
        for cur, _, eps in plan
    ]


def test_endpoints_stay_in_their_slice_and_new_ones_fill_slices_with_room() -> None:
    """upstream's reconciler_test.go: an added endpoint lands in the slice with room; the
    others are not moved, so one slice is written."""
    existing = [_slice("a", ["1", "2", "3"]), _slice("b", ["4", "5"])]
    wanted = {PORTS: [_ep(u) for u in ["0", "1", "2", "3", "4", "5"]]}
    plan, delete = place_endpoints(existing, wanted, 3)
    assert _shape(plan) == [("a", ["1", "2", "3"]), ("b", ["4", "5", "0"])]
    assert delete == []


def test_a_changed_condition_rewrites_its_slice_only() -> None:
    existing = [_slice("a", ["1", "2"]), _slice("b", ["3"])]
    wanted = {PORTS: [_ep("1"), _ep("2", ready=False), _ep("3")]}
    plan, _ = place_endpoints(existing, wanted, 2)
    [(a, _, a_eps), (b, _, b_eps)] = plan
    assert [e.conditions.ready for e in a_eps] == [True, False]
    assert list(b.endpoints) == b_eps  # unchanged: no write


def test_an_emptied_slice_is_reused_for_new_endpoints_or_deleted() -> None:
    existing = [_slice("a", ["1"]), _slice("b", ["2"])]
    plan, delete = place_endpoints(existing, {PORTS: [_ep("1")]}, 1)
    assert _shape(plan) == [("a", ["1"])] and [s.metadata.name for s in delete] == ["b"]
    other = (("grpc", "TCP", 9090, None),)
    plan, delete = place_endpoints(existing, {PORTS: [_ep("1")], other: [_ep("7")]}, 1)
    assert _shape(plan) == [("a", ["1"]), ("b", ["7"])] and delete == []


def test_no_endpoints_keeps_one_placeholder() -> None:
    existing = [_slice("a", ["1"]), _slice("b", ["2"])]
    plan, delete = place_endpoints(existing, {}, 100)
    assert [(c.metadata.name if c else None, p, e) for c, p, e in plan] == [("a", (), [])]
    assert [s.metadata.name for s in delete] == ["b"]
    assert place_endpoints([], {}, 100) == ([(None, (), [])], [])


def test_updates_of_pods_without_an_ip_change_no_endpoint() -> None:
    """A cluster without kubelets (scheduler_perf's): binding a pod changes its node, but
    a pod without an IP is no endpoint before or after."""
    from services.controllers.endpointslice import endpoint_changed

    unbound, bound = pod("a", ip=""), pod("a", ip="")
    unbound.spec.node_name = ""
    assert not endpoint_changed(unbound, bound)
    with_ip = pod("a", ip="10.0.0.1")
    assert endpoint_changed(bound, with_ip)
    moved = pod("a", ip="10.0.0.1")
    moved.spec.node_name = "n2"
    assert endpoint_changed(with_ip, moved)
