"""ResourceQuota admission (services/apiserver/quota.py), with the cases of upstream's
plugin/pkg/admission/resourcequota/admission_test.go: TestAdmitBelowQuotaLimit,
TestAdmitExceedQuotaLimit, TestAdmitEnforceQuotaConstraints, TestAdmitPodInNamespaceWithoutQuota,
TestAdmitBelowTerminatingQuotaLimit, TestAdmitBelowBestEffortQuotaLimit,
TestAdmitBestEffortQuotaLimitIgnoresBurstable, TestAdmitWhenUnrelatedResourceExceedsQuota,
the "status unknown" refusal, PriorityClass scope selectors, and the path through the
apiserver (usage reserved in etcd, 403 and nothing written)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, policyv1core_pb2
from services.api.machinery.errors import ForbiddenError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.quota import check_request
from services.apiserver.registry import ApiServer
from tests.builders import MakePod, resource_quota

NOW = 1_800_000_000.0
PODS = BY_KIND["Pod"]
QUOTAS = BY_KIND["ResourceQuota"]


def _pod(
    name: str, requests: dict[str, str], limits: dict[str, str] | None = None, **spec: Any
) -> core_pb2.Pod:
    b = (
        MakePod()
        .name(name)
        .namespace("test")
        .container("c", "x", requests=requests, limits=limits or {})
    )
    return b.spec(spec).obj()


def _quota(name: str = "quota", **kw: Any) -> policyv1core_pb2.ResourceQuota:
    return resource_quota(name, "test", **kw)


COMPUTE = {"cpu": "3", "memory": "100Gi", "pods": "5"}
COMPUTE_USED = {"cpu": "1", "memory": "50Gi", "pods": "3"}


def test_a_pod_below_the_limit_is_admitted_and_its_usage_added() -> None:
    changed = check_request(
        [_quota(hard=COMPUTE, used=COMPUTE_USED)],
        PODS,
        _pod("p", {"cpu": "100m", "memory": "2Gi"}),
        NOW,
    )
    assert [dict(rq.status.used) for rq in changed] == [
        {"cpu": "1100m", "memory": "52Gi", "pods": "4"}
    ]


def test_a_pod_above_the_limit_is_refused_naming_only_what_it_exceeds() -> None:
    with pytest.raises(ForbiddenError) as e:
        check_request(
            [_quota(hard=COMPUTE, used=COMPUTE_USED)],
            PODS,
            _pod("p", {"cpu": "3", "memory": "2Gi"}),
            NOW,
        )
    assert (
        str(e.value)
        == 'pods "p" is forbidden: exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3'
    )


def test_quota_on_limits_makes_every_container_give_them() -> None:
    hard = {"cpu": "3", "memory": "100Gi", "limits.cpu": "3", "limits.memory": "100Gi"}
    used = {"cpu": "1", "memory": "50Gi", "limits.cpu": "2", "limits.memory": "50Gi"}
    with pytest.raises(ForbiddenError) as e:
        check_request(
            [_quota(hard=hard, used=used)], PODS, _pod("p", {"cpu": "100m", "memory": "2Gi"}), NOW
        )
    assert str(e.value) == (
        'pods "p" is forbidden: failed quota: quota: must specify limits.cpu for: c; limits.memory for: c'
    )


def test_a_namespace_without_quota_admits_anything() -> None:
    assert check_request([], PODS, _pod("p", {"cpu": "100"}), NOW) == []


def test_a_quota_the_controller_has_not_computed_refuses() -> None:
    rq = _quota(hard={"pods": "5", "cpu": "1"}, used={})
    with pytest.raises(ForbiddenError) as e:
        check_request([rq], PODS, _pod("p", {"cpu": "1"}), NOW)
    assert (
        str(e.value)
        == 'pods "p" is forbidden: status unknown for quota: quota, resources: cpu,pods'
    )


def test_only_the_terminating_quota_charges_a_pod_with_a_deadline() -> None:
    terminating = _quota(
        "quota-terminating", hard=COMPUTE, used=COMPUTE_USED, scopes=["Terminating"]
    )
    not_terminating = _quota(
        "quota-non-terminating", hard=COMPUTE, used=COMPUTE_USED, scopes=["NotTerminating"]
    )
    pod = _pod("p", {"cpu": "100m", "memory": "2Gi"}, activeDeadlineSeconds=60)
    changed = check_request([terminating, not_terminating], PODS, pod, NOW)
    assert [rq.metadata.name for rq in changed] == ["quota-terminating"]
    assert dict(changed[0].status.used) == {"cpu": "1100m", "memory": "52Gi", "pods": "4"}


def test_only_the_best_effort_quota_charges_a_best_effort_pod() -> None:
    best = _quota("quota-besteffort", hard={"pods": "5"}, used={"pods": "3"}, scopes=["BestEffort"])
    not_best = _quota(
        "quota-not-besteffort", hard={"pods": "5"}, used={"pods": "3"}, scopes=["NotBestEffort"]
    )
    changed = check_request([best, not_best], PODS, _pod("p", {}), NOW)
    assert [(rq.metadata.name, dict(rq.status.used)) for rq in changed] == [
        ("quota-besteffort", {"pods": "4"})
    ]


def test_a_best_effort_quota_ignores_a_burstable_pod() -> None:
    best = _quota("quota-besteffort", hard={"pods": "5"}, used={"pods": "5"}, scopes=["BestEffort"])
    assert check_request([best], PODS, _pod("p", {"cpu": "100m"}, {"cpu": "200m"}), NOW) == []


def test_an_unrelated_resource_over_its_quota_does_not_refuse() -> None:
    rq = _quota(hard={"services": "3", "pods": "4"}, used={"services": "4", "pods": "1"})
    changed = check_request([rq], PODS, _pod("p", {}), NOW)
    assert dict(changed[0].status.used) == {"services": "4", "pods": "2"}


@pytest.mark.parametrize(
    ("priority_class", "charged"), [("cluster-services", True), ("other", False), ("", False)]
)
def test_a_priority_class_scope_selector_charges_only_its_classes(
    priority_class: str, charged: bool
) -> None:
    rq = _quota(
        hard={"pods": "10"},
        used={"pods": "0"},
        scope_selector=[
            {"scopeName": "PriorityClass", "operator": "In", "values": ["cluster-services"]}
        ],
    )
    pod = _pod("p", {}, priorityClassName=priority_class) if priority_class else _pod("p", {})
    assert bool(check_request([rq], PODS, pod, NOW)) is charged


def test_object_counts_charge_other_kinds() -> None:
    rq = _quota(
        hard={"count/leases.coordination.k8s.io": "1"},
        used={"count/leases.coordination.k8s.io": "1"},
    )
    lease = BY_KIND["Lease"].new()
    lease.metadata.name, lease.metadata.namespace = "l", "test"  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError) as e:
        check_request([rq], BY_KIND["Lease"], lease, NOW)
    assert "exceeded quota: quota, requested: count/leases.coordination.k8s.io=1" in str(e.value)


def test_the_docs_object_quota_refuses_a_node_port_and_a_second_claim() -> None:
    """admin/resource/quota-objects.yaml: services.nodeports 0 refuses a NodePort service
    (and not a ClusterIP one); persistentvolumeclaims 1 refuses the second claim."""
    hard = {"persistentvolumeclaims": "1", "services.loadbalancers": "2", "services.nodeports": "0"}
    used = {"persistentvolumeclaims": "1", "services.loadbalancers": "0", "services.nodeports": "0"}
    svc = BY_KIND["Service"].new()
    svc.metadata.name, svc.metadata.namespace = "np", "test"  # type: ignore[attr-defined]
    svc.spec.type = "ClusterIP"  # type: ignore[attr-defined]
    svc.spec.ports.add(port=80)  # type: ignore[attr-defined]
    assert check_request([_quota(hard=hard, used=used)], BY_KIND["Service"], svc, NOW) == []
    svc.spec.type = "NodePort"  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError) as e:
        check_request([_quota(hard=hard, used=used)], BY_KIND["Service"], svc, NOW)
    assert str(e.value) == (
        'services "np" is forbidden: exceeded quota: quota, requested: services.nodeports=1, '
        "used: services.nodeports=0, limited: services.nodeports=0"
    )
    pvc = BY_KIND["PersistentVolumeClaim"].new()
    pvc.metadata.name, pvc.metadata.namespace = "pvc-quota-demo-2", "test"  # type: ignore[attr-defined]
    pvc.spec.resources.requests["storage"] = "4Gi"  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError) as e:
        check_request([_quota(hard=hard, used=used)], BY_KIND["PersistentVolumeClaim"], pvc, NOW)
    assert "requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1" in str(e.value)


# ------------------------------------------------------------------ through the apiserver


async def _computed_quota(api: ApiServer, **kw: Any) -> None:
    """Create a quota and write its status as the quota controller would."""
    rq = resource_quota("compute", "default", **kw)
    await api.create(resource_quota("compute", "default", hard=kw["hard"]))
    stored = await api.get(QUOTAS, "default", "compute")
    stored.status.CopyFrom(rq.status)  # type: ignore[attr-defined]
    await api.update_status(stored)


async def test_creates_reserve_usage_until_the_quota_refuses_403(api: ApiServer) -> None:
    await _computed_quota(
        api, hard={"pods": "2", "requests.cpu": "1"}, used={"pods": "0", "requests.cpu": "0"}
    )
    for name in ("a", "b"):
        await api.create(
            MakePod()
            .name(name)
            .namespace("default")
            .container("c", "x", requests={"cpu": "400m"})
            .obj()
        )
    rq = await api.get(QUOTAS, "default", "compute")
    assert dict(rq.status.used) == {"pods": "2", "requests.cpu": "800m"}  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError) as e:
        await api.create(
            MakePod()
            .name("c")
            .namespace("default")
            .container("c", "x", requests={"cpu": "100m"})
            .obj()
        )
    assert str(e.value) == (
        'pods "c" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2'
    )
    assert await api.get_or_none(PODS, "default", "c") is None
    rq = await api.get(QUOTAS, "default", "compute")
    assert dict(rq.status.used) == {"pods": "2", "requests.cpu": "800m"}  # type: ignore[attr-defined]


async def test_a_dry_run_create_is_checked_but_reserves_nothing(api: ApiServer) -> None:
    await _computed_quota(api, hard={"pods": "1"}, used={"pods": "0"})
    await api.create(
        MakePod().name("a").namespace("default").container("c", "x").obj(), dry_run=True
    )
    rq = await api.get(QUOTAS, "default", "compute")
    assert dict(rq.status.used) == {"pods": "0"}  # type: ignore[attr-defined]
