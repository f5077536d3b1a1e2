"""`kubera describe` of the storage kinds, in kubectl's layouts (staging/src/k8s.io/kubectl/
pkg/describe/describe.go: describePersistentVolume, describePersistentVolumeClaim with the
pods that use the claim, describeStorageClass, describeCSINode). The writer and the shared
sections (annotations, events) are describe.py's.

kubera keeps the in-tree volume sources it has no plugin for (azureDisk, cephfs, iscsi, …)
as written, untyped: their `Source:` is printed as `<unknown>`, as kubectl prints a source
it does not know."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.message import Message

from kubera.printing.describe import (
    Describer,
    annotations_list,
    describe_events,
    labels_list,
    rfc1123,
)
from services.api.helpers.volumes import claim_class, is_default_class, volume_class
from services.api.printers.apps import access_modes
from services.api.printers.columns import NONE, age

UNSET = "<unset>"


def _go_bool(value: bool) -> str:
    """Go's %v of a bool."""
    return "true" if value else "false"


def _go_list(values: Sequence[str]) -> str:
    """Go's %v of a []string: `[a b]`."""
    return "[" + " ".join(values) + "]"


def _status(obj: Any, phase: str, now: float) -> str:
    if obj.metadata.deletion_timestamp:
        return f"Terminating (lasts {age(obj.metadata.deletion_timestamp, now)})"
    return phase


def _node_affinity(w: Describer, pv: Any) -> None:
    """printVolumeNodeAffinity."""
    required = pv.spec.node_affinity.required
    if not pv.spec.HasField("node_affinity") or not pv.spec.node_affinity.HasField("required"):
        w.line(0, "Node Affinity:", NONE)
        return
    w.line(0, "Node Affinity:", "")
    if not required.node_selector_terms:
        w.line(1, "Required Terms:", NONE)
        return
    w.line(1, "Required Terms:", "")
    for i, term in enumerate(required.node_selector_terms):
        exprs = [
            f"{e.key} {e.operator.lower()}" + (f" [{', '.join(e.values)}]" if e.values else "")
            for e in term.match_expressions
        ]
        if not exprs:
            w.line(2, f"Term {i}:", NONE)
            continue
        w.line(2, f"Term {i}:", exprs[0])
        for e in exprs[1:]:
            w.line(2, "", e)


def _source(w: Describer, spec: Any) -> None:
    """The volume's source, as kubectl's print*VolumeSource (each at LEVEL_2)."""
    if spec.HasField("host_path"):
        s = spec.host_path
        w.line(2, "Type:", "HostPath (bare host directory volume)")
        w.line(2, "Path:", s.path)
        w.line(2, "HostPathType:", s.type if s.HasField("type") else NONE)
    elif spec.HasField("gce_persistent_disk"):
        s = spec.gce_persistent_disk
        w.line(
            2, "Type:", "GCEPersistentDisk (a Persistent Disk resource in Google Compute Engine)"
        )
        w.line(2, "PDName:", s.pd_name)
        w.line(2, "FSType:", s.fs_type)
        w.line(2, "Partition:", str(s.partition))
        w.line(2, "ReadOnly:", _go_bool(s.read_only))
    elif spec.HasField("aws_elastic_block_store"):
        s = spec.aws_elastic_block_store
        w.line(2, "Type:", "AWSElasticBlockStore (a Persistent Disk resource in AWS)")
        w.line(2, "VolumeID:", s.volume_id)
        w.line(2, "FSType:", s.fs_type)
        w.line(2, "Partition:", str(s.partition))
        w.line(2, "ReadOnly:", _go_bool(s.read_only))
    elif spec.HasField("nfs"):
        s = spec.nfs
        w.line(2, "Type:", "NFS (an NFS mount that lasts the lifetime of a pod)")
        w.line(2, "Server:", s.server)
        w.line(2, "Path:", s.path)
        w.line(2, "ReadOnly:", _go_bool(s.read_only))
    elif spec.HasField("local"):
        w.line(2, "Type:", "LocalVolume (a persistent volume backed by local storage on a node)")
        w.line(2, "Path:", spec.local.path)
    elif spec.HasField("csi"):
        s = spec.csi
        w.line(2, "Type:", "CSI (a Container Storage Interface (CSI) volume source)")
        w.line(2, "Driver:", s.driver)
        w.line(2, "FSType:", s.fs_type)
        w.line(2, "VolumeHandle:", s.volume_handle)
        w.line(2, "ReadOnly:", _go_bool(s.read_only))
        # kubectl writes each attribute at LEVEL_2 again, after the title's tab
        attributes = [f"    {k}={v}" for k, v in sorted(s.volume_attributes.items())]
        if not attributes:
            w.line(2, "VolumeAttributes:", NONE)
        else:
            w.line(2, "VolumeAttributes:", attributes[0])
            for a in attributes[1:]:
                w.line(4, "", a)
    else:
        w.line(1, "<unknown>")


def describe_persistent_volume(pv: Message, events: Sequence[Message], now: float) -> str:
    """kubectl describe pv."""
    x: Any = pv
    w = Describer()
    w.line(0, "Name:", x.metadata.name)
    w.multiline(0, "Labels", labels_list(x.metadata.labels))
    w.multiline(0, "Annotations", annotations_list(x.metadata.annotations))
    w.line(0, "Finalizers:", _go_list(x.metadata.finalizers))
    w.line(0, "StorageClass:", volume_class(x))
    w.line(0, "Status:", _status(x, x.status.phase, now))
    ref = x.spec.claim_ref
    w.line(0, "Claim:", f"{ref.namespace}/{ref.name}" if x.spec.HasField("claim_ref") else "")
    w.line(0, "Reclaim Policy:", x.spec.persistent_volume_reclaim_policy)
    w.line(0, "Access Modes:", access_modes(x.spec.access_modes))
    if x.spec.HasField("volume_mode"):
        w.line(0, "VolumeMode:", x.spec.volume_mode)
    w.line(0, "Capacity:", x.spec.capacity.get("storage", "0"))
    _node_affinity(w, x)
    w.line(0, "Message:", x.status.message)
    w.line(0, "Source:")
    _source(w, x.spec)
    describe_events(w, events, now)
    return w.text()


def claim_users(claim: Message, pods: Sequence[Message]) -> list[Message]:
    """getPodsForPVC: the namespace's pods with a volume of the claim, then the pods that
    own it (a generic ephemeral volume's) not already among them."""
    c: Any = claim
    users = [
        p
        for p in pods
        for v in p.spec.volumes  # type: ignore[attr-defined]
        if "persistentVolumeClaim" in v
        and v["persistentVolumeClaim"]["claimName"] == c.metadata.name
    ]
    seen = {p.metadata.uid for p in users}  # type: ignore[attr-defined]
    for ref in c.metadata.owner_references:
        if ref.kind != "Pod" or ref.uid in seen:
            continue
        owner = next((p for p in pods if p.metadata.uid == ref.uid), None)  # type: ignore[attr-defined]
        if owner is not None:
            users.append(owner)
            seen.add(ref.uid)
    return users


def describe_persistent_volume_claim(
    claim: Message, events: Sequence[Message], now: float, users: Sequence[Message]
) -> str:
    """kubectl describe pvc; `users`: claim_users of the namespace's pods."""
    x: Any = claim
    w = Describer()
    w.line(0, "Name:", x.metadata.name)
    w.line(0, "Namespace:", x.metadata.namespace)
    w.line(0, "StorageClass:", claim_class(x))
    w.line(0, "Status:", _status(x, x.status.phase, now))
    w.line(0, "Volume:", x.spec.volume_name)
    w.multiline(0, "Labels", labels_list(x.metadata.labels))
    w.multiline(0, "Annotations", annotations_list(x.metadata.annotations))
    w.line(0, "Finalizers:", _go_list(x.metadata.finalizers))
    bound = bool(x.spec.volume_name)
    w.line(0, "Capacity:", x.status.capacity.get("storage", "0") if bound else "")
    w.line(0, "Access Modes:", access_modes(x.status.access_modes) if bound else "")
    if x.spec.HasField("volume_mode"):
        w.line(0, "VolumeMode:", x.spec.volume_mode)
    if x.spec.HasField("data_source"):
        source = x.spec.data_source
        w.line(0, "DataSource:")
        if "apiGroup" in source:
            w.line(1, "APIGroup:", str(source["apiGroup"]))
        w.line(1, "Kind:", str(source["kind"]) if "kind" in source else "")
        w.line(1, "Name:", str(source["name"]) if "name" in source else "")
    w.multiline(0, "Used By", sorted(p.metadata.name for p in users))  # type: ignore[attr-defined]
    if x.status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "LastProbeTime", "LastTransitionTime", "Reason", "Message")
        w.line(1, "----", "------", "-----------------", "------------------", "------", "-------")
        for c in x.status.conditions:
            w.line(
                1,
                f"{c.type} ",
                f"{c.status} ",
                f"{_rfc1123z(c.last_probe_time)} ",
                f"{_rfc1123z(c.last_transition_time)} ",
                f"{c.reason} ",
                c.message,
            )
    describe_events(w, events, now)
    return w.text()


def _rfc1123z(ts: str) -> str:
    """Go's time.RFC1123Z of a metav1.Time (its zero time when unset)."""
    return rfc1123(ts) if ts else "Mon, 01 Jan 0001 00:00:00 +0000"


def _format_labels(m: Any) -> str:
    """labels.FormatLabels: `k=v,k=v` sorted, `<none>` when empty."""
    return ",".join(f"{k}={v}" for k, v in sorted(m.items())) or NONE


def describe_storage_class(sc: Message, events: Sequence[Message], now: float) -> str:
    """kubectl describe storageclass."""
    x: Any = sc
    w = Describer()
    w.line(0, "Name:", x.metadata.name)
    w.line(0, "IsDefaultClass:", "Yes" if is_default_class(x) else "No")
    w.line(0, "Annotations:", _format_labels(x.metadata.annotations))
    w.line(0, "Provisioner:", x.provisioner)
    w.line(0, "Parameters:", _format_labels(x.parameters))
    w.line(
        0,
        "AllowVolumeExpansion:",
        ("True" if x.allow_volume_expansion else "False")
        if x.HasField("allow_volume_expansion")
        else UNSET,
    )
    if x.mount_options:
        w.line(0, "MountOptions:")
        for option in x.mount_options:
            w.line(1, option)
    else:
        w.line(0, "MountOptions:", NONE)
    if x.HasField("reclaim_policy"):
        w.line(0, "ReclaimPolicy:", x.reclaim_policy)
    if x.HasField("volume_binding_mode"):
        w.line(0, "VolumeBindingMode:", x.volume_binding_mode)
    if x.allowed_topologies:
        w.line(0, "AllowedTopologies:", "")
        for i, term in enumerate(x.allowed_topologies):
            exprs = [
                f"{r.key} in" + (f" [{', '.join(r.values)}]" if r.values else "")
                for r in term.match_label_expressions
            ]
            if not exprs:
                w.line(1, f"Term {i}:", NONE)
                continue
            w.line(1, f"Term {i}:", exprs[0])
            for e in exprs[1:]:
                w.line(1, "", e)
    describe_events(w, events, now)
    return w.text()


def describe_csi_node(node: Message, events: Sequence[Message], now: float) -> str:
    """kubectl describe csinode."""
    x: Any = node
    w = Describer()
    w.line(0, "Name:", x.metadata.name)
    w.multiline(0, "Labels", labels_list(x.metadata.labels))
    w.multiline(0, "Annotations", annotations_list(x.metadata.annotations))
    w.line(0, "CreationTimestamp:", rfc1123(x.metadata.creation_timestamp))
    w.line(0, "Spec:")
    if x.spec.drivers:
        w.line(1, "Drivers:")
        for d in x.spec.drivers:
            w.line(2, f"{d.name}:")
            w.line(3, "Node ID:", d.node_id)
            if d.HasField("allocatable") and d.allocatable.HasField("count"):
                w.line(3, "Allocatables:")
                w.line(4, "Count:", str(d.allocatable.count))
            if d.topology_keys:
                w.line(3, "Topology Keys:", _go_list(d.topology_keys))
    describe_events(w, events, now)
    return w.text()
