"""Table-driven tests for services/api/validation/: one row per Kubernetes rule.

Objects are written as Kubernetes-shaped dicts (what a manifest holds) and parsed with
json_format.ParseDict, so the tests also pin the JSON field names the rules refer to.
Each failing row asserts the exact upstream wording (a substring of one error).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import (
    apps_pb2,
    coordination_pb2,
    core_pb2,
    node_pb2,
    policy_pb2,
    scheduling_pb2,
)
from services.api.validation import validate_create, validate_update

MESSAGES: dict[str, type[Message]] = {
    "Pod": core_pb2.Pod,
    "Node": core_pb2.Node,
    "Namespace": core_pb2.Namespace,
    "Event": core_pb2.Event,
    "PriorityClass": scheduling_pb2.PriorityClass,
    "PodDisruptionBudget": policy_pb2.PodDisruptionBudget,
    "ReplicaSet": apps_pb2.ReplicaSet,
    "Deployment": apps_pb2.Deployment,
    "RuntimeClass": node_pb2.RuntimeClass,
    "Lease": coordination_pb2.Lease,
    "Widget": core_pb2.Pod,  # an unknown kind: metadata checks only
}

DELETE = object()


def edit(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with dotted paths set (``spec__containers__0__name``)."""
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        keys: list[Any] = [int(k) if k.isdigit() else k for k in dotted.split("__")]
        node: Any = out
        for k in keys[:-1]:
            if isinstance(k, str) and k not in node:
                node[k] = {}
            node = node[k]
        if value is DELETE:
            del node[keys[-1]]
        else:
            node[keys[-1]] = copy.deepcopy(value)
    return out


def parse(kind: str, manifest: dict[str, Any]) -> Message:
    return json_format.ParseDict(manifest, MESSAGES[kind]())


def errors_of(kind: str, manifest: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_create(kind, parse(kind, manifest))]


# ----------------------------------------------------------------------------- minimal objects

CONTAINER = {"name": "app", "image": "registry.k8s.io/pause:3.9"}
POD = {"metadata": {"name": "web-0", "namespace": "default"}, "spec": {"containers": [CONTAINER]}}
NODE = {"metadata": {"name": "node-1"}}
NAMESPACE = {"metadata": {"name": "team-a"}}
EVENT = {
    "metadata": {"name": "web-0.17", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "default"},
    "reason": "Scheduled",
}
PRIORITY_CLASS = {"metadata": {"name": "high"}, "value": 1000}
PDB = {
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"minAvailable": "1", "selector": {"matchLabels": {"app": "web"}}},
}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [CONTAINER]}}
REPLICA_SET = {
    "metadata": {"name": "web-abc", "namespace": "default"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
}
DEPLOYMENT = edit(REPLICA_SET, metadata__name="web")
RUNTIME_CLASS = {"metadata": {"name": "gvisor"}, "handler": "runsc"}
LEASE = {
    "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
    "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40},
}

FULL_POD = edit(
    POD,
    spec__containers=[
        {
            "name": "app",
            "image": "nginx",
            "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
            "resources": {
                "requests": {"cpu": "500m", "memory": "64Mi", "example.com/gpu": "1"},
                "limits": {"cpu": "1", "memory": "128Mi", "example.com/gpu": "1"},
            },
        }
    ],
    spec__initContainers=[{"name": "init", "image": "busybox"}],
    spec__nodeSelector={"kubernetes.io/os": "linux"},
    spec__affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["a", "b"]},
                            {"key": "cores", "operator": "Gt", "values": ["4"]},
                        ],
                        "matchFields": [
                            {"key": "metadata.name", "operator": "NotIn", "values": ["node-9"]}
                        ],
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]},
                }
            ],
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                    "matchLabelKeys": ["pod-template-hash"],
                }
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "tier", "operator": "NotIn", "values": ["db"]}
                            ]
                        },
                        "namespaces": ["default"],
                        "topologyKey": "topology.kubernetes.io/zone",
                    },
                }
            ],
        },
    },
    spec__tolerations=[
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"operator": "Exists"},
    ],
    spec__topologySpreadConstraints=[
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "minDomains": 3,
            "nodeAffinityPolicy": "Honor",
            "nodeTaintsPolicy": "Ignore",
            "matchLabelKeys": ["pod-template-hash"],
        }
    ],
    spec__priorityClassName="high",
    spec__priority=1000,
    spec__preemptionPolicy="Never",
    spec__schedulingGates=[{"name": "example.com/quota"}],
    spec__overhead={"cpu": "250m", "memory": "120Mi"},
    spec__terminationGracePeriodSeconds=30,
    spec__restartPolicy="Always",
    status={"phase": "Pending"},
)


def _container(**changes: Any) -> dict[str, Any]:
    return edit(POD, **{f"spec__containers__0__{k}": v for k, v in changes.items()})


def _resources(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return _container(resources=res)


def _node_term(
    *expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = list(expressions)
    if fields:
        term["matchFields"] = fields
    return edit(
        POD,
        spec__affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        },
    )


REQ_TERM = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
)


def _anti_affinity(term: dict[str, Any]) -> dict[str, Any]:
    return edit(
        POD,
        spec__affinity={
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        },
    )


ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


def _toleration(t: dict[str, Any]) -> dict[str, Any]:
    return edit(POD, spec__tolerations=[t])


def _spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    return edit(POD, spec__topologySpreadConstraints=list(constraints))


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}


def _taints(*taints: dict[str, Any]) -> dict[str, Any]:
    return edit(NODE, spec={"taints": list(taints)})


# ----------------------------------------------------------------------------- valid objects


@pytest.mark.parametrize(
    ("kind", "manifest"),
    [
        pytest.param("Pod", POD, id="pod-minimal"),
        pytest.param("Pod", FULL_POD, id="pod-every-scheduling-field"),
        pytest.param(
            "Pod",
            _toleration({"key": "sla", "operator": "Gt", "value": "900", "effect": "NoSchedule"}),
            id="pod-toleration-gt-with-integer",
        ),
        pytest.param(
            "Pod",
            _toleration({"key": "sla", "operator": "Lt", "value": "1000"}),
            id="pod-toleration-lt-with-integer",
        ),
        pytest.param(
            "Pod",
            edit(POD, metadata={"generateName": "web-", "namespace": "default"}),
            id="pod-generate-name-only",
        ),
        pytest.param(
            "Node",
            edit(
                NODE,
                spec={
                    "taints": [
                        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                        {"key": "dedicated", "effect": "NoExecute"},
                    ]
                },
                status={
                    "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                    "allocatable": {"cpu": "3800m"},
                },
            ),
            id="node-taints-and-capacity",
        ),
        pytest.param("Namespace", NAMESPACE, id="namespace-minimal"),
        pytest.param("Event", EVENT, id="event-minimal"),
        pytest.param("PriorityClass", PRIORITY_CLASS, id="priorityclass-minimal"),
        pytest.param(
            "PriorityClass",
            {"metadata": {"name": "system-node-critical"}, "value": 2000001000},
            id="priorityclass-known-system-class",
        ),
        pytest.param("PodDisruptionBudget", PDB, id="pdb-minimal"),
        pytest.param(
            "PodDisruptionBudget",
            edit(PDB, spec__minAvailable=DELETE, spec__maxUnavailable="100%"),
            id="pdb-percent",
        ),
        pytest.param("ReplicaSet", REPLICA_SET, id="replicaset-minimal"),
        pytest.param("Deployment", DEPLOYMENT, id="deployment-minimal"),
        pytest.param(
            "Deployment",
            edit(
                DEPLOYMENT,
                spec__strategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "0", "maxUnavailable": "1"},
                },
            ),
            id="deployment-rolling-update",
        ),
        pytest.param(
            "RuntimeClass",
            edit(RUNTIME_CLASS, overhead={"podFixed": {"cpu": "100m"}}),
            id="runtimeclass-minimal",
        ),
        pytest.param("Lease", LEASE, id="lease-minimal"),
        pytest.param("Widget", {"metadata": {"name": "w"}}, id="unknown-kind-metadata-only"),
    ],
)
def test_valid_objects_have_no_errors(kind: str, manifest: dict[str, Any]) -> None:
    assert errors_of(kind, manifest) == []


# ----------------------------------------------------------------------------- create rules

CREATE_CASES = [
    # metadata
    pytest.param(
        "Pod",
        edit(POD, metadata__name=DELETE),
        "metadata.name: Required value: name or generateName is required",
        id="meta-name-required",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__name="Web_0"),
        'metadata.name: Invalid value: "Web_0": a lowercase RFC 1123 subdomain must consist of',
        id="meta-name-subdomain",
    ),
    pytest.param(
        "Namespace",
        {"metadata": {"name": "team.a"}},
        'metadata.name: Invalid value: "team.a": must not contain dots',
        id="meta-namespace-name-is-label",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__name=DELETE, metadata__generateName="Web-"),
        'metadata.generateName: Invalid value: "Web-": a lowercase RFC 1123 subdomain',
        id="meta-generate-name-prefix",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__namespace=DELETE),
        "metadata.namespace: Required value",
        id="meta-namespaced-needs-namespace",
    ),
    pytest.param(
        "Node",
        edit(NODE, metadata__namespace="default"),
        "metadata.namespace: Forbidden: not allowed on this type",
        id="meta-cluster-scoped-no-namespace",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__labels={"-app": "web"}),
        'metadata.labels: Invalid value: "-app": name part must consist of alphanumeric characters',
        id="meta-label-key",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__labels={"app": "web app"}),
        'metadata.labels: Invalid value: "web app": a valid label must be an empty string',
        id="meta-label-value",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__annotations={"a": "x" * (256 * 1024)}),
        "metadata.annotations: Too long: may not be more than 262144 bytes",
        id="meta-annotations-size",
    ),
    pytest.param(
        "Pod",
        edit(POD, metadata__annotations={"a/b/c": "x"}),
        'metadata.annotations: Invalid value: "a/b/c": a valid label key',
        id="meta-annotation-key",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            metadata__ownerReferences=[
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc"}
            ],
        ),
        'metadata.ownerReferences[0].uid: Invalid value: "": must not be empty',
        id="meta-owner-reference-uid",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            metadata__ownerReferences=[
                {"apiVersion": "apps/", "kind": "ReplicaSet", "name": "r", "uid": "1"}
            ],
        ),
        'metadata.ownerReferences[0].apiVersion: Invalid value: "apps/": version must not be empty',
        id="meta-owner-reference-version",
    ),
    # containers
    pytest.param(
        "Pod",
        edit(POD, spec__containers=[]),
        "spec.containers: Required value",
        id="pod-needs-a-container",
    ),
    pytest.param(
        "Pod",
        _container(name="App"),
        'spec.containers[0].name: Invalid value: "App": a lowercase RFC 1123 label',
        id="container-name-label",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__initContainers=[CONTAINER]),
        'spec.initContainers[0].name: Duplicate value: "app"',
        id="container-names-unique-across-init",
    ),
    pytest.param(
        "Pod",
        _container(image=""),
        "spec.containers[0].image: Required value",
        id="container-image-required",
    ),
    pytest.param(
        "Pod",
        _container(ports=[{"containerPort": 70000}]),
        "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        id="port-range",
    ),
    pytest.param(
        "Pod",
        _container(ports=[{"containerPort": 80, "hostPort": -1}]),
        "spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
        id="host-port-range",
    ),
    pytest.param(
        "Pod",
        _container(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
        'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        id="port-protocol",
    ),
    # resources
    pytest.param(
        "Pod",
        _resources(requests={"cpu": "5x"}),
        "spec.containers[0].resources.requests[cpu]: Invalid value: \"5x\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        id="quantity-parses",
    ),
    pytest.param(
        "Pod",
        _resources(limits={"memory": "-1Gi"}),
        'spec.containers[0].resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0',
        id="quantity-not-negative",
    ),
    pytest.param(
        "Pod",
        _resources(requests={"cpu": "2"}, limits={"cpu": "1500m"}),
        'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1500m',
        id="request-at-most-limit",
    ),
    pytest.param(
        "Pod",
        _resources(requests={"gpu": "1"}),
        'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
        id="resource-name-standard-or-qualified",
    ),
    pytest.param(
        "Pod",
        _resources(requests={"pods": "1"}),
        'spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for containers',
        id="resource-name-container-resource",
    ),
    pytest.param(
        "Pod",
        _resources(requests={"example.com/gpu": "1"}, limits={"example.com/gpu": "2"}),
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2',
        id="extended-request-equals-limit",
    ),
    pytest.param(
        "Pod",
        _resources(limits={"example.com/gpu": "500m"}),
        'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer',
        id="extended-integer",
    ),
    pytest.param(
        "Pod",
        _resources(requests={"example.com/gpu": "1"}),
        "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
        id="extended-needs-limit",
    ),
    pytest.param(
        "Pod",
        _resources(limits={"hugepages-2Mi": "3Mi"}),
        "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
        id="hugepages-need-cpu-or-memory",
    ),
    # node selector and node affinity
    pytest.param(
        "Pod",
        edit(POD, spec__nodeSelector={"disk type": "ssd"}),
        'spec.nodeSelector: Invalid value: "disk type"',
        id="node-selector-key",
    ),
    pytest.param(
        "Pod",
        _node_term({"key": "zone", "operator": "In"}),
        f"{REQ_TERM}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        id="affinity-in-needs-values",
    ),
    pytest.param(
        "Pod",
        _node_term({"key": "zone", "operator": "Exists", "values": ["a"]}),
        f"{REQ_TERM}.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        id="affinity-exists-no-values",
    ),
    pytest.param(
        "Pod",
        _node_term({"key": "cores", "operator": "Gt", "values": ["4", "8"]}),
        f"{REQ_TERM}.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        id="affinity-gt-one-value",
    ),
    pytest.param(
        "Pod",
        _node_term({"key": "cores", "operator": "Lt", "values": ["four"]}),
        f"{REQ_TERM}.matchExpressions[0].values[0]: Invalid value: \"four\": for 'Gt', 'Lt' operators, the value must be an integer",
        id="affinity-lt-integer",
    ),
    pytest.param(
        "Pod",
        _node_term({"key": "zone", "operator": "Near", "values": ["a"]}),
        f'{REQ_TERM}.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
        id="affinity-operator",
    ),
    pytest.param(
        "Pod",
        _node_term(fields=[{"key": "metadata.labels", "operator": "In", "values": ["a"]}]),
        f'{REQ_TERM}.matchFields[0].key: Invalid value: "metadata.labels": not a valid field selector key',
        id="affinity-match-fields-key",
    ),
    pytest.param(
        "Pod",
        _node_term(fields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]),
        f"{REQ_TERM}.matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        id="affinity-match-fields-one-value",
    ),
    pytest.param(
        "Pod",
        _node_term(fields=[{"key": "metadata.name", "operator": "Exists"}]),
        f'{REQ_TERM}.matchFields[0].operator: Invalid value: "Exists": not a valid selector operator',
        id="affinity-match-fields-in-notin",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            },
        ),
        "nodeSelectorTerms: Required value: must have at least one node selector term",
        id="affinity-needs-a-term",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": {}}
                    ]
                }
            },
        ),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
        id="affinity-preferred-weight",
    ),
    # pod (anti-)affinity
    pytest.param(
        "Pod",
        _anti_affinity({"labelSelector": {"matchLabels": {"app": "web"}}}),
        f"{ANTI}.topologyKey: Required value: can not be empty",
        id="pod-affinity-topology-key-required",
    ),
    pytest.param(
        "Pod",
        _anti_affinity({"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "a/b/c"}),
        f'{ANTI}.topologyKey: Invalid value: "a/b/c"',
        id="pod-affinity-topology-key-qualified",
    ),
    pytest.param(
        "Pod",
        _anti_affinity(
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "app", "operator": "Equals", "values": ["a"]}]
                },
                "topologyKey": "zone",
            }
        ),
        f'{ANTI}.labelSelector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator',
        id="pod-affinity-label-selector",
    ),
    pytest.param(
        "Pod",
        _anti_affinity(
            {
                "topologyKey": "zone",
                "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]},
            }
        ),
        f"{ANTI}.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        id="pod-affinity-namespace-selector",
    ),
    pytest.param(
        "Pod",
        _anti_affinity({"topologyKey": "zone", "namespaces": ["Team_A"]}),
        f'{ANTI}.namespaces[0]: Invalid value: "Team_A"',
        id="pod-affinity-namespaces",
    ),
    pytest.param(
        "Pod",
        _anti_affinity({"topologyKey": "zone", "matchLabelKeys": ["version"]}),
        f"{ANTI}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
        id="pod-affinity-match-label-keys-need-selector",
    ),
    pytest.param(
        "Pod",
        _anti_affinity(
            {
                "labelSelector": {},
                "topologyKey": "zone",
                "matchLabelKeys": ["version"],
                "mismatchLabelKeys": ["version"],
            }
        ),
        f'{ANTI}.matchLabelKeys[0]: Invalid value: "version": exists in both matchLabelKeys and mismatchLabelKeys',
        id="pod-affinity-match-and-mismatch-keys-disjoint",
    ),
    pytest.param(
        "Pod",
        _anti_affinity(
            {
                "labelSelector": {
                    "matchLabels": {"version": "v1"},
                    "matchExpressions": [{"key": "version", "operator": "In", "values": ["v1"]}],
                },
                "topologyKey": "zone",
                "matchLabelKeys": ["version"],
            }
        ),
        f'{ANTI}.matchLabelKeys[0]: Invalid value: "version": exists in both matchLabelKeys and labelSelector',
        id="pod-affinity-match-label-keys-not-in-selector",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__affinity={
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}
                    ]
                }
            },
        ),
        "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
        id="pod-affinity-weight",
    ),
    # tolerations
    pytest.param(
        "Pod",
        _toleration({"key": "k", "operator": "Exists", "value": "v"}),
        "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
        id="toleration-exists-no-value",
    ),
    pytest.param(
        "Pod",
        _toleration({"operator": "Equal", "value": "v"}),
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty',
        id="toleration-empty-key-needs-exists",
    ),
    pytest.param(
        "Pod",
        _toleration({"key": "k", "operator": "Like"}),
        'spec.tolerations[0].operator: Unsupported value: "Like": supported values: "Equal", "Exists"',
        id="toleration-operator",
    ),
    pytest.param(
        "Pod",
        _toleration({"key": "k", "operator": "Exists", "effect": "NoRun"}),
        'spec.tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
        id="toleration-effect",
    ),
    pytest.param(
        "Pod",
        _toleration(
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
        ),
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        id="toleration-seconds-only-noexecute",
    ),
    pytest.param(
        "Pod",
        _toleration({"key": "sla", "operator": "Gt", "value": "high"}),
        "value must be a valid integer for operator 'Gt'",
        id="toleration-gt-needs-an-integer",
    ),
    pytest.param(
        "Pod",
        _toleration({"key": "sla", "operator": "Maybe"}),
        'Unsupported value: "Maybe"',
        id="toleration-unknown-operator-rejected",
    ),
    # topology spread
    pytest.param(
        "Pod",
        _spread(edit(SPREAD, maxSkew=0)),
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        id="spread-max-skew-positive",
    ),
    pytest.param(
        "Pod",
        _spread(edit(SPREAD, topologyKey=DELETE)),
        "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
        id="spread-topology-key-required",
    ),
    pytest.param(
        "Pod",
        _spread(edit(SPREAD, whenUnsatisfiable="Maybe")),
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"',
        id="spread-when-unsatisfiable",
    ),
    pytest.param(
        "Pod",
        _spread(edit(SPREAD, minDomains=0)),
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero",
        id="spread-min-domains-positive",
    ),
    pytest.param(
        "Pod",
        _spread(edit(SPREAD, minDomains=2, whenUnsatisfiable="ScheduleAnyway")),
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        id="spread-min-domains-only-do-not-schedule",
    ),
    pytest.param(
        "Pod",
        _spread(edit(SPREAD, nodeTaintsPolicy="Respect")),
        'spec.topologySpreadConstraints[0].nodeTaintsPolicy: Unsupported value: "Respect": supported values: "Honor", "Ignore"',
        id="spread-node-inclusion-policy",
    ),
    pytest.param(
        "Pod",
        _spread(
            edit(SPREAD, labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["app"])
        ),
        'spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector',
        id="spread-match-label-keys-not-in-selector",
    ),
    pytest.param(
        "Pod",
        _spread(SPREAD, edit(SPREAD, maxSkew=2)),
        'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"',
        id="spread-no-duplicate-pairs",
    ),
    # the rest of the pod spec
    pytest.param(
        "Pod",
        edit(POD, spec__preemptionPolicy="Sometimes"),
        'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
        id="pod-preemption-policy",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__schedulingGates=[{"name": "a"}, {"name": "a"}]),
        'spec.schedulingGates[1]: Duplicate value: "a"',
        id="scheduling-gates-unique",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__schedulingGates=[{"name": "example.com/"}]),
        'spec.schedulingGates[0]: Invalid value: "example.com/": name part must be non-empty',
        id="scheduling-gates-qualified",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__overhead={"cpu": "lots"}),
        'spec.overhead[cpu]: Invalid value: "lots": quantities must match',
        id="overhead-quantity",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__terminationGracePeriodSeconds=-1),
        "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0",
        id="termination-grace-nonnegative",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__restartPolicy="Sometimes"),
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        id="restart-policy",
    ),
    pytest.param(
        "Pod",
        edit(POD, status={"phase": "Sleeping"}),
        'status.phase: Unsupported value: "Sleeping"',
        id="status-phase",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__nodeName="node-1", spec__schedulingGates=[{"name": "g"}]),
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
        id="gated-pod-cannot-be-bound",
    ),
    # Node
    pytest.param(
        "Node",
        _taints({"key": "dedicated"}),
        "spec.taints[0].effect: Required value",
        id="taint-effect-required",
    ),
    pytest.param(
        "Node",
        _taints({"key": "k", "effect": "Evict"}),
        'spec.taints[0].effect: Unsupported value: "Evict"',
        id="taint-effect-values",
    ),
    pytest.param(
        "Node",
        _taints({"key": "a b", "effect": "NoSchedule"}),
        'spec.taints[0].key: Invalid value: "a b"',
        id="taint-key-qualified",
    ),
    pytest.param(
        "Node",
        _taints({"key": "k", "value": "a b", "effect": "NoSchedule"}),
        'spec.taints[0].value: Invalid value: "a b"',
        id="taint-value-label-value",
    ),
    pytest.param(
        "Node",
        _taints(
            {"key": "k", "value": "1", "effect": "NoSchedule"},
            {"key": "k", "value": "2", "effect": "NoSchedule"},
        ),
        "spec.taints[1]: Duplicate value: k=2:NoSchedule: taints must be unique by key and effect pair",
        id="taint-unique-key-effect",
    ),
    pytest.param(
        "Node",
        edit(NODE, status={"capacity": {"cpu": "-1"}}),
        'status.capacity[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="node-capacity-nonnegative",
    ),
    pytest.param(
        "Node",
        edit(NODE, status={"allocatable": {"memory": "1Gx"}}),
        'status.allocatable[memory]: Invalid value: "1Gx": quantities must match',
        id="node-allocatable-quantity",
    ),
    # PriorityClass
    pytest.param(
        "PriorityClass",
        edit(PRIORITY_CLASS, value=1_000_000_001),
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
        id="priorityclass-user-max",
    ),
    pytest.param(
        "PriorityClass",
        {"metadata": {"name": "system-mine"}, "value": 5},
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
        id="priorityclass-system-prefix-reserved",
    ),
    pytest.param(
        "PriorityClass",
        {"metadata": {"name": "system-cluster-critical"}, "value": 5},
        "error: value of system-cluster-critical PriorityClass must be 2000000000",
        id="priorityclass-system-value",
    ),
    pytest.param(
        "PriorityClass",
        edit(PRIORITY_CLASS, preemptionPolicy="Always"),
        'preemptionPolicy: Unsupported value: "Always"',
        id="priorityclass-preemption-policy",
    ),
    # PodDisruptionBudget
    pytest.param(
        "PodDisruptionBudget",
        edit(PDB, spec__maxUnavailable="1"),
        "minAvailable and maxUnavailable cannot be both set",
        id="pdb-min-xor-max",
    ),
    pytest.param(
        "PodDisruptionBudget",
        edit(PDB, spec__minAvailable="150%"),
        'spec.minAvailable: Invalid value: "150%": must not be greater than 100%',
        id="pdb-percent-at-most-100",
    ),
    pytest.param(
        "PodDisruptionBudget",
        edit(PDB, spec__minAvailable="-1"),
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
        id="pdb-int-nonnegative",
    ),
    pytest.param(
        "PodDisruptionBudget",
        edit(PDB, spec__minAvailable="half"),
        "spec.minAvailable: Invalid value: \"half\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        id="pdb-int-or-percent",
    ),
    pytest.param(
        "PodDisruptionBudget",
        edit(
            PDB,
            spec__selector={
                "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]
            },
        ),
        "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        id="pdb-selector",
    ),
    # ReplicaSet / Deployment
    pytest.param(
        "ReplicaSet",
        edit(REPLICA_SET, spec__selector=DELETE),
        "spec.selector: Required value",
        id="rs-selector-required",
    ),
    pytest.param(
        "ReplicaSet",
        edit(REPLICA_SET, spec__selector={}),
        "empty selector is invalid for deployment",
        id="rs-selector-non-empty",
    ),
    pytest.param(
        "ReplicaSet",
        edit(REPLICA_SET, spec__template__metadata__labels={"app": "db"}),
        'spec.template.metadata.labels: Invalid value: {"app":"db"}: `selector` does not match template `labels`',
        id="rs-selector-matches-template",
    ),
    pytest.param(
        "ReplicaSet",
        edit(REPLICA_SET, spec__replicas=-1),
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        id="rs-replicas-nonnegative",
    ),
    pytest.param(
        "ReplicaSet",
        edit(REPLICA_SET, spec__template__spec__containers__0__image=""),
        "spec.template.spec.containers[0].image: Required value",
        id="rs-template-pod-spec",
    ),
    pytest.param(
        "Deployment",
        edit(DEPLOYMENT, spec__template__spec__restartPolicy="Never"),
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        id="deploy-template-restart-always",
    ),
    pytest.param(
        "Deployment",
        edit(DEPLOYMENT, spec__strategy={"type": "BlueGreen"}),
        'spec.strategy.type: Unsupported value: "BlueGreen": supported values: "Recreate", "RollingUpdate"',
        id="deploy-strategy-type",
    ),
    pytest.param(
        "Deployment",
        edit(
            DEPLOYMENT,
            spec__strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "0", "maxUnavailable": "0%"},
            },
        ),
        'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0',
        id="deploy-surge-and-unavailable-not-both-zero",
    ),
    pytest.param(
        "Deployment",
        edit(
            DEPLOYMENT,
            spec__strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "120%"}},
        ),
        'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
        id="deploy-unavailable-at-most-100-percent",
    ),
    pytest.param(
        "Deployment",
        edit(DEPLOYMENT, spec__strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": "1"}}),
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        id="deploy-recreate-no-rolling-update",
    ),
    # RuntimeClass, Lease, Event
    pytest.param(
        "RuntimeClass",
        edit(RUNTIME_CLASS, handler=DELETE),
        "handler: Required value",
        id="runtimeclass-handler-required",
    ),
    pytest.param(
        "RuntimeClass",
        edit(RUNTIME_CLASS, handler="run.sc"),
        'handler: Invalid value: "run.sc": must not contain dots',
        id="runtimeclass-handler-label",
    ),
    pytest.param(
        "RuntimeClass",
        edit(RUNTIME_CLASS, overhead={"podFixed": {"memory": "-5Mi"}}),
        'overhead.podFixed[memory]: Invalid value: "-5Mi": must be greater than or equal to 0',
        id="runtimeclass-overhead",
    ),
    pytest.param(
        "Lease",
        edit(LEASE, spec__leaseDurationSeconds=0),
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        id="lease-duration-positive",
    ),
    pytest.param(
        "Event",
        edit(EVENT, involvedObject__namespace="other"),
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace',
        id="event-namespace-matches",
    ),
    pytest.param(
        "Widget",
        {"metadata": {"name": "W"}},
        'metadata.name: Invalid value: "W"',
        id="unknown-kind-still-checks-name",
    ),
]


@pytest.mark.parametrize(("kind", "manifest", "expected"), CREATE_CASES)
def test_create_rule(kind: str, manifest: dict[str, Any], expected: str) -> None:
    errs = errors_of(kind, manifest)
    assert any(expected in e for e in errs), f"{expected!r} not in {errs}"


# ----------------------------------------------------------------------------- update rules

STORED = edit(POD, metadata__uid="u-1", metadata__resourceVersion="5")
GATED = edit(
    STORED,
    spec__schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/b"}],
    spec__nodeSelector={"disk": "ssd"},
    spec__tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
    ],
    spec__affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    },
)
NA = "spec__affinity__nodeAffinity"
TERM0 = f"{NA}__requiredDuringSchedulingIgnoredDuringExecution__nodeSelectorTerms__0"

UPDATE_CASES = [
    # metadata
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, metadata__name="web-1"),
        'metadata.name: Invalid value: "web-1": field is immutable',
        id="meta-name-immutable",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, metadata__namespace="prod"),
        'metadata.namespace: Invalid value: "prod": field is immutable',
        id="meta-namespace-immutable",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, metadata__uid="u-2"),
        'metadata.uid: Invalid value: "u-2": field is immutable',
        id="meta-uid-immutable",
    ),
    pytest.param(
        "Pod", STORED, edit(STORED, metadata__uid=DELETE), None, id="meta-uid-omitted-keeps-stored"
    ),
    pytest.param(
        "Pod", STORED, edit(STORED, metadata__labels={"app": "web"}), None, id="meta-labels-mutable"
    ),
    # pod spec: what may change
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__containers__0__image="nginx:2"),
        None,
        id="pod-image-mutable",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__activeDeadlineSeconds=60),
        None,
        id="pod-active-deadline-settable",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__terminationGracePeriodSeconds=5),
        None,
        id="pod-termination-grace-mutable",
    ),
    pytest.param(
        "Pod",
        edit(STORED, spec__activeDeadlineSeconds=60),
        edit(STORED, spec__activeDeadlineSeconds=120),
        "spec.activeDeadlineSeconds: Invalid value: 120: must be less than or equal to previous value",
        id="pod-active-deadline-only-lowered",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(
            GATED,
            spec__tolerations=GATED["spec"]["tolerations"] + [{"key": "x", "operator": "Exists"}],
        ),
        None,
        id="pod-tolerations-additions",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, spec__tolerations__0__tolerationSeconds=99),
        None,
        id="pod-toleration-seconds-mutable",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, spec__tolerations=[]),
        "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
        id="pod-tolerations-no-removal",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__containers=[CONTAINER, {"name": "b", "image": "b"}]),
        "spec.containers: Forbidden: pod updates may not add or remove containers",
        id="pod-containers-fixed",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__priority=7),
        "spec: Forbidden: pod updates may not change fields other than",
        id="pod-spec-otherwise-immutable",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__nodeName="node-1"),
        'spec.nodeName: Invalid value: "node-1": field is immutable',
        id="pod-node-name-only-via-bind",
    ),
    # scheduling gates
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, spec__schedulingGates=[{"name": "example.com/b"}]),
        None,
        id="gates-may-be-removed",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, spec__schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/c"}]),
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'",
        id="gates-never-added",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__schedulingGates=[{"name": "late"}]),
        "only deletion is allowed, but found new scheduling gate 'late'",
        id="gates-not-added-after-create",
    ),
    # gated pods: directives may only tighten
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, spec__nodeSelector={"disk": "ssd", "zone": "a"}),
        None,
        id="gated-node-selector-additions",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, spec__nodeSelector={"disk": "hdd"}),
        'spec.nodeSelector: Invalid value: {"disk":"hdd"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)',
        id="gated-node-selector-no-mutation",
    ),
    pytest.param(
        "Pod",
        STORED,
        edit(STORED, spec__nodeSelector={"zone": "a"}),
        "pod updates may not change fields other than",
        id="ungated-node-selector-immutable",
    ),
    pytest.param(
        "Pod",
        edit(STORED, spec__schedulingGates=[{"name": "g"}]),
        edit(
            STORED, spec__schedulingGates=[{"name": "g"}], spec__affinity=GATED["spec"]["affinity"]
        ),
        None,
        id="gated-node-affinity-settable-when-nil",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(
            GATED,
            **{
                f"{TERM0}__matchExpressions": GATED["spec"]["affinity"]["nodeAffinity"][
                    "requiredDuringSchedulingIgnoredDuringExecution"
                ]["nodeSelectorTerms"][0]["matchExpressions"]
                + [{"key": "ssd", "operator": "Exists"}]
            },
        ),
        None,
        id="gated-required-term-gains-expressions",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, **{f"{TERM0}__matchExpressions": [{"key": "ssd", "operator": "Exists"}]}),
        "nodeSelectorTerms[0]: Invalid value: ",
        id="gated-required-term-no-deletions",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(GATED, **{f"{TERM0}__matchExpressions__0__values": ["b"]}),
        "only additions are allowed (no mutations or deletions)",
        id="gated-required-term-only-additions",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(
            GATED,
            **{
                f"{NA}__requiredDuringSchedulingIgnoredDuringExecution__nodeSelectorTerms": GATED[
                    "spec"
                ]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                    "nodeSelectorTerms"
                ]
                + [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]
            },
        ),
        "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        id="gated-required-terms-not-added",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(
            GATED,
            **{
                f"{NA}__preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]},
                    }
                ]
            },
        ),
        None,
        id="gated-preferred-node-affinity-free",
    ),
    pytest.param(
        "Pod",
        GATED,
        edit(
            GATED,
            spec__affinity__podAffinity={
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]
            },
        ),
        "pod updates may not change fields other than",
        id="gated-pod-affinity-immutable",
    ),
    # other kinds
    pytest.param(
        "Node", NODE, _taints({"key": "k", "effect": "NoSchedule"}), None, id="node-taints-mutable"
    ),
    pytest.param(
        "Deployment",
        DEPLOYMENT,
        edit(DEPLOYMENT, spec__replicas=5),
        None,
        id="deploy-replicas-mutable",
    ),
    pytest.param(
        "Deployment",
        DEPLOYMENT,
        edit(
            DEPLOYMENT,
            spec__selector={"matchLabels": {"app": "web", "v": "2"}},
            spec__template__metadata__labels={"app": "web", "v": "2"},
        ),
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","v":"2"}}: field is immutable',
        id="deploy-selector-immutable",
    ),
    pytest.param(
        "ReplicaSet",
        REPLICA_SET,
        edit(
            REPLICA_SET,
            spec__selector={"matchLabels": {"tier": "x"}},
            spec__template__metadata__labels={"tier": "x"},
        ),
        "spec.selector: Invalid value: ",
        id="rs-selector-immutable",
    ),
    pytest.param(
        "PriorityClass",
        PRIORITY_CLASS,
        edit(PRIORITY_CLASS, value=5),
        "value: Forbidden: may not be changed in an update.",
        id="priorityclass-value-immutable",
    ),
    pytest.param(
        "Deployment",
        DEPLOYMENT,
        edit(DEPLOYMENT, spec__replicas=-3),
        "spec.replicas: Invalid value: -3: must be greater than or equal to 0",
        id="update-revalidates-new-object",
    ),
]


@pytest.mark.parametrize(("kind", "old", "new", "expected"), UPDATE_CASES)
def test_update_rule(
    kind: str, old: dict[str, Any], new: dict[str, Any], expected: str | None
) -> None:
    errs = [str(e) for e in validate_update(kind, parse(kind, new), parse(kind, old))]
    if expected is None:
        assert errs == []
    else:
        assert any(expected in e for e in errs), f"{expected!r} not in {errs}"


def test_update_reports_which_spec_fields_changed() -> None:
    errs = validate_update(
        "Pod", parse("Pod", edit(STORED, spec__priority=7)), parse("Pod", STORED)
    )
    assert [e.path for e in errs] == ["spec"]
    assert errs[0].detail.endswith("changed: spec.priority")


def test_errors_carry_kubernetes_types() -> None:
    errs = validate_create("Pod", parse("Pod", _container(image="")))
    assert [(e.path, e.type) for e in errs] == [("spec.containers[0].image", "Required value")]
