"""Services in the registry: defaults, cluster IP and node port allocation held in etcd
(no double allocation across apiserver replicas), release on delete, Secret stringData.

Cases from upstream's pkg/registry/core/service/storage/storage_test.go
(TestCreateInitClusterIPsFromClusterIP, TestServiceRegistryNodePortAllocation,
TestServiceRegistryIPReallocation, headless/ExternalName creates) and
pkg/apis/core/v1/defaults_test.go (TestSetDefaultService*), on the in-memory fake and on
real etcd.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import pytest

from services.api.machinery.errors import InvalidError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.serviceips import NODE_PORTS_PREFIX, SERVICE_IPS_PREFIX, ServiceNetwork
from services.storage import Storage
from tests.apiserver.conftest import obj

SVC = BY_KIND["Service"]


def service(name: str, **spec: Any) -> Any:
    spec.setdefault("ports", [{"port": 80}])
    spec.setdefault("selector", {"app": name})
    return obj({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})


async def test_kubernetes_service_takes_the_first_ip(api: ApiServer) -> None:
    svc: Any = await api.get(SVC, "default", "kubernetes")
    assert svc.spec.cluster_ip == "10.96.0.1"
    assert [(p.name, p.port, p.target_port) for p in svc.spec.ports] == [("https", 443, "6443")]


async def test_create_defaults_and_allocates_a_cluster_ip(api: ApiServer) -> None:
    svc: Any = await api.create(
        service("web", ports=[{"name": "a", "port": 80}, {"name": "x", "port": 1}])
    )
    assert svc.spec.type == "ClusterIP"
    assert svc.spec.session_affinity == "None"
    assert svc.spec.internal_traffic_policy == "Cluster"
    assert svc.spec.ip_family_policy == "SingleStack"
    assert list(svc.spec.ip_families) == ["IPv4"]
    assert ipaddress.ip_address(svc.spec.cluster_ip) in ipaddress.ip_network("10.96.0.0/12")
    assert list(svc.spec.cluster_ips) == [svc.spec.cluster_ip]
    assert [(p.protocol, p.target_port) for p in svc.spec.ports] == [("TCP", "80"), ("TCP", "1")]
    assert await api.storage.get(SERVICE_IPS_PREFIX + svc.spec.cluster_ip) is not None


async def test_headless_gets_no_ip_and_selectorless_headless_requires_dual_stack(
    api: ApiServer,
) -> None:
    svc: Any = await api.create(service("h", clusterIP="None"))
    assert svc.spec.cluster_ip == "None" and list(svc.spec.cluster_ips) == ["None"]
    assert svc.spec.ip_family_policy == "SingleStack"
    bare: Any = await api.create(service("h2", clusterIP="None", selector={}))
    assert bare.spec.ip_family_policy == "RequireDualStack"


async def test_external_name_gets_no_ip_and_no_families(api: ApiServer) -> None:
    svc: Any = await api.create(
        service("ext", type="ExternalName", externalName="example.com", ports=[])
    )
    assert svc.spec.cluster_ip == "" and not svc.spec.ip_families
    assert not svc.spec.HasField("internal_traffic_policy")


async def test_node_port_service_gets_a_port_in_range_and_traffic_policy(api: ApiServer) -> None:
    svc: Any = await api.create(
        service(
            "np",
            type="NodePort",
            ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30080}],
        )
    )
    assert 30000 <= svc.spec.ports[0].node_port <= 32767
    assert svc.spec.ports[1].node_port == 30080
    assert svc.spec.external_traffic_policy == "Cluster"
    assert await api.storage.get(f"{NODE_PORTS_PREFIX}30080") is not None


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"clusterIP": "10.96.0.1"}, "spec.clusterIPs", "provided IP is already allocated"),
        (
            {"clusterIP": "10.0.0.1"},
            "spec.clusterIPs",
            "is not in the valid range. The range of valid IPs is 10.96.0.0/12",
        ),
        (
            {"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]},
            "spec.ports[0].nodePort",
            "provided port is not in the valid range. The range of valid ports is 30000-32767",
        ),
    ],
)
async def test_create_refuses_an_ip_or_port_it_cannot_give(
    api: ApiServer, spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidError) as e:
        await api.create(service("bad", **spec))
    assert [c.path for c in e.value.errors] == [field]
    assert message in str(e.value)
    assert await api.get_or_none(SVC, "default", "bad") is None


async def test_a_taken_node_port_is_refused(api: ApiServer) -> None:
    await api.create(service("a", type="NodePort", ports=[{"port": 80, "nodePort": 30100}]))
    with pytest.raises(InvalidError, match="provided port is already allocated"):
        await api.create(service("b", type="NodePort", ports=[{"port": 80, "nodePort": 30100}]))


async def test_delete_releases_ip_and_node_port_for_reuse(api: ApiServer) -> None:
    svc: Any = await api.create(
        service(
            "a", type="NodePort", clusterIP="10.96.0.50", ports=[{"port": 80, "nodePort": 30200}]
        )
    )
    assert svc.spec.cluster_ip == "10.96.0.50"
    await api.delete(SVC, "default", "a")
    assert await api.storage.get(SERVICE_IPS_PREFIX + "10.96.0.50") is None
    assert await api.storage.get(f"{NODE_PORTS_PREFIX}30200") is None
    again: Any = await api.create(
        service(
            "b", type="NodePort", clusterIP="10.96.0.50", ports=[{"port": 80, "nodePort": 30200}]
        )
    )
    assert again.spec.ports[0].node_port == 30200


async def test_update_keeps_allocated_values_and_cluster_ip_is_immutable(api: ApiServer) -> None:
    svc: Any = await api.create(service("a", type="NodePort"))
    ip, port = svc.spec.cluster_ip, svc.spec.ports[0].node_port
    fresh = service("a", type="NodePort", selector={"app": "other"})
    fresh.metadata.resource_version = svc.metadata.resource_version
    updated: Any = await api.update(fresh)
    assert (updated.spec.cluster_ip, updated.spec.ports[0].node_port) == (ip, port)
    moved = service("a", type="NodePort", clusterIP="10.96.0.77")
    with pytest.raises(InvalidError, match="spec.clusterIPs\\[0\\].*may not change once set"):
        await api.update(moved)


async def test_two_replicas_never_give_one_ip_twice(storage: Storage) -> None:
    """Two apiservers on one store, a range of 6 usable IPs (one the kubernetes service's):
    10 concurrent creates get 5 distinct IPs, the rest "range is full"."""
    config = ApiServerConfig(service_network=ServiceNetwork(cidr="10.0.0.0/29"))
    a, b = ApiServer(storage, config), ApiServer(storage, config)
    await a.start()
    await b.start()
    try:
        results = await asyncio.gather(
            *((a if i % 2 else b).create(service(f"s{i}")) for i in range(10)),
            return_exceptions=True,
        )
    finally:
        await a.stop()
        await b.stop()
    ips = [r.spec.cluster_ip for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(ips) == len(set(ips)) == 5
    assert "10.0.0.1" not in ips
    assert all(isinstance(r, InvalidError) for r in refused), refused
    assert all("range is full" in str(r) or "already allocated" in str(r) for r in refused)


async def test_same_requested_ip_from_two_replicas_one_wins(storage: Storage) -> None:
    a, b = ApiServer(storage), ApiServer(storage)
    await a.start()
    await b.start()
    try:
        results = await asyncio.gather(
            a.create(service("x", clusterIP="10.96.1.1")),
            b.create(service("y", clusterIP="10.96.1.1")),
            return_exceptions=True,
        )
    finally:
        await a.stop()
        await b.stop()
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert any(isinstance(r, InvalidError) and "already allocated" in str(r) for r in results)


async def test_secret_string_data_folds_into_data_and_type_defaults(api: ApiServer) -> None:
    s: Any = await api.create(
        obj(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s"},
                "data": {"a": "b2xk", "b": "eA=="},
                "stringData": {"a": "new"},
            }
        )
    )
    assert s.type == "Opaque"
    assert dict(s.data) == {"a": b"new", "b": b"x"}
    assert not s.string_data
    stored: Any = await api.get(BY_KIND["Secret"], "default", "s")
    assert not stored.string_data and stored.data["a"] == b"new"


async def test_a_batch_of_node_port_services_never_shares_a_port(storage: Storage) -> None:
    """20 NodePort services in one batch create, a node port range of 25: every port
    distinct (items that picked the same port are picked again, not refused)."""
    config = ApiServerConfig(service_network=ServiceNetwork(node_ports=(30000, 30024)))
    api = ApiServer(storage, config)
    await api.start()
    try:
        results = await api.batch_create([service(f"s{i}", type="NodePort") for i in range(20)])
    finally:
        await api.stop()
    assert [r.error for r in results] == [None] * 20
    ports = [r.obj.spec.ports[0].node_port for r in results]
    assert len(set(ports)) == 20 and all(30000 <= p <= 30024 for p in ports)


async def _retype(api: ApiServer, name: str, **spec: Any) -> Any:
    current: Any = await api.get(SVC, "default", name)
    new = service(name, **spec)
    new.metadata.resource_version = current.metadata.resource_version
    new.spec.cluster_ip = current.spec.cluster_ip if spec.get("type") != "ExternalName" else ""
    for p, old in zip(new.spec.ports, current.spec.ports, strict=False):
        p.node_port = old.node_port  # a client that sends back what it read
    return await api.update(new)


async def test_type_changes_allocate_and_release_node_ports_in_the_update(api: ApiServer) -> None:
    """upstream's TestUpdateServiceTypeClusterIPToNodePort / ...NodePortToClusterIP and
    dropTypeDependentFields: a node port appears with NodePort and goes with ClusterIP."""
    svc: Any = await api.create(service("t"))
    ip = svc.spec.cluster_ip
    as_node_port: Any = await _retype(api, "t", type="NodePort")
    port = as_node_port.spec.ports[0].node_port
    assert 30000 <= port <= 32767 and as_node_port.spec.cluster_ip == ip
    assert as_node_port.spec.external_traffic_policy == "Cluster"
    assert await api.storage.get(f"{NODE_PORTS_PREFIX}{port}") is not None
    back: Any = await _retype(api, "t", type="ClusterIP")
    assert back.spec.ports[0].node_port == 0 and back.spec.cluster_ip == ip
    assert not back.spec.external_traffic_policy
    assert await api.storage.get(f"{NODE_PORTS_PREFIX}{port}") is None
    external: Any = await _retype(api, "t", type="ExternalName", externalName="x.example.com")
    assert external.spec.cluster_ip == "" and not external.spec.ip_families
    assert await api.storage.get(SERVICE_IPS_PREFIX + ip) is None


async def test_an_update_asking_for_a_taken_node_port_is_refused(api: ApiServer) -> None:
    await api.create(service("a", type="NodePort", ports=[{"port": 80, "nodePort": 30300}]))
    b: Any = await api.create(service("b", type="NodePort"))
    moved = service("b", type="NodePort", ports=[{"port": 80, "nodePort": 30300}])
    moved.spec.cluster_ip = b.spec.cluster_ip
    with pytest.raises(InvalidError, match="provided port is already allocated"):
        await api.update(moved)
    kept: Any = await api.get(SVC, "default", "b")
    assert kept.spec.ports[0].node_port == b.spec.ports[0].node_port


@pytest.mark.parametrize(
    ("spec", "field", "want"),
    [
        # upstream's defaults_test.go TestSetDefaultServiceSessionAffinityConfig / ...ExternalTraffic
        ({"sessionAffinity": "ClientIP"}, "timeout", 10800),
        (
            {
                "sessionAffinity": "None",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 1}},
            },
            "has_affinity_config",
            False,
        ),
        ({"externalIPs": ["1.2.3.4"]}, "external_traffic_policy", "Cluster"),
        ({}, "external_traffic_policy", ""),
        ({"type": "LoadBalancer"}, "allocate_lb_node_ports", True),
    ],
)
async def test_service_defaults(
    api: ApiServer, spec: dict[str, Any], field: str, want: Any
) -> None:
    svc: Any = await api.create(service("d", **spec))
    got = {
        "timeout": svc.spec.session_affinity_config.client_ip.timeout_seconds,
        "has_affinity_config": svc.spec.HasField("session_affinity_config"),
        "external_traffic_policy": svc.spec.external_traffic_policy,
        "allocate_lb_node_ports": svc.spec.allocate_load_balancer_node_ports,
    }[field]
    assert got == want


async def test_a_batch_update_of_services_allocates_as_a_single_update_does(api: ApiServer) -> None:
    svc: Any = await api.create(service("b"))
    changed = service("b", type="NodePort")
    changed.spec.cluster_ip = svc.spec.cluster_ip
    [result] = await api.batch_update([changed])
    assert result.error is None
    port = result.obj.spec.ports[0].node_port
    assert 30000 <= port <= 32767
    assert await api.storage.get(f"{NODE_PORTS_PREFIX}{port}") is not None
