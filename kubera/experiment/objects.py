"""The objects the ops create: templates rendered into protobuf messages (upstream's default
node and pod when an op names no template, createNodes' label strategies), and the small
predicates op execution uses on them; and `check`, the `check` op's call of the history
checker."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from kubera.errors import CliError
from kubera.experiment import ops as o
from kubera.experiment.model import CheckVerdict
from services.api import codec
from services.chaos import check_history, wait_settled
from services.storage.etcd import EtcdStorage


class OpError(CliError):
    """An op that could not complete; the run records it as its error."""


def to_message(doc: dict[str, Any], *, kind: str = "", namespace: str = "") -> Message:
    """A rendered template → its protobuf message (apiVersion/kind defaulted to `kind`'s
    core/v1 when the template leaves them out), in `namespace` when the kind has one."""
    doc = dict(doc)
    if kind:
        doc.setdefault("apiVersion", "v1")
        doc.setdefault("kind", kind)
    try:
        decoded = codec.decode(doc, validate="ignore")
    except codec.DecodeError as e:
        raise OpError(f"cannot decode {doc.get('kind', 'object')}: {e}") from None
    if namespace and decoded.kind.namespaced:
        decoded.obj.metadata.namespace = namespace  # type: ignore[attr-defined]
    return decoded.obj


def node_doc(op: o.CreateNodes, i: int) -> dict[str, Any]:
    """Node `i` of a createNodes op: its template rendered, then its strategy applied."""
    if op.node_template is not None:
        doc = op.node_template.render(i, op.count, op.template_params)
    else:
        doc = copy_doc(o.DEFAULT_NODE)
    meta = doc.setdefault("metadata", {})
    s = op.strategy
    if isinstance(s, o.UniqueNodeLabelStrategy):
        meta.setdefault("labels", {})[s.label_key] = f"node-{op.index}-{i}"
    elif isinstance(s, o.LabelNodePrepareStrategy) and s.label_values:
        meta.setdefault("labels", {})[s.label_key] = s.label_values[i % len(s.label_values)]
    elif isinstance(s, o.NodeAllocatableStrategy):
        status = doc.setdefault("status", {})
        for field in ("capacity", "allocatable"):
            status.setdefault(field, {}).update(s.node_allocatable)
    return doc


def pod_doc(template: Any, i: int, count: int, params: dict[str, Any]) -> dict[str, Any]:
    return template.render(i, count, params) if template is not None else copy_doc(o.DEFAULT_POD)


def copy_doc(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: copy_doc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_doc(v) for v in value]
    return value


def object_key(obj: Message) -> str:
    m = obj.metadata  # type: ignore[attr-defined]
    return f"{m.namespace}/{m.name}"


def matches_labels(labels: Any, selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def generated_name(obj: Message) -> bool:
    """Whether the apiserver named `obj` (generateName, no name of its own)."""
    m = obj.metadata  # type: ignore[attr-defined]
    return bool(m.generate_name) and not m.name


def node_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


async def check(
    etcd: str, settle: float, *, start_revision: int = 1
) -> tuple[CheckVerdict, dict[str, int]]:
    """`kubera check --settle S --json`'s verdict: wait for the pods to settle, then replay
    etcd's history (from `start_revision`) through the checker; with the fenced binds per
    leader identity it counted."""
    storage = EtcdStorage(etcd)
    try:
        await wait_settled(storage, settle)
        verdict = await check_history(storage, start_revision=start_revision)
    finally:
        await storage.close()
    lines = verdict.lines()
    return (
        CheckVerdict(
            ok=verdict.ok, violations=tuple(str(v) for v in verdict.violations), summary=lines[-1]
        ),
        dict(verdict.counts.binds_by_holder),
    )
