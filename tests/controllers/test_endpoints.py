"""The endpoints controller (services/controllers/endpoints.py), with the cases of
upstream's pkg/controller/endpoint/endpoints_controller_test.go
(TestSyncEndpointsItemsPreserveNoSelector, TestSyncEndpointsProtocolTCP,
TestSyncEndpointsItemsEmptySelectorSelectsAll... ready / not ready addresses,
publishNotReadyAddresses, headless without ports, TestSyncEndpointsServiceNotFound) and
RepackSubsets' grouping (pkg/api/v1/endpoints/util_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, service_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.printers.printers import rows
from services.controllers.endpoints import EndpointsController, desired_subsets
from tests.builders import MakePod
from tests.controllers.conftest import NS, ControllerCluster

SERVICES, ENDPOINTS = BY_KIND["Service"], BY_KIND["Endpoints"]


def svc(**spec: Any) -> service_pb2.Service:
    spec.setdefault("selector", {"app": "web"})
    spec.setdefault("ports", [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}])
    doc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "foo", "namespace": NS},
        "spec": spec,
    }
    return codec.decode(doc, validate="strict").obj  # type: ignore[return-value]


def pod(
    name: str, ip: str, *, ready: bool = True, terminating: bool = False, port_name: str = ""
) -> core_pb2.Pod:
    b = MakePod().name(name).namespace(NS).uid(f"uid-{name}").labels({"app": "web"}).node("n1")
    b = b.phase("Running").condition("Ready", "True" if ready else "False")
    if terminating:
        b = b.deletion_timestamp("2026-01-01T00:00:00Z")
    p: core_pb2.Pod = b.obj()
    p.status.pod_ip = ip
    if port_name:
        p.spec.containers.add(
            name="c",
            ports=[core_pb2.ContainerPort(name=port_name, container_port=9000, protocol="TCP")],
        )
    return p


def shape(
    subsets: list[service_pb2.EndpointSubset],
) -> list[tuple[list[str], list[str], list[tuple[str, int]]]]:
    return [
        (
            [a.ip for a in s.addresses],
            [a.ip for a in s.not_ready_addresses],
            [(p.name, p.port) for p in s.ports],
        )
        for s in subsets
    ]


CASES = [
    ("ready pods", svc(), [pod("a", "1.1.1.1"), pod("b", "1.1.1.2")], [(["1.1.1.1", "1.1.1.2"], [], [("http", 8080)])]),
    ("a not-ready pod", svc(), [pod("a", "1.1.1.1"), pod("b", "1.1.1.2", ready=False)], [(["1.1.1.1"], ["1.1.1.2"], [("http", 8080)])]),
    ("publishNotReadyAddresses", svc(publishNotReadyAddresses=True), [pod("b", "1.1.1.2", ready=False)], [(["1.1.1.2"], [], [("http", 8080)])]),
    ("a terminating pod is left out", svc(), [pod("a", "1.1.1.1", terminating=True)], []),
    (
        "a terminating pod stays with publishNotReadyAddresses",
        svc(publishNotReadyAddresses=True),
        [pod("a", "1.1.1.1", terminating=True)],
        [(["1.1.1.1"], [], [("http", 8080)])],
    ),
    ("a pod without IP", svc(), [pod("a", "")], []),
    ("headless without ports", svc(clusterIP="None", ports=[]), [pod("a", "1.1.1.1")], [(["1.1.1.1"], [], [])]),
    (
        "named target ports split subsets by resolution",
        svc(ports=[{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}]),
        [pod("a", "1.1.1.1", port_name="web"), pod("b", "1.1.1.2")],
        [(["1.1.1.1"], [], [("http", 9000)])],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("case", "s", "pods", "want"), CASES, ids=[c[0] for c in CASES])
def test_desired_subsets(
    case: str, s: service_pb2.Service, pods: list[core_pb2.Pod], want: Any
) -> None:
    assert shape(desired_subsets(s, pods)) == want


def test_addresses_carry_node_and_target() -> None:
    [subset] = desired_subsets(svc(), [pod("a", "1.1.1.1")])
    a = subset.addresses[0]
    assert (a.node_name, a.target_ref.kind, a.target_ref.name, a.target_ref.uid) == (
        "n1",
        "Pod",
        "a",
        "uid-a",
    )


def test_endpoints_column_lists_ip_and_port() -> None:
    ep = service_pb2.Endpoints(
        subsets=desired_subsets(svc(), [pod(f"p{i}", f"1.1.1.{i}") for i in range(5)])
    )
    ep.metadata.name = "foo"
    assert (
        rows(ENDPOINTS, [ep], now=0)[0][1] == "1.1.1.0:8080,1.1.1.1:8080,1.1.1.2:8080 + 2 more..."
    )
    empty = service_pb2.Endpoints()
    empty.metadata.name = "foo"
    assert rows(ENDPOINTS, [empty], now=0)[0][1] == "<none>"


async def test_controller_writes_and_deletes_endpoints(cluster: ControllerCluster) -> None:
    controller = EndpointsController(cluster.client, cluster.informers)
    eps = cluster.informers.get(ENDPOINTS)
    await cluster.start(controller)
    await cluster.client.create(svc())
    await cluster.until(lambda: f"{NS}/foo" in eps.store)
    assert not eps.store[f"{NS}/foo"].subsets
    p = await cluster.pod("a", {"app": "web"})
    await cluster.bind(p, "n1")
    fresh: Any = await cluster.client.get(BY_KIND["Pod"], "a", NS)
    fresh.status.phase, fresh.status.pod_ip = "Running", "10.2.0.1"
    fresh.status.conditions.add(type="Ready", status="True")
    await cluster.client.update_status(fresh)
    await cluster.until(
        lambda: [a.ip for s in eps.store[f"{NS}/foo"].subsets for a in s.addresses] == ["10.2.0.1"]
    )
    await cluster.client.delete(SERVICES, "foo", NS)
    await cluster.until(lambda: f"{NS}/foo" not in eps.store)
