"""Printing objects the way kubectl prints them, so what users know carries over.

Tables have kubectl's columns per kind (and `-o wide`'s extra ones), its pod and node
STATUS rules, and its AGE arithmetic; when stdout is not a terminal they come out as
plain space-aligned columns like kubectl's tabwriter (so scripts and tests can read
them), on a terminal through rich. `-o json` / `-o yaml` give exactly the Kubernetes
shape: one object for `get KIND NAME`, otherwise a `v1` `List`; `-o name` gives
`pod/nginx` (`deployment.apps/web` for kinds in a group).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from services.api import codec
from services.api.kinds import Kind, kind_of

OUTPUT_FORMATS = ("wide", "json", "yaml", "name")
NONE = "<none>"
UNKNOWN = "<unknown>"


# ------------------------------------------------------------------ time


def parse_time(text: str) -> float | None:
    """An RFC 3339 timestamp (seconds or micro-seconds, as metav1.Time and MicroTime) →
    epoch seconds; None when empty or unreadable."""
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: `5s`, `3m20s`, `2h`, `4d5h`, `3y`."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: str, now: float) -> str:
    t = parse_time(timestamp)
    return UNKNOWN if t is None else human_duration(now - t)


# ----------------------------------------------------------------- names


def resource_name(kind: Kind) -> str:
    """kubectl's `pod`, `deployment.apps`, `priorityclass.scheduling.k8s.io`."""
    return f"{kind.singular}.{kind.group}" if kind.group else kind.singular


def object_name(obj: Message, kind: Kind | None = None) -> str:
    """`-o name`: `pod/nginx`."""
    return f"{resource_name(kind or kind_of(obj))}/{obj.metadata.name}"  # type: ignore[attr-defined]


def format_label_selector(sel: Message | None) -> str:
    """metav1.FormatLabelSelector: `app=web,tier in (a,b),!gone`."""
    if sel is None:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted(sel.match_labels.items())]  # type: ignore[attr-defined]
    for req in sel.match_expressions:  # type: ignore[attr-defined]
        op = req.operator
        if op == "In":
            parts.append(f"{req.key} in ({','.join(req.values)})")
        elif op == "NotIn":
            parts.append(f"{req.key} notin ({','.join(req.values)})")
        elif op == "Exists":
            parts.append(req.key)
        elif op == "DoesNotExist":
            parts.append(f"!{req.key}")
        else:
            parts.append(f"{req.key} {op} ({','.join(req.values)})")
    return ",".join(parts) or NONE


def format_labels(labels: dict[str, str] | Any) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or NONE


def format_taint(t: Message) -> str:
    """`key=value:Effect` (or `key:Effect`), as kubectl describe prints taints."""
    key = f"{t.key}={t.value}" if t.value else t.key  # type: ignore[attr-defined]
    return f"{key}:{t.effect}" if t.effect else key  # type: ignore[attr-defined]


# ------------------------------------------------------------ pod status


def _state(cs: Message) -> dict[str, Any]:
    return json_format.MessageToDict(cs.state) if cs.HasField("state") else {}  # type: ignore[attr-defined]


def pod_status(pod: Message) -> tuple[str, int, int, int]:
    """kubectl's printPod: (STATUS, ready containers, total containers, restarts)."""
    spec, status, meta = pod.spec, pod.status, pod.metadata  # type: ignore[attr-defined]
    total = len(spec.containers)
    ready = 0
    restarts = 0
    reason = status.phase or "Pending"
    if status.reason:
        reason = status.reason
    gated = any(
        c.type == "PodScheduled" and c.reason == "SchedulingGated" for c in status.conditions
    )
    if gated or (spec.scheduling_gates and not spec.node_name):
        reason = "SchedulingGated"
    initializing = False
    for i, cs in enumerate(status.init_container_statuses):
        restarts += cs.restart_count
        state = _state(cs)
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode", 0)) == 0:
            continue
        if term is not None:
            if term.get("reason"):
                reason = "Init:" + term["reason"]
            elif term.get("signal"):
                reason = f"Init:Signal:{int(term['signal'])}"
            else:
                reason = f"Init:ExitCode:{int(term.get('exitCode', 0))}"
        elif wait is not None and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{len(spec.init_containers)}"
        initializing = True
        break
    if not initializing:
        restarts = 0
        has_running = False
        for cs in reversed(status.container_statuses):
            restarts += cs.restart_count
            state = _state(cs)
            term, wait = state.get("terminated"), state.get("waiting")
            if wait is not None and wait.get("reason"):
                reason = wait["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                if term.get("signal"):
                    reason = f"Signal:{int(term['signal'])}"
                else:
                    reason = f"ExitCode:{int(term.get('exitCode', 0))}"
            elif cs.ready and "running" in state:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.type == "Ready" and c.status == "True" for c in status.conditions)
            reason = "Running" if pod_ready else "NotReady"
    if meta.deletion_timestamp:
        if status.reason == "NodeLost":
            reason = "Unknown"
        elif status.phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason, ready, total, restarts


def node_status(node: Message) -> str:
    """kubectl's node STATUS: Ready / NotReady / Unknown, plus SchedulingDisabled."""
    parts = []
    for c in node.status.conditions:  # type: ignore[attr-defined]
        if c.type == "Ready":
            parts = ["Ready" if c.status == "True" else "NotReady"]
    if not parts:
        parts = ["Unknown"]
    if node.spec.unschedulable:  # type: ignore[attr-defined]
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def node_roles(node: Message) -> str:
    roles = set()
    for k, v in node.metadata.labels.items():  # type: ignore[attr-defined]
        if k.startswith("node-role.kubernetes.io/"):
            roles.add(k.removeprefix("node-role.kubernetes.io/"))
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(r for r in roles if r)) or NONE


def _address(node: Message, type_: str) -> str:
    for a in node.status.addresses:  # type: ignore[attr-defined]
        if a.type == type_:
            return a.address
    return NONE


def _or(value: Any, default: str = NONE) -> str:
    return str(value) if value not in ("", None) else default


def _containers(spec: Message) -> tuple[str, str]:
    cs = spec.template.spec.containers  # type: ignore[attr-defined]
    return ",".join(c.name for c in cs) or NONE, ",".join(c.image for c in cs) or NONE


# ----------------------------------------------------------------- tables


@dataclass(frozen=True)
class Columns:
    """A kind's table: headers, `-o wide`'s extra headers, and the row function."""

    headers: tuple[str, ...]
    wide: tuple[str, ...]
    row: Callable[[Message, float, bool], list[str]]


def _pod_row(pod: Message, now: float, wide: bool) -> list[str]:
    status, ready, total, restarts = pod_status(pod)
    row = [
        pod.metadata.name,  # type: ignore[attr-defined]
        f"{ready}/{total}",
        status,
        str(restarts),
        age(pod.metadata.creation_timestamp, now),  # type: ignore[attr-defined]
    ]
    if wide:
        row += [
            _or(pod.status.pod_ip),  # type: ignore[attr-defined]
            _or(pod.spec.node_name),  # type: ignore[attr-defined]
            _or(pod.status.nominated_node_name),  # type: ignore[attr-defined]
            NONE,  # readiness gates: kubera's pods have none
        ]
    return row


def _node_row(node: Message, now: float, wide: bool) -> list[str]:
    info = node.status.node_info  # type: ignore[attr-defined]
    row = [
        node.metadata.name,  # type: ignore[attr-defined]
        node_status(node),
        node_roles(node),
        age(node.metadata.creation_timestamp, now),  # type: ignore[attr-defined]
        info.kubelet_version,
    ]
    if wide:
        taints = node.spec.taints  # type: ignore[attr-defined]
        row += [
            _address(node, "InternalIP"),
            _address(node, "ExternalIP"),
            _or(info.os_image, UNKNOWN),
            _or(info.kernel_version, UNKNOWN),
            _or(info.container_runtime_version, UNKNOWN),
            ",".join(format_taint(t) for t in taints) or NONE,
        ]
    return row


def _namespace_row(ns: Message, now: float, wide: bool) -> list[str]:
    return [ns.metadata.name, ns.status.phase, age(ns.metadata.creation_timestamp, now)]  # type: ignore[attr-defined]


def _event_row(ev: Message, now: float, wide: bool) -> list[str]:
    e: Any = ev
    last = e.last_timestamp or e.event_time or e.metadata.creation_timestamp
    seen = age(last, now)
    if e.count > 1 and e.first_timestamp:
        seen = f"{seen} (x{e.count} over {age(e.first_timestamp, now)})"
    io = e.involved_object
    obj = f"{io.kind.lower()}/{io.name}" if io.kind else io.name
    row = [seen, e.type, e.reason, obj, e.message]
    if wide:
        row += [
            e.source.component or e.reporting_component or NONE,
            str(e.count or 1),
            age(e.first_timestamp or e.event_time or e.metadata.creation_timestamp, now),
            e.metadata.name,
        ]
    return row


def _priority_class_row(pc: Message, now: float, wide: bool) -> list[str]:
    p: Any = pc
    return [
        p.metadata.name,
        str(p.value),
        "true" if p.global_default else "false",
        age(p.metadata.creation_timestamp, now),
        p.preemption_policy if p.HasField("preemption_policy") else "PreemptLowerPriority",
    ]


def _pdb_row(pdb: Message, now: float, wide: bool) -> list[str]:
    p: Any = pdb
    return [
        p.metadata.name,
        p.spec.min_available if p.spec.HasField("min_available") else "N/A",
        p.spec.max_unavailable if p.spec.HasField("max_unavailable") else "N/A",
        str(p.status.disruptions_allowed),
        age(p.metadata.creation_timestamp, now),
    ]


def _rs_row(rs: Message, now: float, wide: bool) -> list[str]:
    r: Any = rs
    row = [
        r.metadata.name,
        str(r.spec.replicas if r.spec.HasField("replicas") else 1),
        str(r.status.replicas),
        str(r.status.ready_replicas),
        age(r.metadata.creation_timestamp, now),
    ]
    if wide:
        row += [*_containers(r.spec), format_label_selector(r.spec.selector)]
    return row


def _deploy_row(d: Message, now: float, wide: bool) -> list[str]:
    x: Any = d
    desired = x.spec.replicas if x.spec.HasField("replicas") else 1
    row = [
        x.metadata.name,
        f"{x.status.ready_replicas}/{desired}",
        str(x.status.updated_replicas),
        str(x.status.available_replicas),
        age(x.metadata.creation_timestamp, now),
    ]
    if wide:
        row += [*_containers(x.spec), format_label_selector(x.spec.selector)]
    return row


def _lease_row(lease: Message, now: float, wide: bool) -> list[str]:
    x: Any = lease
    return [x.metadata.name, x.spec.holder_identity, age(x.metadata.creation_timestamp, now)]


def _runtime_class_row(rc: Message, now: float, wide: bool) -> list[str]:
    x: Any = rc
    return [x.metadata.name, x.handler, age(x.metadata.creation_timestamp, now)]


def _generic_row(obj: Message, now: float, wide: bool) -> list[str]:
    return [obj.metadata.name, age(obj.metadata.creation_timestamp, now)]  # type: ignore[attr-defined]


COLUMNS: dict[str, Columns] = {
    "Pod": Columns(
        ("NAME", "READY", "STATUS", "RESTARTS", "AGE"),
        ("IP", "NODE", "NOMINATED NODE", "READINESS GATES"),
        _pod_row,
    ),
    "Node": Columns(
        ("NAME", "STATUS", "ROLES", "AGE", "VERSION"),
        ("INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME", "TAINTS"),
        _node_row,
    ),
    "Namespace": Columns(("NAME", "STATUS", "AGE"), (), _namespace_row),
    "Event": Columns(
        ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"),
        ("SOURCE", "COUNT", "FIRST SEEN", "NAME"),
        _event_row,
    ),
    "PriorityClass": Columns(
        ("NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"), (), _priority_class_row
    ),
    "PodDisruptionBudget": Columns(
        ("NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"), (), _pdb_row
    ),
    "ReplicaSet": Columns(
        ("NAME", "DESIRED", "CURRENT", "READY", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _rs_row,
    ),
    "Deployment": Columns(
        ("NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _deploy_row,
    ),
    "Lease": Columns(("NAME", "HOLDER", "AGE"), (), _lease_row),
    "RuntimeClass": Columns(("NAME", "HANDLER", "AGE"), (), _runtime_class_row),
}
_GENERIC = Columns(("NAME", "AGE"), (), _generic_row)


def table(
    kind: Kind,
    objs: Sequence[Message],
    *,
    now: float,
    wide: bool = False,
    all_namespaces: bool = False,
    prefix_names: bool = False,
) -> tuple[list[str], list[list[str]]]:
    """Headers and rows for `objs` of one kind, as `kubectl get` lays them out."""
    cols = COLUMNS.get(kind.kind, _GENERIC)
    headers = list(cols.headers) + (list(cols.wide) if wide else [])
    name_col = headers.index("NAME") if "NAME" in headers else -1
    rows = []
    for obj in objs:
        row = cols.row(obj, now, wide)
        if prefix_names and name_col >= 0:
            row[name_col] = f"{resource_name(kind)}/{row[name_col]}"
        if all_namespaces and kind.namespaced:
            row.insert(0, obj.metadata.namespace)  # type: ignore[attr-defined]
        rows.append(row)
    if all_namespaces and kind.namespaced:
        headers.insert(0, "NAMESPACE")
    return headers, rows


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's tabwriter layout (min width 6, padding 3); the last column is not padded."""
    lines = [list(headers), *[list(r) for r in rows]]
    ncols = len(headers)
    widths = [
        max(6, max(len(line[i]) for line in lines) + 3) if i < ncols - 1 else 0
        for i in range(ncols)
    ]
    out = []
    for line in lines:
        text = "".join(
            cell.ljust(widths[i]) if i < ncols - 1 else cell for i, cell in enumerate(line)
        )
        out.append(text.rstrip())
    return "\n".join(out) + "\n"


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO | None = None
) -> None:
    """Plain columns when `out` is not a terminal; a rich table (bold headers) when it is."""
    out = out or sys.stdout
    if not out.isatty():
        out.write(plain_table(headers, rows))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None, pad_edge=False, padding=(0, 3, 0, 0), header_style="bold")
    for h in headers:
        t.add_column(h, no_wrap=True, overflow="ellipsis")
    for r in rows:
        t.add_row(*r)
    Console(file=out, highlight=False, soft_wrap=False).print(t)


def no_resources(namespace: str | None) -> str:
    """kubectl's wording when a list is empty."""
    if namespace:
        return f"No resources found in {namespace} namespace."
    return "No resources found"


# ------------------------------------------------------------ documents


def _is_map_field(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def _own_message(f: FieldDescriptor) -> Descriptor | None:
    """The message type of a field holding one of our messages (not a well-known type)."""
    t = f.message_type
    return None if t is None or t.full_name.startswith("google.protobuf.") else t


def sort_map_keys(d: dict[str, Any], desc: Descriptor) -> None:
    """Go's encoding/json order, in place: the keys of map-valued fields (labels,
    annotations, nodeSelector, requests/limits, capacity, ...) sorted, struct fields left
    in their declared order."""
    for f in desc.fields:
        value = d.get(f.json_name)
        if value is None:
            continue
        if _is_map_field(f):
            if not isinstance(value, dict):
                continue
            inner = _own_message(f.message_type.fields_by_name["value"])
            d[f.json_name] = {k: value[k] for k in sorted(value)}
            if inner is not None:
                for item in value.values():
                    if isinstance(item, dict):
                        sort_map_keys(item, inner)
            continue
        inner = _own_message(f)
        if inner is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                sort_map_keys(item, inner)


def to_dict(obj: Message) -> dict[str, Any]:
    """An object as Kubernetes serves it: apiVersion, kind, metadata, spec, status."""
    kind = kind_of(obj)
    d = codec.encode(obj)
    sort_map_keys(d, obj.DESCRIPTOR)
    d["apiVersion"] = d.get("apiVersion") or kind.api_version
    d["kind"] = d.get("kind") or kind.kind
    ordered = {"apiVersion": d.pop("apiVersion"), "kind": d.pop("kind")}
    ordered.update(d)
    return ordered


def list_document(objs: Sequence[Message]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [to_dict(o) for o in objs],
        "metadata": {"resourceVersion": ""},
    }


def document(objs: Sequence[Message], *, single: bool) -> dict[str, Any]:
    """One object for `get KIND NAME`, otherwise a List."""
    if single and len(objs) == 1:
        return to_dict(objs[0])
    return list_document(objs)


def dump_json(doc: Any) -> str:
    return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"


def dump_yaml(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


def print_documents(
    objs: Sequence[Message], fmt: str, *, single: bool, out: TextIO | None = None
) -> None:
    out = out or sys.stdout
    doc = document(objs, single=single)
    out.write(dump_json(doc) if fmt == "json" else dump_yaml(doc))


# --------------------------------------------------------------- describe


def tabwrite(text: str, *, padding: int = 2, minwidth: int = 0) -> str:
    """Go's text/tabwriter (as kubectl describe uses it): tab-separated cells aligned per
    column block, a block being the consecutive lines that have a cell in that column."""
    lines = [line.split("\t") for line in text.split("\n")]
    out: list[str] = []
    widths: list[int] = []

    def write(line0: int, line1: int) -> None:
        for cells in lines[line0:line1]:
            parts = []
            for j, cell in enumerate(cells):
                parts.append(cell.ljust(widths[j]) if j < len(widths) else cell)
            out.append("".join(parts).rstrip())

    def fmt(line0: int, line1: int) -> None:
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(lines[this]) - 1:
                this += 1
                continue
            write(line0, this)
            line0 = this
            width = minwidth
            while this < line1 and column < len(lines[this]) - 1:
                width = max(width, len(lines[this][column]) + padding)
                this += 1
            widths.append(width)
            fmt(line0, this)
            widths.pop()
            line0 = this
        write(line0, line1)

    fmt(0, len(lines))
    return "\n".join(out)


class _Describe:
    """kubectl's PrefixWriter: lines at indent levels, cells separated by tabs."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, level: int, *cells: str) -> None:
        self.lines.append("  " * level + "\t".join(c.replace("\t", " ") for c in cells))

    def multiline(self, level: int, title: str, values: Sequence[str]) -> None:
        """`Title:  first` then the rest aligned under it (kubectl's *Multiline printers)."""
        if not values:
            self.line(level, f"{title}:", NONE)
            return
        self.line(level, f"{title}:", values[0])
        for v in values[1:]:
            self.line(level, "", v)

    def text(self) -> str:
        return tabwrite("\n".join(self.lines)) + "\n"


#: What kubectl describe leaves out of Annotations (it repeats the whole manifest).
_HIDDEN_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def _labels_list(m: Any) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(m.items())]


def _annotations_list(m: Any) -> list[str]:
    return [
        f"{k}={v.rstrip(chr(10))}" for k, v in sorted(m.items()) if k not in _HIDDEN_ANNOTATIONS
    ]


def _rfc1123(ts: str) -> str:
    t = parse_time(ts)
    if t is None:
        return NONE
    return datetime.fromtimestamp(t, UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def format_toleration(t: Message) -> str:
    """kubectl describe's `key=value:Effect op=Exists for 300s`."""
    x: Any = t
    s = x.key
    if x.value:
        s += f"={x.value}"
    if x.effect:
        s += f":{x.effect}"
    if x.operator == "Exists" and not x.value:
        s += " op=Exists" if (x.key or x.effect) else "op=Exists"
    elif x.operator not in ("", "Equal", "Exists"):
        s += f" op={x.operator}"
    if x.HasField("toleration_seconds"):
        s += f" for {x.toleration_seconds}s"
    return s


def _describe_meta(w: _Describe, obj: Message, *, namespaced: bool) -> None:
    meta: Any = obj.metadata  # type: ignore[attr-defined]
    w.line(0, "Name:", meta.name)
    if namespaced:
        w.line(0, "Namespace:", meta.namespace)


def _describe_events(w: _Describe, events: Sequence[Message], now: float) -> None:
    if not events:
        w.line(0, "Events:", NONE)
        return
    w.line(0, "Events:")
    w.line(1, "Type", "Reason", "Age", "From", "Message")
    w.line(1, "----", "------", "----", "----", "-------")

    def last(e: Any) -> float:
        return parse_time(e.last_timestamp or e.event_time or e.metadata.creation_timestamp) or 0

    for ev in sorted(events, key=last):
        e: Any = ev
        seen = age(e.last_timestamp or e.event_time or e.metadata.creation_timestamp, now)
        if e.count > 1 and e.first_timestamp:
            seen = f"{seen} (x{e.count} over {age(e.first_timestamp, now)})"
        source = e.source.component or e.reporting_component or ""
        if e.source.host:
            source = f"{source}, {e.source.host}" if source else e.source.host
        w.line(1, e.type, e.reason, seen, source, e.message.strip())


def _describe_container(w: _Describe, c: Any, status: Any | None) -> None:
    w.line(1, f"{c.name}:")
    if status is not None and status.container_id:
        w.line(2, "Container ID:", status.container_id)
    w.line(2, "Image:", c.image)
    if status is not None and status.image_id:
        w.line(2, "Image ID:", status.image_id)
    ports = [f"{p.container_port}/{p.protocol or 'TCP'}" for p in c.ports]
    w.line(2, "Port:" if len(ports) <= 1 else "Ports:", ", ".join(ports) or NONE)
    host_ports = [f"{p.host_port}/{p.protocol or 'TCP'}" for p in c.ports]
    w.line(2, "Host Port:" if len(ports) <= 1 else "Host Ports:", ", ".join(host_ports) or NONE)
    if c.command:
        w.line(2, "Command:")
        for part in c.command:
            w.line(3, part)
    if c.args:
        w.line(2, "Args:")
        for part in c.args:
            w.line(3, part)
    if status is not None:
        state = _state(status)
        for label, key in (("State:", "state"), ("Last State:", "last_state")):
            st = (
                state
                if key == "state"
                else (
                    json_format.MessageToDict(status.last_state)
                    if status.HasField("last_state")
                    else {}
                )
            )
            if not st:
                if key == "state":
                    w.line(2, label, "Waiting")
                continue
            name, detail = next(iter(st.items()))
            w.line(2, label, name.capitalize())
            if isinstance(detail, dict):
                for k in ("reason", "message", "exitCode", "startedAt", "finishedAt"):
                    if k in detail and detail[k] != "":
                        title = {
                            "exitCode": "Exit Code",
                            "startedAt": "Started",
                            "finishedAt": "Finished",
                        }.get(k, k.capitalize())
                        w.line(3, f"{title}:", str(detail[k]))
        w.line(2, "Ready:", "True" if status.ready else "False")
        w.line(2, "Restart Count:", str(status.restart_count))
    for title, res in (("Limits", c.resources.limits), ("Requests", c.resources.requests)):
        if res:
            w.line(2, f"{title}:")
            for k, v in sorted(res.items()):
                w.line(3, f"{k}:", v)
    if c.env:
        w.line(2, "Environment:")
        for e in c.env:
            if e.HasField("value_from"):
                w.line(3, f"{e.name}:", f"({_value_from(e.value_from)})")
            else:
                w.line(3, f"{e.name}:", e.value)
    else:
        w.line(2, "Environment:", NONE)


def _value_from(struct: Any) -> str:
    d = json_format.MessageToDict(struct)
    if "fieldRef" in d:
        ref = d["fieldRef"]
        return f"{ref.get('apiVersion', 'v1')}:{ref.get('fieldPath', '')}"
    if "resourceFieldRef" in d:
        return f"{d['resourceFieldRef'].get('resource', '')}"
    return ", ".join(sorted(d))


def describe_pod(pod: Message, events: Sequence[Message], now: float) -> str:
    """kubectl describe pod."""
    p: Any = pod
    spec, status, meta = p.spec, p.status, p.metadata
    w = _Describe()
    _describe_meta(w, pod, namespaced=True)
    w.line(0, "Priority:", str(spec.priority))
    if spec.priority_class_name:
        w.line(0, "Priority Class Name:", spec.priority_class_name)
    if spec.HasField("runtime_class_name") and spec.runtime_class_name:
        w.line(0, "Runtime Class Name:", spec.runtime_class_name)
    w.line(0, "Service Account:", spec.service_account_name or "default")
    node = spec.node_name or NONE
    if spec.node_name and status.host_ip:
        node = f"{spec.node_name}/{status.host_ip}"
    w.line(0, "Node:", node)
    if status.start_time:
        w.line(0, "Start Time:", _rfc1123(status.start_time))
    w.multiline(0, "Labels", _labels_list(meta.labels))
    w.multiline(0, "Annotations", _annotations_list(meta.annotations))
    phase, *_ = pod_status(pod)
    if meta.deletion_timestamp:
        w.line(0, "Status:", f"Terminating (lasts {age(meta.deletion_timestamp, now)})")
        w.line(0, "Termination Grace Period:", f"{meta.deletion_grace_period_seconds}s")
    else:
        w.line(0, "Status:", status.phase or phase)
    if status.reason:
        w.line(0, "Reason:", status.reason)
    if status.message:
        w.line(0, "Message:", status.message.strip())
    w.line(0, "IP:", status.pod_ip)
    w.multiline(0, "IPs", [f"IP:  {ip.ip}" for ip in status.pod_ips])
    if status.nominated_node_name:
        w.line(0, "Nominated Node Name:", status.nominated_node_name)
    for title, containers, statuses in (
        ("Init Containers", spec.init_containers, status.init_container_statuses),
        ("Containers", spec.containers, status.container_statuses),
    ):
        if not containers and title.startswith("Init"):
            continue
        by_name = {s.name: s for s in statuses}
        w.line(0, f"{title}:")
        for c in containers:
            _describe_container(w, c, by_name.get(c.name))
    if spec.scheduling_gates:
        w.line(0, "Scheduling Gates:")
        for g in spec.scheduling_gates:
            w.line(1, g.name)
    if status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status")
        for c in status.conditions:
            w.line(1, c.type, c.status)
    w.line(0, "QoS Class:", status.qos_class or NONE)
    w.multiline(0, "Node-Selectors", _labels_list(spec.node_selector))
    w.multiline(0, "Tolerations", [format_toleration(t) for t in spec.tolerations])
    if spec.topology_spread_constraints:
        w.multiline(
            0,
            "Topology Spread Constraints",
            [
                f"{c.topology_key}:{c.when_unsatisfiable} when max skew {c.max_skew} is exceeded"
                + (
                    f" for selector {format_label_selector(c.label_selector)}"
                    if c.HasField("label_selector")
                    else ""
                )
                for c in spec.topology_spread_constraints
            ],
        )
    _describe_events(w, events, now)
    return w.text()


# Resource arithmetic for describe node (kubectl's resourcehelper.PodRequestsAndLimits).


def _qty(text: str) -> Any:
    from services.api.quantity import QuantityError, parse_quantity

    try:
        return parse_quantity(text)
    except QuantityError:
        return None


def pod_requests_and_limits(pod: Message) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sum over containers, at least the largest init container, plus the overhead."""
    spec: Any = pod.spec  # type: ignore[attr-defined]

    def add(total: dict[str, Any], items: Any) -> None:
        for name, text in items.items():
            q = _qty(text)
            if q is None:
                continue
            total[name] = q if name not in total else _sum(total[name], q)

    reqs: dict[str, Any] = {}
    lims: dict[str, Any] = {}
    for c in spec.containers:
        add(reqs, c.resources.requests)
        add(lims, c.resources.limits)
    for c in spec.init_containers:
        for total, items in ((reqs, c.resources.requests), (lims, c.resources.limits)):
            for name, text in items.items():
                q = _qty(text)
                if q is not None and (name not in total or q > total[name]):
                    total[name] = q
    add(reqs, spec.overhead)
    if lims:
        add(lims, spec.overhead)
    return reqs, lims


def _sum(a: Any, b: Any) -> Any:
    from services.api.quantity import Quantity

    fmt = a.format if not a.is_zero() else b.format
    return Quantity(a.value + b.value, fmt)


def _percent(q: Any, total: Any, resource: str) -> int:
    if q is None or total is None or total.is_zero():
        return 0
    if resource == "cpu":
        return int(q.milli_value() / total.milli_value() * 100)
    return int(q.int_value() / total.int_value() * 100)


def _amount(q: Any, total: Any, resource: str) -> str:
    text = str(q) if q is not None else "0"
    return f"{text} ({_percent(q, total, resource)}%)"


def describe_node(
    node: Message, pods: Sequence[Message], events: Sequence[Message], now: float
) -> str:
    """kubectl describe node, with its pods' requests against allocatable."""
    n: Any = node
    spec, status, meta = n.spec, n.status, n.metadata
    w = _Describe()
    _describe_meta(w, node, namespaced=False)
    w.line(0, "Roles:", node_roles(node))
    w.multiline(0, "Labels", _labels_list(meta.labels))
    w.multiline(0, "Annotations", _annotations_list(meta.annotations))
    w.line(0, "CreationTimestamp:", _rfc1123(meta.creation_timestamp))
    w.multiline(0, "Taints", [format_taint(t) for t in spec.taints])
    w.line(0, "Unschedulable:", "true" if spec.unschedulable else "false")
    if status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message")
        w.line(1, "----", "------", "-----------------", "------------------", "------", "-------")
        for c in status.conditions:
            w.line(
                1,
                c.type,
                c.status,
                _rfc1123(c.last_heartbeat_time),
                _rfc1123(c.last_transition_time),
                c.reason,
                c.message,
            )
    else:
        w.line(0, "Conditions:", NONE)
    w.line(0, "Addresses:")
    for a in status.addresses:
        w.line(1, f"{a.type}:", a.address)
    for title, res in (("Capacity", status.capacity), ("Allocatable", status.allocatable)):
        w.line(0, f"{title}:")
        for k, v in sorted(res.items()):
            w.line(1, f"{k}:", v)
    info = status.node_info
    if info.ByteSize():
        w.line(0, "System Info:")
        for title, value in (
            ("Machine ID:", info.machine_id),
            ("System UUID:", info.system_uuid),
            ("Boot ID:", info.boot_id),
            ("Kernel Version:", info.kernel_version),
            ("OS Image:", info.os_image),
            ("Operating System:", info.operating_system),
            ("Architecture:", info.architecture),
            ("Container Runtime Version:", info.container_runtime_version),
            ("Kubelet Version:", info.kubelet_version),
        ):
            w.line(1, title, value)
    if spec.pod_cidr:
        w.line(0, "PodCIDR:", spec.pod_cidr)
    if spec.provider_id:
        w.line(0, "ProviderID:", spec.provider_id)
    allocatable = {k: _qty(v) for k, v in status.allocatable.items()}
    w.line(0, "Non-terminated Pods:", f"({len(pods)} in total)")
    w.line(
        1,
        "Namespace",
        "Name",
        "",
        "CPU Requests",
        "CPU Limits",
        "Memory Requests",
        "Memory Limits",
        "Age",
    )
    w.line(
        1,
        "---------",
        "----",
        "",
        "------------",
        "----------",
        "---------------",
        "-------------",
        "---",
    )
    totals_req: dict[str, Any] = {}
    totals_lim: dict[str, Any] = {}
    for pod in pods:
        reqs, lims = pod_requests_and_limits(pod)
        for total, items in ((totals_req, reqs), (totals_lim, lims)):
            for k, q in items.items():
                total[k] = q if k not in total else _sum(total[k], q)
        pm: Any = pod.metadata  # type: ignore[attr-defined]
        w.line(
            1,
            pm.namespace,
            pm.name,
            "",
            _amount(reqs.get("cpu"), allocatable.get("cpu"), "cpu"),
            _amount(lims.get("cpu"), allocatable.get("cpu"), "cpu"),
            _amount(reqs.get("memory"), allocatable.get("memory"), "memory"),
            _amount(lims.get("memory"), allocatable.get("memory"), "memory"),
            age(pm.creation_timestamp, now),
        )
    w.line(0, "Allocated resources:")
    w.line(1, "(Total limits may be over 100 percent, i.e., overcommitted.)")
    w.line(1, "Resource", "Requests", "Limits")
    w.line(1, "--------", "--------", "------")
    extra = sorted(
        k
        for k in set(allocatable) | set(totals_req) | set(totals_lim)
        if k not in ("cpu", "memory", "ephemeral-storage", "pods")
    )
    for res in ("cpu", "memory", "ephemeral-storage", *extra):
        available = allocatable.get(res)
        w.line(
            1,
            res,
            _amount(totals_req.get(res), available, res),
            _amount(totals_lim.get(res), available, res),
        )
    _describe_events(w, events, now)
    return w.text()


def _words(key: str) -> str:
    """`globalDefault` → `Global Default`, as kubectl's generic describer labels fields."""
    out = ""
    for i, ch in enumerate(key):
        if ch.isupper() and i and not key[i - 1].isupper():
            out += " "
        out += ch
    return out[:1].upper() + out[1:]


#: Fields whose keys are data (label keys, resource names), printed as they are.
_MAP_FIELDS = frozenset(
    {
        "labels",
        "annotations",
        "matchLabels",
        "nodeSelector",
        "capacity",
        "allocatable",
        "requests",
        "limits",
        "overhead",
        "podFixed",
        "disruptedPods",
    }
)


def _describe_value(
    w: _Describe, level: int, key: str, value: Any, *, verbatim: bool = False
) -> None:
    title = f"{key if verbatim else _words(key)}:"
    if isinstance(value, dict):
        if not value:
            w.line(level, title, NONE)
            return
        w.line(level, title)
        for k, v in value.items():
            _describe_value(w, level + 1, k, v, verbatim=key in _MAP_FIELDS and not verbatim)
    elif isinstance(value, list):
        if not value:
            w.line(level, title, NONE)
        elif all(not isinstance(v, dict | list) for v in value):
            w.multiline(level, _words(key), [str(v) for v in value])
        else:
            w.line(level, title)
            for v in value:
                if isinstance(v, dict):
                    for k, item in v.items():
                        _describe_value(w, level + 1, k, item)
                else:
                    w.line(level + 1, str(v))
    elif isinstance(value, bool):
        w.line(level, title, "true" if value else "false")
    else:
        w.line(level, title, str(value))


def describe_object(obj: Message, events: Sequence[Message], now: float) -> str:
    """Any other kind: metadata, then its fields the way kubectl describes custom objects."""
    kind = kind_of(obj)
    d = to_dict(obj)
    meta: Any = obj.metadata  # type: ignore[attr-defined]
    w = _Describe()
    _describe_meta(w, obj, namespaced=kind.namespaced)
    w.multiline(0, "Labels", _labels_list(meta.labels))
    w.multiline(0, "Annotations", _annotations_list(meta.annotations))
    w.line(0, "CreationTimestamp:", _rfc1123(meta.creation_timestamp))
    if kind.kind == "Deployment" or kind.kind == "ReplicaSet":
        w.line(0, "Selector:", format_label_selector(obj.spec.selector))  # type: ignore[attr-defined]
    for key, value in d.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        _describe_value(w, 0, key, value)
    _describe_events(w, events, now)
    return w.text()
