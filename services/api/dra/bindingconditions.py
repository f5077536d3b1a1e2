"""Device binding conditions (upstream KEP-5007, DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus; services/api/features.py).

A device may say that a pod using it must wait before it is bound: `bindingConditions`
are condition types its driver sets True in the claim's `status.devices` once the device
is ready (attached, prepared...), `bindingFailureConditions` are types it sets True when
that failed; `bindsToNode` ties the allocation to the node it was made for.

    allocator   pools with a device that has binding conditions are searched after the
                others (`ordered`; upstream GatherPools puts them last); without the
                gates such a device is never picked (`offered`); the result copies the
                device's conditions (`copy_to_result`); a device that binds to the node
                (or is node-local) makes the nodeSelector metadata.name In [node]
    scheduler   PreBind waits until `claim_ready` (every binding condition True, none of
                the failure conditions True: BindingFailed); a later attempt's Filter
                takes a failed or timed-out (`timed_out`) claim as unavailable and
                PostFilter deallocates it
    driver      writes status.devices (`set_condition`; the hollow drivers of node
                templates do, BindingDriver in services/kubelet/slices.py)

The upstream sources: structured/internal/experimental (allocator_experimental.go
isSelectable, createNodeSelector; pools_experimental.go poolHasBindingConditions) and
plugins/dynamicresources/dynamicresources.go (isClaimReadyForBinding, isClaimTimeout).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from protos.kubera.v1 import meta_pb2, resource_pb2
from services.api.dra.pools import Pool, PoolDevice
from services.clock import parse_rfc3339

#: Upstream DynamicResourcesBindingTimeoutDefault (seconds).
DEFAULT_BINDING_TIMEOUT = 600.0
#: Upstream BindingConditionsMaxSize / BindingFailureConditionsMaxSize.
MAX_CONDITIONS = 4
TRUE = "True"


class BindingFailed(Exception):
    """A binding failure condition of an allocated device is True."""


# ----------------------------------------------------------------------------- allocator


def has_conditions(device: resource_pb2.Device) -> bool:
    return bool(device.binding_conditions)


def offered(d: PoolDevice, enabled: bool) -> bool:
    """Whether the allocator may pick the device: one with binding conditions only when
    the gates are on (upstream isSelectable)."""
    return enabled or not d.device.binding_conditions


def ordered(pools: Sequence[Pool]) -> list[Pool]:
    """The pools without binding conditions first, then those with, each group in its
    order (upstream appends the second group after sorting both)."""
    plain = [p for p in pools if not _pool_has_conditions(p)]
    if len(plain) == len(pools):
        return list(pools)
    return plain + [p for p in pools if _pool_has_conditions(p)]


def _pool_has_conditions(pool: Pool) -> bool:
    """Whether a device of the pool reaching the node has binding conditions (a slice's
    flag, parsed once; devices one by one only when the slice selects nodes per device)."""
    return any(
        s.binding and (not s.per_device or any(d.device.binding_conditions for d in pool.devices()))
        for s in pool.slices
    )


def binds_to_node(d: PoolDevice) -> bool:
    return d.device.HasField("binds_to_node") and d.device.binds_to_node


def copy_to_result(
    res: resource_pb2.DeviceRequestAllocationResult, device: resource_pb2.Device
) -> None:
    res.binding_conditions.extend(device.binding_conditions)
    res.binding_failure_conditions.extend(device.binding_failure_conditions)


# ----------------------------------------------------------------------------- the claim


def has_binding_conditions(claims: Iterable[resource_pb2.ResourceClaim]) -> bool:
    """Any allocated device of the claims waits for binding conditions."""
    return any(
        r.binding_conditions
        for c in claims
        if c.status.HasField("allocation")
        for r in c.status.allocation.devices.results
    )


def device_status(
    claim: resource_pb2.ResourceClaim, res: resource_pb2.DeviceRequestAllocationResult
) -> resource_pb2.AllocatedDeviceStatus | None:
    """The status.devices entry of an allocated device (the first, shareID aside)."""
    for st in claim.status.devices:
        if (st.driver, st.pool, st.device) == (res.driver, res.pool, res.device):
            return st
    return None


def _condition(conditions: Iterable[meta_pb2.Condition], type_: str) -> meta_pb2.Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def claim_ready(claim: resource_pb2.ResourceClaim) -> bool:
    """Every binding condition of every allocated device is True (also when there are
    none); False while one is not yet. Raises BindingFailed when a failure condition is
    True (upstream isClaimReadyForBinding)."""
    if not claim.status.HasField("allocation"):
        return False
    for res in claim.status.allocation.devices.results:
        if not res.binding_conditions:
            continue
        st = device_status(claim, res)
        if st is None:
            return False
        for type_ in res.binding_failure_conditions:
            cond = _condition(st.conditions, type_)
            if cond is not None and cond.status == TRUE:
                raise BindingFailed(
                    f"claim {claim.metadata.name} binding failed: reason={cond.reason}, "
                    f"message={json.dumps(cond.message)}"  # Go's %q
                )
        for type_ in res.binding_conditions:
            cond = _condition(st.conditions, type_)
            if cond is None or cond.status != TRUE:
                return False
    return True


def timed_out(claim: resource_pb2.ResourceClaim, now: float, timeout: float) -> bool:
    """The claim's devices have binding conditions and `timeout` seconds have passed
    since allocationTimestamp (upstream isClaimTimeout; no timestamp: never)."""
    alloc = claim.status.allocation
    if not claim.status.HasField("allocation") or not alloc.allocation_timestamp:
        return False
    if not any(r.binding_conditions for r in alloc.devices.results):
        return False
    return now - parse_rfc3339(alloc.allocation_timestamp) > timeout


# ----------------------------------------------------------------------------- the driver


def set_condition(
    claim: resource_pb2.ResourceClaim,
    res: resource_pb2.DeviceRequestAllocationResult,
    type_: str,
    *,
    reason: str,
    message: str,
    now: str,
) -> None:
    """Set condition `type_` True in the device's status.devices entry (made when
    missing), as a driver reports it (meta.SetStatusCondition)."""
    st = device_status(claim, res)
    if st is None:
        st = claim.status.devices.add(driver=res.driver, pool=res.pool, device=res.device)
    cond = _condition(st.conditions, type_)
    if cond is None:
        cond = st.conditions.add(type=type_)
    if cond.status != TRUE:
        cond.last_transition_time = now
    cond.status = TRUE
    cond.reason = reason
    cond.message = message
    cond.observed_generation = claim.metadata.generation


def allocated_nodes(claim: resource_pb2.ResourceClaim) -> frozenset[str]:
    """The nodes an allocation is tied to by name (every term `metadata.name In [...]`,
    what the allocator writes for node-local and bindsToNode devices); empty otherwise."""
    if not claim.status.HasField("allocation"):
        return frozenset()
    names: set[str] = set()
    for term in claim.status.allocation.node_selector.node_selector_terms:
        if term.match_expressions or len(term.match_fields) != 1:
            return frozenset()
        f = term.match_fields[0]
        if f.key != "metadata.name" or f.operator != "In":
            return frozenset()
        names.update(f.values)
    return frozenset(names)


def without_device_status(claim: resource_pb2.ResourceClaim) -> resource_pb2.ResourceClaim:
    """A copy without status.devices and the write's bookkeeping (resourceVersion,
    managedFields): what a driver's status write must leave as it was."""
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(claim)
    out.status.ClearField("devices")
    out.metadata.ClearField("resource_version")
    out.metadata.ClearField("managed_fields")
    return out
