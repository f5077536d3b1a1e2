"""The scheduler's writes as API calls the dispatcher holds, merges and sends (upstream
framework/api_calls: pod_status_patch.go, pod_binding.go, api_calls.go).

    PodStatusPatchCall   PodScheduled conditions and/or status.nominatedNodeName of a pod
    PodBindingCall       the pod's Bind, with the fencing token of the term that queued it
    EventCall            an Event about a pod (kubera's: upstream's events go through the
                         event broadcaster, not the dispatcher)

A call's key (`uid`) is the object it writes: a pod's status patch and its binding share
the pod's UID, so the binding (more relevant) supersedes a status patch not yet sent, and
waits for one already on the wire. An Event is another object: its key is its own.

Fencing: a PodBindingCall carries the token read when it was queued, never one read when it
is sent, so a call queued in a term that has since ended is refused by the apiserver (the
token's election key no longer has that create_revision) instead of landing under a later
term. The dispatcher of a term is also closed when the term ends (dispatcher.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from protos.kubera.v1 import core_pb2
from services.api.helpers.fencing import Fencing
from services.api.machinery.kinds import BY_KIND

if TYPE_CHECKING:
    from services.client import EventRecorder, Pacer

POD_STATUS_PATCH = "pod_status_patch"
POD_BINDING = "pod_binding"
EVENT = "event"

#: Upstream's Relevances: a more relevant call overwrites a less relevant one for the same
#: object. EVENT is of another kind of object than the other two (its key is the Event's).
RELEVANCES: dict[str, int] = {POD_STATUS_PATCH: 1, POD_BINDING: 2, EVENT: 1}


class APICall(Protocol):
    """One write the dispatcher may hold, merge and send (upstream fwk.APICall)."""

    #: One of RELEVANCES' keys.
    call_type: str
    #: The key of the object it writes (a pod's UID).
    uid: str

    async def execute(self, client: Any) -> None:
        """Send it; an exception is the call's error."""

    def merge(self, old: APICall) -> None:
        """Take into this call what `old` (same type and object, older) would still write."""

    def sync(self, obj: Any) -> Any:
        """`obj` (a newer copy of the object) with this call applied; the call takes
        `obj` as its base when it has not started."""

    def is_noop(self) -> bool:
        """Whether sending it would change nothing."""


def condition_dict(c: core_pb2.PodCondition) -> dict[str, str]:
    out = {
        "type": c.type,
        "status": c.status,
        "reason": c.reason,
        "message": c.message,
        "lastTransitionTime": c.last_transition_time,
    }
    if c.last_probe_time:
        out["lastProbeTime"] = c.last_probe_time
    return out


def condition_needs_update(status: core_pb2.PodStatus, cond: core_pb2.PodCondition) -> bool:
    """Upstream conditionNeedsUpdate: no condition of this type, or one whose status,
    reason, message or lastProbeTime differ."""
    for old in status.conditions:
        if old.type == cond.type:
            return (old.status, old.reason, old.message, old.last_probe_time) != (
                cond.status,
                cond.reason,
                cond.message,
                cond.last_probe_time,
            )
    return True


def update_condition(status: core_pb2.PodStatus, cond: core_pb2.PodCondition) -> bool:
    """podutil.UpdatePodCondition on `status` in place: add the condition or update the one
    of its type; lastTransitionTime kept while the status stays (`cond`'s own is the
    transition time otherwise). Whether anything changed."""
    for old in status.conditions:
        if old.type != cond.type:
            continue
        new = core_pb2.PodCondition()
        new.CopyFrom(cond)
        if old.status == cond.status and old.last_transition_time:
            new.last_transition_time = old.last_transition_time
        changed = new != old
        old.CopyFrom(new)
        return changed
    status.conditions.append(cond)
    return True


class PodStatusPatchCall:
    """PodScheduled conditions and the nominated node of one pod (upstream
    PodStatusPatchCall). `nominated`: the node to write into status.nominatedNodeName
    ("" clears it), or None to leave it (upstream's ModeNoop)."""

    call_type = POD_STATUS_PATCH

    def __init__(
        self,
        pod: core_pb2.Pod,
        conditions: list[core_pb2.PodCondition] | None = None,
        nominated: str | None = None,
        *,
        pacer: Pacer | None = None,
        after: Awaitable[Any] | None = None,
    ) -> None:
        self.uid = pod.metadata.uid
        self.name, self.namespace = pod.metadata.name, pod.metadata.namespace
        self.status = core_pb2.PodStatus()
        self.status.CopyFrom(pod.status)
        self.conditions = list(conditions or ())
        self.nominated = nominated
        #: Paces the write (the scheduler's report QPS, failure_report.py); None: unpaced.
        self.pacer = pacer
        #: Awaited before writing: the FailedScheduling event's outcome, so whoever sees
        #: the condition can find the event (failure_report.py). While it waits the call
        #: is in flight: a binding of the pod follows it.
        self.after = after
        #: Set when execute() starts: sync() no longer changes the base status then.
        self.executed = False

    def _apply(self, status: core_pb2.PodStatus) -> bool:
        """upstream syncStatus: the conditions and the nomination onto `status` in place."""
        nominate = self.nominated is not None and status.nominated_node_name != self.nominated
        changed = False
        for c in self.conditions:
            copy = core_pb2.PodCondition()
            copy.CopyFrom(c)
            changed = update_condition(status, copy) or changed
        if nominate:
            status.nominated_node_name = self.nominated or ""
        return changed or nominate

    def patch(self) -> dict[str, Any] | None:
        """The merge patch this call sends against its base status (None: nothing to do)."""
        status = core_pb2.PodStatus()
        status.CopyFrom(self.status)
        if not self._apply(status):
            return None
        out: dict[str, Any] = {}
        if self.conditions:
            out["conditions"] = [condition_dict(c) for c in status.conditions]
        if self.nominated is not None and self.status.nominated_node_name != self.nominated:
            out["nominatedNodeName"] = self.nominated
        return {"status": out} if out else None

    async def execute(self, client: Any) -> None:
        self.executed = True
        body = self.patch()
        if body is None:
            return
        if self.after is not None:
            await self.after
        if self.pacer is not None:
            await self.pacer.wait()
        await client.patch(
            BY_KIND["Pod"], self.name, json.dumps(body), namespace=self.namespace, status=True
        )

    def sync(self, obj: Any) -> Any:
        if not self.executed:
            self.status = core_pb2.PodStatus()
            self.status.CopyFrom(obj.status)
        copy = core_pb2.Pod()
        copy.CopyFrom(obj)
        return copy if self._apply(copy.status) else obj

    def merge(self, old: APICall) -> None:
        if not isinstance(old, PodStatusPatchCall):
            raise TypeError(f"call of type {type(old).__name__} is not a PodStatusPatchCall")
        if self.nominated is None and old.nominated is not None:
            self.nominated = old.nominated
        mine = {c.type for c in self.conditions}
        self.conditions.extend(c for c in old.conditions if c.type not in mine)
        if self.pacer is None:
            self.pacer = old.pacer
        if self.after is None:
            self.after = old.after

    def is_noop(self) -> bool:
        if self.nominated is not None and self.status.nominated_node_name != self.nominated:
            return False
        return not any(condition_needs_update(self.status, c) for c in self.conditions)


class PodBindingCall:
    """The Bind of one pod (upstream PodBindingCall), fenced with the token of the term
    that queued it (`fencing`; None: unfenced, or `check_allocation` in shared-state mode).
    `result`: the bound pod, once sent."""

    call_type = POD_BINDING

    def __init__(
        self,
        pod: core_pb2.Pod,
        node_name: str,
        *,
        fencing: Fencing | None = None,
        check_allocation: bool = False,
    ) -> None:
        self.uid = pod.metadata.uid
        self.name, self.namespace = pod.metadata.name, pod.metadata.namespace
        self.node_name = node_name
        self.fencing = fencing
        self.check_allocation = check_allocation
        self.result: Any = None

    async def execute(self, client: Any) -> None:
        self.result = await client.bind(
            self.name,
            self.node_name,
            self.namespace,
            uid=self.uid,
            fencing=self.fencing,
            check_allocation=self.check_allocation,
        )

    def sync(self, obj: Any) -> Any:
        return obj

    def merge(self, old: APICall) -> None:
        """A newer binding just takes the older one's place."""

    def is_noop(self) -> bool:
        return False


class EventCall:
    """An Event about a pod, written through the component's EventRecorder (its
    correlator: counts, aggregation, spam filter; its pacing and retries). A newer event
    about the same pod takes the place of one not written yet."""

    call_type = EVENT

    def __init__(self, recorder: EventRecorder, event: core_pb2.Event) -> None:
        self.recorder = recorder
        self.event = event
        self.uid = "event/" + (event.involved_object.uid or event.metadata.name)

    async def execute(self, client: Any) -> None:
        await self.recorder.write_now(self.event)

    def sync(self, obj: Any) -> Any:
        return obj

    def merge(self, old: APICall) -> None:
        """The newer event is the one worth writing."""

    def is_noop(self) -> bool:
        return False
