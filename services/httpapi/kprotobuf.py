"""Kubernetes' protobuf request bodies (application/vnd.kubernetes.protobuf) -> JSON.

Why this module exists: client-go's typed clients send protobuf, and kubectl's
generators use them (`kubectl create namespace NAME`, `kubectl create deployment ...`,
`kubectl create priorityclass ...`, `kubectl create poddisruptionbudget ...`,
`kubectl create quota ...`, `kubectl create job ...`, `kubectl create secret generic`,
`kubectl create configmap`, `kubectl create service ...`), with no
fallback to JSON on 415. kubera's own protobuf messages are not upstream's (other field
numbers), so such a body is read here with a table of upstream's field numbers (facts of
k8s.io/api's generated.proto) into the Kubernetes JSON the rest of the edge decodes.

The envelope: the 4 bytes ``k8s\\x00``, then a runtime.Unknown (typeMeta = 1 {apiVersion = 1,
kind = 2}, raw = 2: the object's bytes, contentEncoding = 3, contentType = 4).

What the table covers is what those generators write, and a little more. Upstream's
encoder writes every non-pointer field, set or not, so a field the table does not know is
skipped when it holds its zero value and refused (415, naming it) when it does not:
nothing is ever dropped silently. Zero values of known fields are left out as the JSON
encoder's omitempty does, except for pointer fields (`ptr`), where zero is a value.
Responses are always JSON (the clients accept it).
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass
from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
#: How deep an unknown field's nested messages are searched for a set value.
MAX_DEPTH = 32


class ProtobufBodyError(ValueError):
    """A body this module cannot turn into JSON without losing something."""


@dataclass(frozen=True)
class F:
    """One field: its JSON name and type ("string", "int", "bool", "map" of strings,
    "quantities" (map of Quantity), "bytesmap" (map of bytes, base64 in JSON), "time",
    "intstr", "skip", or a message name)."""

    name: str
    type: str
    repeated: bool = False
    #: A pointer field upstream: present means set, even at its zero value.
    ptr: bool = False


#: message -> field number -> field (upstream's generated.proto numbers).
SCHEMA: dict[str, dict[int, F]] = {
    "TypeMeta": {1: F("apiVersion", "string"), 2: F("kind", "string")},
    "ObjectMeta": {
        1: F("name", "string"),
        2: F("generateName", "string"),
        3: F("namespace", "string"),
        5: F("uid", "string"),
        6: F("resourceVersion", "string"),
        7: F("generation", "int"),
        8: F("creationTimestamp", "time"),
        9: F("deletionTimestamp", "time"),
        10: F("deletionGracePeriodSeconds", "int", ptr=True),
        11: F("labels", "map"),
        12: F("annotations", "map"),
        13: F("ownerReferences", "OwnerReference", repeated=True),
        14: F("finalizers", "string", repeated=True),
    },
    "OwnerReference": {
        1: F("kind", "string"),
        3: F("name", "string"),
        4: F("uid", "string"),
        5: F("apiVersion", "string"),
        6: F("controller", "bool", ptr=True),
        7: F("blockOwnerDeletion", "bool", ptr=True),
    },
    "LabelSelector": {
        1: F("matchLabels", "map"),
        2: F("matchExpressions", "LabelSelectorRequirement", repeated=True),
    },
    "LabelSelectorRequirement": {
        1: F("key", "string"),
        2: F("operator", "string"),
        3: F("values", "string", repeated=True),
    },
    # core/v1
    "Namespace": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "NamespaceSpec"),
        3: F("status", "skip"),
    },
    "NamespaceSpec": {1: F("finalizers", "string", repeated=True)},
    "PodTemplateSpec": {1: F("metadata", "ObjectMeta"), 2: F("spec", "PodSpec")},
    "PodSpec": {
        2: F("containers", "Container", repeated=True),
        3: F("restartPolicy", "string"),
        4: F("terminationGracePeriodSeconds", "int", ptr=True),
        6: F("dnsPolicy", "string"),
        7: F("nodeSelector", "map"),
        8: F("serviceAccountName", "string"),
        9: F("serviceAccount", "string"),
        10: F("nodeName", "string"),
        19: F("schedulerName", "string"),
        20: F("initContainers", "Container", repeated=True),
        22: F("tolerations", "Toleration", repeated=True),
        24: F("priorityClassName", "string"),
        25: F("priority", "int", ptr=True),
    },
    "Container": {
        1: F("name", "string"),
        2: F("image", "string"),
        3: F("command", "string", repeated=True),
        4: F("args", "string", repeated=True),
        5: F("workingDir", "string"),
        6: F("ports", "ContainerPort", repeated=True),
        7: F("env", "EnvVar", repeated=True),
        8: F("resources", "ResourceRequirements"),
        13: F("terminationMessagePath", "string"),
        14: F("imagePullPolicy", "string"),
        20: F("terminationMessagePolicy", "string"),
    },
    "ContainerPort": {
        1: F("name", "string"),
        2: F("hostPort", "int"),
        3: F("containerPort", "int"),
        4: F("protocol", "string"),
        5: F("hostIP", "string"),
    },
    "EnvVar": {1: F("name", "string"), 2: F("value", "string")},
    "ResourceRequirements": {1: F("limits", "quantities"), 2: F("requests", "quantities")},
    "Toleration": {
        1: F("key", "string"),
        2: F("operator", "string"),
        3: F("value", "string"),
        4: F("effect", "string"),
        5: F("tolerationSeconds", "int", ptr=True),
    },
    "ConfigMap": {
        1: F("metadata", "ObjectMeta"),
        2: F("data", "map"),
        3: F("binaryData", "bytesmap"),
        4: F("immutable", "bool", ptr=True),
    },
    "Secret": {
        1: F("metadata", "ObjectMeta"),
        2: F("data", "bytesmap"),
        3: F("type", "string"),
        4: F("stringData", "map"),
        5: F("immutable", "bool", ptr=True),
    },
    "ServiceAccount": {
        1: F("metadata", "ObjectMeta"),
        2: F("secrets", "ObjectReference", repeated=True),
        3: F("imagePullSecrets", "LocalObjectReference", repeated=True),
        4: F("automountServiceAccountToken", "bool", ptr=True),
    },
    "ObjectReference": {
        1: F("kind", "string"),
        2: F("namespace", "string"),
        3: F("name", "string"),
        4: F("uid", "string"),
        5: F("apiVersion", "string"),
        6: F("resourceVersion", "string"),
        7: F("fieldPath", "string"),
    },
    "LocalObjectReference": {1: F("name", "string")},
    "Service": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "ServiceSpec"),
        3: F("status", "skip"),
    },
    "ServiceSpec": {
        1: F("ports", "ServicePort", repeated=True),
        2: F("selector", "map"),
        3: F("clusterIP", "string"),
        4: F("type", "string"),
        5: F("externalIPs", "string", repeated=True),
        7: F("sessionAffinity", "string"),
        10: F("externalName", "string"),
        11: F("externalTrafficPolicy", "string"),
        13: F("publishNotReadyAddresses", "bool"),
        17: F("ipFamilyPolicy", "string", ptr=True),
        18: F("clusterIPs", "string", repeated=True),
        19: F("ipFamilies", "string", repeated=True),
        20: F("allocateLoadBalancerNodePorts", "bool", ptr=True),
        22: F("internalTrafficPolicy", "string", ptr=True),
    },
    "ServicePort": {
        1: F("name", "string"),
        2: F("protocol", "string"),
        3: F("port", "int"),
        4: F("targetPort", "intstr"),
        5: F("nodePort", "int"),
        6: F("appProtocol", "string", ptr=True),
    },
    # apps/v1
    "Deployment": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "DeploymentSpec"),
        3: F("status", "skip"),
    },
    "DeploymentSpec": {
        1: F("replicas", "int", ptr=True),
        2: F("selector", "LabelSelector"),
        3: F("template", "PodTemplateSpec"),
        4: F("strategy", "DeploymentStrategy"),
        5: F("minReadySeconds", "int"),
        6: F("revisionHistoryLimit", "int", ptr=True),
        7: F("paused", "bool"),
        9: F("progressDeadlineSeconds", "int", ptr=True),
    },
    "DeploymentStrategy": {
        1: F("type", "string"),
        2: F("rollingUpdate", "RollingUpdateDeployment"),
    },
    "RollingUpdateDeployment": {1: F("maxUnavailable", "intstr"), 2: F("maxSurge", "intstr")},
    "ReplicaSet": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "ReplicaSetSpec"),
        3: F("status", "skip"),
    },
    "ReplicaSetSpec": {
        1: F("replicas", "int", ptr=True),
        2: F("selector", "LabelSelector"),
        3: F("template", "PodTemplateSpec"),
        4: F("minReadySeconds", "int"),
    },
    # core/v1 quota (`kubectl create quota NAME --hard=... --scopes=...`)
    "ResourceQuota": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "ResourceQuotaSpec"),
        3: F("status", "skip"),
    },
    "ResourceQuotaSpec": {
        1: F("hard", "quantities"),
        2: F("scopes", "string", repeated=True),
        3: F("scopeSelector", "ScopeSelector"),
    },
    "ScopeSelector": {1: F("matchExpressions", "ScopedResourceSelectorRequirement", repeated=True)},
    "ScopedResourceSelectorRequirement": {
        1: F("scopeName", "string"),
        2: F("operator", "string"),
        3: F("values", "string", repeated=True),
    },
    # batch/v1 (`kubectl create job NAME --image=…` and `--from=cronjob/NAME`)
    "Job": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "JobSpec"),
        3: F("status", "skip"),
    },
    "JobSpec": {
        1: F("parallelism", "int", ptr=True),
        2: F("completions", "int", ptr=True),
        3: F("activeDeadlineSeconds", "int", ptr=True),
        4: F("selector", "LabelSelector"),
        5: F("manualSelector", "bool", ptr=True),
        6: F("template", "PodTemplateSpec"),
        7: F("backoffLimit", "int", ptr=True),
        8: F("ttlSecondsAfterFinished", "int", ptr=True),
        9: F("completionMode", "string", ptr=True),
        10: F("suspend", "bool", ptr=True),
        11: F("podFailurePolicy", "PodFailurePolicy"),
        12: F("backoffLimitPerIndex", "int", ptr=True),
        13: F("maxFailedIndexes", "int", ptr=True),
        14: F("podReplacementPolicy", "string", ptr=True),
        15: F("managedBy", "string", ptr=True),
        16: F("successPolicy", "SuccessPolicy"),
    },
    "PodFailurePolicy": {1: F("rules", "PodFailurePolicyRule", repeated=True)},
    "PodFailurePolicyRule": {
        1: F("action", "string"),
        2: F("onExitCodes", "PodFailurePolicyOnExitCodesRequirement"),
        3: F("onPodConditions", "PodFailurePolicyOnPodConditionsPattern", repeated=True),
    },
    "PodFailurePolicyOnExitCodesRequirement": {
        1: F("containerName", "string", ptr=True),
        2: F("operator", "string"),
        3: F("values", "int", repeated=True),
    },
    "PodFailurePolicyOnPodConditionsPattern": {1: F("type", "string"), 2: F("status", "string")},
    "SuccessPolicy": {1: F("rules", "SuccessPolicyRule", repeated=True)},
    "SuccessPolicyRule": {
        1: F("succeededIndexes", "string", ptr=True),
        2: F("succeededCount", "int", ptr=True),
    },
    # scheduling.k8s.io/v1
    "PriorityClass": {
        1: F("metadata", "ObjectMeta"),
        2: F("value", "int"),
        3: F("globalDefault", "bool"),
        4: F("description", "string"),
        5: F("preemptionPolicy", "string", ptr=True),
    },
    # policy/v1
    "PodDisruptionBudget": {
        1: F("metadata", "ObjectMeta"),
        2: F("spec", "PodDisruptionBudgetSpec"),
        3: F("status", "skip"),
    },
    "PodDisruptionBudgetSpec": {
        1: F("minAvailable", "intstr", ptr=True),
        2: F("selector", "LabelSelector"),
        3: F("maxUnavailable", "intstr", ptr=True),
        4: F("unhealthyPodEvictionPolicy", "string", ptr=True),
    },
}

#: (apiVersion, kind) -> the message the raw bytes are.
TOP: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("apps/v1", "Deployment"): "Deployment",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("batch/v1", "Job"): "Job",
}

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ProtobufBodyError("truncated or overlong varint")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (number, wire type, value) of every field in a serialized message."""
    out = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        num, wt = key >> 3, key & 7
        value: int | bytes
        if wt == _VARINT:
            value, i = _varint(data, i)
        elif wt == _LEN:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise ProtobufBodyError("truncated length-delimited field")
            value, i = data[i : i + size], i + size
        elif wt == _I64:
            value, i = data[i : i + 8], i + 8
        elif wt == _I32:
            value, i = data[i : i + 4], i + 4
        else:
            raise ProtobufBodyError(f"unsupported wire type {wt}")
        out.append((num, wt, value))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _time(data: bytes) -> str | None:
    parts = {n: v for n, wt, v in fields(data) if wt == _VARINT}
    seconds = _signed(parts.get(1, 0))
    if not seconds:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _string_map_entry(data: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for n, _, v in fields(data):
        if n == 1:
            key = v.decode()
        elif n == 2:
            value = v
    return key, value


def _intstr(data: bytes) -> int | str:
    parts = {n: v for n, _, v in fields(data)}
    if parts.get(1, 0) == 1:
        return bytes(parts.get(3, b"")).decode()
    return _signed(parts.get(2, 0))


def _zero(wt: int, value: Any, depth: int = 0) -> bool:
    """Whether an unknown field holds its zero value: 0, empty, or a message whose
    fields all do (upstream writes nested non-pointer structs even when unset)."""
    if wt == _VARINT:
        return bool(value == 0)
    if wt != _LEN:
        return not any(value)
    if not value:
        return True
    if depth > MAX_DEPTH:
        return False  # refused, not searched further
    try:
        return all(_zero(w, v, depth + 1) for _, w, v in fields(value))
    except ProtobufBodyError:
        return False


def message(data: bytes, name: str, path: str = "") -> dict[str, Any]:
    """One message of SCHEMA as Kubernetes JSON."""
    schema = SCHEMA[name]
    out: dict[str, Any] = {}
    for num, wt, value in fields(data):
        f = schema.get(num)
        if f is None:
            if not _zero(wt, value):
                raise ProtobufBodyError(
                    f"field {num} of {name} ({path or '<root>'}) is set, and kubera does not "
                    "decode it from protobuf: send the object as JSON (kubectl create -f)"
                )
            continue
        sub = f"{path}.{f.name}" if path else f.name
        if f.type == "skip":
            continue
        if f.type in ("map", "quantities", "bytesmap"):
            key, raw = _string_map_entry(value)
            if f.type == "quantities":
                raw = next((v for n, _, v in fields(raw) if n == 1), b"")
            text = base64.b64encode(raw).decode() if f.type == "bytesmap" else raw.decode()
            out.setdefault(f.name, {})[key] = text
            continue
        if f.repeated and f.type == "int" and wt == _LEN:
            # a packed repeated scalar (gogo writes them unpacked; both are valid protobuf)
            out.setdefault(f.name, []).extend(_packed(value))
            continue
        decoded = _value(f, wt, value, sub)
        if f.repeated:
            out.setdefault(f.name, []).append(decoded)
        elif decoded is not None and (f.ptr or decoded not in ("", 0, False)):
            out[f.name] = decoded
    return out


def _packed(data: bytes) -> list[int]:
    values, i = [], 0
    while i < len(data):
        v, i = _varint(data, i)
        values.append(_signed(v))
    return values


def _value(f: F, wt: int, value: Any, path: str) -> Any:
    if f.type == "string":
        return bytes(value).decode()
    if f.type == "int":
        return _signed(value)
    if f.type == "bool":
        return bool(value)
    if f.type == "time":
        return _time(value)
    if f.type == "intstr":
        return _intstr(value)
    return message(value, f.type, path)


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf request body -> the object as Kubernetes JSON (apiVersion and kind
    from the envelope)."""
    if not body.startswith(MAGIC):
        raise ProtobufBodyError("the body does not start with the Kubernetes protobuf magic")
    envelope = {n: v for n, _, v in fields(body[len(MAGIC) :])}
    if envelope.get(3) or envelope.get(4):
        raise ProtobufBodyError(
            "encoded protobuf bodies (contentEncoding/contentType) are not supported"
        )
    type_meta = message(envelope.get(1, b""), "TypeMeta")
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    top = TOP.get((api_version, kind))
    if top is None:
        raise ProtobufBodyError(
            f"kubera does not decode {kind or 'objects'} ({api_version}) from protobuf: send JSON"
        )
    doc = message(envelope.get(2, b""), top)
    return {"apiVersion": api_version, "kind": kind, **doc}
