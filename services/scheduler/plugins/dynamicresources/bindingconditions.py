"""DynamicResources and device binding conditions (upstream dynamicresources.go PreBind,
isPodReadyForBinding, isClaimTimeout; the rules in services/api/dra/bindingconditions.py).

    PreBind     after the claims are written: when an allocated device has binding
                conditions, record the BindingConditionsPending event, poll the claims
                (the tracker's view, as upstream reads the informer) every 5 s, the first time at once, until every condition is
                True; a True failure condition fails the attempt at once, and so does a
                claim whose allocationTimestamp is older than bindingTimeout, or the
                wait itself outlasting bindingTimeout ("device binding timeout")
    Filter      (next attempt) such a failed or timed-out allocated claim is not
                available on any node; PostFilter deallocates it (also clearing
                status.devices) when no other pod uses it, and the attempt after that
                allocates again

The wait sleeps on the injected clock, so tests drive it with a FakeClock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.bindingconditions import BindingFailed, claim_ready, timed_out
from services.api.helpers.events import new_event
from services.clock import Clock

log = logging.getLogger("services.scheduler.scheduler")

#: Upstream's poll interval in PreBind (wait.PollUntilContextTimeout's 5 s).
POLL_INTERVAL = 5.0
ERR_BINDING_TIMEOUT = "device binding timeout"


class BindingTimeout(Exception):
    """The binding conditions did not become True within bindingTimeout."""


def unavailable(claim: resource_pb2.ResourceClaim, now: float, timeout: float) -> bool:
    """Filter's check of an allocated claim: a binding failure condition is True, or it
    is not ready and timed out (upstream: the claim joins unavailableClaims)."""
    try:
        ready = claim_ready(claim)
    except BindingFailed:
        return True
    return not ready and timed_out(claim, now, timeout)


async def wait_ready(
    claims: Callable[[], Sequence[resource_pb2.ResourceClaim]],
    clock: Clock,
    timeout: float,
) -> None:
    """Return once every claim of `claims()` (read anew each poll) is ready for binding.
    Raises BindingFailed, or BindingTimeout (a claim past its allocationTimestamp +
    timeout, or `timeout` seconds of waiting)."""
    deadline = clock.monotonic() + timeout
    while True:
        pending = None
        for claim in claims():
            if not claim_ready(claim):  # raises BindingFailed
                if timed_out(claim, clock.now(), timeout):
                    raise BindingTimeout(f"claim {claim.metadata.name} binding timeout")
                pending = claim
                break
        if pending is None:
            return
        remaining = deadline - clock.monotonic()
        if remaining <= 0:
            raise BindingTimeout(ERR_BINDING_TIMEOUT)
        await clock.sleep(min(POLL_INTERVAL, remaining))


async def pre_bind_wait(
    claims: Callable[[], Sequence[resource_pb2.ResourceClaim]],
    *,
    clock: Clock,
    timeout: float,
    client: Any,
    pod: core_pb2.Pod,
    node_name: str,
    component: str,
) -> Exception | None:
    """PreBind's second half, once the claims are written and some allocated device has
    binding conditions: the BindingConditionsPending event on the pod, then wait_ready.
    Returns the failure (BindingFailed or BindingTimeout) that fails the attempt, else None:
    the next attempt's Filter finds the failure or the timeout and its PostFilter
    deallocates (upstream's recovery)."""
    await _pending_event(client, clock.now(), pod, node_name, component)
    try:
        await wait_ready(claims, clock, timeout)
    except (BindingFailed, BindingTimeout) as e:
        return e
    return None


async def _pending_event(
    client: Any, now: float, pod: core_pb2.Pod, node_name: str, component: str
) -> None:
    """Upstream's BindingConditionsPending event on the pod (best effort)."""
    ev = new_event(
        now,
        kind="Pod",
        name=pod.metadata.name,
        namespace=pod.metadata.namespace,
        uid=pod.metadata.uid,
        reason="BindingConditionsPending",
        message=f"waiting for binding conditions for device on node {node_name}",
        component=component,
        action="Scheduling",
    )
    try:
        await client.create(ev)
    except Exception as e:  # noqa: BLE001 - an event is not worth failing the bind
        log.debug("event BindingConditionsPending for %s: %s", pod.metadata.name, e)
