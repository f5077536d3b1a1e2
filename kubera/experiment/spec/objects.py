"""Objects for the apiserver from rendered templates (upstream's nodes and pods, with their
strategies and signature labels), and small predicates on them, shared by op execution
(opexec.py) and kubera's own ops. No I/O."""

from __future__ import annotations

import random
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from kubera.errors import CliError
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.templates import copy_data
from services.api.helpers.wellknown import LABEL_HOSTNAME
from services.api.machinery import codec, kinds


class OpError(CliError):
    """An op that could not complete; the run records it as its error."""


def fold_field_names(doc: dict[str, Any], desc: Descriptor) -> dict[str, Any]:
    """`doc` with each key that names no field of `desc` but matches one regardless of case
    renamed to it, at every level (`NodeAffinityPolicy:` → `nodeAffinityPolicy:`), as
    upstream's harness decodes its templates: sigs.k8s.io/yaml → encoding/json, which
    prefers an exact field name, else takes one that matches case-insensitively. A key
    whose exact field is also present stays as it is (unknown); map keys (labels) are data
    and never renamed. Only experiment templates are decoded so: the API is case-exact."""
    by_name = {f.json_name: f for f in desc.fields}
    by_folded: dict[str, str] = {}
    for f in desc.fields:
        by_folded.setdefault(f.json_name.lower(), f.json_name)
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(key, str) and key not in by_name:
            name = by_folded.get(key.lower())
            if name is not None and name not in doc:
                key = name
        f = by_name.get(key) if isinstance(key, str) else None
        out[key] = _fold_value(value, f) if f is not None else value
    return out


def _fold_value(value: Any, f: FieldDescriptor) -> Any:
    mt = f.message_type
    if mt is None or mt.full_name.startswith("google.protobuf."):
        return value
    if mt.GetOptions().map_entry:
        vf = mt.fields_by_name["value"]
        if isinstance(value, dict) and vf.message_type is not None:
            return {k: _fold_value(v, vf) if isinstance(v, dict) else v for k, v in value.items()}
        return value
    if isinstance(value, list):
        return [fold_field_names(v, mt) if isinstance(v, dict) else v for v in value]
    return fold_field_names(value, mt) if isinstance(value, dict) else value


def decode_object(doc: dict[str, Any], *, validate: str) -> codec.Decoded:
    """codec.decode of a rendered template, its field names matched as upstream's harness
    matches them (`fold_field_names`); codec.DecodeError as codec.decode raises it."""
    api_version, kind_name = doc.get("apiVersion"), doc.get("kind")
    if isinstance(api_version, str) and isinstance(kind_name, str):
        try:
            kind = kinds.for_manifest(api_version, kind_name)
        except kinds.UnknownKindError:
            pass  # codec.decode words the error
        else:
            doc = fold_field_names(doc, kind.message.DESCRIPTOR)
    return codec.decode(doc, validate=validate)


def to_message(doc: dict[str, Any], *, kind: str = "", namespace: str = "") -> Message:
    """A rendered template → its protobuf message (apiVersion/kind defaulted to `kind`'s
    core/v1 when the template leaves them out), in `namespace` when the kind has one."""
    doc = dict(doc)
    if kind:
        doc.setdefault("apiVersion", "v1")
        doc.setdefault("kind", kind)
    try:
        decoded = decode_object(doc, validate="ignore")
    except codec.DecodeError as e:
        raise OpError(f"cannot decode {doc.get('kind', 'object')}: {e}") from None
    if namespace and decoded.kind.namespaced:
        decoded.obj.metadata.namespace = namespace  # type: ignore[attr-defined]
    return decoded.obj


def generated_name(obj: Message) -> bool:
    """Whether the apiserver named `obj` (generateName, no name of its own)."""
    m = obj.metadata  # type: ignore[attr-defined]
    return bool(m.generate_name) and not m.name


def node_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def node_doc(op: o.CreateNodes, i: int, taken: set[str] | None = None) -> dict[str, Any]:
    """Node `i` of a createNodes op: its template rendered, named when `taken` is given
    (`name_node`), then its strategy applied (upstream's DoPrepareNode, after the create)."""
    if op.node_template is not None:
        doc = op.node_template.render(i, op.count, op.template_params)
    else:
        doc = copy_data(o.DEFAULT_NODE)
    if taken is not None:
        name_node(doc, taken)
    meta = doc.setdefault("metadata", {})
    s = op.strategy
    if isinstance(s, o.UniqueNodeLabelStrategy):
        meta.setdefault("labels", {})[s.label_key] = f"node-{op.index}-{i}"
    elif isinstance(s, o.LabelNodePrepareStrategy) and s.label_values:
        meta.setdefault("labels", {})[s.label_key] = s.label_values[i % len(s.label_values)]
    elif isinstance(s, o.NodeAllocatableStrategy):
        # upstream patches allocatable after the create, which defaulted it to the capacity
        status = doc.setdefault("status", {})
        if not status.get("allocatable"):
            status["allocatable"] = dict(status.get("capacity") or {})
        status["allocatable"].update(s.node_allocatable)
    return doc


#: The CSINode annotation naming the in-tree plugins migrated to CSI on the node
#: (v1.MigratedPluginsAnnotationKey).
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


def csinode_doc(strategy: o.NodeAllocatableStrategy, node_name: str) -> dict[str, Any]:
    """The CSINode upstream's NodeAllocatableStrategy makes for a node it prepares: the
    migrated plugins annotated (even none), one driver per csiNodeAllocatable entry with the
    node's name as its nodeID and that entry as its allocatable."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": node_name,
            "annotations": {MIGRATED_PLUGINS_ANNOTATION: ",".join(strategy.migrated_plugins)},
        },
        "spec": {
            "drivers": [
                {"name": driver, "nodeID": node_name, "allocatable": copy_data(allocatable)}
                for driver, allocatable in strategy.csi_node_allocatable.items()
            ]
        },
    }


#: apimachinery's rand.String alphabet (no vowels, no 0/1/3), as generateName uses.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def name_node(doc: dict[str, Any], taken: set[str], rng: random.Random | None = None) -> None:
    """As upstream's node preparer (test/integration/framework IntegrationTestNodePreparer):
    a node the template leaves unnamed is named here, generateName plus 5 random characters
    (drawn again while `taken` has it), so that it is created with "the usual
    kubernetes.io/hostname label" equal to its name in the one request. Adds the name to
    `taken`."""
    meta = doc.get("metadata") or {}
    doc["metadata"] = meta
    name = meta.get("name")
    if not name:
        draw = rng or random
        prefix = meta.get("generateName") or ""
        name = prefix + "".join(draw.choice(_NAME_ALPHABET) for _ in range(5))
        while name in taken:
            name = prefix + "".join(draw.choice(_NAME_ALPHABET) for _ in range(5))
        meta["name"] = name
    taken.add(name)
    meta["labels"] = {**(meta.get("labels") or {}), LABEL_HOSTNAME: name}


#: The label upstream gives every pod made from a podTemplatePath: pods `index //
#: signatureBatchSize` share its value, so a batch shares one scheduling signature.
SIGNATURE_LABEL = "signature"


def pod_doc(
    template: Any, i: int, count: int, params: dict[str, Any], signature_batch_size: int = 1
) -> dict[str, Any]:
    """Pod `i` of `count`: the template rendered (with upstream's signature label), else
    upstream's default pod (which has none)."""
    if template is None:
        return copy_data(o.DEFAULT_POD)
    doc = template.render(i, count, params)
    meta = doc.get("metadata") or {}
    doc["metadata"] = meta
    meta["labels"] = {
        **(meta.get("labels") or {}),
        SIGNATURE_LABEL: f"signature-label-{i // max(1, signature_batch_size)}",
    }
    return doc


#: The name of the one volume of a pod made with persistent volumes (upstream's "vol").
POD_VOLUME = "vol"


def volume_docs(op: o.CreatePods, i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pod `i`'s claim and volume, as upstream's CreatePodWithPersistentVolume makes them
    (bindVolume true): the claim `pvc-<i>` from the claim template, naming its volume; the
    volume `<namespace>-vol-<i>` from the volume template (volume IDs: an awsElasticBlockStore
    source gets `vol-<i>`, a csi source the volume's name as volumeHandle), pre-bound by a
    claimRef; both with status phase Bound, which the runner writes after each create (a
    create resets status). The claim's uid, unknown until it is created, is the runner's to
    add to the claimRef."""
    assert op.pv_template is not None and op.pvc_template is not None
    claim_name, volume_name = f"pvc-{i}", f"{op.namespace}-vol-{i}"
    pvc = copy_data(op.pvc_template.data)
    pvc.setdefault("metadata", {})["name"] = claim_name
    pvc.setdefault("spec", {})["volumeName"] = volume_name
    pvc["status"] = {"phase": "Bound"}
    pv = copy_data(op.pv_template.data)
    pv.setdefault("metadata", {})["name"] = volume_name
    spec = pv.setdefault("spec", {})
    if isinstance(spec.get("csi"), dict):
        spec["csi"]["volumeHandle"] = volume_name
    elif isinstance(spec.get("awsElasticBlockStore"), dict):
        spec["awsElasticBlockStore"]["volumeID"] = f"vol-{i}"
    spec["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "namespace": op.namespace,
        "name": claim_name,
        "apiVersion": "v1",
    }
    pv["status"] = {"phase": "Bound"}
    return pvc, pv


def with_claim(pod: dict[str, Any], claim_name: str) -> dict[str, Any]:
    """The pod with the claim as its only volume (upstream replaces the template's
    volumes)."""
    pod.setdefault("spec", {})["volumes"] = [
        {"name": POD_VOLUME, "persistentVolumeClaim": {"claimName": claim_name}}
    ]
    return pod
