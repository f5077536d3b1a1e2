"""Claim constraints while the allocator searches (upstream structured, experimental
constraint.go and allocator_experimental.go matchAttributeConstraint): matchAttribute (one
value for every device of the named requests) and distinctAttribute (consumable
capacity: another value each). A constraint covers the requests it names ("req" also its
subrequests, "req/sub" only that one), every request when it names none; devices are
added and removed in stack order, as the search takes and gives them back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from services.api.dra.pools import PoolDevice


class Requested(Protocol):
    """The request (or subrequest) a device is taken for."""

    base: str  # the request's name
    sub: str  # the subrequest's name, "" for an exact request
    name: str  # "base" or "base/sub"


class MatchAttribute:
    """One matchAttribute constraint of a claim while searching: the value the devices
    added so far share, and how many there are (only the count is needed to undo)."""

    __slots__ = ("requests", "attribute", "value", "n")

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.value: tuple[str, object] | None = None
        self.n = 0

    def applies(self, r: Requested) -> bool:
        return (
            not self.requests
            or r.base in self.requests
            or (bool(r.sub) and r.name in self.requests)
        )

    def add(self, r: Requested, d: PoolDevice) -> bool:
        if not self.applies(r):
            return True
        value = attribute(d, self.attribute)
        if value is None:
            return False
        if self.n == 0:
            self.value = value
        elif value[0] == "" or value != self.value:
            return False
        self.n += 1
        return True

    def remove(self, r: Requested) -> None:
        if self.applies(r):
            self.n -= 1


class DistinctAttribute(MatchAttribute):
    """One distinctAttribute constraint (consumable capacity): every device allocated for
    the named requests has the attribute, each with another value. `seen` holds the
    values in pick order (devices are given back in reverse order)."""

    __slots__ = ("seen",)

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.seen: list[tuple[str, object]] = []

    def add(self, r: Requested, d: PoolDevice) -> bool:
        if not self.applies(r):
            return True
        value = attribute(d, self.attribute)
        if value is None or value[0] == "" or value in self.seen:
            return False
        self.seen.append(value)
        return True

    def remove(self, r: Requested) -> None:
        if self.applies(r):
            self.seen.pop()


def attribute(d: PoolDevice, name: str) -> tuple[str, object] | None:
    """The device's value of a fully qualified attribute ("domain/name"; an attribute
    written without domain in the slice belongs to the driver's domain), as (kind, value);
    kind "" when no value is set."""
    attrs = d.device.attributes
    attr = attrs.get(name)
    if attr is None:
        domain, _, short = name.partition("/")
        if not short or domain != d.id.driver:
            return None
        attr = attrs.get(short)
        if attr is None:
            return None
    for kind in ("string", "int", "bool", "version"):
        if attr.HasField(kind):
            return kind, getattr(attr, kind)
    return "", None
