"""The quota evaluators (services/api/helpers/quota.py), with the cases of upstream's
pkg/quota/v1/evaluator/core/pods_test.go (TestPodConstraintsFunc, TestPodEvaluatorUsage,
TestPodEvaluatorMatchingScopes) and pkg/quota/v1/resources_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, policyv1core_pb2
from services.api.helpers import quota as q
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.quantity import parse_quantity
from services.clock import rfc3339
from tests.builders import MakePod, persistent_volume_claim, resource_quota, service

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
# upstream's evaluator/core/services_test.go (TestServiceEvaluatorMatchesResources,
# TestServiceEvaluatorUsage) and persistent_volume_claims_test.go
# (TestPersistentVolumeClaimEvaluatorUsage, ...MatchingResources).

SERVICES = BY_KIND["Service"]
CLAIMS = BY_KIND["PersistentVolumeClaim"]
GOLD = "gold.storageclass.storage.k8s.io/"


def test_the_service_evaluator_matches_its_resources_only() -> None:
    given = ["configmaps", "cpu", "services", "services.nodeports", "services.loadbalancers"]
    assert q.matching_resources(SERVICES, given) == [
        "services",
        "services.loadbalancers",
        "services.nodeports",
    ]


def _svc_usage(services: str, lbs: str, node_ports: str) -> dict[str, str]:
    return {
        "count/services": "1",
        "services": services,
        "services.loadbalancers": lbs,
        "services.nodeports": node_ports,
    }


SERVICE_USAGE = [
    ("loadbalancer", "LoadBalancer", [], {}, _svc_usage("1", "1", "0")),
    ("loadbalancer_ports", "LoadBalancer", [{"port": 27443}], {}, _svc_usage("1", "1", "1")),
    ("loadbalancer_2_ports", "LoadBalancer", [{"port": 27443}, {"port": 27444}], {}, _svc_usage("1", "1", "2")),
    ("clusterip", "ClusterIP", [], {}, _svc_usage("1", "0", "0")),
    ("nodeports", "NodePort", [{"port": 27443}], {}, _svc_usage("1", "0", "1")),
    ("multi-nodeports", "NodePort", [{"port": 27443}, {"port": 27444}], {}, _svc_usage("1", "0", "2")),
    (
        "nodeports-disabled",
        "LoadBalancer",
        [{"port": 27443}, {"port": 27444}],
        {"allocateLoadBalancerNodePorts": False},
        _svc_usage("1", "1", "0"),
    ),
    (
        "nodeports-default-enabled",
        "LoadBalancer",
        [{"port": 27443, "nodePort": 32001}, {"port": 27444, "nodePort": 32002}],
        {},
        _svc_usage("1", "1", "2"),
    ),
    (
        "nodeports-explicitly-enabled",
        "LoadBalancer",
        [{"port": 27443}, {"port": 27444}],
        {"allocateLoadBalancerNodePorts": True},
        _svc_usage("1", "1", "2"),
    ),
    (
        "nodeports-disabled-but-specified",
        "LoadBalancer",
        [{"port": 27443, "nodePort": 32001}, {"port": 27444, "nodePort": 32002}],
        {"allocateLoadBalancerNodePorts": False},
        _svc_usage("1", "1", "2"),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "type_", "ports", "spec", "want"), SERVICE_USAGE, ids=[c[0] for c in SERVICE_USAGE]
)
def test_service_usage(
    name: str, type_: str, ports: list[dict[str, Any]], spec: dict[str, Any], want: dict[str, str]
) -> None:
    svc = service("svc", "test", type_=type_, ports=ports, **spec)
    assert _strings(q.usage(SERVICES, svc, NOW)) == want


def _claim_usage(storage: str, cls: str = "") -> dict[str, str]:
    out = {
        "count/persistentvolumeclaims": "1",
        "persistentvolumeclaims": "1",
        "requests.storage": storage,
    }
    if cls:
        out[f"{cls}.storageclass.storage.k8s.io/persistentvolumeclaims"] = "1"
        out[f"{cls}.storageclass.storage.k8s.io/requests.storage"] = storage
    return out


CLAIM_USAGE = [
    ("pvc-usage", persistent_volume_claim("foo", "10Gi", namespace="ns"), _claim_usage("10Gi")),
    ("pvc-usage-by-class", persistent_volume_claim("foo", "10Gi", namespace="ns", storageClassName="gold"), _claim_usage("10Gi", "gold")),
    ("pvc-usage-rounded", persistent_volume_claim("foo", "1001m", namespace="ns"), _claim_usage("2")),
    ("pvc-usage-by-class-rounded", persistent_volume_claim("foo", "1001m", namespace="ns", storageClassName="gold"), _claim_usage("2", "gold")),
    # GetPersistentVolumeClaimClass: the beta annotation wins over storageClassName
    (
        "the beta storage class annotation names the class",
        persistent_volume_claim("foo", "1Gi", namespace="ns", storageClassName="silver", metadata={"annotations": {q.BETA_STORAGE_CLASS_ANNOTATION: "gold"}}),
        _claim_usage("1Gi", "gold"),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "claim", "want"), CLAIM_USAGE, ids=[c[0] for c in CLAIM_USAGE])
def test_claim_usage(name: str, claim: Any, want: dict[str, str]) -> None:
    assert _strings(q.usage(CLAIMS, claim, NOW)) == want


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (
            [
                "count/persistentvolumeclaims",
                "requests.storage",
                "persistentvolumeclaims",
                GOLD + "requests.storage",
                GOLD + "persistentvolumeclaims",
            ],
            sorted(
                [
                    "count/persistentvolumeclaims",
                    "requests.storage",
                    "persistentvolumeclaims",
                    GOLD + "requests.storage",
                    GOLD + "persistentvolumeclaims",
                ]
            ),
        ),
        (
            [
                "storage",
                "ephemeral-storage",
                "bronze.storageclass.storage.k8s.io/storage",
                "gold.storage.k8s.io/requests.storage",
            ],
            [],
        ),
    ],
    ids=["supported-resources", "unsupported-resources"],
)
def test_the_claim_evaluator_matches_its_resources_only(given: list[str], want: list[str]) -> None:
    assert q.matching_resources(CLAIMS, given) == want


@pytest.mark.parametrize(
    ("kind", "handles"),
    [("Service", True), ("PersistentVolumeClaim", True), ("Pod", False), ("ConfigMap", False)],
)
def test_only_the_service_and_claim_evaluators_charge_updates(kind: str, handles: bool) -> None:
    assert q.handles_update(BY_KIND[kind]) is handles


def test_subtract_non_negative_never_goes_below_zero() -> None:
    a = q.parse_list({"services": "1", "services.nodeports": "2", "services.loadbalancers": "0"})
    b = q.parse_list({"services": "1", "services.nodeports": "0", "services.loadbalancers": "1"})
    assert _strings(q.subtract_non_negative(a, b)) == {
        "services": "0",
        "services.nodeports": "2",
        "services.loadbalancers": "0",
    }
