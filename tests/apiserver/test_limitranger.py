"""LimitRanger: cases ported from upstream's plugin/pkg/admission/limitranger/admission_test.go
(TestDefaultContainerResourceRequirements, TestMergePodResourceRequirements, TestPodLimitFunc,
TestLimitRangerAdmitPod) and pkg/apis/core/v1/defaults_test.go (SetDefaults_LimitRangeItem),
plus the admission path through the apiserver (defaults appear on the stored pod, 403 words)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, policyv1core_pb2, storage_pb2
from services.api import defaults
from services.api.machinery.errors import ForbiddenError, InvalidError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import limitranger
from services.apiserver.registry import ApiServer
from tests.builders import MakePod, limit_range


def _rl(cpu: str = "", memory: str = "") -> dict[str, str]:
    out = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    return out


def _range(
    type_: str,
    min_: dict[str, str] | None = None,
    max_: dict[str, str] | None = None,
    default: dict[str, str] | None = None,
    default_request: dict[str, str] | None = None,
    ratio: dict[str, str] | None = None,
) -> policyv1core_pb2.LimitRange:
    item: dict[str, Any] = {"type": type_}
    for key, value in (
        ("min", min_),
        ("max", max_),
        ("default", default),
        ("defaultRequest", default_request),
        ("maxLimitRequestRatio", ratio),
    ):
        if value:
            item[key] = value
    return limit_range("abc", "test", item)


def _valid_range() -> policyv1core_pb2.LimitRange:
    """upstream's validLimitRange()."""
    return limit_range(
        "abc",
        "test",
        {"type": "Pod", "max": _rl("200m", "4Gi"), "min": _rl("50m", "2Mi")},
        {
            "type": "Container",
            "max": _rl("100m", "2Gi"),
            "min": _rl("25m", "1Mi"),
            "default": _rl("75m", "10Mi"),
            "defaultRequest": _rl("50m", "5Mi"),
        },
    )


def _pod(name: str, n: int, requests: dict[str, str], limits: dict[str, str]) -> core_pb2.Pod:
    """upstream's validPod(name, n, resources): n containers foo-0.. with the same resources."""
    b = MakePod().name(name).namespace("test")
    for i in range(n):
        b.container(f"foo-{i}", f"foo:V{i}", requests=requests, limits=limits)
    return b.obj()


def test_pod_without_resources_gets_default_requests_and_limits_and_the_annotation() -> None:
    pod = _pod("empty-resources", 1, {}, {})
    limitranger.apply_defaults(pod, _valid_range())
    c = pod.spec.containers[0]
    assert dict(c.resources.requests) == _rl("50m", "5Mi")
    assert dict(c.resources.limits) == _rl("75m", "10Mi")
    assert pod.metadata.annotations[limitranger.LIMIT_RANGER_ANNOTATION] == (
        "LimitRanger plugin set: cpu, memory request for container foo-0; "
        "cpu, memory limit for container foo-0"
    )


def test_only_the_resources_a_container_leaves_out_are_defaulted() -> None:
    pod = _pod("limit-memory", 1, _rl("", "512Mi"), {})
    limitranger.apply_defaults(pod, _valid_range())
    c = pod.spec.containers[0]
    assert dict(c.resources.requests) == {"cpu": "50m", "memory": "512Mi"}
    assert dict(c.resources.limits) == _rl("75m", "10Mi")
    assert pod.metadata.annotations[limitranger.LIMIT_RANGER_ANNOTATION] == (
        "LimitRanger plugin set: cpu request for container foo-0; "
        "cpu, memory limit for container foo-0"
    )


def test_a_pod_naming_everything_is_not_touched_nor_annotated() -> None:
    pod = _pod("limit-memory", 1, _rl("100m", "512Mi"), _rl("200m", "1G"))
    limitranger.apply_defaults(pod, _valid_range())
    assert dict(pod.spec.containers[0].resources.limits) == _rl("200m", "1G")
    assert limitranger.LIMIT_RANGER_ANNOTATION not in pod.metadata.annotations


def test_init_containers_are_defaulted_and_named_as_init_containers() -> None:
    pod = MakePod().name("p").namespace("test").init_container("init").container("app").obj()
    limitranger.apply_defaults(pod, _range("Container", default_request=_rl("10m")))
    assert pod.spec.init_containers[0].resources.requests["cpu"] == "10m"
    assert pod.metadata.annotations[limitranger.LIMIT_RANGER_ANNOTATION] == (
        "LimitRanger plugin set: cpu request for container app; cpu request for init container init"
    )


E: dict[str, str] = {}

# (pod name, containers, requests, limits, the range) -- upstream TestPodLimitFunc successCases.
ALLOWED = [
    ("ctr-min-cpu-request", 1, _rl("100m"), E, _range("Container", min_=_rl("50m"))),
    (
        "ctr-min-cpu-request-limit",
        1,
        _rl("100m"),
        _rl("200m"),
        _range("Container", min_=_rl("50m")),
    ),
    ("ctr-min-memory-request", 1, _rl("", "60Mi"), E, _range("Container", min_=_rl("", "50Mi"))),
    ("ctr-max-cpu-request-limit", 1, _rl("500m"), _rl("1"), _range("Container", max_=_rl("2"))),
    ("ctr-max-cpu-limit", 1, E, _rl("1"), _range("Container", max_=_rl("2"))),
    ("ctr-max-mem-limit", 1, E, _rl("", "500Mi"), _range("Container", max_=_rl("", "1Gi"))),
    ("ctr-max-cpu-ratio", 1, _rl("500m"), _rl("750m"), _range("Container", ratio=_rl("1.5"))),
    ("pod-min-cpu-request", 2, _rl("75m"), E, _range("Pod", min_=_rl("100m"))),
    ("pod-min-memory-request", 2, _rl("", "60Mi"), E, _range("Pod", min_=_rl("", "100Mi"))),
    ("pod-max-cpu-request-limit", 2, _rl("500m"), _rl("1"), _range("Pod", max_=_rl("2"))),
    ("pod-max-mem-limit", 2, E, _rl("", "500Mi"), _range("Pod", max_=_rl("", "1Gi"))),
    (
        "pod-max-mem-ratio",
        3,
        _rl("", "300Mi"),
        _rl("", "450Mi"),
        _range("Pod", max_=_rl("", "2Gi"), ratio=_rl("", "1.5")),
    ),
]


@pytest.mark.parametrize(("name", "n", "req", "lim", "lr"), ALLOWED, ids=[c[0] for c in ALLOWED])
def test_pods_within_the_range_pass(
    name: str, n: int, req: dict[str, str], lim: dict[str, str], lr: policyv1core_pb2.LimitRange
) -> None:
    assert limitranger.violations(_pod(name, n, req, lim), [lr]) == []


# upstream TestPodLimitFunc errorCases, with the words they answer with.
REFUSED = [
    (
        "ctr-min-cpu-request",
        1,
        _rl("40m"),
        E,
        _range("Container", min_=_rl("50m")),
        "minimum cpu usage per Container is 50m, but request is 40m",
    ),
    (
        "ctr-min-cpu-no-request-limit",
        1,
        E,
        E,
        _range("Container", min_=_rl("50m")),
        "minimum cpu usage per Container is 50m.  No request is specified",
    ),
    (
        "ctr-min-memory-request-limit",
        1,
        _rl("", "60Mi"),
        _rl("", "40Mi"),
        _range("Container", min_=_rl("", "50Mi")),
        "minimum memory usage per Container is 50Mi, but limit is 40Mi",
    ),
    (
        "ctr-max-cpu-request-limit",
        1,
        _rl("500m"),
        _rl("2500m"),
        _range("Container", max_=_rl("2")),
        "maximum cpu usage per Container is 2, but limit is 2500m",
    ),
    (
        "ctr-max-cpu-no-request-limit",
        1,
        E,
        E,
        _range("Container", max_=_rl("2")),
        "maximum cpu usage per Container is 2.  No limit is specified",
    ),
    (
        "ctr-max-cpu-ratio",
        1,
        _rl("1250m"),
        _rl("2500m"),
        _range("Container", ratio=_rl("1")),
        "cpu max limit to request ratio per Container is 1, but provided ratio is 2.000000",
    ),
    (
        "ctr-max-cpu-ratio-no-request",
        1,
        E,
        _rl("2500m"),
        _range("Container", ratio=_rl("1")),
        "cpu max limit to request ratio per Container is 1, but no request is specified or request is 0",
    ),
    (
        "pod-min-cpu-request",
        1,
        _rl("75m"),
        E,
        _range("Pod", min_=_rl("100m")),
        "minimum cpu usage per Pod is 100m, but request is 75m",
    ),
    (
        "pod-max-mem-request-limit",
        3,
        _rl("", "250Mi"),
        _rl("", "500Mi"),
        _range("Pod", max_=_rl("", "1Gi")),
        "maximum memory usage per Pod is 1Gi, but limit is 1500Mi",
    ),
    (
        "pod-max-mem-ratio",
        3,
        _rl("", "250Mi"),
        _rl("", "500Mi"),
        _range("Pod", max_=_rl("", "2Gi"), ratio=_rl("", "1.5")),
        "memory max limit to request ratio per Pod is 1500m, but provided ratio is 2.000000",
    ),
]


@pytest.mark.parametrize(
    ("name", "n", "req", "lim", "lr", "why"), REFUSED, ids=[c[0] for c in REFUSED]
)
def test_pods_outside_the_range_are_refused_with_upstreams_words(
    name: str,
    n: int,
    req: dict[str, str],
    lim: dict[str, str],
    lr: policyv1core_pb2.LimitRange,
    why: str,
) -> None:
    assert limitranger.violations(_pod(name, n, req, lim), [lr]) == [why]


def test_several_violations_are_refused_together_as_an_aggregate() -> None:
    pod = _pod("p", 1, _rl("10m", "1Ki"), E)
    with pytest.raises(ForbiddenError) as e:
        limitranger.admit(pod, [_range("Container", min_=_rl("50m", "1Mi"))])
    assert str(e.value) == (
        'pods "p" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, '
        "minimum memory usage per Container is 1Mi, but request is 1Ki]"
    )


def test_limit_range_item_defaults_come_from_max_then_default_then_min() -> None:
    """SetDefaults_LimitRangeItem (pkg/apis/core/v1/defaults_test.go TestSetDefaultLimitRangeItem)."""
    lr = limit_range(
        "abc",
        "test",
        {"type": "Container", "max": {"cpu": "100m"}, "min": {"memory": "100Mi"}},
        {"type": "Pod", "max": {"cpu": "1"}},
    )
    defaults.apply(lr)
    item = lr.spec.limits[0]
    assert dict(item.default) == {"cpu": "100m"}
    assert dict(item.default_request) == {"cpu": "100m", "memory": "100Mi"}
    assert not lr.spec.limits[1].default  # Pod items get no defaults


# ------------------------------------------------------------------ through the apiserver


async def test_a_created_pod_carries_the_namespace_defaults(api: ApiServer) -> None:
    await api.create(
        limit_range(
            "mem-limit-range",
            "default",
            {
                "type": "Container",
                "default": {"memory": "512Mi"},
                "defaultRequest": {"memory": "256Mi"},
            },
        )
    )
    created = await api.create(
        MakePod().name("p").namespace("default").container("app", "nginx").obj()
    )
    c = created.spec.containers[0]  # type: ignore[attr-defined]
    assert dict(c.resources.limits) == {"memory": "512Mi"}
    assert dict(c.resources.requests) == {"memory": "256Mi"}
    stored = await api.get_or_none(BY_KIND["Pod"], "default", "p")
    assert stored is not None and stored.spec.containers[0].resources.limits["memory"] == "512Mi"  # type: ignore[attr-defined]


async def test_a_pod_above_the_max_is_refused_403_and_not_written(api: ApiServer) -> None:
    await api.create(
        limit_range(
            "cpu", "default", {"type": "Container", "max": {"cpu": "800m"}, "min": {"cpu": "200m"}}
        )
    )
    pod = (
        MakePod()
        .name("big")
        .namespace("default")
        .container("app", "nginx", limits={"cpu": "1500m"})
        .obj()
    )
    with pytest.raises(ForbiddenError) as e:
        await api.create(pod)
    assert (
        str(e.value)
        == 'pods "big" is forbidden: maximum cpu usage per Container is 800m, but limit is 1500m'
    )
    assert await api.get_or_none(BY_KIND["Pod"], "default", "big") is None


async def test_a_limit_range_with_min_above_max_is_invalid(api: ApiServer) -> None:
    lr = limit_range(
        "bad", "default", {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}
    )
    with pytest.raises(InvalidError) as e:
        await api.create(lr)
    assert (
        'spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1'
        in str(e.value)
    )


# ------------------------------------------------------------------ claims
# TestPersistentVolumeClaimLimitFunc, and the docs' admin/resource/storagelimits.yaml
# with pvc-limit-lower.yaml and pvc-limit-greater.yaml.

_STORAGE = {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}
CLAIM_CASES = [
    ("within", {"storage": "1Gi"}, ""),
    ("at the max", {"storage": "2Gi"}, ""),
    ("pvc-limit-lower", {"storage": "500Mi"}, "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"),
    ("pvc-limit-greater", {"storage": "5Gi"}, "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"),
    (
        "no request",
        {},
        "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, "
        "maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified]",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "requests", "want"), CLAIM_CASES, ids=[c[0] for c in CLAIM_CASES])
def test_claims_are_bounded_by_persistent_volume_claim_items(
    name: str, requests: dict[str, str], want: str
) -> None:
    pvc = storage_pb2.PersistentVolumeClaim()
    pvc.metadata.name = name
    pvc.spec.resources.requests.update(requests)
    ranges = [limit_range("storagelimits", "default", _STORAGE)]
    if not want:
        limitranger.admit_claim(pvc, ranges)
        return
    with pytest.raises(ForbiddenError) as e:
        limitranger.admit_claim(pvc, ranges)
    assert str(e.value) == f'persistentvolumeclaims "{name}" is forbidden: {want}'


async def test_a_claim_below_the_min_is_refused_403_and_not_written(api: ApiServer) -> None:
    await api.create(limit_range("storagelimits", "default", _STORAGE))
    pvc = storage_pb2.PersistentVolumeClaim()
    pvc.metadata.name, pvc.metadata.namespace = "pvc-limit-lower", "default"
    pvc.spec.access_modes.append("ReadWriteOnce")
    pvc.spec.resources.requests["storage"] = "500Mi"
    with pytest.raises(ForbiddenError, match="minimum storage usage per PersistentVolumeClaim"):
        await api.create(pvc)
    claims = BY_KIND["PersistentVolumeClaim"]
    assert await api.get_or_none(claims, "default", "pvc-limit-lower") is None
