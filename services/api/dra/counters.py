"""Partitionable devices (DRAPartitionableDevices): shared counters and the devices that
consume them (upstream k8s.io/dynamic-resource-allocation/structured, experimental
pools_experimental.go buildPool and allocator_experimental.go checkAvailableCounters).

A pool may publish counter sets (ResourceSlice spec.sharedCounters: a GPU's memory and
compute slices, say) and devices that consume from them while allocated (Device
consumesCounters: each MIG-style partition of the GPU). Devices overlapping on one
physical resource are then never allocated together beyond what it has:

* Pool checks (`check_pool`): counter-set names are unique in the pool, and every
  consumption of a device (of the slices reaching the node and of the pool's other
  slices) names a counter set of the pool and counters of that set. A pool failing them
  is invalid, as one with a duplicate device name is.
* Availability (`Counters`): per pool, each counter's value less what the devices in use
  (`allocated`) consume, computed once per Allocator; the search adds a device's
  consumption when it takes the device and refuses it when any counter of the pool would
  go below zero, and takes it back when it gives the device back. A device in use on
  another node of a multi-host pool counts too.

Quantities are exact Decimals (a counter's and a consumption's values are
resource.Quantity strings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal

from protos.kubera.v1 import resource_pb2
from services.api.machinery.quantity import QuantityError, parse_quantity

#: counter set -> counter -> amount
Amounts = dict[str, dict[str, Decimal]]


def amount(text: str) -> Decimal:
    """A counter's value; an unparsable one (validation refuses it) counts as zero."""
    try:
        return parse_quantity(text).value
    except QuantityError:
        return Decimal(0)


def consumption(device: resource_pb2.Device) -> Amounts:
    """What the device consumes, by counter set and counter."""
    out: Amounts = {}
    for c in device.consumes_counters:
        into = out.setdefault(c.counter_set, {})
        for name, counter in c.counters.items():
            into[name] = into.get(name, Decimal(0)) + amount(counter.value)
    return out


def counter_sets(slices: Iterable[resource_pb2.ResourceSlice]) -> tuple[Amounts, str]:
    """The counter sets the slices publish, and why they are invalid ("" when valid)."""
    sets: Amounts = {}
    for s in slices:
        for cs in s.spec.shared_counters:
            if cs.name in sets:
                return sets, f"duplicate counter set name {cs.name}"
            sets[cs.name] = {n: amount(c.value) for n, c in cs.counters.items()}
    return sets, ""


def check_consumption(sets: Amounts, devices: Iterable[resource_pb2.Device]) -> str:
    """Why a device's consumption does not fit the pool's counter sets ("" when all do)."""
    for d in devices:
        for c in d.consumes_counters:
            known = sets.get(c.counter_set)
            if known is None:
                return f"counter set {c.counter_set} not found"
            for name in c.counters:
                if name not in known:
                    return f"counter {name} not found in counter set {c.counter_set}"
    return ""


class Counters:
    """The counters of the pools while one allocate() searches: what is left once the
    devices in use took theirs (`available`, kept by the Allocator across calls) and what
    the devices being allocated consume (`consumed`, this search's)."""

    __slots__ = ("available", "consumed", "_compute")

    def __init__(
        self,
        available: dict[tuple[str, str], Amounts],
        compute: Callable[[tuple[str, str]], Amounts],
    ) -> None:
        self.available = available
        self.consumed: dict[tuple[str, str], Amounts] = {}
        self._compute = compute

    def take(self, pool: tuple[str, str], use: Amounts) -> bool:
        """Add `use` to the pool's consumption when every counter stays covered."""
        available = self.available.get(pool)
        if available is None:
            available = self.available[pool] = self._compute(pool)
        consumed = self.consumed.setdefault(pool, {})
        for set_name, counters in use.items():
            into = consumed.setdefault(set_name, {})
            for name, value in counters.items():
                into[name] = into.get(name, Decimal(0)) + value
        # Every counter of the pool, as upstream: one already below zero (devices in use
        # consume more than the set has) admits no further device of the pool.
        for set_name, left in available.items():
            used = consumed.get(set_name, {})
            for name, value in left.items():
                if used.get(name, Decimal(0)) > value:
                    self.give_back(pool, use)
                    return False
        return True

    def give_back(self, pool: tuple[str, str], use: Amounts) -> None:
        consumed = self.consumed[pool]
        for set_name, counters in use.items():
            into = consumed[set_name]
            for name, value in counters.items():
                into[name] -= value


def left_over(
    sets: Amounts,
    devices: Iterable[tuple[resource_pb2.Device, bool]],
) -> Amounts:
    """The counter sets less what the devices in use consume (`devices`: each device of
    the pool and whether it is in use). May go negative: nothing is left then."""
    out = {name: dict(counters) for name, counters in sets.items()}
    for device, in_use in devices:
        if not in_use:
            continue
        for set_name, counters in consumption(device).items():
            left = out.get(set_name)
            if left is None:
                continue
            for name, value in counters.items():
                if name in left:
                    left[name] -= value
    return out
