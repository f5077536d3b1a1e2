"""Upstream's API defaults (services/api/defaults), with upstream's own cases as data.

Ported from pkg/apis/core/v1/defaults_test.go (TestPodDefaults and TestWorkloadDefaults: the
defaults a full Pod and a workload's pod template get; the Service cases), from
pkg/apis/apps/v1/defaults_test.go (TestSetDefaultDeployment, TestSetDefaultReplicaSet,
TestSetDefaultDaemonSetSpec, TestSetDefaultStatefulSet) and pkg/apis/batch/v1/defaults_test.go
(TestSetDefaultJob, TestSetDefaultCronJob). The cases of kinds kubera does not serve yet (Job,
CronJob, DaemonSet, StatefulSet, Service) run once their message exists in kubera.v1, and check
only the fields that message has.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
from typing import Any

import pytest
from google.protobuf import descriptor_pool, symbol_database
from google.protobuf.message import Message

import protos.kubera.v1.core_pb2  # noqa: F401  (registers kubera.v1 in the pool)
from services.api import defaults
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.apiserver import admission
from services.httpapi.openapischemas import schema_name

_MAX_INT32 = 2**31 - 1


def _message(name: str) -> type[Message] | None:
    try:
        cls: type[Message] = symbol_database.Default().GetSymbol(f"kubera.v1.{name}")
    except KeyError:
        return None
    return cls


def _defaulted(kind: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest parsed into kubera's message of `kind`, defaulted, and written back."""
    k = BY_KIND.get(kind)
    if k is None or _message(kind) is None:
        pytest.skip(f"kubera does not serve {kind} yet")
    doc = {"apiVersion": k.api_version, "kind": kind} | manifest
    obj = codec.decode(doc, validate="ignore").obj
    defaults.apply(obj)
    return codec.encode(obj)


def _flatten(d: Any, path: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        out: dict[str, Any] = {}
        for k, v in d.items():
            out |= _flatten(v, f"{path}.{k}")
        return out
    if isinstance(d, list) and d:
        out = {}
        for i, v in enumerate(d):
            out |= _flatten(v, f"{path}[{i}]")
        return out
    return {path: d}


def _added(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What defaulting added: upstream's detectDefaults, on JSON paths."""
    b, a = _flatten(before), _flatten(after)
    return {p: v for p, v in a.items() if p not in b or b[p] != v}


def _has_path(kind: str, path: str) -> bool:
    """Whether kubera's message of `kind` has every field on `path` (a.b[0].c)."""
    cls = _message(kind)
    assert cls is not None
    desc: Any = cls.DESCRIPTOR
    for part in path.strip(".").replace("]", "").split("."):
        name = part.split("[")[0]
        if desc is None:
            return True  # inside free-form JSON
        f = next((f for f in desc.fields if f.json_name == name), None)
        if f is None:
            return False
        mt = f.message_type
        desc = None if mt is None or mt.full_name.startswith("google.protobuf.") else mt
    return True


def _expect(kind: str, got: dict[str, Any], expected: dict[str, Any]) -> None:
    """Every expected (path, value) the message can hold is in `got`."""
    flat = _flatten(got)
    for path, value in expected.items():
        if _has_path(kind, path):
            assert flat.get(path, "<absent>") == value, path


# ------------------------------------------------------- core/v1: Pod, template

_CONTAINER: dict[str, Any] = {
    "name": "c",
    "image": "",
    "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "lifecycle": {
        "postStart": {"httpGet": {"port": 80}},
        "preStop": {"httpGet": {"port": 80}},
    },
    "livenessProbe": {"httpGet": {"port": 80}},
    "readinessProbe": {"httpGet": {"port": 80}},
    "ports": [{"containerPort": 80}],
    "resources": {"limits": {"cpu": "1"}},
}
_VOLUMES: list[dict[str, Any]] = [
    {"name": "configmap", "configMap": {"name": "x"}},
    {"name": "downward", "downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "f"}}]}},
    {"name": "empty"},
    {"name": "hostpath", "hostPath": {"path": "/x"}},
    {
        "name": "projected",
        "projected": {
            "sources": [
                {"downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "f"}}]}},
                {"serviceAccountToken": {"path": "t"}},
            ]
        },
    },
    {"name": "secret", "secret": {"secretName": "x"}},
    {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "u"}},
    {"name": "iscsi", "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0}},
    {"name": "rbd", "rbd": {"monitors": ["m"], "image": "i"}},
    {"name": "scaleio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "n"}}},
]


def _pod_spec() -> dict[str, Any]:
    c = copy.deepcopy(_CONTAINER)
    return {
        "containers": [c],
        "initContainers": [copy.deepcopy(c) | {"name": "i"}],
        "volumes": copy.deepcopy(_VOLUMES),
    }


def _container_defaults(prefix: str, *, pod: bool) -> dict[str, Any]:
    out = {
        ".env[0].valueFrom.fieldRef.apiVersion": "v1",
        ".imagePullPolicy": "IfNotPresent",  # "" does not parse: no tag
        ".lifecycle.postStart.httpGet.path": "/",
        ".lifecycle.postStart.httpGet.scheme": "HTTP",
        ".lifecycle.preStop.httpGet.path": "/",
        ".lifecycle.preStop.httpGet.scheme": "HTTP",
        ".ports[0].protocol": "TCP",
        ".terminationMessagePath": "/dev/termination-log",
        ".terminationMessagePolicy": "File",
    }
    for probe in ("livenessProbe", "readinessProbe"):
        out |= {
            f".{probe}.failureThreshold": 3,
            f".{probe}.httpGet.path": "/",
            f".{probe}.httpGet.scheme": "HTTP",
            f".{probe}.periodSeconds": 10,
            f".{probe}.successThreshold": 1,
            f".{probe}.timeoutSeconds": 1,
        }
    if pod:
        out[".resources.requests.cpu"] = "1"  # from the limits, on a Pod only
    return {prefix + k: v for k, v in out.items()}


def _pod_spec_defaults(prefix: str, *, pod: bool) -> dict[str, Any]:
    out = {
        ".dnsPolicy": "ClusterFirst",
        ".restartPolicy": "Always",
        ".schedulerName": "default-scheduler",
        ".securityContext": {},
        ".terminationGracePeriodSeconds": 30,
        ".volumes[0].configMap.defaultMode": 420,
        ".volumes[1].downwardAPI.defaultMode": 420,
        ".volumes[1].downwardAPI.items[0].fieldRef.apiVersion": "v1",
        ".volumes[2].emptyDir": {},
        ".volumes[3].hostPath.type": "",
        ".volumes[4].projected.defaultMode": 420,
        ".volumes[4].projected.sources[0].downwardAPI.items[0].fieldRef.apiVersion": "v1",
        ".volumes[4].projected.sources[1].serviceAccountToken.expirationSeconds": 3600,
        ".volumes[5].secret.defaultMode": 420,
        ".volumes[6].azureDisk.cachingMode": "ReadWrite",
        ".volumes[6].azureDisk.fsType": "ext4",
        ".volumes[6].azureDisk.kind": "Shared",
        ".volumes[6].azureDisk.readOnly": False,
        ".volumes[7].iscsi.iscsiInterface": "default",
        ".volumes[8].rbd.keyring": "/etc/ceph/keyring",
        ".volumes[8].rbd.pool": "rbd",
        ".volumes[8].rbd.user": "admin",
        ".volumes[9].scaleIO.fsType": "xfs",
        ".volumes[9].scaleIO.storageMode": "ThinProvisioned",
    }
    if pod:
        out[".enableServiceLinks"] = True
    out = {prefix + k: v for k, v in out.items()}
    out |= _container_defaults(f"{prefix}.containers[0]", pod=pod)
    out |= _container_defaults(f"{prefix}.initContainers[0]", pod=pod)
    return out


def test_a_pod_gets_every_default_upstreams_test_pod_defaults_lists() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": _pod_spec()}
    before = codec.encode(codec.decode(pod).obj)
    after = _defaulted("Pod", pod)
    assert _added(before, after) == _pod_spec_defaults(".spec", pod=True)


def test_a_workload_template_gets_the_pod_spec_defaults_but_not_the_pods_own() -> None:
    """TestWorkloadDefaults: no requests from limits, no enableServiceLinks in a template."""
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "r"},
        "spec": {"replicas": 2, "template": {"spec": _pod_spec()}},
    }
    before = codec.encode(codec.decode(rs).obj)
    after = _defaulted("ReplicaSet", rs)
    assert _added(before, after) == _pod_spec_defaults(".spec.template.spec", pod=False)


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("docker.io/library/nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry:5000/nginx", "Always"),  # a port is not a tag
        ("registry:5000/nginx:1.0", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),  # a digest without tag
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
        ("", "IfNotPresent"),  # does not parse: no tag
    ],
)
def test_image_pull_policy_is_always_for_the_latest_tag_only(image: str, policy: str) -> None:
    assert defaults.image_pull_policy(image) == policy


def test_given_values_are_kept() -> None:
    pod = codec.decode(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "enableServiceLinks": False,
                "schedulerName": "mine",
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "imagePullPolicy": "Never",
                        "ports": [{"containerPort": 53, "protocol": "UDP"}],
                        "livenessProbe": {"exec": {"command": ["x"]}, "periodSeconds": 3},
                    }
                ],
            },
        }
    ).obj
    defaults.apply(pod)
    spec = codec.encode(pod)["spec"]
    c = spec["containers"][0]
    assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"]) == ("Never", 0)
    assert (spec["enableServiceLinks"], spec["schedulerName"]) == (False, "mine")
    assert (c["imagePullPolicy"], c["ports"][0]["protocol"]) == ("Never", "UDP")
    assert c["livenessProbe"]["periodSeconds"] == 3


def test_empty_resources_are_no_resources() -> None:
    """`resources: {}` (kubectl rollout undo writes it from a Go struct) is stored as none,
    so a Deployment rolled back to a revision finds that revision's ReplicaSet again."""
    docs = [
        {"name": "c", "image": "nginx", "resources": {}},
        {"name": "c", "image": "nginx"},
    ]
    stored = []
    for container in docs:
        pod = codec.decode(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [container]},
            }
        ).obj
        defaults.apply(pod)
        stored.append(pod.SerializeToString(deterministic=True))
    assert stored[0] == stored[1]


def test_defaulting_twice_changes_nothing() -> None:
    pod = codec.decode(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": _pod_spec()}
    ).obj
    defaults.apply(pod)
    once = codec.encode(pod)
    defaults.apply(pod)
    assert codec.encode(pod) == once


def test_admission_applies_the_defaults_to_every_kind() -> None:
    obj = codec.decode(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x"}}
    ).obj
    admission.apply_defaults(BY_KIND["PriorityClass"], obj)
    assert codec.encode(obj)["preemptionPolicy"] == "PreemptLowerPriority"


def test_a_namespace_is_labelled_with_its_name() -> None:
    ns = _defaulted("Namespace", {"metadata": {"name": "team-a"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}


def test_a_node_without_allocatable_allocates_its_capacity() -> None:
    node = _defaulted("Node", {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}})
    assert node["status"]["allocatable"] == {"cpu": "4"}


# ------------------------------------------------------------------- apps/v1

_TEMPLATE = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {},
            {
                ".spec.replicas": 1,
                ".spec.strategy.type": "RollingUpdate",
                ".spec.strategy.rollingUpdate.maxSurge": "25%",
                ".spec.strategy.rollingUpdate.maxUnavailable": "25%",
                ".spec.revisionHistoryLimit": 10,
                ".spec.progressDeadlineSeconds": 600,
            },
            id="everything-unset",
        ),
        pytest.param(
            {"replicas": 5, "strategy": {"rollingUpdate": {"maxSurge": 1}}},
            {
                ".spec.replicas": 5,
                ".spec.strategy.rollingUpdate.maxSurge": 1,
                ".spec.strategy.rollingUpdate.maxUnavailable": "25%",
            },
            id="given-surge-kept",
        ),
        pytest.param(
            {"replicas": 3, "strategy": {"type": "Recreate"}},
            {".spec.strategy": {"type": "Recreate"}, ".spec.strategy.rollingUpdate": "<absent>"},
            id="recreate-has-no-rolling-update",
        ),
        pytest.param(
            {"progressDeadlineSeconds": 30, "replicas": 0},
            {".spec.progressDeadlineSeconds": 30, ".spec.replicas": 0},
            id="given-deadline-and-zero-replicas-kept",
        ),
    ],
)
def test_set_default_deployment(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    got = _defaulted("Deployment", {"spec": spec | {"template": _TEMPLATE}})
    flat = _flatten(got) | {".spec.strategy": got["spec"].get("strategy")}
    if expected.get(".spec.strategy") == {"type": "Recreate"}:
        assert got["spec"]["strategy"] == {"type": "Recreate"}
        return
    for path, value in expected.items():
        assert flat.get(path, "<absent>") == value, path


@pytest.mark.parametrize(("given", "replicas"), [(None, 1), (0, 0), (3, 3)])
def test_set_default_replica_set_replicas(given: int | None, replicas: int) -> None:
    spec: dict[str, Any] = {"template": _TEMPLATE} | ({} if given is None else {"replicas": given})
    assert _defaulted("ReplicaSet", {"spec": spec})["spec"]["replicas"] == replicas


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {},
            {
                ".spec.updateStrategy.type": "RollingUpdate",
                ".spec.updateStrategy.rollingUpdate.maxUnavailable": 1,
                ".spec.updateStrategy.rollingUpdate.maxSurge": 0,
                ".spec.revisionHistoryLimit": 10,
            },
            id="rolling-update",
        ),
        pytest.param(
            {"updateStrategy": {"type": "OnDelete"}, "revisionHistoryLimit": 1},
            {
                ".spec.updateStrategy.type": "OnDelete",
                ".spec.updateStrategy.rollingUpdate.maxUnavailable": "<absent>",
                ".spec.revisionHistoryLimit": 1,
            },
            id="on-delete",
        ),
    ],
)
def test_set_default_daemon_set_spec(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    got = _defaulted("DaemonSet", {"spec": spec | {"template": _TEMPLATE}})
    _expect("DaemonSet", got, expected)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {},
            {
                ".spec.podManagementPolicy": "OrderedReady",
                ".spec.updateStrategy.type": "RollingUpdate",
                ".spec.updateStrategy.rollingUpdate.partition": 0,
                ".spec.replicas": 1,
                ".spec.revisionHistoryLimit": 10,
                ".spec.persistentVolumeClaimRetentionPolicy.whenDeleted": "Retain",
                ".spec.persistentVolumeClaimRetentionPolicy.whenScaled": "Retain",
            },
            id="everything-unset",
        ),
        pytest.param(
            {
                "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "OnDelete"},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
            },
            {
                ".spec.podManagementPolicy": "Parallel",
                ".spec.updateStrategy.type": "OnDelete",
                ".spec.updateStrategy.rollingUpdate.partition": "<absent>",
                ".spec.persistentVolumeClaimRetentionPolicy.whenDeleted": "Delete",
                ".spec.persistentVolumeClaimRetentionPolicy.whenScaled": "Retain",
            },
            id="given-kept",
        ),
        pytest.param(
            {"updateStrategy": {"rollingUpdate": {"partition": 2}}},
            {
                ".spec.updateStrategy.type": "RollingUpdate",
                ".spec.updateStrategy.rollingUpdate.partition": 2,
            },
            id="given-partition-kept",
        ),
    ],
)
def test_set_default_stateful_set(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    got = _defaulted("StatefulSet", {"spec": spec | {"template": _TEMPLATE}})
    _expect("StatefulSet", got, expected)


# ------------------------------------------------------------------ batch/v1

_JOB_TEMPLATE = {
    "metadata": {"labels": {"t": "l"}},
    "spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]},
}
_JOB_DEFAULTS = {
    ".spec.completionMode": "NonIndexed",
    ".spec.suspend": False,
    ".spec.manualSelector": False,
}


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        pytest.param(
            {},
            _JOB_DEFAULTS
            | {
                ".spec.completions": 1,
                ".spec.parallelism": 1,
                ".spec.backoffLimit": 6,
                ".spec.podReplacementPolicy": "TerminatingOrFailed",
                ".metadata.labels.t": "l",
            },
            id="all-unspecified",
        ),
        pytest.param(
            {"spec": {"completions": 11}},
            {".spec.completions": 11, ".spec.parallelism": 1},
            id="completions-only",
        ),
        pytest.param(
            {"spec": {"parallelism": 11}},
            {".spec.completions": "<absent>", ".spec.parallelism": 11},
            id="parallelism-only",
        ),
        pytest.param(
            {"spec": {"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1}},
            {".spec.backoffLimit": _MAX_INT32, ".spec.completionMode": "Indexed"},
            id="backoff-limit-per-index",
        ),
        pytest.param(
            {
                "spec": {
                    "podFailurePolicy": {
                        "rules": [
                            {
                                "action": "Ignore",
                                "onPodConditions": [{"type": "DisruptionTarget"}],
                            }
                        ]
                    }
                }
            },
            {
                ".spec.podReplacementPolicy": "Failed",
                ".spec.podFailurePolicy.rules[0].onPodConditions[0].status": "True",
            },
            id="pod-failure-policy",
        ),
        pytest.param(
            {"metadata": {"labels": {"mine": "x"}}},
            {".metadata.labels.mine": "x", ".metadata.labels.t": "<absent>"},
            id="own-labels-kept",
        ),
    ],
)
def test_set_default_job(job: dict[str, Any], expected: dict[str, Any]) -> None:
    manifest = {
        "metadata": {"name": "j"} | job.get("metadata", {}),
        "spec": {"template": _JOB_TEMPLATE} | job.get("spec", {}),
    }
    _expect("Job", _defaulted("Job", manifest), expected)


def test_set_default_cron_job() -> None:
    got = _defaulted(
        "CronJob",
        {"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": _JOB_TEMPLATE}}}},
    )
    _expect(
        "CronJob",
        got,
        {
            ".spec.concurrencyPolicy": "Allow",
            ".spec.suspend": False,
            ".spec.successfulJobsHistoryLimit": 3,
            ".spec.failedJobsHistoryLimit": 1,
        },
    )


# ------------------------------------------------------------------ Service


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"ports": [{"port": 80}]},
            {
                ".spec.type": "ClusterIP",
                ".spec.sessionAffinity": "None",
                ".spec.ports[0].protocol": "TCP",
                ".spec.ports[0].targetPort": 80,
                ".spec.internalTrafficPolicy": "Cluster",
                ".spec.externalTrafficPolicy": "<absent>",
            },
            id="cluster-ip",
        ),
        pytest.param(
            {"type": "NodePort", "ports": [{"port": 80, "targetPort": "http"}]},
            {
                ".spec.ports[0].targetPort": "http",
                ".spec.externalTrafficPolicy": "Cluster",
                ".spec.internalTrafficPolicy": "Cluster",
            },
            id="node-port",
        ),
        pytest.param(
            {"type": "LoadBalancer", "ports": [{"port": 80}]},
            {".spec.allocateLoadBalancerNodePorts": True, ".spec.externalTrafficPolicy": "Cluster"},
            id="load-balancer",
        ),
        pytest.param(
            {"type": "ExternalName", "externalName": "example.com"},
            {".spec.internalTrafficPolicy": "<absent>"},
            id="external-name",
        ),
        pytest.param(
            {"sessionAffinity": "ClientIP", "ports": [{"port": 80}]},
            {".spec.sessionAffinityConfig.clientIP.timeoutSeconds": 10800},
            id="client-ip-affinity",
        ),
    ],
)
def test_set_default_service(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    _expect("Service", _defaulted("Service", {"spec": spec}), expected)


# ------------------------------------------------------------------- the tables


def test_each_schema_is_taken_by_the_kubera_message_of_that_schema() -> None:
    """Rows are matched by message name; the name must mean the same schema (a later
    kubera.v1.EndpointPort of discovery/v1 would not take core/v1's row unnoticed)."""
    pool = descriptor_pool.Default()
    for short, schema in defaults.schemas().items():
        try:
            desc = pool.FindMessageTypeByName(f"kubera.v1.{short}")
        except KeyError:
            continue
        assert schema_name(desc) == schema


def _upstream_definitions() -> dict[str, Any]:
    base = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
    doc = json.loads((base / "v1.37.0-local" / "_definitions.json").read_text())
    defs: dict[str, Any] = doc["$defs"]
    return defs


def test_every_defaulted_field_is_a_field_of_upstreams_1_37_schema() -> None:
    defs = _upstream_definitions()
    for table in (defaults.OPENAPI_DEFAULTS, defaults.SET_DEFAULTS):
        for schema, row in table.items():
            assert schema in defs, schema
            assert set(row) <= set(defs[schema]["properties"]), schema
    for schema in defaults.FUNCS:
        assert schema in defs, schema


# -------------------------------------------------- resource/v1, core/v1 storage


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"deviceClassName": "gpu"}, {"allocationMode": "ExactCount", "count": 1}),
        ({"deviceClassName": "gpu", "count": 3}, {"allocationMode": "ExactCount", "count": 3}),
        ({"deviceClassName": "gpu", "allocationMode": "All"}, {"allocationMode": "All"}),
    ],
)
def test_a_device_request_is_exact_count_of_one_by_default(
    request_: dict[str, Any], expected: dict[str, Any]
) -> None:
    claim = _defaulted(
        "ResourceClaim",
        {
            "metadata": {"name": "c"},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "r", "exactly": request_},
                        {"name": "s", "firstAvailable": [{"name": "a"} | request_]},
                    ]
                }
            },
        },
    )
    exactly = claim["spec"]["devices"]["requests"][0]["exactly"]
    assert {k: exactly.get(k) for k in expected} == expected
    sub = claim["spec"]["devices"]["requests"][1]["firstAvailable"][0]
    assert {k: sub.get(k) for k in expected} == expected


def test_a_limit_range_item_defaults_limits_from_max_and_requests_from_limits_or_min() -> None:
    got = _defaulted(
        "LimitRange",
        {
            "metadata": {"name": "l"},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "max": {"cpu": "2", "memory": "1Gi"},
                        "min": {"ephemeral-storage": "1Gi"},
                        "default": {"memory": "512Mi"},
                    },
                    {"type": "Pod", "max": {"cpu": "4"}},
                ]
            },
        },
    )
    container, pod = got["spec"]["limits"]
    assert container["default"] == {"cpu": "2", "memory": "512Mi"}
    assert container["defaultRequest"] == {
        "cpu": "2",
        "memory": "512Mi",
        "ephemeral-storage": "1Gi",
    }
    assert "default" not in pod


def test_a_new_claim_and_volume_are_pending_and_retained() -> None:
    pvc = _defaulted("PersistentVolumeClaim", {"metadata": {"name": "c"}, "spec": {}, "status": {}})
    _expect(
        "PersistentVolumeClaim",
        pvc,
        {".status.phase": "Pending", ".spec.volumeMode": "Filesystem"},
    )
    pv = _defaulted("PersistentVolume", {"metadata": {"name": "v"}, "spec": {}, "status": {}})
    _expect(
        "PersistentVolume",
        pv,
        {
            ".status.phase": "Pending",
            ".spec.persistentVolumeReclaimPolicy": "Retain",
            ".spec.volumeMode": "Filesystem",
        },
    )


def test_an_endpoint_slice_port_is_tcp_and_named() -> None:
    got = _defaulted(
        "EndpointSlice",
        {"metadata": {"name": "s"}, "addressType": "IPv4", "ports": [{"port": 80}]},
    )
    _expect("EndpointSlice", got, {".ports[0].protocol": "TCP"})


@pytest.mark.parametrize(
    "volume",
    [
        {"name": "v", "downwardAPI": "x"},
        {"name": "v", "downwardAPI": {"items": 3}},
        {"name": "v", "projected": {"sources": [1, {"downwardAPI": {"items": "x"}}]}},
        {"name": "v", "secret": []},
    ],
)
def test_malformed_free_form_json_is_left_to_validation(volume: dict[str, Any]) -> None:
    pod = codec.decode(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "volumes": [volume],
                "containers": [
                    {"name": "c", "livenessProbe": {"httpGet": 1}, "lifecycle": {"preStop": 2}}
                ],
            },
        }
    ).obj
    defaults.apply(pod)  # no exception: the validator answers with a 422 naming the field
    got = codec.encode(pod)["spec"]["volumes"][0]
    assert set(got) == set(volume)
