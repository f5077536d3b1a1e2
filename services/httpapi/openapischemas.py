"""The OpenAPI v3 schemas of kubera's kinds, read off their protobuf descriptors.

Split from services/httpapi/openapi.py (which lays out paths and documents) because the
schema mapping is its own subject: how a proto message becomes a Kubernetes-named JSON
schema. Names follow upstream (io.k8s.api.core.v1.Pod, io.k8s.apimachinery.pkg.apis.meta.v1.
ObjectMeta): the proto file says the group (core.proto → io.k8s.api.core.v1, meta.proto →
apimachinery's meta/v1). kubera's field options say what JSON cannot: `(quantity)` maps
hold Quantity strings, `(int_or_string)` fields are IntOrString; string fields named like
timestamps are Time (MicroTime for event and lease times). Descriptions are the .proto
comments, read from the descriptor set `make proto` writes beside the code
(protos/kubera/v1/descriptors.binpb). List strategies come from services.api.machinery.listtypes
(the table strategic merge uses), as x-kubernetes-list-type / list-map-keys /
patch-strategy / patch-merge-key.

Fields kubera keeps as free-form JSON (probes, volumes, securityContext…) are objects with
x-kubernetes-preserve-unknown-fields; there are no `required` lists (proto3 has none).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import protos.kubera.v1
from protos.kubera.v1 import options_pb2
from services.api.machinery import listtypes
from services.api.machinery.kinds import KINDS, Kind

DESCRIPTOR_SET = Path(protos.kubera.v1.__file__).with_name("descriptors.binpb")

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
TIME = f"{META}.Time"
MICRO_TIME = f"{META}.MicroTime"

#: The schema prefix of each proto file's messages.
_FILE_PREFIX = {
    "protos/kubera/v1/core.proto": "io.k8s.api.core.v1",
    "protos/kubera/v1/policyv1core.proto": "io.k8s.api.core.v1",
    "protos/kubera/v1/apps.proto": "io.k8s.api.apps.v1",
    "protos/kubera/v1/storage.proto": "io.k8s.api.core.v1",
    "protos/kubera/v1/storagev1.proto": "io.k8s.api.storage.v1",
    "protos/kubera/v1/batch.proto": "io.k8s.api.batch.v1",
    "protos/kubera/v1/policy.proto": "io.k8s.api.policy.v1",
    "protos/kubera/v1/scheduling.proto": "io.k8s.api.scheduling.v1",
    "protos/kubera/v1/schedulingv1alpha1.proto": "io.k8s.api.scheduling.v1alpha1",
    "protos/kubera/v1/schedulingv1beta1.proto": "io.k8s.api.scheduling.v1beta1",
    "protos/kubera/v1/coordination.proto": "io.k8s.api.coordination.v1",
    "protos/kubera/v1/node.proto": "io.k8s.api.node.v1",
    "protos/kubera/v1/resource.proto": "io.k8s.api.resource.v1",
    "protos/kubera/v1/service.proto": "io.k8s.api.core.v1",
    "protos/kubera/v1/discovery.proto": "io.k8s.api.discovery.v1",
    # A custom resource upstream: kube-apiserver names CRD schemas by the reversed group.
    "protos/kubera/v1/podgroup.proto": "io.x-k8s.scheduling.v1alpha1",
    "protos/kubera/v1/meta.proto": META,
}
#: Messages that live in another file than upstream's package (meta/v1's options).
_RENAMED = {
    "kubera.v1.DeleteOptions": f"{META}.DeleteOptions",
    "kubera.v1.Preconditions": f"{META}.Preconditions",
    "kubera.v1.CoreEndpointPort": "io.k8s.api.core.v1.EndpointPort",
    "kubera.v1.SchedulingTypedLocalObjectReference": (
        "io.k8s.api.scheduling.v1alpha1.TypedLocalObjectReference"
    ),
    "kubera.v1.WorkloadPodGroup": "io.k8s.api.scheduling.v1alpha1.PodGroup",
    # scheduling.k8s.io/v1beta1: names kubera.v1 already used (schedulingv1beta1.proto).
    **{
        f"kubera.v1.{ours}": f"io.k8s.api.scheduling.v1beta1.{theirs}"
        for ours, theirs in (
            ("SchedulingPodGroup", "PodGroup"),
            ("SchedulingPodGroupSpec", "PodGroupSpec"),
            ("SchedulingPodGroupStatus", "PodGroupStatus"),
            ("PodGroupBasicSchedulingPolicy", "BasicSchedulingPolicy"),
            ("PodGroupGangSchedulingPolicy", "GangSchedulingPolicy"),
            ("PodGroupWorkloadReference", "WorkloadReference"),
        )
    },
}
#: Timestamps with microseconds (metav1.MicroTime) rather than seconds (metav1.Time).
_MICRO_TIME_FIELDS = frozenset({"event_time", "acquire_time", "renew_time"})


# ------------------------------------------------------------ comments


@functools.cache
def _comments() -> dict[tuple[str, int], str]:
    """(message full name, field number or 0 for the message) → its .proto comment."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET.read_bytes())
    out: dict[tuple[str, int], str] = {}
    for f in fds.file:
        names = {i: f"{f.package}.{m.name}" for i, m in enumerate(f.message_type)}
        fields = {
            (i, j): fd.number for i, m in enumerate(f.message_type) for j, fd in enumerate(m.field)
        }
        for loc in f.source_code_info.location:
            text = _clean(loc.leading_comments or loc.trailing_comments)
            if not text or not loc.path or loc.path[0] != 4:  # 4: FileDescriptorProto.message_type
                continue
            path = list(loc.path)
            if len(path) == 2:
                out[(names[path[1]], 0)] = text
            elif len(path) == 4 and path[2] == 2:  # 2: DescriptorProto.field
                out[(names[path[1]], fields[(path[1], path[3])])] = text
    return out


def _clean(comment: str) -> str:
    return " ".join(line.strip() for line in comment.strip().splitlines() if line.strip())


#: What the fields every object has mean, for the messages whose .proto says nothing.
_OBJECT_FIELDS = {
    "api_version": "The versioned schema of this object (group/version, or v1 for the core group).",
    "kind": "The REST resource this object represents, in CamelCase.",
    "metadata": "The object's metadata: name, namespace, labels, annotations, owners, versions.",
    "spec": "The desired state of the object.",
    "status": "The most recently observed state of the object; written by the system.",
}


def description(message: Descriptor, field: FieldDescriptor | None = None) -> str:
    """The .proto comment of a message or field; for the common object fields without one
    (apiVersion, kind, metadata, spec, status), what they mean on every kind."""
    text = _comments().get((message.full_name, field.number if field else 0), "")
    if not text and field is not None and field.number <= 5:
        text = _OBJECT_FIELDS.get(field.name, "") if "metadata" in message.fields_by_name else ""
    return text


# -------------------------------------------------------------- schemas


def schema_name(message: Descriptor) -> str:
    """Upstream's schema name of a kubera message (io.k8s.api.core.v1.Pod)."""
    renamed = _RENAMED.get(message.full_name)
    if renamed:
        return renamed
    prefix = _FILE_PREFIX.get(message.file.name, "io.kubera.v1")
    return f"{prefix}.{message.name}"


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def ref_field(name: str) -> dict[str, Any]:
    """A reference used as a field (upstream's shape: allOf, so a description may sit beside)."""
    return {"allOf": [ref(name)], "default": {}}


def _is_map(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def _opt(f: FieldDescriptor, ext: Any) -> bool:
    return bool(f.GetOptions().Extensions[ext])


def _is_time(f: FieldDescriptor) -> bool:
    return f.type == FieldDescriptor.TYPE_STRING and (
        f.name.endswith("_timestamp") or f.name.endswith("_time") or f.name == "time_added"
    )


_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_INT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_SINT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_UINT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
}


def _value_schema(f: FieldDescriptor, *, quantity: bool, intstr: bool, time: str) -> dict[str, Any]:
    """The schema of one value of `f` (an item of a list, a value of a map, or the field)."""
    mt = f.message_type
    if mt is not None:
        if mt.full_name.startswith("google.protobuf."):
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return ref_field(schema_name(mt))
    if quantity:
        return ref_field(QUANTITY)
    if intstr:
        return ref_field(INT_OR_STRING)
    if time:
        return ref_field(time)
    return dict(_SCALARS.get(f.type, {"type": "string"}))


def _merge_extensions(owner: Descriptor, f: FieldDescriptor) -> dict[str, Any]:
    """x-kubernetes-list-type / list-map-keys / patch-strategy / patch-merge-key of a list,
    x-kubernetes-map-type (and a patch strategy) of a map or struct, as the list types table
    says; read by attribute so the table may grow fields."""
    s = listtypes.strategy(owner.full_name, f.json_name)
    if s is None:
        return {}
    out: dict[str, Any] = {}
    list_type = getattr(s, "list_type", "") if f.is_repeated and not _is_map(f) else ""
    if list_type:
        out["x-kubernetes-list-type"] = list_type
    map_type = getattr(s, "map_type", "")
    if map_type and not list_type:
        out["x-kubernetes-map-type"] = map_type
    keys = tuple(getattr(s, "keys", ()) or ())
    if list_type == "map" and keys:
        out["x-kubernetes-list-map-keys"] = list(keys)
    merge_key = getattr(s, "merge_key", "")
    if merge_key:
        out["x-kubernetes-patch-merge-key"] = merge_key
    strategy = getattr(s, "patch_strategy", "")
    if strategy:
        out["x-kubernetes-patch-strategy"] = strategy
    return out


def field_schema(owner: Descriptor, f: FieldDescriptor) -> dict[str, Any]:
    """The property schema of field `f` of message `owner`."""
    time = (MICRO_TIME if f.name in _MICRO_TIME_FIELDS else TIME) if _is_time(f) else ""
    if _is_map(f):
        vf = f.message_type.fields_by_name["value"]
        values = _value_schema(
            vf,
            quantity=_opt(f, options_pb2.quantity),
            intstr=_opt(f, options_pb2.int_or_string),
            time="",
        )
        schema: dict[str, Any] = {"type": "object", "additionalProperties": values}
    elif f.is_repeated:
        item = _value_schema(
            f, quantity=False, intstr=_opt(f, options_pb2.int_or_string), time=time
        )
        schema = {"type": "array", "items": item}
    else:
        # A scalar quantity (DeviceCapacity.value) is a Quantity like a map's values.
        schema = _value_schema(
            f,
            quantity=_opt(f, options_pb2.quantity),
            intstr=_opt(f, options_pb2.int_or_string),
            time=time,
        )
    schema.update(_merge_extensions(owner, f))
    text = description(owner, f)
    if text:
        schema["description"] = text
    return schema


def gvk(group: str, version: str, kind: str) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind, "version": version}]


def message_schema(message: Descriptor) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f.json_name: field_schema(message, f) for f in message.fields},
    }
    text = description(message)
    if text:
        schema["description"] = text
    return schema


def _referenced(message: Descriptor) -> Iterable[Descriptor]:
    for f in message.fields:
        mt = f.message_type
        if mt is None:
            continue
        if _is_map(f):
            mt = mt.fields_by_name["value"].message_type
        if mt is not None and not mt.full_name.startswith("google.protobuf."):
            yield mt


def _closure(roots: Iterable[Descriptor]) -> list[Descriptor]:
    seen: dict[str, Descriptor] = {}
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m.full_name in seen:
            continue
        seen[m.full_name] = m
        todo.extend(_referenced(m))
    return list(seen.values())


def _list_schema(kind: Kind) -> dict[str, Any]:
    item = schema_name(kind.message.DESCRIPTOR)
    return {
        "type": "object",
        "description": f"A list of {kind.kind} objects.",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": "The versioned schema of this list."},
            "kind": {"type": "string", "description": "The REST resource this list represents."},
            "items": {
                "type": "array",
                "items": ref_field(item),
                "description": f"The {kind.http_resource}.",
            },
            "metadata": {**ref_field(f"{META}.ListMeta"), "description": "The list's metadata."},
        },
        "x-kubernetes-group-version-kind": gvk(kind.group, kind.version, kind.kind + "List"),
    }


def _common_schemas() -> dict[str, dict[str, Any]]:
    """The apimachinery types that are not kubera messages, as upstream describes them."""
    string = {"type": "string"}
    return {
        QUANTITY: {
            "type": "string",
            "description": "A fixed-point number with an optional suffix: 500m, 2, 1Gi, 1e3.",
        },
        INT_OR_STRING: {
            "type": "string",
            "format": "int-or-string",
            "x-kubernetes-int-or-string": True,
            "description": "An integer or a string (such as a percentage, 25%).",
        },
        TIME: {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 timestamp in seconds.",
        },
        MICRO_TIME: {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 timestamp with microseconds.",
        },
        f"{META}.Patch": {
            "type": "object",
            "description": "The body of a PATCH request, in the format its Content-Type names.",
        },
        f"{META}.StatusCause": {
            "type": "object",
            "properties": {"field": string, "message": string, "reason": string},
        },
        f"{META}.StatusDetails": {
            "type": "object",
            "properties": {
                "causes": {"type": "array", "items": ref_field(f"{META}.StatusCause")},
                "group": string,
                "kind": string,
                "name": string,
                "retryAfterSeconds": {"type": "integer", "format": "int32"},
                "uid": string,
            },
        },
        f"{META}.Status": {
            "type": "object",
            "description": "What a call that returns no object returns (and every error).",
            "properties": {
                "apiVersion": string,
                "code": {"type": "integer", "format": "int32"},
                "details": ref_field(f"{META}.StatusDetails"),
                "kind": string,
                "message": string,
                "metadata": ref_field(f"{META}.ListMeta"),
                "reason": string,
                "status": string,
            },
            "x-kubernetes-group-version-kind": gvk("", "v1", "Status"),
        },
        "io.k8s.api.autoscaling.v1.Scale": {
            "type": "object",
            "description": "The scale subresource of a workload.",
            "properties": {
                "apiVersion": string,
                "kind": string,
                "metadata": ref_field(f"{META}.ObjectMeta"),
                "spec": {
                    "type": "object",
                    "properties": {"replicas": {"type": "integer", "format": "int32"}},
                },
                "status": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer", "format": "int32"},
                        "selector": string,
                    },
                },
            },
            "x-kubernetes-group-version-kind": gvk("autoscaling", "v1", "Scale"),
        },
    }


#: Kinds kubera's messages carry that are not stored kinds (the bodies of subresources).
_BODY_KINDS = {
    "kubera.v1.Binding": ("", "v1", "Binding"),
    "kubera.v1.Eviction": ("policy", "v1", "Eviction"),
    "kubera.v1.DeleteOptions": ("", "v1", "DeleteOptions"),
}


def schemas_for(kinds: list[Kind]) -> dict[str, dict[str, Any]]:
    gvks = {k.message.DESCRIPTOR.full_name: (k.group, k.version, k.kind) for k in KINDS}
    gvks.update(_BODY_KINDS)
    roots = [k.message.DESCRIPTOR for k in kinds]
    roots += [_message(name) for name in (*_BODY_KINDS, "kubera.v1.ListMeta")]
    out = _common_schemas()
    for m in _closure(roots):
        schema = message_schema(m)
        if m.full_name in gvks:
            schema["x-kubernetes-group-version-kind"] = gvk(*gvks[m.full_name])
        out[schema_name(m)] = schema
    for k in kinds:
        out[schema_name(k.message.DESCRIPTOR) + "List"] = _list_schema(k)
    return dict(sorted(out.items()))


def _message(full_name: str) -> Descriptor:
    from google.protobuf import descriptor_pool

    return descriptor_pool.Default().FindMessageTypeByName(full_name)
