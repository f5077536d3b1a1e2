"""DynamicResources and device binding conditions (upstream dynamicresources.go PreBind,
isPodReadyForBinding, isClaimTimeout; the rules in services/api/dra/bindingconditions.py).

    PreBind     after the claims are written: when an allocated device has binding
                conditions, record the BindingConditionsPending event, poll the claims (the tracker's view, as upstream reads the
                informer) every 5 s, the first time at once, until every condition is
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

from collections.abc import Callable, Sequence

from protos.kubera.v1 import resource_pb2
from services.api.dra.bindingconditions import BindingFailed, claim_ready, timed_out
from services.clock import Clock

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
