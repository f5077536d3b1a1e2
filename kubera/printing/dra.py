"""`kubera describe resourceclaim`: a claim's requests, its allocation and who it is
reserved for, in kubectl describe's layout (kubera.printing.describe's writer). Kept apart
from describe.py, which lays out the core kinds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.message import Message

from kubera.printing.describe import (
    _annotations_list,
    _Describe,
    _describe_events,
    _describe_meta,
    _labels_list,
    _rfc1123,
)
from services.api.printers import NONE, claim_state


def _describe_exactly(w: _Describe, level: int, x: Any) -> None:
    w.line(level, "Device Class Name:", x.device_class_name)
    w.multiline(level, "Selectors", [s.cel.expression for s in x.selectors])
    w.line(level, "Allocation Mode:", x.allocation_mode or "ExactCount")
    if (x.allocation_mode or "ExactCount") == "ExactCount":
        w.line(level, "Count:", str(x.count or 1))
    if "admin_access" in x.DESCRIPTOR.fields_by_name and x.HasField("admin_access"):
        w.line(level, "Admin Access:", "true" if x.admin_access else "false")


def _node_selector_terms(sel: Any) -> list[str]:
    out = []
    for term in sel.node_selector_terms:
        parts = [
            f"{e.key} {e.operator} [{', '.join(e.values)}]"
            for e in [*term.match_expressions, *term.match_fields]
        ]
        out.append("; ".join(parts) or "<empty term>")
    return out


def describe_resource_claim(claim: Message, events: Sequence[Message], now: float) -> str:
    """kubectl describe resourceclaim: metadata, spec requests and constraints, allocation
    (devices, node selector), reservedFor, events."""
    c: Any = claim
    w = _Describe()
    _describe_meta(w, claim, namespaced=True)
    w.multiline(0, "Labels", _labels_list(c.metadata.labels))
    w.multiline(0, "Annotations", _annotations_list(c.metadata.annotations))
    w.line(0, "CreationTimestamp:", _rfc1123(c.metadata.creation_timestamp))
    owners = [f"{r.kind}/{r.name}" for r in c.metadata.owner_references]
    if owners:
        w.multiline(0, "Controlled By" if len(owners) == 1 else "Owners", owners)
    w.line(0, "State:", claim_state(claim))
    w.line(0, "Spec:")
    w.line(1, "Devices:")
    w.line(2, "Requests:")
    for r in c.spec.devices.requests:
        w.line(3, "Name:", r.name)
        if r.HasField("exactly"):
            _describe_exactly(w, 4, r.exactly)
        if r.first_available:
            w.line(4, "First Available:")
            for sub in r.first_available:
                w.line(5, "Name:", sub.name)
                _describe_exactly(w, 6, sub)
    if c.spec.devices.constraints:
        w.line(2, "Constraints:")
        for k in c.spec.devices.constraints:
            w.line(3, "Requests:", ", ".join(k.requests) or "<all>")
            w.line(4, "Match Attribute:", k.match_attribute)
    w.line(0, "Status:")
    if c.status.HasField("allocation"):
        a = c.status.allocation
        w.line(1, "Allocation:")
        w.line(2, "Devices:")
        w.line(3, "Request", "Driver", "Pool", "Device")
        for r in a.devices.results:
            request = r.request + (" (admin access)" if r.admin_access else "")
            w.line(3, request, r.driver, r.pool, r.device)
        w.multiline(2, "Node Selector", _node_selector_terms(a.node_selector))
    else:
        w.line(1, "Allocation:", NONE)
    refs = [
        f"{r.resource}{'.' + r.api_group if r.api_group else ''}/{r.name} ({r.uid})"
        for r in c.status.reserved_for
    ]
    w.multiline(1, "Reserved For", refs)
    _describe_events(w, events, now)
    return w.text()


__all__ = ["describe_resource_claim"]
