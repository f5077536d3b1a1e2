"""Validation of the storage kinds: PersistentVolumeClaim and PersistentVolume (core/v1),
StorageClass, CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment (storage.k8s.io).

Why this module exists: the storage kinds carry upstream's rules from two places,
pkg/apis/core/validation (ValidatePersistentVolumeSpec, ValidatePersistentVolumeClaimSpec,
ValidateTopologySelectorTerm, ValidateCSIDriverName) and pkg/apis/storage/validation
(ValidateStorageClass, ValidateCSIDriver, ValidateCSINode, ValidateCSIStorageCapacity,
ValidateVolumeAttachment and their updates), with upstream's field paths and words (its
quirks too: a gcePersistentDisk's errors are under `persistentDisk`, a CSIDriver's
attachRequired under `attachedRequired`). In-tree sources kubera keeps as free-form JSON
(azureDisk, cinder, rbd, ...) count as the volume's one source and are not looked into.
"""

from __future__ import annotations

import posixpath
from typing import Any

from protos.kubera.v1 import storage_pb2, storagev1_pb2
from services.api.machinery import names
from services.api.machinery.errors import (
    duplicate,
    forbidden,
    invalid,
    required,
    too_long,
    unsupported,
)
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    IS_NEGATIVE,
    IS_NOT_POSITIVE,
    Errors,
    child,
    field_quantity,
    index,
    label_name,
    name_errors,
    nonnegative,
    resource_list,
    show,
    validate_selector,
)
from services.api.validation.pod_scheduling import validate_node_selector

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Persistent", "Ephemeral")
MORE_THAN_ONE_SOURCE = "may not specify more than 1 volume type"
#: The PV sources by JSON name, in upstream's order of checks, with the proto field.
PV_SOURCES = (
    ("hostPath", "host_path"),
    ("gcePersistentDisk", "gce_persistent_disk"),
    ("awsElasticBlockStore", "aws_elastic_block_store"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("cephfs", "cephfs"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flex_volume"),
    ("azureFile", "azure_file"),
    ("vsphereVolume", "vsphere_volume"),
    ("portworxVolume", "portworx_volume"),
    ("azureDisk", "azure_disk"),
    ("local", "local"),
    ("csi", "csi"),
)
_PD_PARTITION = "must be between 1 and 255, inclusive"
_CSI_NODE_ID_MAX = 192
_MAX_PARAMETERS = 512
_MAX_PARAMETERS_SIZE = 256 * 1024


def _qualified_name(path: str, value: str) -> Errors:
    return [invalid(path, value, msg) for msg in names.qualified_name(value)]


def _access_modes(path: str, modes: Any) -> Errors:
    errs: Errors = []
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(unsupported(path, mode, ACCESS_MODES))
    known = [m for m in modes if m in ACCESS_MODES]
    if "ReadWriteOncePod" in known and any(m != "ReadWriteOncePod" for m in known):
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _class_name(path: str, value: str) -> Errors:
    return name_errors(path, value, names.dns1123_subdomain)


def validate_csi_driver_name(path: str, name: str) -> Errors:
    """ValidateCSIDriverName: required, at most 63 characters, a DNS subdomain (lower-cased)."""
    if not name:
        return [required(path)]
    if len(name) > 63:
        return [too_long(path, 63)]
    return [invalid(path, name, m) for m in names.dns1123_subdomain(name.lower())]


# ----------------------------------------------------------------------------- PVC


def validate_pvc_spec(path: str, spec: storage_pb2.PersistentVolumeClaimSpec) -> Errors:
    """ValidatePersistentVolumeClaimSpec (the parts kubera serves)."""
    errs: Errors = []
    modes_path = child(path, "accessModes")
    if not spec.access_modes:
        errs.append(required(modes_path, "at least 1 access mode is required"))
    for mode in spec.access_modes:
        if mode not in ACCESS_MODES:
            errs.append(unsupported(modes_path, mode, ACCESS_MODES))
    if "ReadWriteOncePod" in spec.access_modes and len(spec.access_modes) > 1:
        detail = "may not use ReadWriteOncePod with other access modes"
        errs.append(forbidden(modes_path, detail))
    if spec.HasField("selector"):
        errs += validate_selector(child(path, "selector"), spec.selector)[1]
    requests_path = child(child(path, "resources"), "requests")
    storage = spec.resources.requests.get("storage")
    if storage is None:
        errs.append(required(index(requests_path, "storage")))
    else:
        q = field_quantity(index(requests_path, "storage"), storage, errs)
        if q is not None and q.value <= 0:
            errs.append(invalid(index(requests_path, "storage"), storage, IS_NOT_POSITIVE))
    resource_list(child(child(path, "resources"), "limits"), spec.resources.limits, errs)
    if spec.HasField("volume_mode") and spec.volume_mode not in VOLUME_MODES:
        errs.append(unsupported(child(path, "volumeMode"), spec.volume_mode, VOLUME_MODES))
    if spec.storage_class_name:
        errs += _class_name(child(path, "storageClassName"), spec.storage_class_name)
    return errs


def validate_persistent_volume_claim(pvc: Any) -> Errors:
    return validate_pvc_spec("spec", pvc.spec)


def validate_persistent_volume_claim_update(new: Any, old: Any) -> Errors:
    """The claim's spec is immutable but for its requests (a resize), its volume name
    while it has none (binding) and its class while it has none (the retroactive default
    class)."""
    a, b = storage_pb2.PersistentVolumeClaimSpec(), storage_pb2.PersistentVolumeClaimSpec()
    a.CopyFrom(new.spec)
    b.CopyFrom(old.spec)
    for spec in (a, b):
        spec.resources.ClearField("requests")
        spec.ClearField("volume_attributes_class_name")
    if not old.spec.volume_name:
        a.ClearField("volume_name")
        b.ClearField("volume_name")
    if not old.spec.HasField("storage_class_name"):
        # RetroactiveDefaultStorageClass: a claim without a class may be given one
        a.ClearField("storage_class_name")
    if a != b:
        detail = (
            "spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims"
        )
        return [forbidden("spec", detail)]
    return []


# ----------------------------------------------------------------------------- PV


def _partition(path: str, partition: int) -> Errors:
    if partition < 0 or partition > 255:
        return [invalid(child(path, "partition"), partition, _PD_PARTITION)]
    return []


def _no_backsteps(path: str, value: str) -> Errors:
    if ".." in value.split("/"):
        return [invalid(path, value, "must not contain '..'")]
    return []


def _source_errors(path: str, spec: storage_pb2.PersistentVolumeSpec, name: str) -> Errors:
    """The checks of one in-tree or CSI source (validate*VolumeSource)."""
    errs: Errors = []
    if name == "hostPath":
        hp = spec.host_path
        if not hp.path:
            errs.append(required(child(path, "path")))
        errs += _no_backsteps(child(path, "path"), hp.path)
    elif name == "gcePersistentDisk":
        path = child(path.rsplit(".", 1)[0], "persistentDisk")  # upstream's path
        if not spec.gce_persistent_disk.pd_name:
            errs.append(required(child(path, "pdName")))
        errs += _partition(path, spec.gce_persistent_disk.partition)
    elif name == "awsElasticBlockStore":
        if not spec.aws_elastic_block_store.volume_id:
            errs.append(required(child(path, "volumeID")))
        errs += _partition(path, spec.aws_elastic_block_store.partition)
    elif name == "nfs":
        if not spec.nfs.server:
            errs.append(required(child(path, "server")))
        if not spec.nfs.path:
            errs.append(required(child(path, "path")))
        elif not posixpath.isabs(spec.nfs.path):
            errs.append(invalid(child(path, "path"), spec.nfs.path, "must be an absolute path"))
    elif name == "local":
        lp = spec.local.path
        if not lp:
            errs.append(required(child(path, "path")))
        elif not posixpath.isabs(lp):
            errs.append(invalid(child(path, "path"), lp, "must be an absolute path"))
        errs += _no_backsteps(child(path, "path"), lp)
    elif name == "csi":
        errs += validate_csi_driver_name(child(path, "driver"), spec.csi.driver)
        if not spec.csi.volume_handle:
            errs.append(required(child(path, "volumeHandle")))
        for ref in (
            "controllerPublishSecretRef",
            "nodeStageSecretRef",
            "nodePublishSecretRef",
            "controllerExpandSecretRef",
            "nodeExpandSecretRef",
        ):
            field = "".join("_" + c.lower() if c.isupper() else c for c in ref)
            if spec.csi.HasField(field):
                secret = getattr(spec.csi, field)
                if not secret.name:
                    errs.append(required(child(child(path, ref), "name")))
                if not secret.namespace:
                    errs.append(required(child(child(path, ref), "namespace")))
    return errs


def validate_pv_spec(path: str, spec: storage_pb2.PersistentVolumeSpec) -> Errors:
    """ValidatePersistentVolumeSpec (not inline)."""
    errs: Errors = []
    modes_path = child(path, "accessModes")
    if not spec.access_modes:
        errs.append(required(modes_path))
    errs += _access_modes(modes_path, spec.access_modes)
    cap_path = child(path, "capacity")
    if not spec.capacity:
        errs.append(required(cap_path))
    if "storage" not in spec.capacity or len(spec.capacity) > 1:
        errs.append(unsupported(cap_path, show(spec.capacity), ("storage",)))
    for name, raw in sorted(spec.capacity.items()):
        q = field_quantity(index(cap_path, name), raw, errs)
        if q is not None and q.value <= 0:
            errs.append(invalid(index(cap_path, name), raw, IS_NOT_POSITIVE))
    policy = spec.persistent_volume_reclaim_policy
    if policy and policy not in PV_RECLAIM_POLICIES:
        errs.append(
            unsupported(child(path, "persistentVolumeReclaimPolicy"), policy, PV_RECLAIM_POLICIES)
        )
    affinity = False
    if spec.HasField("node_affinity"):
        na_path = child(path, "nodeAffinity")
        if not spec.node_affinity.HasField("required"):
            errs.append(
                required(child(na_path, "required"), "must specify required node constraints")
            )
        else:
            affinity = True
            errs += validate_node_selector(child(na_path, "required"), spec.node_affinity.required)
    sources = 0
    for name, field in PV_SOURCES:
        if not spec.HasField(field):
            continue
        if sources > 0:
            errs.append(forbidden(child(path, name), MORE_THAN_ONE_SOURCE))
            continue
        sources += 1
        errs += _source_errors(child(path, name), spec, name)
        if name == "local" and not affinity:
            errs.append(
                required(child(path, "nodeAffinity"), "Local volume requires node affinity")
            )
    if sources == 0:
        errs.append(required(path, "must specify a volume type"))
    if (
        spec.HasField("host_path")
        and posixpath.normpath(spec.host_path.path or ".") == "/"
        and policy == "Recycle"
    ):
        detail = "may not be 'recycle' for a hostPath mount of '/'"
        errs.append(forbidden(child(path, "persistentVolumeReclaimPolicy"), detail))
    if spec.storage_class_name:
        errs += _class_name(child(path, "storageClassName"), spec.storage_class_name)
    if spec.HasField("volume_mode") and spec.volume_mode not in VOLUME_MODES:
        errs.append(unsupported(child(path, "volumeMode"), spec.volume_mode, VOLUME_MODES))
    return errs


def validate_persistent_volume(pv: Any) -> Errors:
    return validate_pv_spec("spec", pv.spec)


def _pv_source(spec: storage_pb2.PersistentVolumeSpec) -> storage_pb2.PersistentVolumeSpec:
    out = storage_pb2.PersistentVolumeSpec()
    for _, field in PV_SOURCES:
        if spec.HasField(field):
            getattr(out, field).CopyFrom(getattr(spec, field))
    return out


def validate_persistent_volume_update(new: Any, old: Any) -> Errors:
    """ValidatePersistentVolumeUpdate: the source is immutable (a CSI volume may gain a
    controllerExpandSecretRef), so are the volume mode and a node affinity once set."""
    errs: Errors = []
    a, b = _pv_source(new.spec), _pv_source(old.spec)
    if (
        b.HasField("csi")
        and not b.csi.HasField("controller_expand_secret_ref")
        and a.HasField("csi")
    ):
        a.csi.ClearField("controller_expand_secret_ref")
    if a != b:
        detail = "spec.persistentvolumesource is immutable after creation"
        errs.append(forbidden("spec.persistentvolumesource", detail))
    if new.spec.volume_mode != old.spec.volume_mode:
        errs.append(invalid("volumeMode", new.spec.volume_mode, FIELD_IMMUTABLE))
    if old.spec.HasField("node_affinity") and new.spec.node_affinity != old.spec.node_affinity:
        errs.append(invalid("nodeAffinity", show(new.spec.node_affinity), FIELD_IMMUTABLE))
    return errs


# ----------------------------------------------------------------------------- storage.k8s.io


def _topology_term(path: str, term: storage_pb2.TopologySelectorTerm) -> tuple[dict, Errors]:
    """ValidateTopologySelectorTerm: each key a label name with a set of values, once."""
    errs: Errors = []
    exprs: dict[str, frozenset[str]] = {}
    for i, req in enumerate(term.match_label_expressions):
        at = index(child(path, "matchLabelExpressions"), i)
        values_path = child(at, "values")
        if not req.values:
            errs.append(required(values_path))
        seen: set[str] = set()
        for j, v in enumerate(req.values):
            if v in seen:
                errs.append(duplicate(index(values_path, j), v))
            seen.add(v)
        errs += label_name(child(at, "key"), req.key)
        if req.key in exprs:
            errs.append(duplicate(child(at, "key"), req.key))
        exprs[req.key] = frozenset(seen)
    return exprs, errs


def _parameters(path: str, params: Any) -> Errors:
    if len(params) > _MAX_PARAMETERS:
        return [too_long(path, _MAX_PARAMETERS)]
    errs: Errors = []
    size = 0
    for k, v in params.items():
        if not k:
            errs.append(invalid(path, k, "field can not be empty."))
        size += len(k) + len(v)
    if size > _MAX_PARAMETERS_SIZE:
        errs.append(too_long(path, _MAX_PARAMETERS_SIZE))
    return errs


def validate_storage_class(sc: Any) -> Errors:
    """ValidateStorageClass (after defaults: reclaimPolicy and volumeBindingMode are set)."""
    errs: Errors = []
    if not sc.provisioner:
        errs.append(required("provisioner"))
    else:
        errs += _qualified_name("provisioner", sc.provisioner.lower())
    errs += _parameters("parameters", sc.parameters)
    if sc.reclaim_policy and sc.reclaim_policy not in CLASS_RECLAIM_POLICIES:
        errs.append(unsupported("reclaimPolicy", sc.reclaim_policy, CLASS_RECLAIM_POLICIES))
    if not sc.HasField("volume_binding_mode"):
        errs.append(required("volumeBindingMode"))
    elif sc.volume_binding_mode not in BINDING_MODES:
        errs.append(unsupported("volumeBindingMode", sc.volume_binding_mode, BINDING_MODES))
    terms: list[dict] = []
    for i, term in enumerate(sc.allowed_topologies):
        at = index("allowedTopologies", i)
        exprs, term_errs = _topology_term(at, term)
        errs += term_errs
        if exprs in terms:
            errs.append(duplicate(child(at, "matchLabelExpressions"), ""))
        terms.append(exprs)
    return errs


def validate_storage_class_update(new: Any, old: Any) -> Errors:
    errs: Errors = []
    if dict(new.parameters) != dict(old.parameters):
        errs.append(forbidden("parameters", "updates to parameters are forbidden."))
    if new.provisioner != old.provisioner:
        errs.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.reclaim_policy != old.reclaim_policy:
        errs.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if new.volume_binding_mode != old.volume_binding_mode:
        errs.append(invalid("volumeBindingMode", new.volume_binding_mode, FIELD_IMMUTABLE))
    return errs


def validate_csi_driver(d: Any) -> Errors:
    """validateCSIDriverSpec (after defaults)."""
    spec, path = d.spec, "spec"
    errs: Errors = []
    for json_name, field in (
        ("attachedRequired", "attach_required"),
        ("podInfoOnMount", "pod_info_on_mount"),
        ("storageCapacity", "storage_capacity"),
    ):
        if not spec.HasField(field):
            errs.append(required(child(path, json_name)))
    if spec.HasField("fs_group_policy") and spec.fs_group_policy not in FS_GROUP_POLICIES:
        errs.append(
            unsupported(child(path, "fsGroupPolicy"), spec.fs_group_policy, FS_GROUP_POLICIES)
        )
    audiences: set[str] = set()
    for i, tr in enumerate(spec.token_requests):
        at = index(child(path, "tokenRequests"), i)
        if tr.audience in audiences:
            errs.append(duplicate(child(at, "audience"), tr.audience))
            continue
        audiences.add(tr.audience)
        if tr.HasField("expiration_seconds"):
            secs = tr.expiration_seconds
            if secs < 600:
                errs.append(
                    invalid(
                        child(at, "expirationSeconds"),
                        secs,
                        "may not specify a duration less than 10 minutes",
                    )
                )
            if secs > 1 << 32:
                errs.append(
                    invalid(
                        child(at, "expirationSeconds"),
                        secs,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                )
    for mode in spec.volume_lifecycle_modes:
        if mode not in LIFECYCLE_MODES:
            errs.append(unsupported(child(path, "volumeLifecycleModes"), mode, LIFECYCLE_MODES))
    period = spec.node_allocatable_update_period_seconds
    if spec.HasField("node_allocatable_update_period_seconds") and period < 10:
        detail = "must be greater than or equal to 10 seconds"
        errs.append(invalid(child(path, "nodeAllocatableUpdatePeriodSeconds"), period, detail))
    return errs


def validate_csi_driver_update(new: Any, old: Any) -> Errors:
    errs: Errors = []
    if new.spec.attach_required != old.spec.attach_required:
        errs.append(invalid("spec.attachedRequired", new.spec.attach_required, FIELD_IMMUTABLE))
    if list(new.spec.volume_lifecycle_modes) != list(old.spec.volume_lifecycle_modes):
        modes = list(new.spec.volume_lifecycle_modes)
        errs.append(invalid("spec.volumeLifecycleModes", modes, FIELD_IMMUTABLE))
    return errs


def validate_csi_node(node: Any) -> Errors:
    """validateCSINodeDrivers: names, node IDs, allocatable counts, topology keys."""
    errs: Errors = []
    seen: set[str] = set()
    for i, d in enumerate(node.spec.drivers):
        at = index("spec.drivers", i)
        errs += validate_csi_driver_name(child(at, "name"), d.name)
        if not d.node_id:
            errs.append(required(child(at, "nodeID")))
        if len(d.node_id) > _CSI_NODE_ID_MAX:
            detail = f"must be {_CSI_NODE_ID_MAX} characters or less"
            errs.append(invalid(child(at, "nodeID"), d.node_id, detail))
        if d.allocatable.HasField("count"):
            errs += nonnegative(child(child(at, "allocatable"), "count"), d.allocatable.count)
        if d.name in seen:
            errs.append(duplicate(child(at, "name"), d.name))
        seen.add(d.name)
        keys: set[str] = set()
        for key in d.topology_keys:
            if not key:
                errs.append(required(at))
            if key in keys:
                errs.append(duplicate(at, key))
            keys.add(key)
            errs += _qualified_name(at, key)
    return errs


def validate_csi_node_update(new: Any, old: Any) -> Errors:
    """An existing driver's entry is immutable but for its allocatable count
    (MutableCSINodeAllocatableCount)."""
    errs: Errors = []
    for o in old.spec.drivers:
        for n in new.spec.drivers:
            if o.name != n.name:
                continue
            a, b = storagev1_pb2.CSINodeDriver(), storagev1_pb2.CSINodeDriver()
            a.CopyFrom(n)
            b.CopyFrom(o)
            a.ClearField("allocatable")
            b.ClearField("allocatable")
            if a != b:
                errs.append(invalid("spec.drivers", show(n), FIELD_IMMUTABLE))
    return errs


def validate_csi_storage_capacity(c: Any) -> Errors:
    errs: Errors = []
    if c.HasField("node_topology"):
        errs += validate_selector("nodeTopology", c.node_topology)[1]
    errs += _class_name("storageClassName", c.storage_class_name)
    if c.HasField("capacity"):
        q = field_quantity("capacity", c.capacity, errs)
        if q is not None and q.value < 0:
            errs.append(invalid("capacity", c.capacity, IS_NEGATIVE))
    return errs


def validate_csi_storage_capacity_update(new: Any, old: Any) -> Errors:
    errs: Errors = []
    if new.node_topology != old.node_topology:
        errs.append(invalid("nodeTopology", show(new.node_topology), FIELD_IMMUTABLE))
    if new.storage_class_name != old.storage_class_name:
        errs.append(invalid("storageClassName", new.storage_class_name, FIELD_IMMUTABLE))
    return errs


def validate_volume_attachment(va: Any) -> Errors:
    """ValidateVolumeAttachment and ValidateVolumeAttachmentV1."""
    errs: Errors = []
    spec = va.spec
    if not spec.attacher:
        errs.append(required("spec.attacher"))
    source, src_path = spec.source, "spec.source"
    has_pv, has_inline = (
        source.HasField("persistent_volume_name"),
        source.HasField("inline_volume_spec"),
    )
    one_of = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if not has_pv and not has_inline:
        errs.append(required(src_path, one_of))
    elif has_pv and has_inline:
        errs.append(forbidden(src_path, one_of))
    elif has_pv and not source.persistent_volume_name:
        errs.append(
            required(
                child(src_path, "persistentVolumeName"),
                "must specify non empty persistentVolumeName",
            )
        )
    errs += name_errors("spec.nodeName", spec.node_name, names.dns1123_subdomain)
    for name, err in (
        ("attachError", va.status.attach_error),
        ("detachError", va.status.detach_error),
    ):
        if len(err.message) > 1024:
            errs.append(too_long(child(child("status", name), "message"), 256 * 1024))
        if err.HasField("error_code") and err.error_code < 0:
            detail = "must be between 0 and 2147483647, inclusive"
            errs.append(invalid(child(child("status", name), "errorCode"), err.error_code, detail))
    if spec.attacher:
        errs += validate_csi_driver_name("spec.attacher", spec.attacher)
    if has_pv and source.persistent_volume_name:
        errs += _class_name("spec.source.persistentVolumeName", source.persistent_volume_name)
    return errs


def validate_volume_attachment_update(new: Any, old: Any) -> Errors:
    if new.spec != old.spec:
        return [invalid("spec", show(new.spec), FIELD_IMMUTABLE)]
    return []
