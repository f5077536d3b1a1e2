"""`kubectl describe`'s text: one object in detail, with its events.

Split from `kubera.printing.output` because describe is a layout of its own (kubectl's
PrefixWriter lines aligned by Go's text/tabwriter, per-kind sections for pods, nodes and
ResourceClaims, a generic field walk for the rest) that shares only the cell helpers of
`services.api.printers.printers` and the Kubernetes-shaped dict of `kubera.printing.output`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from kubera.printing.output import to_dict
from protos.kubera.v1 import apps_pb2, coordination_pb2, core_pb2
from services.api.dra.claims import ClaimNotCreatedError, claim_name, is_reserved_for_pod
from services.api.helpers.resources import Resource, pod_requests
from services.api.machinery.kinds import kind_of
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.printers.printers import (
    NONE,
    age,
    allocatable,
    container_state,
    format_amount,
    format_label_selector,
    format_taint,
    node_roles,
    parse_time,
    pod_status,
)


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
                # only a tab-terminated cell is padded (an empty value's line keeps the
                # padding of its title, as kubectl's does)
                terminated = j < len(cells) - 1
                parts.append(cell.ljust(widths[j]) if terminated and j < len(widths) else cell)
            out.append("".join(parts))

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


class Describer:
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


def labels_list(m: Any) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(m.items())]


#: printAnnotationsMultiline: a longer `key: value` is printed as `key:` then its lines.
MAX_ANNOTATION_LEN = 140


def annotations_list(m: Any) -> list[str]:
    """kubectl's printAnnotationsMultiline lines: `key: value`, sorted; a value with a
    newline or too long for one line goes on lines of its own, each cut to the width."""
    out: list[str] = []
    for k, v in sorted(m.items()):
        if k in _HIDDEN_ANNOTATIONS:
            continue
        value = v.removesuffix("\n")
        if len(value) + len(k) + 2 > MAX_ANNOTATION_LEN or "\n" in value:
            out.append(f"{k}:")
            width = MAX_ANNOTATION_LEN - 2
            out.extend(f"  {s[:width] + '...' if len(s) > width else s}" for s in value.split("\n"))
        else:
            out.append(f"{k}: {value}")
    return out


def rfc1123(ts: str) -> str:
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


def describe_meta(w: Describer, obj: Message, *, namespaced: bool) -> None:
    meta: Any = object_meta(obj)
    w.line(0, "Name:", meta.name)
    if namespaced:
        w.line(0, "Namespace:", meta.namespace)


def describe_events(w: Describer, events: Sequence[Message], now: float) -> None:
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


def _describe_container(w: Describer, c: Any, status: Any | None) -> None:
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
        state = container_state(status)
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


def describe_pod(
    pod: Message,
    events: Sequence[Message],
    now: float,
    claims: Mapping[str, Message] | None = None,
) -> str:
    """kubectl describe pod; `claims` (ResourceClaims by name, those found) fills its
    Resource Claims section."""
    pod = narrow(pod, core_pb2.Pod)
    spec, status, meta = pod.spec, pod.status, pod.metadata
    w = Describer()
    describe_meta(w, pod, namespaced=True)
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
        w.line(0, "Start Time:", rfc1123(status.start_time))
    w.multiline(0, "Labels", labels_list(meta.labels))
    w.multiline(0, "Annotations", annotations_list(meta.annotations))
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
        for cond in status.conditions:
            w.line(1, cond.type, cond.status)
    w.line(0, "QoS Class:", status.qos_class or NONE)
    w.multiline(0, "Node-Selectors", labels_list(spec.node_selector))
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
    if spec.resource_claims:
        _describe_pod_claims(w, pod, claims or {})
    describe_events(w, events, now)
    return w.text()


def _describe_pod_claims(w: Describer, pod: Message, claims: Mapping[str, Message]) -> None:
    """Each spec.resourceClaims entry: the claim it names, its devices, its reservation."""
    p: Any = pod
    w.line(0, "Resource Claims:")
    for entry in p.spec.resource_claims:
        try:
            ref = claim_name(p, entry)
        except ClaimNotCreatedError:
            template = entry.resource_claim_template_name
            w.line(1, f"{entry.name}:", f"<not created yet> (from template {template})")
            continue
        except ValueError:
            w.line(1, f"{entry.name}:", "<names no claim>")
            continue
        if ref.name is None:
            w.line(1, f"{entry.name}:", "<no claim needed>")
            continue
        source = f" (from template {entry.resource_claim_template_name})" if ref.check_owner else ""
        w.line(1, f"{entry.name}:", ref.name + source)
        claim: Any = claims.get(ref.name)
        if claim is None:
            w.line(2, "State:", "not found")
            continue
        results = claim.status.allocation.devices.results
        w.line(2, "Allocated:", "true" if claim.status.HasField("allocation") else "false")
        w.multiline(2, "Devices", [f"{r.driver}/{r.pool}/{r.device}" for r in results])
        w.line(2, "Reserved:", "true" if is_reserved_for_pod(p, claim) else "false")


# Resource arithmetic for describe node (kubectl's resourcehelper.PodRequestsAndLimits):
# requests are the scheduler's `pod_requests`, so describe, `get nodes -o wide` and
# NodeResourcesFit agree; limits mirror it.

_PER_POD = ("cpu", "memory")
_POD_COLUMNS = ("CPU Requests", "CPU Limits", "Memory Requests", "Memory Limits")


def pod_limits(pod: core_pb2.Pod) -> Resource:
    """kubectl's podLimits: sum of containers, at least the largest init container, plus
    the overhead on the resources that have a limit at all."""
    spec = pod.spec
    total = Resource()
    for c in spec.containers:
        total.add_list(c.resources.limits)
    for c in spec.init_containers:
        total.set_max(Resource.from_list(c.resources.limits))
    if spec.overhead:
        over = Resource.from_list(spec.overhead)
        if total.milli_cpu:
            total.milli_cpu += over.milli_cpu
        if total.memory:
            total.memory += over.memory
        if total.ephemeral_storage:
            total.ephemeral_storage += over.ephemeral_storage
        for name, amount in over.scalar.items():
            if total.scalar.get(name):
                total.scalar[name] += amount
    return total


def _percent(amount: int, total: int) -> int:
    """kubectl's int64(float64(amount) / float64(total) * 100), 0 when there is no total."""
    return int(amount / total * 100) if total else 0


def _amount(name: str, amount: int, total: int) -> str:
    return f"{format_amount(name, amount)} ({_percent(amount, total)}%)"


def _describe_lease(w: Describer, lease: Message | None, lease_error: str) -> None:
    """kubectl's describeNodeLease, or its `Failed to get lease` line."""
    if lease is None:
        if lease_error:
            w.line(0, "Lease:", f"Failed to get lease: {lease_error}")
        return
    spec = narrow(lease, coordination_pb2.Lease).spec
    w.line(0, "Lease:")
    holder = spec.holder_identity if spec.HasField("holder_identity") else ""
    w.line(1, "HolderIdentity:", holder or "<unset>")
    for title, ts in (("AcquireTime:", spec.acquire_time), ("RenewTime:", spec.renew_time)):
        w.line(1, title, rfc1123(ts) if ts else "<unset>")


def describe_node(
    node: Message,
    pods: Sequence[Message],
    events: Sequence[Message],
    now: float,
    *,
    lease: Message | None = None,
    lease_error: str = "",
) -> str:
    """kubectl describe node, with its pods' requests against allocatable. `lease` is the
    node's Lease in kube-node-lease; `lease_error` why it could not be read (no Lease
    section when neither is given)."""
    node = narrow(node, core_pb2.Node)
    spec, status, meta = node.spec, node.status, node.metadata
    w = Describer()
    describe_meta(w, node, namespaced=False)
    w.line(0, "Roles:", node_roles(node))
    w.multiline(0, "Labels", labels_list(meta.labels))
    w.multiline(0, "Annotations", annotations_list(meta.annotations))
    w.line(0, "CreationTimestamp:", rfc1123(meta.creation_timestamp))
    w.multiline(0, "Taints", [format_taint(t) for t in spec.taints])
    w.line(0, "Unschedulable:", "true" if spec.unschedulable else "false")
    _describe_lease(w, lease, lease_error)
    if status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message")
        w.line(1, "----", "------", "-----------------", "------------------", "------", "-------")
        for c in status.conditions:
            w.line(
                1,
                c.type,
                c.status,
                rfc1123(c.last_heartbeat_time),
                rfc1123(c.last_transition_time),
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
    if spec.pod_cidrs:
        w.line(0, "PodCIDRs:", ",".join(spec.pod_cidrs))
    if spec.provider_id:
        w.line(0, "ProviderID:", spec.provider_id)
    _describe_node_resources(w, node, pods, now)
    describe_events(w, events, now)
    return w.text()


def _describe_node_resources(
    w: Describer, node: core_pb2.Node, pods: Sequence[Message], now: float
) -> None:
    """kubectl's describeNodeResource: the non-terminated pods, then their totals."""
    alloc_map = allocatable(node)
    alloc = Resource.from_list(alloc_map)
    w.line(0, "Non-terminated Pods:", f"({len(pods)} in total)")
    w.line(1, "Namespace", "Name", "", *_POD_COLUMNS, "Age")
    w.line(1, "---------", "----", "", *("-" * len(c) for c in _POD_COLUMNS), "---")
    requests, limits = Resource(), Resource()
    for pod in (narrow(p, core_pb2.Pod) for p in pods):
        req, lim = pod_requests(pod), pod_limits(pod)
        requests.add(req)
        limits.add(lim)
        pm = pod.metadata
        cells = [
            _amount(name, r.get(name), alloc.get(name)) for name in _PER_POD for r in (req, lim)
        ]
        w.line(1, pm.namespace, pm.name, "", *cells, age(pm.creation_timestamp, now))
    w.line(0, "Allocated resources:")
    w.line(1, "(Total limits may be over 100 percent, i.e., overcommitted.)")
    w.line(1, "Resource", "Requests", "Limits")
    w.line(1, "--------", "--------", "------")
    hugepages = sorted(k for k in alloc_map if k.startswith("hugepages-"))
    for name in ("cpu", "memory", "ephemeral-storage", *hugepages):
        total = alloc.get(name)
        w.line(
            1,
            name,
            _amount(name, requests.get(name), total),
            _amount(name, limits.get(name), total),
        )
    standard = ("cpu", "memory", "ephemeral-storage", "pods")
    for name in sorted(k for k in alloc_map if k not in standard and k not in hugepages):
        # kubectl prints extended resources without percentages.
        w.line(
            1, name, format_amount(name, requests.get(name)), format_amount(name, limits.get(name))
        )


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
    w: Describer, level: int, key: str, value: Any, *, verbatim: bool = False
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
    meta: Any = object_meta(obj)
    w = Describer()
    describe_meta(w, obj, namespaced=kind.namespaced)
    w.multiline(0, "Labels", labels_list(meta.labels))
    w.multiline(0, "Annotations", annotations_list(meta.annotations))
    w.line(0, "CreationTimestamp:", rfc1123(meta.creation_timestamp))
    if isinstance(
        obj, apps_pb2.Deployment | apps_pb2.ReplicaSet | apps_pb2.DaemonSet | apps_pb2.StatefulSet
    ):
        w.line(0, "Selector:", format_label_selector(obj.spec.selector))
    if kind.kind == "Secret":
        # kubectl's SecretDescriber: the type and each key's size, never the values.
        secret: Any = obj
        w.line(0, "")
        w.line(0, "Type:", secret.type)
        w.line(0, "")
        w.line(0, "Data")
        w.line(0, "====")
        for k in sorted(secret.data):
            w.line(0, f"{k}:", f"{len(secret.data[k])} bytes")
        describe_events(w, events, now)
        return w.text()
    for key, value in d.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        _describe_value(w, 0, key, value)
    describe_events(w, events, now)
    return w.text()
