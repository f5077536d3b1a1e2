"""Kubernetes protobuf request bodies: the envelope, upstream's field numbers, zero
values left out, and a set field kubera does not know refused rather than dropped."""

from __future__ import annotations

import pytest

from services.httpapi.kprotobuf import MAGIC, ProtobufBodyError, decode


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return MAGIC + field(1, field(1, api_version) + field(2, kind)) + field(2, raw)


def test_a_namespace_with_labels() -> None:
    meta = (
        field(1, "ns1") + field(2, "") + field(11, field(1, "team") + field(2, "a")) + field(8, b"")
    )
    doc = decode(envelope("v1", "Namespace", field(1, meta) + field(2, b"") + field(3, b"")))
    assert doc == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns1", "labels": {"team": "a"}},
        "spec": {},
    }


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (field(1, field(1, 1) + field(3, "50%")), {"minAvailable": "50%"}),
        (field(3, field(1, 0) + field(2, 2)), {"maxUnavailable": 2}),
        (field(3, field(1, 0) + field(2, 0)), {"maxUnavailable": 0}),  # a pointer: zero is a value
    ],
)
def test_int_or_string_fields(spec: bytes, want: dict) -> None:
    doc = decode(
        envelope("policy/v1", "PodDisruptionBudget", field(1, field(1, "p")) + field(2, spec))
    )
    assert doc["spec"] == want


def test_quantities_and_containers() -> None:
    qty = field(1, "cpu") + field(2, field(1, "250m"))
    container = field(1, "c") + field(2, "img") + field(8, field(2, qty)) + field(5, "")
    dep_spec = field(1, 0) + field(3, field(2, field(2, container)))
    doc = decode(envelope("apps/v1", "Deployment", field(1, field(1, "d")) + field(2, dep_spec)))
    assert doc["spec"] == {
        "replicas": 0,
        "template": {
            "spec": {
                "containers": [
                    {"name": "c", "image": "img", "resources": {"requests": {"cpu": "250m"}}}
                ]
            }
        },
    }


def test_an_unknown_field_at_its_zero_value_is_skipped_and_a_set_one_refused() -> None:
    pod_spec_zero = field(2, field(1, "c")) + field(14, field(1, 0))  # securityContext, all zero
    ok = decode(envelope("apps/v1", "Deployment", field(2, field(3, field(2, pod_spec_zero)))))
    assert ok["spec"]["template"]["spec"] == {"containers": [{"name": "c"}]}
    pod_spec_set = field(2, field(1, "c")) + field(14, field(1, 1000))
    with pytest.raises(ProtobufBodyError, match="field 14 of PodSpec"):
        decode(envelope("apps/v1", "Deployment", field(2, field(3, field(2, pod_spec_set)))))


@pytest.mark.parametrize(
    "body",
    [
        b"not protobuf",
        MAGIC + b"\x0a\xff",  # truncated
        envelope("v1", "Endpoints", b""),
        envelope("v1", "Namespace", b"") + field(3, "gzip"),
    ],
    ids=["no-magic", "truncated", "unknown-kind", "content-encoding"],
)
def test_bodies_that_cannot_be_read_are_refused(body: bytes) -> None:
    with pytest.raises(ProtobufBodyError):
        decode(body)


def test_a_deeply_nested_unknown_field_is_refused_not_searched_forever() -> None:
    nested = b""
    for _ in range(2000):
        nested = field(1, nested)
    with pytest.raises(ProtobufBodyError, match="field 99 of Namespace"):
        decode(envelope("v1", "Namespace", field(99, nested)))


def test_a_resource_quota_as_kubectl_create_quota_sends_it() -> None:
    """`kubectl create quota q --hard=pods=2,requests.cpu=1 --scopes=BestEffort`."""
    hard = field(1, field(1, "pods") + field(2, field(1, "2"))) + field(
        1, field(1, "requests.cpu") + field(2, field(1, "1"))
    )
    sel = field(1, field(1, "PriorityClass") + field(2, "In") + field(3, "high"))
    spec = hard + field(2, "BestEffort") + field(3, sel)
    doc = decode(
        envelope("v1", "ResourceQuota", field(1, field(1, "q")) + field(2, spec) + field(3, b""))
    )
    assert doc["spec"] == {
        "hard": {"pods": "2", "requests.cpu": "1"},
        "scopes": ["BestEffort"],
        "scopeSelector": {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
            ]
        },
    }


def test_a_job_from_kubectl_create_job() -> None:
    """`kubectl create job pi --image=perl -- perl -e 1`: the pointer fields a Job spec
    carries keep their zero values (suspend false), the template reads as a pod's."""
    container = field(1, "pi") + field(2, "perl") + field(3, "perl") + field(3, "-e")
    template = field(2, field(2, container) + field(3, "Never"))
    spec = field(6, template) + field(10, 0) + field(7, 6) + field(9, "NonIndexed")
    meta = field(1, "pi") + field(
        12, field(1, "cronjob.kubernetes.io/instantiate") + field(2, "manual")
    )
    doc = decode(envelope("batch/v1", "Job", field(1, meta) + field(2, spec) + field(3, b"")))
    assert doc == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "annotations": {"cronjob.kubernetes.io/instantiate": "manual"}},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "pi", "image": "perl", "command": ["perl", "-e"]}],
                    "restartPolicy": "Never",
                }
            },
            "suspend": False,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
        },
    }


def _job_from_cronjob(exit_codes: bytes) -> dict:
    """The Job `kubectl create job --from=cronjob/x` sends when the CronJob's jobTemplate
    has the docs' podFailurePolicy (controllers/job-pod-failure-policy-example.yaml) and a
    successPolicy (controllers/job-success-policy.yaml), with upstream's field numbers."""
    on_exit = field(1, "main") + field(2, "In") + exit_codes
    fail_job = field(1, "FailJob") + field(2, on_exit)
    ignore = field(1, "Ignore") + field(3, field(1, "DisruptionTarget") + field(2, "True"))
    pod_failure_policy = field(1, fail_job) + field(1, ignore)
    success_policy = field(1, field(1, "0,2-3") + field(2, 1))
    template = field(2, field(2, field(1, "main") + field(2, "python")) + field(3, "Never"))
    spec = (
        field(6, template)
        + field(11, pod_failure_policy)
        + field(7, 6)
        + field(9, "Indexed")
        + field(16, success_policy)
    )
    return decode(envelope("batch/v1", "Job", field(1, field(1, "x-manual")) + field(2, spec)))


@pytest.mark.parametrize(
    "exit_codes",
    [
        pytest.param(field(3, 42) + field(3, 43), id="unpacked, as gogo writes them"),
        pytest.param(field(3, varint(42) + varint(43)), id="packed"),
    ],
)
def test_a_job_with_a_pod_failure_policy_and_a_success_policy(exit_codes: bytes) -> None:
    spec = _job_from_cronjob(exit_codes)["spec"]
    assert spec["podFailurePolicy"] == {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "main", "operator": "In", "values": [42, 43]},
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
        ]
    }
    assert spec["successPolicy"] == {"rules": [{"succeededIndexes": "0,2-3", "succeededCount": 1}]}
    assert spec["completionMode"] == "Indexed"


def test_a_secret_as_kubectl_create_secret_generic_sends_it() -> None:
    """data is bytes (base64 in JSON), type a string, stringData a string map."""
    raw = (
        field(1, field(1, "s"))
        + field(2, field(1, "password") + field(2, b"\x00hunter2"))
        + field(3, "Opaque")
        + field(4, field(1, "user") + field(2, "admin"))
    )
    doc = decode(envelope("v1", "Secret", raw))
    assert doc == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"password": "AGh1bnRlcjI="},
        "type": "Opaque",
        "stringData": {"user": "admin"},
    }


def test_a_config_map_and_a_service() -> None:
    cm = decode(
        envelope(
            "v1", "ConfigMap", field(1, field(1, "c")) + field(2, field(1, "k") + field(2, "v"))
        )
    )
    assert cm["data"] == {"k": "v"}
    port = (
        field(1, "80-8080")
        + field(2, "TCP")
        + field(3, 80)
        + field(4, field(1, 0) + field(2, 8080))
    )
    spec = field(1, port) + field(2, field(1, "app") + field(2, "web")) + field(4, "ClusterIP")
    svc = decode(envelope("v1", "Service", field(1, field(1, "web")) + field(2, spec)))
    assert svc["spec"] == {
        "ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
        "selector": {"app": "web"},
        "type": "ClusterIP",
    }
