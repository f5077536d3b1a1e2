"""The `kubera.io/usage` pod annotation: how much a hollow pod uses over time.

Hollow kubelets run no containers, so a pod's memory, disk, inodes and pids come from a
model: this annotation, or a node template's default for the pod's labels (the kubelet's
services/kubelet/usage.py resolves which, and sums many pods at once). The apiserver's
admission validates the annotation with `parse_usage`, the kubelet evaluates it: both
import it from here.

The annotation is a JSON object with one entry per resource (``memory``,
``ephemeral-storage``, ``inodes``, ``pids``)::

    {"memory": {"start": "200Mi", "ratePerSecond": "2Mi", "max": "1Gi",
                "spikes": [{"at": 30, "for": 10, "amount": "512Mi"}],
                "periodic": {"periodSeconds": 60, "amplitude": "64Mi"}},
     "pids": "12"}

A bare quantity means a constant. At ``t`` seconds after the pod started running a
resource uses ``start + ratePerSecond·t``, plus every spike with ``at <= t < at + for``,
plus ``amplitude·sin(2π·t / periodSeconds)`` (a sine: smooth, and its mean is zero so it
does not shift the trend); the sum is clipped to ``[0, max]`` and rounded down to a whole
unit. Times are simulated seconds: the caller passes them, this module knows no clock.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from services.api.machinery.errors import quote as _q
from services.api.machinery.limits import DepthError, loads_json
from services.api.machinery.quantity import ERR_BEYOND_INT64_MILLI, Quantity, QuantityError

USAGE_ANNOTATION: Final = "kubera.io/usage"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
INODES: Final = "inodes"
PIDS: Final = "pids"
RESOURCES: Final = (MEMORY, EPHEMERAL_STORAGE, INODES, PIDS)
_RESOURCE_INDEX: Final = {r: i for i, r in enumerate(RESOURCES)}
#: No pod uses more than this of anything; keeps floor() results inside int64.
USAGE_CEILING: Final = float(2**62)


class UsageSpecError(ValueError):
    """A usage spec is invalid; the message names the field path and the bad value."""


# ========================================================================= model


@dataclass(frozen=True)
class Spike:
    """``amount`` extra while ``at <= t < at + duration`` (seconds after start)."""

    at: float
    duration: float
    amount: float


@dataclass(frozen=True)
class Periodic:
    """A sine wave ``amplitude·sin(2π·t / period)`` added to the trend."""

    period: float
    amplitude: float


@dataclass(frozen=True)
class ResourceUsage:
    """One resource's usage curve; amounts in bytes (inodes, pids: counts)."""

    start: float = 0.0
    rate: float = 0.0
    max: float | None = None
    spikes: tuple[Spike, ...] = ()
    periodic: Periodic | None = None

    @property
    def has_extras(self) -> bool:
        return bool(self.spikes) or self.periodic is not None

    @property
    def cap(self) -> float:
        return USAGE_CEILING if self.max is None else min(self.max, USAGE_CEILING)

    def extra(self, t: float) -> float:
        """The non-linear part at ``t`` (spikes active now plus the periodic wave)."""
        total = 0.0
        for s in self.spikes:
            if s.at <= t < s.at + s.duration:
                total += s.amount
        if self.periodic is not None:
            total += self.periodic.amplitude * math.sin(2.0 * math.pi * t / self.periodic.period)
        return total

    def at(self, t: float) -> int:
        """Usage ``t`` seconds after start. Invariant shared with :class:`UsageTable`:
        ``floor(min(max(start + rate·t + extra(t), 0), cap))`` with the same float64
        operations in the same order, so both give identical integers."""
        t = max(0.0, t)
        value = self.start + self.rate * t
        if self.has_extras:
            value = value + self.extra(t)
        return int(math.floor(min(max(value, 0.0), self.cap)))


@dataclass(frozen=True)
class UsageModel:
    """A pod's usage: a curve per resource; resources without one use nothing."""

    resources: tuple[tuple[str, ResourceUsage], ...] = ()

    def get(self, resource: str) -> ResourceUsage | None:
        for name, usage in self.resources:
            if name == resource:
                return usage
        return None

    @property
    def is_empty(self) -> bool:
        return not self.resources

    @property
    def has_extras(self) -> bool:
        return any(u.has_extras for _, u in self.resources)

    def at(self, seconds_since_start: float) -> dict[str, int]:
        """Usage of every resource (0 for those without a curve)."""
        out = dict.fromkeys(RESOURCES, 0)
        for name, usage in self.resources:
            out[name] = usage.at(seconds_since_start)
        return out

    def over(self, base: UsageModel) -> UsageModel:
        """This model's curves, and ``base``'s for the resources this one lacks."""
        mine = dict(self.resources)
        merged = {r: mine.get(r) or base.get(r) for r in RESOURCES}
        return UsageModel(tuple((r, u) for r, u in merged.items() if u is not None))


# ======================================================================= parsing


def _quantity(source: str, path: str, raw: object, *, non_negative: bool = True) -> float:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise UsageSpecError(f'{source}: {path}: {_q(raw)}: expected a quantity like "200Mi"')
    try:
        q = Quantity.parse(raw)
    except (QuantityError, ValueError):  # ValueError: a float nan/inf from JSON
        raise UsageSpecError(
            f'{source}: {path}: {_q(raw)}: expected a quantity like "200Mi"'
        ) from None
    if not q.fits_int64_milli():
        # the model sums these as floats per node: infinities would make nan
        raise UsageSpecError(f"{source}: {path}: {_q(raw)}: {ERR_BEYOND_INT64_MILLI}")
    value = float(q.value)
    if non_negative and value < 0:
        raise UsageSpecError(f"{source}: {path}: {_q(raw)}: must not be negative")
    return value


#: kubera's bounds on the model's durations: at most an int32 of seconds (as every
#: duration kubera takes), and a period no shorter than a millisecond (t / period must stay
#: finite for sin()).
MAX_SECONDS: Final = 2**31 - 1
MIN_PERIOD_SECONDS: Final = 0.001


def _seconds(source: str, path: str, raw: object, *, positive: bool, minimum: float = 0.0) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise UsageSpecError(f"{source}: {path}: {_q(raw)}: expected a number of seconds")
    value = float(raw)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise UsageSpecError(
            f"{source}: {path}: {_q(raw)}: must be {'positive' if positive else 'at least 0'}"
        )
    if value > MAX_SECONDS:
        raise UsageSpecError(
            f"{source}: {path}: {_q(raw)}: must be at most {MAX_SECONDS} (kubera's limit)"
        )
    if value < minimum:
        raise UsageSpecError(
            f"{source}: {path}: {_q(raw)}: must be at least {minimum} (kubera's limit)"
        )
    return value


def _object(source: str, path: str, raw: object, keys: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise UsageSpecError(f"{source}: {path}: {_q(raw)}: expected an object")
    for k in raw:
        if k not in keys:
            raise UsageSpecError(
                f"{source}: {path}.{k}: unknown field; expected one of {', '.join(keys)}"
            )
    return raw


_FIELDS: Final = ("start", "ratePerSecond", "max", "spikes", "periodic")


def _resource(source: str, name: str, raw: object) -> ResourceUsage:
    if isinstance(raw, str | int | float) and not isinstance(raw, bool):
        return ResourceUsage(start=_quantity(source, name, raw))
    spec = _object(source, name, raw, _FIELDS)
    start = _quantity(source, f"{name}.start", spec.get("start", 0))
    rate = _quantity(
        source, f"{name}.ratePerSecond", spec.get("ratePerSecond", 0), non_negative=False
    )
    cap = None if spec.get("max") is None else _quantity(source, f"{name}.max", spec["max"])
    spikes = []
    raw_spikes = spec.get("spikes") or []
    if not isinstance(raw_spikes, list):
        raise UsageSpecError(f"{source}: {name}.spikes: {_q(raw_spikes)}: expected a list")
    for i, raw_spike in enumerate(raw_spikes):
        path = f"{name}.spikes[{i}]"
        s = _object(source, path, raw_spike, ("at", "for", "amount"))
        for required in ("at", "for", "amount"):
            if required not in s:
                raise UsageSpecError(f"{source}: {path}.{required}: required")
        spikes.append(
            Spike(
                at=_seconds(source, f"{path}.at", s["at"], positive=False),
                duration=_seconds(source, f"{path}.for", s["for"], positive=True),
                amount=_quantity(source, f"{path}.amount", s["amount"], non_negative=False),
            )
        )
    periodic = None
    if spec.get("periodic") is not None:
        path = f"{name}.periodic"
        p = _object(source, path, spec["periodic"], ("periodSeconds", "amplitude"))
        for required in ("periodSeconds", "amplitude"):
            if required not in p:
                raise UsageSpecError(f"{source}: {path}.{required}: required")
        periodic = Periodic(
            period=_seconds(
                source,
                f"{path}.periodSeconds",
                p["periodSeconds"],
                positive=True,
                minimum=MIN_PERIOD_SECONDS,
            ),
            amplitude=_quantity(source, f"{path}.amplitude", p["amplitude"]),
        )
    return ResourceUsage(start, rate, cap, tuple(spikes), periodic)


def parse_usage(spec: str | Mapping[str, Any], *, source: str = USAGE_ANNOTATION) -> UsageModel:
    """A usage model from the annotation's JSON text or an already-decoded object.
    Errors name ``source`` and the field path, e.g.
    ``kubera.io/usage: memory.ratePerSecond: "fast": expected a quantity like "200Mi"``."""
    if isinstance(spec, str):
        return _parse_text(spec, source)
    return parse_usage_object(spec, source)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str, source: str) -> UsageModel:
    """Annotations repeat across the replicas of a workload; the model is immutable."""
    try:
        obj = loads_json(text, source)
    except json.JSONDecodeError as e:
        raise UsageSpecError(f"{source}: invalid JSON: {e.msg} (at character {e.pos})") from None
    except DepthError as e:
        raise UsageSpecError(str(e)) from None
    return parse_usage_object(obj, source)


def parse_usage_object(obj: object, source: str) -> UsageModel:
    if not isinstance(obj, Mapping):
        raise UsageSpecError(f"{source}: {_q(obj)}: expected a JSON object of resource to usage")
    out = []
    for name in obj:
        if name not in _RESOURCE_INDEX:
            raise UsageSpecError(
                f"{source}: {name}: unknown resource; expected one of {', '.join(RESOURCES)}"
            )
    for name in RESOURCES:  # a fixed order: equal specs give equal models
        if name in obj:
            out.append((name, _resource(source, name, obj[name])))
    return UsageModel(tuple(out))
