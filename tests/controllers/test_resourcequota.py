"""The resource quota controller (services/controllers/resourcequota.py): calculate_usage with
the cases of upstream's pkg/controller/resourcequota/resource_quota_controller_test.go
(TestSyncResourceQuota: pods terminal or not, scopes, hard resources nothing uses set to 0,
usage masked to hard), and the controller against a real gRPC apiserver: status computed,
usage freed when a pod is deleted or finishes, a spec change recomputed."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, policyv1core_pb2
from services.api.machinery.kinds import BY_KIND
from services.controllers.resourcequota import (
    ResourceQuotaConfig,
    ResourceQuotaController,
    calculate_usage,
)
from tests.builders import MakePod, persistent_volume_claim, resource_quota, service
from tests.controllers.conftest import NS, ControllerCluster

NOW = 1_800_000_000.0
QUOTAS = BY_KIND["ResourceQuota"]


def _pod(name: str, phase: str = "Running", **resources: Any) -> core_pb2.Pod:
    b = MakePod().name(name).namespace("testing").phase(phase)
    b.container(
        "c", "x", requests=resources.get("requests", {}), limits=resources.get("limits", {})
    )
    return b.obj()


def _usage(rq: policyv1core_pb2.ResourceQuota, pods: list[Message]) -> dict[str, str]:
    return calculate_usage(rq, {"pods": pods}, NOW)


POD_LIST = [
    _pod("pod-running", requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "200m", "memory": "2Gi"}),
    _pod("pod-running-2", requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "200m", "memory": "2Gi"}),
    _pod("pod-failed", "Failed", requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "200m", "memory": "2Gi"}),
]  # fmt: skip


def test_compute_usage_counts_pods_that_are_not_terminal() -> None:
    """TestSyncResourceQuota "pods": the failed pod counts only toward count/pods."""
    rq = resource_quota(hard={"cpu": "3", "memory": "100Gi", "pods": "5", "count/pods": "5"})
    assert _usage(rq, POD_LIST) == {"cpu": "200m", "memory": "2Gi", "pods": "2", "count/pods": "3"}


def test_scopes_select_the_pods_that_count() -> None:
    """TestSyncResourceQuota "pods-with-scopes"-like: a BestEffort quota sees no burstable pod."""
    rq = resource_quota(hard={"pods": "5"}, scopes=["BestEffort"])
    best_effort = _pod("be")
    assert _usage(rq, [*POD_LIST, best_effort]) == {"pods": "1"}


def test_every_hard_resource_gets_a_used_value_even_when_nothing_uses_it() -> None:
    rq = resource_quota(
        hard={"limits.cpu": "4", "requests.memory": "1Gi", "count/leases.coordination.k8s.io": "2"}
    )
    assert calculate_usage(rq, {}, NOW) == {
        "limits.cpu": "0",
        "requests.memory": "0",
        "count/leases.coordination.k8s.io": "0",
    }


def test_other_kinds_count_as_objects() -> None:
    rq = resource_quota(hard={"count/leases.coordination.k8s.io": "2"})
    leases = [BY_KIND["Lease"].new(), BY_KIND["Lease"].new()]
    assert calculate_usage(rq, {"leases": leases}, NOW) == {"count/leases.coordination.k8s.io": "2"}


def test_services_count_their_node_ports_and_load_balancers() -> None:
    hard = {"services": "10", "services.nodeports": "10", "services.loadbalancers": "2"}
    rq = resource_quota("q", NS, hard=hard)
    services = [
        service("a", NS, type_="NodePort", ports=[{"port": 80}, {"port": 81}]),
        service("b", NS, type_="LoadBalancer", ports=[{"port": 80}]),
        service("c", NS, ports=[{"port": 80}]),
    ]
    assert calculate_usage(rq, {"services": services}, NOW) == {
        "services": "3",
        "services.nodeports": "3",
        "services.loadbalancers": "1",
    }


def test_claims_count_their_storage_overall_and_per_class() -> None:
    gold = "gold.storageclass.storage.k8s.io/requests.storage"
    rq = resource_quota("q", NS, hard={"requests.storage": "10Gi", gold: "5Gi"})
    claims = [
        persistent_volume_claim("a", "1Gi", namespace=NS, storageClassName="gold"),
        persistent_volume_claim("b", "2Gi", namespace=NS),
    ]
    assert calculate_usage(rq, {"persistentvolumeclaims": claims}, NOW) == {
        "requests.storage": "3Gi",
        gold: "1Gi",
    }


def test_config_refuses_a_non_positive_resync() -> None:
    with pytest.raises(ValueError, match="resync_period"):
        ResourceQuotaConfig(resync_period=0)


# ------------------------------------------------------------------ against the apiserver


def _stored(
    cluster: ControllerCluster, ctrl: ResourceQuotaController
) -> policyv1core_pb2.ResourceQuota | None:
    return ctrl.quota_informer.store.get(f"{NS}/compute")  # type: ignore[return-value]


def _used(cluster: ControllerCluster, ctrl: ResourceQuotaController) -> dict[str, str]:
    rq = _stored(cluster, ctrl)
    return dict(rq.status.used) if rq is not None else {}


async def test_the_controller_computes_usage_and_frees_it_when_pods_go(
    cluster: ControllerCluster,
) -> None:
    ctrl = ResourceQuotaController(cluster.client, cluster.informers, clock=cluster.api_clock)
    await cluster.start(ctrl)
    await cluster.client.create(
        resource_quota("compute", NS, hard={"pods": "2", "requests.cpu": "1"})
    )
    await cluster.until(lambda: _used(cluster, ctrl) == {"pods": "0", "requests.cpu": "0"})
    rq = _stored(cluster, ctrl)
    assert rq is not None and dict(rq.status.hard) == {"pods": "2", "requests.cpu": "1"}

    a = await cluster.pod(
        "a",
        {},
        containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "300m"}}}],
    )
    b = await cluster.pod(
        "b",
        {},
        containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "300m"}}}],
    )
    await cluster.until(lambda: _used(cluster, ctrl) == {"pods": "2", "requests.cpu": "600m"})

    await cluster.client.delete(BY_KIND["Pod"], a.metadata.name, NS)
    await cluster.until(lambda: _used(cluster, ctrl) == {"pods": "1", "requests.cpu": "300m"})

    await cluster.set_status(b, phase="Succeeded")
    await cluster.until(lambda: _used(cluster, ctrl) == {"pods": "0", "requests.cpu": "0"})


async def test_a_spec_change_is_reflected_in_status_hard(cluster: ControllerCluster) -> None:
    ctrl = ResourceQuotaController(cluster.client, cluster.informers, clock=cluster.api_clock)
    await cluster.start(ctrl)
    await cluster.client.create(resource_quota("compute", NS, hard={"pods": "2"}))
    await cluster.until(lambda: _used(cluster, ctrl) == {"pods": "0"})
    rq: Any = await cluster.client.get(QUOTAS, "compute", NS)
    rq.spec.hard["pods"] = "5"
    rq.spec.hard["count/pods"] = "9"
    await cluster.client.update(rq)

    def widened() -> bool:
        s = _stored(cluster, ctrl)
        return s is not None and dict(s.status.hard) == {"pods": "5", "count/pods": "9"}

    await cluster.until(widened)
    assert _used(cluster, ctrl) == {"pods": "0", "count/pods": "0"}


async def test_deleting_an_object_of_another_kind_frees_its_count(
    cluster: ControllerCluster,
) -> None:
    """Replenishment from every kind's informer, not only at the resync."""
    ctrl = ResourceQuotaController(
        cluster.client,
        cluster.informers,
        clock=cluster.api_clock,
        config=ResourceQuotaConfig(resync_period=3600),
    )
    await cluster.start(ctrl)
    await cluster.client.create(resource_quota("compute", NS, hard={"count/replicasets.apps": "2"}))
    await cluster.until(lambda: _used(cluster, ctrl) == {"count/replicasets.apps": "0"})
    await cluster.replica_set("rs", 0, {"app": "rs"})
    await cluster.until(lambda: _used(cluster, ctrl) == {"count/replicasets.apps": "1"})
    await cluster.client.delete(BY_KIND["ReplicaSet"], "rs", NS)
    await cluster.until(lambda: _used(cluster, ctrl) == {"count/replicasets.apps": "0"})


async def test_a_service_leaving_node_port_frees_its_node_ports(
    cluster: ControllerCluster,
) -> None:
    """Admission never gives usage back on an update; the controller's replenishment on
    a service type change (upstream's GetQuotaServiceType comparison) does."""
    ctrl = ResourceQuotaController(
        cluster.client,
        cluster.informers,
        clock=cluster.api_clock,
        config=ResourceQuotaConfig(resync_period=3600),
    )
    await cluster.start(ctrl)
    await cluster.client.create(resource_quota("compute", NS, hard={"services.nodeports": "2"}))
    await cluster.until(lambda: _used(cluster, ctrl) == {"services.nodeports": "0"})
    await cluster.client.create(service("web", NS, type_="NodePort", ports=[{"port": 80}]))
    await cluster.until(lambda: _used(cluster, ctrl) == {"services.nodeports": "1"})
    web: Any = await cluster.client.get(BY_KIND["Service"], "web", NS)
    web.spec.type = "ClusterIP"
    await cluster.client.update(web)
    await cluster.until(lambda: _used(cluster, ctrl) == {"services.nodeports": "0"})
