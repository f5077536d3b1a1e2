"""Consumable capacity (DRAConsumableCapacity): a device that allows multiple allocations
is shared by several requests, each consuming part of its capacity (upstream
k8s.io/dynamic-resource-allocation/structured, experimental consumable_capacity.go and
allocator_experimental.go allocateDevice).

What a request consumes of each capacity of a device (`consumption`):

* the request names the capacity (spec `capacity.requests`): that amount, rounded up to
  what the capacity's requestPolicy allows: to `validRange.min` if below, then to the next
  `min + n * step`; or to the first of `validValues` not below it;
* it does not: the policy's `default`, else the whole capacity.

The amount must then keep to the policy (the default always does; else at most
`validRange.max` and a whole number of steps from min, or one of `validValues`), and,
added to what the device's shares in use (`in_use`) and the shares being allocated took,
stay within the capacity's value. A request naming a capacity the device lacks cannot use
the device. Every capacity counts, dedicated devices' too: a request for more than a
device has does not get it.

A device that allows multiple allocations is never "in use" for another request: each
allocation is a share with its own shareID and consumedCapacity in the result; its
counters (partitionable devices) are consumed by the first share only.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal

from protos.kubera.v1 import resource_pb2
from services.api.dra.counters import amount
from services.api.machinery.quantity import Quantity, QuantityError, parse_quantity

#: capacity name -> amount
Amounts = dict[str, Decimal]


def requests(
    spec: resource_pb2.ExactDeviceRequest | resource_pb2.DeviceSubRequest,
) -> Amounts | None:
    """A request's capacity requests (None when it has no `capacity`)."""
    if not spec.HasField("capacity"):
        return None
    return {name: amount(q) for name, q in spec.capacity.requests.items()}


def gated(req: resource_pb2.DeviceRequest) -> str:
    """With DRAConsumableCapacity off: why the request cannot be allocated ("" if it can)."""
    if req.HasField("exactly") and req.exactly.HasField("capacity"):
        return f"request {req.name}: {_OFF}"
    for sub in req.first_available:
        if sub.HasField("capacity"):
            return f"subrequest {sub.name}: {_OFF}"
    return ""


_OFF = "has capacity requests, but the DRAConsumableCapacity feature is disabled"


def _rounded(requested: Decimal, policy: resource_pb2.CapacityRequestPolicy) -> Decimal:
    r = policy.valid_range
    if policy.HasField("valid_range") and r.HasField("min"):
        lo = amount(r.min)
        if requested < lo:
            return lo
        if not r.HasField("step"):
            return requested
        step = amount(r.step)
        if step <= 0:
            return requested
        n = ((requested - lo) / step).to_integral_value(rounding=ROUND_CEILING)
        return lo + step * n
    if policy.valid_values:
        for v in (amount(x) for x in policy.valid_values):
            if requested <= v:
                return v
    return requested


def violates(value: Decimal, policy: resource_pb2.CapacityRequestPolicy) -> bool:
    """The amount is not one the policy allows (upstream violatesPolicy)."""
    if policy.HasField("default") and value == amount(policy.default):
        return False
    if policy.HasField("valid_range"):
        r = policy.valid_range
        if r.HasField("max") and value > amount(r.max):
            return True
        if r.HasField("step") and amount(r.step) > 0:
            lo = amount(r.min) if r.HasField("min") else Decimal(0)
            return (value - lo) % amount(r.step) != 0
        return False
    if policy.valid_values:
        return all(value != amount(v) for v in policy.valid_values)
    return False


def consumed(requested: Decimal | None, cap: resource_pb2.DeviceCapacity) -> Decimal:
    """What a request consumes of one capacity (upstream calculateConsumedCapacity): the
    requested amount rounded up by the policy, or the default, or the whole value."""
    policy = cap.request_policy if cap.HasField("request_policy") else None
    if requested is None:
        if policy is not None and policy.HasField("default"):
            return amount(policy.default)
        return amount(cap.value)
    return _rounded(requested, policy) if policy is not None else requested


def consumption(asked: Amounts | None, device: resource_pb2.Device) -> Amounts | None:
    """What the request consumes of each of the device's capacities, or None when the
    request names a capacity the device lacks or an amount its policy refuses."""
    if asked and any(name not in device.capacity for name in asked):
        return None
    out: Amounts = {}
    for name, cap in device.capacity.items():
        value = consumed(asked.get(name) if asked else None, cap)
        if cap.HasField("request_policy") and violates(value, cap.request_policy):
            return None
        out[name] = value
    return out


def fits(
    use: Amounts,
    device: resource_pb2.Device,
    *taken: Mapping[str, Decimal] | None,
) -> bool:
    """`use` plus what the shares `taken` consumed stays within each capacity."""
    for name, value in use.items():
        total = value + sum((t.get(name, Decimal(0)) for t in taken if t), Decimal(0))
        if total > amount(device.capacity[name].value):
            return False
    return True


def fitting(
    asked: Amounts | None, device: resource_pb2.Device, *taken: Mapping[str, Decimal] | None
) -> Amounts | None:
    """`consumption` when it `fits` beside the shares `taken`, else None."""
    use = consumption(asked, device)
    return use if use is not None and fits(use, device, *taken) else None


def add(into: dict[str, Decimal], use: Mapping[str, Decimal], sign: int = 1) -> None:
    for name, value in use.items():
        into[name] = into.get(name, Decimal(0)) + sign * value


def text(value: Decimal, like: str) -> str:
    """`value` as a quantity string in the suffix family of `like` (the capacity's value)."""
    try:
        fmt = parse_quantity(like).format
    except QuantityError:
        fmt = Quantity(value).format
    return Quantity(value, fmt).canonical()
