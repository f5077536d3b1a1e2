"""Pods with volumes and the storage objects the volume plugins' tables use, in upstream's
test shapes (st.MakePod().PVC(name), .Volume(v1.Volume{...}); bare PVs, claims and classes
with only the fields a table names: no defaults, unlike tests/builders' decoded ones)."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from tests.builders import MakePod

Json = dict[str, Any]


def vpod(
    *volumes: Json, name: str = "", namespace: str = "", uid: str = "", node: str = ""
) -> core_pb2.Pod:
    """A pod with `volumes` (Kubernetes-shaped dicts), as st.MakePod()...Volume(v)."""
    b = MakePod().name(name).namespace(namespace).uid(uid)
    if node:
        b.node(node)
    if volumes:
        b.spec({"volumes": list(volumes)})
    return b.obj()


def claim_vol(claim: str, name: str = "") -> Json:
    """st.MakePod().PVC(claim): a volume named after the claim unless named."""
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_vol(name: str) -> Json:
    return {"name": name, "ephemeral": {}}


def pv(
    name: str, labels: dict[str, str] | None = None, **spec: Any
) -> storage_pb2.PersistentVolume:
    obj = storage_pb2.PersistentVolume()
    obj.metadata.name = name
    obj.metadata.labels.update(labels or {})
    if spec:
        json_format.ParseDict(spec, obj.spec)
    return obj


def pvc(
    name: str, namespace: str = "default", meta: Json | None = None, **spec: Any
) -> storage_pb2.PersistentVolumeClaim:
    obj = storage_pb2.PersistentVolumeClaim()
    obj.metadata.name = name
    obj.metadata.namespace = namespace
    if meta:
        json_format.ParseDict(meta, obj.metadata)
    if spec:
        json_format.ParseDict(spec, obj.spec)
    return obj


def storage_class(name: str, provisioner: str = "", mode: str | None = None) -> Any:
    obj = storagev1_pb2.StorageClass(provisioner=provisioner)
    obj.metadata.name = name
    if mode is not None:
        obj.volume_binding_mode = mode
    return obj
