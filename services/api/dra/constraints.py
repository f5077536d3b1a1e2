"""Claim constraints while the allocator searches (upstream structured/internal/experimental
constraint.go: matchAttributeConstraint, distinctAttributeConstraint, lookupAttribute,
attributeAsSet).

A constraint covers the requests it names ("req" also covers its subrequests, "req/sub"
only that one), every request when it names none. Every device allocated for them must
have the attribute; devices are added and removed in stack order, as the search takes and
gives them back.

matchAttribute: the devices must agree on the attribute:

* DRAListTypeAttributes off: the first device's value is the value; each next device
  must have the same scalar (an attribute with only list values, or none, matches
  nothing after the first device).
* DRAListTypeAttributes on: each value is a set (a scalar is a set of one, a list the set
  of its elements; ints, bools, strings and versions never meet); the devices must have
  an element in common with all the devices before them: the constraint keeps the
  intersection so far and each device must share an element with it. A device whose
  attribute holds no value cannot be added.

distinctAttribute (consumable capacity): each device has another value: another scalar
with DRAListTypeAttributes off; with it on, a set disjoint from each other device's set
(upstream's "pairwise disjoint").

Deliberate difference: upstream keeps the narrowed intersection when a device is given
back and only resets it when the set becomes empty, so after backtracking a device can be
refused for a value only the removed device lacked; here each addition pushes the
intersection and removal pops it, so the intersection is always that of the devices held.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import resource_pb2
from services.api.dra.pools import PoolDevice

#: (kind, value): kind "int", "bool", "string" or "version"; "" when no value is set.
Scalar = tuple[str, object]
#: (kind, elements) of a value seen as a set.
ValueSet = tuple[str, frozenset[object]]

_SCALARS = ("int", "bool", "string", "version")
_LISTS = (("ints", "int"), ("bools", "bool"), ("strings", "string"), ("versions", "version"))


class MatchAttribute:
    """One matchAttribute constraint of a claim during one search. `add` and `remove`
    come in pairs (remove undoes the latest add that returned True for that request)."""

    __slots__ = ("requests", "attribute", "sets", "value", "n", "intersections")

    def __init__(self, requests: Sequence[str], attribute: str, *, sets: bool = False) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.sets = sets
        self.value: Scalar | None = None  # scalar mode: the first device's value
        self.n = 0  # devices held
        self.intersections: list[ValueSet] = []  # set mode: one per device held

    def applies(self, base: str, sub: str) -> bool:
        return (
            not self.requests
            or base in self.requests
            or (bool(sub) and f"{base}/{sub}" in self.requests)
        )

    def add(self, base: str, sub: str, d: PoolDevice) -> bool:
        """Whether device `d`, taken for request `base` (subrequest `sub`), satisfies the
        constraint with the devices held; if so it is held."""
        if not self.applies(base, sub):
            return True
        attr = lookup(d, self.attribute)
        if attr is None:
            return False
        if self.sets:
            values = as_set(attr)
            if values is None:
                return False
            if self.intersections:
                kind, have = self.intersections[-1]
                if kind != values[0] or not have & values[1]:
                    return False
                values = (kind, have & values[1])
            self.intersections.append(values)
        else:
            value = scalar(attr)
            if self.n == 0:
                self.value = value
            elif value[0] == "" or value != self.value:
                return False
        self.n += 1
        return True

    def remove(self, base: str, sub: str) -> None:
        if self.applies(base, sub):
            self.n -= 1
            if self.sets:
                self.intersections.pop()


class DistinctAttribute(MatchAttribute):
    """One distinctAttribute constraint (consumable capacity): every device allocated for
    the named requests has the attribute, each with another value. The values (sets with
    list-type attributes on) are held in pick order: devices are given back in reverse."""

    __slots__ = ("seen",)

    def __init__(self, requests: Sequence[str], attribute: str, *, sets: bool = False) -> None:
        super().__init__(requests, attribute, sets=sets)
        self.seen: list[Scalar] = []

    def add(self, base: str, sub: str, d: PoolDevice) -> bool:
        if not self.applies(base, sub):
            return True
        attr = lookup(d, self.attribute)
        if attr is None:
            return False
        if self.sets:
            values = as_set(attr)
            if values is None or any(
                kind == values[0] and not have.isdisjoint(values[1])
                for kind, have in self.intersections
            ):
                return False
            self.intersections.append(values)
        else:
            value = scalar(attr)
            if value[0] == "" or value in self.seen:
                return False
            self.seen.append(value)
        return True

    def remove(self, base: str, sub: str) -> None:
        if self.applies(base, sub):
            if self.sets:
                self.intersections.pop()  # here: each device's own set
            else:
                self.seen.pop()


def lookup(d: PoolDevice, name: str) -> resource_pb2.DeviceAttribute | None:
    """The device's attribute by fully qualified name ("domain/name"; an attribute written
    without domain in the slice belongs to the driver's domain)."""
    attrs = d.device.attributes
    attr = attrs.get(name)
    if attr is not None:
        return attr
    domain, _, short = name.partition("/")
    if not short or domain != d.id.driver:
        return None
    return attrs.get(short)


def scalar(attr: resource_pb2.DeviceAttribute) -> Scalar:
    """The scalar value set, as (kind, value); ("", None) when none is."""
    for kind in _SCALARS:
        if attr.HasField(kind):
            return kind, getattr(attr, kind)
    return "", None


def as_set(attr: resource_pb2.DeviceAttribute) -> ValueSet | None:
    """The value as a set (upstream attributeAsSet: a non-empty list first, then the
    scalar); None when no value is set."""
    for field, kind in _LISTS:
        values = getattr(attr, field)
        if values:
            return kind, frozenset(values)
    kind, value = scalar(attr)
    return (kind, frozenset((value,))) if kind else None
