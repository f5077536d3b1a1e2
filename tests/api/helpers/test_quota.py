"""The quota evaluators (services/api/helpers/quota.py), with the cases of upstream's
pkg/quota/v1/evaluator/core/pods_test.go (TestPodConstraintsFunc, TestPodEvaluatorUsage,
TestPodEvaluatorMatchingScopes) and pkg/quota/v1/resources_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, policyv1core_pb2, service_pb2, storage_pb2
from services.api.helpers import quota as q
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.quantity import parse_quantity
from services.clock import rfc3339
from tests.builders import MakePod, resource_quota

NOW = 1_800_000_000.0
PODS = BY_KIND["Pod"]


def _pod(*containers: tuple[dict[str, str], dict[str, str]], **spec: Any) -> core_pb2.Pod:
    b = MakePod().name("p").namespace("test")
    for i, (req, lim) in enumerate(containers):
        b.container(f"c{i}", requests=req, limits=lim)
    return b.spec(spec).obj()


def _strings(rl: q.ResourceList) -> dict[str, str]:
    return q.to_strings(rl)


# ------------------------------------------------------------------ Constraints

CONSTRAINTS = [
    ("init container cpu request missing", ["requests.cpu"], _pod(), True, "must specify requests.cpu for: init"),
    ("container memory limit missing", ["limits.memory"], _pod(({}, {"cpu": "1"})), False, "must specify limits.memory for: c0"),
    ("container cpu request and limit given", ["requests.cpu", "limits.cpu"], _pod(({"cpu": "1"}, {"cpu": "2"})), False, ""),
    ("not in the validation set: no constraint", ["requests.nvidia.com/gpu", "pods"], _pod(({}, {})), False, ""),
    (
        "several missing, sorted by resource",
        ["requests.cpu", "limits.memory"],
        _pod(({}, {}), ({"cpu": "1"}, {})),
        False,
        "must specify limits.memory for: c0,c1; requests.cpu for: c0",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "required", "pod", "init", "want"), CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS]
)
def test_quota_on_cpu_or_memory_makes_every_container_name_them(
    name: str, required: list[str], pod: core_pb2.Pod, init: bool, want: str
) -> None:
    if init:
        pod.spec.init_containers.add(name="init")
    assert q.pod_constraints(required, pod) == want


# ------------------------------------------------------------------ Usage

USAGE = [
    (
        "init container CPU: the larger of init and regular wins",
        _pod(({"cpu": "1m"}, {"cpu": "2m"})),
        [({"cpu": "3m"}, {"cpu": "4m"})],
        {"count/pods": "1", "pods": "1", "cpu": "3m", "requests.cpu": "3m", "limits.cpu": "4m"},
    ),
    (
        "memory and ephemeral storage",
        _pod(({"memory": "1Mi", "ephemeral-storage": "32Mi"}, {"memory": "2Mi", "ephemeral-storage": "64Mi"})),
        [],
        {
            "count/pods": "1",
            "pods": "1",
            "memory": "1Mi",
            "requests.memory": "1Mi",
            "limits.memory": "2Mi",
            "ephemeral-storage": "32Mi",
            "requests.ephemeral-storage": "32Mi",
            "limits.ephemeral-storage": "64Mi",
        },
    ),
    (
        "extended resources count as requests.<name> only",
        _pod(({"example.com/dongle": "3"}, {"example.com/dongle": "3"})),
        [],
        {"count/pods": "1", "pods": "1", "requests.example.com/dongle": "3"},
    ),
    (
        "hugepages count under both names",
        _pod(({"hugepages-2Mi": "4Mi"}, {"hugepages-2Mi": "4Mi"})),
        [],
        {"count/pods": "1", "pods": "1", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi"},
    ),
    (
        "two containers add up",
        _pod(({"cpu": "1"}, {}), ({"cpu": "500m"}, {})),
        [],
        {"count/pods": "1", "pods": "1", "cpu": "1500m", "requests.cpu": "1500m"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "pod", "inits", "want"), USAGE, ids=[c[0] for c in USAGE])
def test_pod_usage(
    name: str,
    pod: core_pb2.Pod,
    inits: list[tuple[dict[str, str], dict[str, str]]],
    want: dict[str, str],
) -> None:
    for i, (req, lim) in enumerate(inits):
        c = pod.spec.init_containers.add(name=f"i{i}")
        c.resources.requests.update(req)
        c.resources.limits.update(lim)
    assert _strings(q.pod_usage(pod, NOW)) == want


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_terminal_pod_counts_only_as_an_object(phase: str) -> None:
    pod = _pod(({"cpu": "1"}, {}))
    pod.status.phase = phase
    assert _strings(q.pod_usage(pod, NOW)) == {"count/pods": "1"}


def test_a_pod_past_its_deletion_grace_stops_counting() -> None:
    pod = _pod(({"cpu": "1"}, {}))
    pod.metadata.deletion_timestamp = rfc3339(NOW - 60)
    pod.metadata.deletion_grace_period_seconds = 30
    assert _strings(q.pod_usage(pod, NOW)) == {"count/pods": "1"}
    pod.metadata.deletion_timestamp = rfc3339(NOW)
    assert "requests.cpu" in q.pod_usage(pod, NOW)


# ------------------------------------------------------------------ Scopes


def _sel(
    scope: str, op: str = "Exists", *values: str
) -> policyv1core_pb2.ScopedResourceSelectorRequirement:
    return policyv1core_pb2.ScopedResourceSelectorRequirement(
        scope_name=scope, operator=op, values=list(values)
    )


SCOPES = [
    ("best effort pod", _pod(({}, {})), _sel("BestEffort"), True),
    ("best effort pod is not NotBestEffort", _pod(({}, {})), _sel("NotBestEffort"), False),
    ("burstable pod", _pod(({"cpu": "1"}, {})), _sel("NotBestEffort"), True),
    ("no deadline: NotTerminating", _pod(({}, {})), _sel("NotTerminating"), True),
    ("deadline: Terminating", _pod(({}, {}), activeDeadlineSeconds=60), _sel("Terminating"), True),
    ("deadline: not NotTerminating", _pod(({}, {}), activeDeadlineSeconds=60), _sel("NotTerminating"), False),
    ("priority class Exists", _pod(({}, {}), priorityClassName="high"), _sel("PriorityClass"), True),
    ("no priority class: not Exists", _pod(({}, {})), _sel("PriorityClass"), False),
    ("priority class In", _pod(({}, {}), priorityClassName="high"), _sel("PriorityClass", "In", "high", "mid"), True),
    ("priority class not In", _pod(({}, {}), priorityClassName="low"), _sel("PriorityClass", "In", "high"), False),
    ("priority class NotIn", _pod(({}, {}), priorityClassName="low"), _sel("PriorityClass", "NotIn", "high"), True),
    ("no priority class is NotIn", _pod(({}, {})), _sel("PriorityClass", "NotIn", "high"), True),
    ("no priority class DoesNotExist", _pod(({}, {})), _sel("PriorityClass", "DoesNotExist"), True),
    (
        "cross-namespace affinity",
        _pod(({}, {}), affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "namespaces": ["other"]}]}}),
        _sel("CrossNamespacePodAffinity"),
        True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "pod", "sel", "want"), SCOPES, ids=[c[0] for c in SCOPES])
def test_pod_matches_scope(
    name: str,
    pod: core_pb2.Pod,
    sel: policyv1core_pb2.ScopedResourceSelectorRequirement,
    want: bool,
) -> None:
    assert q.pod_matches_scope(sel, pod) is want


def test_a_quota_with_scopes_never_covers_other_kinds() -> None:
    rq = resource_quota(
        hard={"count/leases.coordination.k8s.io": "1"}, used={}, scopes=["BestEffort"]
    )
    lease = BY_KIND["Lease"].new()
    assert q.matching_resources(BY_KIND["Lease"], rq.status.hard) == [
        "count/leases.coordination.k8s.io"
    ]
    assert not q.matches(rq, BY_KIND["Lease"], lease)


def test_a_quota_covers_only_what_its_status_hard_names() -> None:
    pod = _pod(({"cpu": "1"}, {}))
    assert not q.matches(resource_quota(hard={"cpu": "1"}), PODS, pod)  # no status yet
    assert q.matches(resource_quota(hard={"cpu": "1"}, used={}), PODS, pod)
    assert not q.matches(
        resource_quota(hard={"count/leases.coordination.k8s.io": "1"}, used={}), PODS, pod
    )


# ------------------------------------------------------------------ resource lists (resources_test.go)


def test_add_subtract_and_less_than_or_equal() -> None:
    a = {"cpu": parse_quantity("100m"), "memory": parse_quantity("1Gi")}
    b = {"cpu": parse_quantity("200m"), "pods": parse_quantity("1")}
    assert _strings(q.add(a, b)) == {"cpu": "300m", "memory": "1Gi", "pods": "1"}
    assert _strings(q.subtract(a, b)) == {"cpu": "-100m", "memory": "1Gi", "pods": "-1"}
    assert q.less_than_or_equal(q.add(a, b), {"cpu": parse_quantity("250m")}) == ["cpu"]
    assert q.less_than_or_equal(a, {}) == []
    assert (
        q.pretty({"pods": parse_quantity("1"), "cpu": parse_quantity("0.5")}) == "cpu=500m,pods=1"
    )
    assert q.equal({"cpu": "1"}, {"cpu": "1000m"})
    assert not q.equal({"cpu": "1"}, {"cpu": "1", "pods": "0"})


# ------------------------------------------------------------------ services and claims
# Cases of upstream's evaluator/core/services_test.go (TestServiceEvaluatorUsage) and
# persistent_volume_claims_test.go (TestPersistentVolumeClaimEvaluatorUsage).

SERVICES = BY_KIND["Service"]
CLAIMS = BY_KIND["PersistentVolumeClaim"]
_SVC_COUNTS = {"services": "1", "count/services": "1"}

SERVICE_USAGE = [
    ("loadbalancer", {"type": "LoadBalancer", "ports": [{"port": 27443}]}, {"services.loadbalancers": "1", "services.nodeports": "1"}),
    ("clusterip", {"type": "ClusterIP"}, {"services.loadbalancers": "0", "services.nodeports": "0"}),
    ("nodeports", {"type": "NodePort", "ports": [{"port": 27443}]}, {"services.loadbalancers": "0", "services.nodeports": "1"}),
    ("multi-nodeports", {"type": "NodePort", "ports": [{"port": 27443}, {"port": 27444}]}, {"services.loadbalancers": "0", "services.nodeports": "2"}),
    (
        "loadbalancer, node ports not allocated: only explicit ones count",
        {"type": "LoadBalancer", "allocate_load_balancer_node_ports": False, "ports": [{"port": 1, "node_port": 32001}, {"port": 2}]},
        {"services.loadbalancers": "1", "services.nodeports": "1"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "spec", "want"), SERVICE_USAGE, ids=[c[0] for c in SERVICE_USAGE])
def test_service_usage(name: str, spec: dict[str, Any], want: dict[str, str]) -> None:
    svc = service_pb2.Service(spec=service_pb2.ServiceSpec(**spec))
    assert _strings(q.usage(SERVICES, svc, NOW)) == _SVC_COUNTS | want


CLAIM_USAGE = [
    ("pvc-usage", "", {"storage": "10Gi"}, {"requests.storage": "10Gi"}),
    (
        "pvc-usage-by-class",
        "gold",
        {"storage": "10Gi"},
        {
            "requests.storage": "10Gi",
            "gold.storageclass.storage.k8s.io/requests.storage": "10Gi",
            "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        },
    ),
    ("pvc-usage-rounded: a fraction of a byte counts as a byte", "", {"storage": "1500m"}, {"requests.storage": "2"}),
    ("no storage request", "", {}, {}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "cls", "requests", "want"), CLAIM_USAGE, ids=[c[0] for c in CLAIM_USAGE]
)
def test_claim_usage(name: str, cls: str, requests: dict[str, str], want: dict[str, str]) -> None:
    pvc = storage_pb2.PersistentVolumeClaim()
    if cls:
        pvc.spec.storage_class_name = cls
    pvc.spec.resources.requests.update(requests)
    counts = {"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1"}
    assert _strings(q.usage(CLAIMS, pvc, NOW)) == counts | want


def test_the_beta_annotation_names_a_claims_class_first() -> None:
    pvc = storage_pb2.PersistentVolumeClaim()
    pvc.spec.storage_class_name = "gold"
    pvc.metadata.annotations[q.BETA_STORAGE_CLASS_ANNOTATION] = "silver"
    assert q.claim_class(pvc) == "silver"


def test_matching_resources_of_services_and_claims() -> None:
    names = [
        "services.nodeports", "services.loadbalancers", "requests.storage", "pods",
        "gold.storageclass.storage.k8s.io/requests.storage", "persistentvolumeclaims",
    ]  # fmt: skip
    assert q.matching_resources(SERVICES, names) == ["services.loadbalancers", "services.nodeports"]
    assert q.matching_resources(CLAIMS, names) == [
        "gold.storageclass.storage.k8s.io/requests.storage",
        "persistentvolumeclaims",
        "requests.storage",
    ]
