"""What `kubectl get` shows for each kind: the columns, their cells, and the rules behind
them (kubectl's pod and node STATUS, AGE arithmetic, label selectors, node usage).

It lives below every component because two faces print the same tables: kubera's own CLI
(kubera/printing/tables.py lays the rows out as text) and the HTTP API's meta.k8s.io/v1
Table (services/httpapi/tables.py), which kubectl renders itself. One definition keeps
`kubera get` and `kubectl get` in step. The columns follow upstream's
pkg/printers/internalversion/printers.go: names, types and `-o wide` (priority 1) columns.

`-o wide` for nodes has kubera's own columns after kubectl's (`Column.kubera_only`):
CONDITIONS, TAINTS and what the node's pods request against allocatable (CPU, MEMORY,
PODS). A node object does not carry its pods, so the caller lists the pods once for all
nodes and passes the `node_usage` of that list; requests are the scheduler's
(`pod_requests`), so the numbers are the ones NodeResourcesFit compares. The HTTP Table
leaves those columns out, as a real cluster's would. The other way round, kubectl's event
Table has a Subobject column and interleaves its wide columns (`Column.table_only`,
`Columns.table_order`), which kubera's CLI, appending wide columns, does not print.

Row functions return cells in the order of their kind's `columns`, default ones first:
`rows` and services/httpapi/tables.py pick cells by column index on that invariant.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.helpers.wellknown import LABEL_NODE_ROLE_PREFIX
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.printers.apps import APPS_COLUMNS
from services.api.printers.batch import BATCH_COLUMNS
from services.api.printers.columns import (
    AGE,
    INT,
    NAME,
    NONE,
    UNKNOWN,
    Column,
    Columns,
    S,
    age,
    format_label_selector,
    format_labels,
    human_duration,
    parse_time,
    wide_columns,
)
from services.api.printers.nodeusage import (
    NodeUsage,
    allocatable,
    bound_pods_selector,
    format_amount,
    is_byte_resource,
    is_terminated,
    node_usage,
    usage_cells,
)
from services.api.printers.policy import POLICY_COLUMNS
from services.api.printers.resource import RESOURCE_COLUMNS
from services.api.printers.service import SERVICE_COLUMNS
from services.api.printers.storage import STORAGE_COLUMNS

# ----------------------------------------------------------------- cells


def format_taint(t: core_pb2.Taint) -> str:
    """`key=value:Effect` (or `key:Effect`), as kubectl describe prints taints."""
    key = f"{t.key}={t.value}" if t.value else t.key
    return f"{key}:{t.effect}" if t.effect else key


# ------------------------------------------------------------ pod status


def container_state(cs: core_pb2.ContainerStatus) -> dict[str, Any]:
    """A container status's state (running / waiting / terminated) as a dict; {} when unset."""
    return json_format.MessageToDict(cs.state) if cs.HasField("state") else {}


def pod_status(pod: core_pb2.Pod) -> tuple[str, int, int, int]:
    """kubectl's printPod: (STATUS, ready containers, total containers, restarts)."""
    reason, ready, total, restarts, _ = pod_status_and_last_restart(pod)
    return reason, ready, total, restarts


def pod_status_and_last_restart(pod: core_pb2.Pod) -> tuple[str, int, int, int, str]:
    """printPod (pkg/printers/internalversion/printers.go) with sidecars: STATUS, ready and
    total containers (restartable init containers count), restarts and the time of the
    last one ("" if none) for RESTARTS' "N (Xs ago)"."""
    spec, status, meta = pod.spec, pod.status, object_meta(pod)
    sidecars = {c.name for c in spec.init_containers if c.restart_policy == "Always"}
    total = len(spec.containers) + len(sidecars)
    ready = 0
    restarts = 0
    last_restart = ""
    sidecar_restarts = 0
    last_sidecar_restart = ""
    reason = status.phase or "Pending"
    if status.reason:
        reason = status.reason
    # The apiserver writes PodScheduled=False SchedulingGated at create
    # (services/apiserver/admission.initial_status): the condition alone says so, as upstream.
    if any(c.type == "PodScheduled" and c.reason == "SchedulingGated" for c in status.conditions):
        reason = "SchedulingGated"
    initializing = False
    for i, cs in enumerate(status.init_container_statuses):
        restarts += cs.restart_count
        finished = _last_finished(cs)
        last_restart = max(last_restart, finished)
        if cs.name in sidecars:
            sidecar_restarts += cs.restart_count
            last_sidecar_restart = max(last_sidecar_restart, finished)
        state = container_state(cs)
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode", 0)) == 0:
            continue
        if cs.name in sidecars and cs.started:
            if cs.ready:
                ready += 1
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
    initialized = any(c.type == "Initialized" and c.status == "True" for c in status.conditions)
    if not initializing or initialized:
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for cs in reversed(status.container_statuses):
            restarts += cs.restart_count
            last_restart = max(last_restart, _last_finished(cs))
            state = container_state(cs)
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
    return reason, ready, total, restarts, last_restart


def _last_finished(cs: core_pb2.ContainerStatus) -> str:
    """When the container's previous instance ended ("" if it has none): RFC 3339 strings
    in UTC compare as times."""
    if "terminated" not in cs.last_state.fields:
        return ""
    term = cs.last_state.fields["terminated"].struct_value.fields
    return term["finishedAt"].string_value if "finishedAt" in term else ""


def node_status(node: core_pb2.Node) -> str:
    """kubectl's node STATUS: Ready / NotReady / Unknown, plus SchedulingDisabled."""
    parts = []
    for c in node.status.conditions:
        if c.type == "Ready":
            parts = ["Ready" if c.status == "True" else "NotReady"]
    if not parts:
        parts = ["Unknown"]
    if node.spec.unschedulable:
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def node_roles(node: core_pb2.Node) -> str:
    roles = set()
    for k, v in object_meta(node).labels.items():
        if k.startswith(LABEL_NODE_ROLE_PREFIX):
            roles.add(k.removeprefix(LABEL_NODE_ROLE_PREFIX))
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(r for r in roles if r)) or NONE


def node_problems(node: core_pb2.Node) -> str:
    """The CONDITIONS column: every condition but Ready that is True, in the node's order.
    Node conditions other than Ready (MemoryPressure, DiskPressure, PIDPressure,
    NetworkUnavailable, node-problem-detector's) all mean trouble when True."""
    bad = [c.type for c in node.status.conditions if c.type != "Ready" and c.status == "True"]
    return ",".join(bad) or NONE


def _address(node: core_pb2.Node, type_: str) -> str:
    for a in node.status.addresses:
        if a.type == type_:
            return a.address
    return NONE


def _or(value: Any, default: str = NONE) -> str:
    return str(value) if value not in ("", None) else default


def _containers(spec: apps_pb2.ReplicaSetSpec | apps_pb2.DeploymentSpec) -> tuple[str, str]:
    cs = spec.template.spec.containers
    return ",".join(c.name for c in cs) or NONE, ",".join(c.image for c in cs) or NONE


# ----------------------------------------------------------------- tables


def _pod_row(obj: Message, now: float, wide: bool) -> list[str]:
    pod = narrow(obj, core_pb2.Pod)
    status, ready, total, restarts, last_restart = pod_status_and_last_restart(pod)
    shown = str(restarts)
    if restarts and last_restart:
        shown = f"{restarts} ({age(last_restart, now)} ago)"
    row = [
        object_meta(pod).name,
        f"{ready}/{total}",
        status,
        shown,
        age(object_meta(pod).creation_timestamp, now),
    ]
    if wide:
        row += [
            _or(pod.status.pod_ip),
            _or(pod.spec.node_name),
            _or(pod.status.nominated_node_name),
            NONE,  # readiness gates: kubera's pods have none
        ]
    return row


def _node_row(
    obj: Message, now: float, wide: bool, usage: Mapping[str, NodeUsage] | None = None
) -> list[str]:
    node = narrow(obj, core_pb2.Node)
    info = node.status.node_info
    row = [
        object_meta(node).name,
        node_status(node),
        node_roles(node),
        age(object_meta(node).creation_timestamp, now),
        _or(info.kubelet_version),
    ]
    if wide:
        taints = node.spec.taints
        row += [
            _address(node, "InternalIP"),
            _address(node, "ExternalIP"),
            # kubectl's printNode says <unknown> (not <none>) for these three.
            _or(info.os_image, UNKNOWN),
            _or(info.kernel_version, UNKNOWN),
            _or(info.container_runtime_version, UNKNOWN),
            node_problems(node),
            ",".join(format_taint(t) for t in taints) or NONE,
            *usage_cells(node, usage),
        ]
    return row


def _namespace_row(obj: Message, now: float, wide: bool) -> list[str]:
    ns = narrow(obj, core_pb2.Namespace)
    return [object_meta(ns).name, ns.status.phase, age(object_meta(ns).creation_timestamp, now)]


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
            io.field_path,
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


def claim_state(claim: Message) -> str:
    """kubectl's STATE of a ResourceClaim: deleted, pending, allocated, reserved (joined)."""
    c: Any = claim
    states = []
    if c.metadata.deletion_timestamp:
        states.append("deleted")
    if not c.status.HasField("allocation"):
        if not c.metadata.deletion_timestamp:
            states.append("pending")
    else:
        states.append("allocated")
        if c.status.reserved_for:
            states.append("reserved")
    return ",".join(states)


def _resource_slice_row(rs: Message, now: float, wide: bool) -> list[str]:
    x: Any = rs
    node = x.spec.node_name if x.spec.HasField("node_name") and x.spec.node_name else NONE
    return [
        x.metadata.name,
        node,
        x.spec.driver,
        x.spec.pool.name,
        age(x.metadata.creation_timestamp, now),
    ]


def _resource_claim_row(claim: Message, now: float, wide: bool) -> list[str]:
    x: Any = claim
    return [x.metadata.name, claim_state(claim), age(x.metadata.creation_timestamp, now)]


def _generic_row(obj: Message, now: float, wide: bool) -> list[str]:
    return [object_meta(obj).name, age(object_meta(obj).creation_timestamp, now)]


COLUMNS: dict[str, Columns] = {
    "Pod": Columns(
        (
            NAME,
            Column("Ready", S, "Ready containers out of all the pod's containers."),
            Column("Status", S, "The pod's status as kubectl sums it up from its containers."),
            Column("Restarts", S, "How many times the pod's containers have restarted."),
            AGE,
            *wide_columns(
                Column("IP", S, "The pod's IP address."),
                Column("Node", S, "The node the pod is bound to."),
                Column("Nominated Node", S, "The node preemption nominated for the pod."),
                Column("Readiness Gates", S, "The pod's readiness gates."),
            ),
        ),
        _pod_row,
    ),
    "Node": Columns(
        (
            NAME,
            Column("Status", S, "Ready, NotReady or Unknown, and SchedulingDisabled if cordoned."),
            Column("Roles", S, "The node's roles, from node-role.kubernetes.io/ labels."),
            AGE,
            Column("Version", S, "The kubelet version the node reports."),
            *wide_columns(
                Column("Internal-IP", S, "The node's InternalIP address."),
                Column("External-IP", S, "The node's ExternalIP address."),
                Column("OS-Image", S, "The OS image the node reports."),
                Column("Kernel-Version", S, "The kernel version the node reports."),
                Column("Container-Runtime", S, "The container runtime version the node reports."),
                Column(
                    "Conditions", S, "Conditions other than Ready that are True.", kubera_only=True
                ),
                Column("Taints", S, "The node's taints.", kubera_only=True),
                Column(
                    "CPU", S, "CPU requested by the node's pods / allocatable.", kubera_only=True
                ),
                Column("Memory", S, "Memory requested / allocatable.", kubera_only=True),
                Column("Pods", S, "Pods bound to the node / allocatable pods.", kubera_only=True),
            ),
        ),
        _node_row,
    ),
    "Namespace": Columns(
        (NAME, Column("Status", S, "The namespace's phase: Active or Terminating."), AGE),
        _namespace_row,
    ),
    "Event": Columns(
        (
            Column("Last Seen", S, "Time since the event was last seen."),
            Column("Type", S, "Normal or Warning."),
            Column("Reason", S, "Why the event happened, in one CamelCase word."),
            Column("Object", S, "The object the event is about."),
            Column("Message", S, "What happened, for a human."),
            *wide_columns(
                Column("Source", S, "The component that reported the event."),
                Column("Count", S, "How many times the event happened."),
                Column("First Seen", S, "Time since the event was first seen."),
                Column("Name", S, "The event object's name.", format="name"),
                Column("Subobject", S, "The part of the object (fieldPath).", table_only=True),
            ),
        ),
        _event_row,
        table_order=(
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name",
        ),
    ),
    "PriorityClass": Columns(
        (
            NAME,
            Column("Value", INT, "The priority pods of this class get."),
            Column("Global-Default", "boolean", "Whether pods without a class get this one."),
            AGE,
            Column("PreemptionPolicy", S, "Whether pods of this class preempt lower ones."),
        ),
        _priority_class_row,
    ),
    "PodDisruptionBudget": Columns(
        (
            NAME,
            Column("Min Available", S, "Pods that must stay available."),
            Column("Max Unavailable", S, "Pods that may be unavailable."),
            Column("Allowed Disruptions", INT, "Evictions allowed right now."),
            AGE,
        ),
        _pdb_row,
    ),
    "ReplicaSet": Columns(
        (
            NAME,
            Column("Desired", INT, "The replicas the spec asks for."),
            Column("Current", INT, "The replicas that exist."),
            Column("Ready", INT, "The replicas that are ready."),
            AGE,
            *wide_columns(
                Column("Containers", S, "The pod template's container names."),
                Column("Images", S, "The pod template's images."),
                Column("Selector", S, "The label selector of the replicas."),
            ),
        ),
        _rs_row,
    ),
    "Deployment": Columns(
        (
            NAME,
            Column("Ready", S, "Ready replicas out of the desired ones."),
            Column("Up-to-date", INT, "Replicas running the latest pod template."),
            Column("Available", INT, "Replicas available to users."),
            AGE,
            *wide_columns(
                Column("Containers", S, "The pod template's container names."),
                Column("Images", S, "The pod template's images."),
                Column("Selector", S, "The label selector of the replicas."),
            ),
        ),
        _deploy_row,
    ),
    "Lease": Columns((NAME, Column("Holder", S, "The lease's holder identity."), AGE), _lease_row),
    "RuntimeClass": Columns(
        (NAME, Column("Handler", S, "The CRI handler pods of this class run with."), AGE),
        _runtime_class_row,
    ),
    "ResourceSlice": Columns(
        (
            NAME,
            Column("Node", S, "The node whose devices the slice publishes."),
            Column("Driver", S, "The DRA driver of the devices."),
            Column("Pool", S, "The pool the slice belongs to."),
            AGE,
        ),
        _resource_slice_row,
    ),
    "ResourceClaim": Columns(
        (
            NAME,
            Column("State", S, "A summary of the current state (allocated, pending, reserved)."),
            AGE,
        ),
        _resource_claim_row,
    ),
}
COLUMNS.update(RESOURCE_COLUMNS)
COLUMNS.update(POLICY_COLUMNS)
COLUMNS.update(APPS_COLUMNS)
COLUMNS.update(BATCH_COLUMNS)
COLUMNS.update(SERVICE_COLUMNS)
COLUMNS.update(STORAGE_COLUMNS)
GENERIC = Columns((NAME, AGE), _generic_row)

__all__ = [
    "AGE",
    "COLUMNS",
    "GENERIC",
    "INT",
    "NAME",
    "NONE",
    "UNKNOWN",
    "Column",
    "Columns",
    "NodeUsage",
    "S",
    "age",
    "allocatable",
    "bound_pods_selector",
    "columns_of",
    "container_state",
    "format_amount",
    "format_label_selector",
    "format_labels",
    "format_taint",
    "human_duration",
    "is_byte_resource",
    "is_terminated",
    "node_problems",
    "node_roles",
    "node_status",
    "node_usage",
    "parse_time",
    "pod_status",
    "rows",
    "wide_columns",
]


def columns_of(kind: Kind) -> Columns:
    return COLUMNS.get(kind.name, GENERIC)


def rows(
    kind: Kind,
    objs: Iterable[Message],
    *,
    now: float,
    wide: bool = False,
    usage: Mapping[str, NodeUsage] | None = None,
    table: bool = False,
) -> list[list[str]]:
    """The cells of each object, default columns then (when `wide`) the wide ones, in the
    order of the kind's `columns`. `usage` (`node_usage` of the bound pods) fills the CPU /
    MEMORY / PODS columns of nodes in `-o wide`; without it they say <unknown>. `table`
    keeps the cells of kubectl's columns kubera's CLI does not print (`table_only`)."""
    cols = columns_of(kind)
    row_of = cols.row
    if kind.kind == "Node":
        row_of = functools.partial(_node_row, usage=usage)
    out = [row_of(obj, now, wide) for obj in objs]
    if table or not wide:  # table_only columns are all wide ones
        return out
    keep = [i for i, c in enumerate(cols.columns) if not c.table_only]
    return [[row[i] for i in keep] for row in out]
