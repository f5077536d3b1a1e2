"""Waiting pods: pods a Permit plugin said Wait for (upstream framework/runtime/waiting_pods_map.go).

A `WaitingPod` leaves the map when every waiting plugin allowed it (Success), one rejected it,
or the first pending plugin's deadline passed ("rejected due to timeout after waiting 10s at
plugin P", the wait spelled as Go's time.Duration). One `WaitingPods` map may be shared by
every profile's framework.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

from services.scheduler.framework.status import Status
from services.scheduler.framework.types import PodInfo


def go_duration(seconds: float) -> str:
    """time.Duration.String(): "10s", "1.5s", "500ms", "1m30s", "15m0s"."""
    ns = round(seconds * 1_000_000_000)
    if ns == 0:
        return "0s"
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns < 1_000_000_000:
        for unit, div in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= div:
                return sign + _trim(ns, div) + unit
    hours, rem = divmod(ns, 3_600_000_000_000)
    minutes, rem = divmod(rem, 60_000_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + _trim(rem, 1_000_000_000) + "s"


def _trim(value: int, div: int) -> str:
    whole, frac = divmod(value, div)
    if not frac:
        return str(whole)
    digits = len(str(div)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


@dataclass
class WaitingPod:
    """A pod a Permit plugin said Wait for; each waiting plugin must allow it in time."""

    pod_info: PodInfo
    node_name: str
    #: plugin -> how long it asked to wait (seconds), for the timeout message.
    timeouts: dict[str, float]
    #: plugin -> monotonic deadline; a plugin leaves when it allows the pod.
    pending: dict[str, float]
    result: Status | None = None
    _event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def done(self) -> bool:
        return self.result is not None

    def allow(self, plugin: str) -> None:
        if self.done:
            return
        self.pending.pop(plugin, None)
        if not self.pending:
            self._resolve(Status.success())

    def reject(self, plugin: str, reason: str) -> None:
        self._resolve(Status.unschedulable(reason, plugin=plugin))

    def expire_if_due(self, now: float) -> bool:
        """Reject at the first pending plugin whose deadline passed (upstream's per-plugin
        timer firing); True when it did."""
        if self.done or not self.pending:
            return False
        plugin, deadline = min(self.pending.items(), key=lambda kv: kv[1])
        if deadline > now:
            return False
        waited = go_duration(self.timeouts[plugin])
        self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")
        return True

    def next_deadline(self) -> float:
        return min(self.pending.values()) if self.pending else float("inf")

    def _resolve(self, status: Status) -> None:
        if self.result is None:
            self.result = status
            self._event.set()

    async def wait_event(self) -> None:
        await self._event.wait()


class WaitingPods:
    """uid -> WaitingPod; one map may be shared by every profile's framework."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod_info.uid] = wp

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def remove(self, uid: str, wp: WaitingPod | None = None) -> None:
        if wp is None or self._pods.get(uid) is wp:
            self._pods.pop(uid, None)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
