"""What the UI's event stream carries: one small delta per object change, coalesced per
object, framed as server-sent events.

Why this module exists: the browser holds 5,000 nodes and 50,000 pods, so it is sent
neither the objects (a Pod's JSON is ~2 KB) nor whole lists per tick, but, per change,
the few fields a view draws (the heatmap, the phase counts, the pending list, the
leaders, the event feed), as the watch cache delivers the change:

    node   {"t":"node","name","zone","alloc":{resource: amount},"ready","unsched",
            "taints":["key=value:Effect"],"pressure":["MemoryPressure",...]}
    pod    {"t":"pod","ns","name","phase","node","req":{resource: amount},"del",
            "why" (PodScheduled=False: reason: message),"nominated","lat" (seconds
            from creation to PodScheduled=True)}
    lease  {"t":"lease","ns","name","holder","transitions","acquire","renew","duration"}
    event  {"t":"event","type","reason","obj","msg","time"} (only events that happen
            while the page is open: a feed, not a history)
    slice  {"t":"slice","name","node","driver","pool","devices": count} (DRA: a node's
            devices are those of the slices naming it)
    claim  {"t":"claim","ns","name","devices":[[driver, pool, device], ...]} (its
            allocation: a device is allocated on the node of its pool's slices)
    a deletion: {"t": T, "ns", "name", "gone": true}

Amounts are in the scheduler's units (services/api/helpers/resources.py): cpu in
millicores, everything else whole units, so allocated/allocatable is a division of two
integers the page adds up itself (a pod's requests count on its node until the pod is
Succeeded or Failed, as the scheduler's cache counts them).

`Coalescer` keeps the latest delta per object until the stream's next flush: an object
changed ten times between two flushes is sent once, and the memory one slow browser can
hold is bounded by the number of objects, never by the number of changes. Events are not
objects that change: the feed keeps the newest `MAX_EVENTS` per flush.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import coordination_pb2, core_pb2, resource_pb2
from services.api.helpers.resources import Resource, pod_requests
from services.api.helpers.wellknown import LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_ZONE
from services.api.machinery.kubeobject import narrow, object_meta
from services.clock import parse_rfc3339

Delta = dict[str, Any]

#: The newest events a flush carries (older ones between two flushes are dropped).
MAX_EVENTS = 200
#: A message longer than this is cut (event messages can carry whole node lists).
MAX_MESSAGE = 400


def amounts(r: Resource) -> dict[str, int]:
    """The non-zero amounts of `r` by resource name (cpu in millicores)."""
    out = {
        "cpu": r.milli_cpu,
        "memory": r.memory,
        "ephemeral-storage": r.ephemeral_storage,
        "pods": r.allowed_pod_number,
        **r.scalar,
    }
    return {k: v for k, v in out.items() if v}


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def node_delta(obj: Message) -> Delta:
    node = narrow(obj, core_pb2.Node)
    labels = node.metadata.labels
    conds = {c.type: c.status for c in node.status.conditions}
    return {
        "t": "node",
        "name": node.metadata.name,
        "zone": labels.get(LABEL_TOPOLOGY_ZONE) or labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE, ""),
        "alloc": amounts(Resource.from_list(node.status.allocatable)),
        "ready": conds.get("Ready", "Unknown"),
        "unsched": node.spec.unschedulable,
        "taints": [
            f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in node.spec.taints
        ],
        "pressure": sorted(t for t, s in conds.items() if t != "Ready" and s == "True"),
    }


def _seconds_between(start: str, end: str) -> float | None:
    try:
        return round(parse_rfc3339(end) - parse_rfc3339(start), 3)
    except ValueError:
        return None


def pod_delta(obj: Message) -> Delta:
    pod = narrow(obj, core_pb2.Pod)
    m = pod.metadata
    req = amounts(pod_requests(pod))
    req["pods"] = 1
    d: Delta = {
        "t": "pod",
        "ns": m.namespace,
        "name": m.name,
        "phase": pod.status.phase or "Pending",
        "node": pod.spec.node_name,
        "req": req,
    }
    if m.deletion_timestamp:
        d["del"] = True
    if pod.status.nominated_node_name:
        d["nominated"] = pod.status.nominated_node_name
    for c in pod.status.conditions:
        if c.type != "PodScheduled":
            continue
        if c.status == "False":
            d["why"] = _cut(f"{c.reason}: {c.message}" if c.message else c.reason)
        elif c.status == "True" and c.last_transition_time and m.creation_timestamp:
            lat = _seconds_between(m.creation_timestamp, c.last_transition_time)
            if lat is not None:
                d["lat"] = max(lat, 0.0)
    return d


def lease_delta(obj: Message) -> Delta:
    lease = narrow(obj, coordination_pb2.Lease)
    s = lease.spec
    return {
        "t": "lease",
        "ns": lease.metadata.namespace,
        "name": lease.metadata.name,
        "holder": s.holder_identity,
        "transitions": s.lease_transitions,
        "acquire": s.acquire_time,
        "renew": s.renew_time,
        "duration": s.lease_duration_seconds,
    }


def event_delta(obj: Message) -> Delta:
    ev = narrow(obj, core_pb2.Event)
    io = ev.involved_object
    return {
        "t": "event",
        "type": ev.type or "Normal",
        "reason": ev.reason,
        "obj": f"{io.kind}/{io.namespace + '/' if io.namespace else ''}{io.name}",
        "msg": _cut(ev.message),
        "time": ev.last_timestamp or ev.event_time or ev.metadata.creation_timestamp,
    }


def slice_delta(obj: Message) -> Delta:
    rs = narrow(obj, resource_pb2.ResourceSlice)
    return {
        "t": "slice",
        "ns": "",
        "name": rs.metadata.name,
        "node": rs.spec.node_name,
        "driver": rs.spec.driver,
        "pool": rs.spec.pool.name,
        "devices": len(rs.spec.devices),
    }


def claim_delta(obj: Message) -> Delta:
    claim = narrow(obj, resource_pb2.ResourceClaim)
    results = claim.status.allocation.devices.results
    return {
        "t": "claim",
        "ns": claim.metadata.namespace,
        "name": claim.metadata.name,
        "devices": [[r.driver, r.pool, r.device] for r in results],
    }


#: Resource (plural) -> its delta's type and encoder.
ENCODERS = {
    "nodes": ("node", node_delta),
    "pods": ("pod", pod_delta),
    "leases": ("lease", lease_delta),
    "events": ("event", event_delta),
    "resourceslices": ("slice", slice_delta),
    "resourceclaims": ("claim", claim_delta),
}


def delta(resource: str, event_type: str, obj: Message) -> Delta:
    """The delta of one watch event (ADDED, MODIFIED or DELETED) of `resource`."""
    t, encode = ENCODERS[resource]
    if event_type == "DELETED" and resource != "events":
        m = object_meta(obj)
        return {"t": t, "ns": m.namespace, "name": m.name, "gone": True}
    return encode(obj)


class Coalescer:
    """The deltas not yet sent: the latest per object (and the newest events), in the
    order the objects first changed since the last `take`."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str, str], Delta] = {}
        self._events: deque[Delta] = deque(maxlen=MAX_EVENTS)

    def __len__(self) -> int:
        return len(self._latest) + len(self._events)

    def add(self, d: Delta) -> None:
        if d["t"] == "event":
            self._events.append(d)
            return
        self._latest[(d["t"], d.get("ns", ""), d["name"])] = d

    def drop(self, t: str) -> None:
        """Forget the unsent deltas of type `t` (its resource is being sent anew)."""
        self._latest = {k: v for k, v in self._latest.items() if k[0] != t}

    def take(self) -> list[Delta]:
        out = [*self._latest.values(), *self._events]
        self._latest = {}
        self._events.clear()
        return out


def frame(event: str, data: Any) -> bytes:
    """One server-sent event (its data is one line of JSON: JSON never holds a raw newline)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
