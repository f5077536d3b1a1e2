"""`kubera describe` of the kinds with describers of their own beyond the generic one:
ResourceClaim (its requests, allocation and reservations, as kubectl's describer), and
ResourceQuota and LimitRange (kubectl's layouts). The writer and the shared sections
(metadata, events) are describe.py's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.message import Message

from kubera.printing.describe import (
    Describer,
    annotations_list,
    describe_events,
    describe_meta,
    labels_list,
    rfc1123,
)
from services.api.printers.printers import (
    NONE,
    claim_state,
)


# ------------------------------------------------------------------ DRA
def _describe_exactly(w: Describer, level: int, x: Any) -> None:
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
    w = Describer()
    describe_meta(w, claim, namespaced=True)
    w.multiline(0, "Labels", labels_list(c.metadata.labels))
    w.multiline(0, "Annotations", annotations_list(c.metadata.annotations))
    w.line(0, "CreationTimestamp:", rfc1123(c.metadata.creation_timestamp))
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
    describe_events(w, events, now)
    return w.text()


# ------------------------------------------------------------------ quota and limits

#: kubectl's helpText for each quota scope (describe.go, helpTextForResourceQuotaScope).
_SCOPE_HELP = {
    "Terminating": "Matches all pods that have an active deadline. These pods have a limited "
    "lifespan on a node before being actively terminated by the system.",
    "NotTerminating": "Matches all pods that do not have an active deadline. These pods usually "
    "include long running pods whose container command is not expected to terminate.",
    "BestEffort": "Matches all pods that do not have resource requirements set. These pods have "
    "a best effort quality of service.",
    "NotBestEffort": "Matches all pods that have at least one resource requirement set. These "
    "pods have a burstable or guaranteed quality of service.",
}


def describe_resource_quota(rq: Message) -> str:
    """kubectl describe quota: name, namespace, scopes, then Resource / Used / Hard."""
    x: Any = rq
    w = Describer()
    describe_meta(w, rq, namespaced=True)
    scopes = sorted(x.spec.scopes)
    if scopes:
        w.line(0, "Scopes:", ", ".join(scopes))
        for s in scopes:
            if s in _SCOPE_HELP:
                w.line(0, f" * {_SCOPE_HELP[s]}")
    for req in x.spec.scope_selector.match_expressions:
        values = ", ".join(req.values)
        w.line(0, "Scope Selector:", f"{req.scope_name} {req.operator} [{values}]")
    w.line(0, "Resource", "Used", "Hard")
    w.line(0, "--------", "----", "----")
    for name in sorted(x.status.hard):
        w.line(0, name, x.status.used.get(name, "0"), x.status.hard[name])
    return w.text()


def describe_limit_range(lr: Message) -> str:
    """kubectl describe limitrange: one row per type and resource with its bounds and
    defaults ("-" where none is set)."""
    x: Any = lr
    w = Describer()
    describe_meta(w, lr, namespaced=True)
    w.line(
        0,
        "Type",
        "Resource",
        "Min",
        "Max",
        "Default Request",
        "Default Limit",
        "Max Limit/Request Ratio",
    )
    w.line(
        0,
        "----",
        "--------",
        "---",
        "---",
        "---------------",
        "-------------",
        "-----------------------",
    )
    for item in x.spec.limits:
        maps = (
            item.min,
            item.max,
            item.default_request,
            item.default,
            item.max_limit_request_ratio,
        )
        for res in sorted(set().union(*(set(m) for m in maps))):
            w.line(0, item.type, res, *(m.get(res, "-") for m in maps))
    return w.text()
