"""Thresholds (``signal < quantity | percentage``) and the amounts they are written in.

A threshold is an absolute amount or a float32 :class:`Percentage` of the signal's
capacity, truncated to an integer as upstream's GetThresholdQuantity; it is met when the
signal's available amount is strictly below it (plus the minimum reclaim when enforced).
The containerfs thresholds are derived from the nodefs or imagefs ones once the
filesystem layout is known (:func:`thresholds_for_layout`). Parsing thresholds out of a
KubeletConfiguration lives in :mod:`.config`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Final

import numpy as np

from services.api.machinery.quantity import BINARY_SI, DECIMAL_SI, Quantity
from services.kubelet.eviction.observations import FsLayout, Observation
from services.kubelet.eviction.signals import SIGNAL_TO_RESOURCE


@dataclass(frozen=True)
class Percentage:
    """A fraction (0..1) of a signal's capacity, rounded to float32 like upstream's
    ThresholdValue.Percentage so percentages yield the same amounts as a kubelet."""

    fraction: float

    def __post_init__(self) -> None:
        f = float(self.fraction)
        if not (math.isfinite(f) and 0.0 <= f <= 1.0):
            raise ValueError(f"a percentage fraction must be within [0, 1], got {f!r}")
        object.__setattr__(self, "fraction", float(np.float32(f)))

    @classmethod
    def parse(cls, text: str) -> Percentage:
        """``"10%"`` → 0.1 (ValueError if not a number or outside 0%..100%)."""
        return cls(parse_percentage(text))

    def of(self, capacity: int) -> int:
        """int64(float64(capacity) * float64(percentage)): truncated toward zero."""
        return int(float(capacity) * self.fraction)

    def __str__(self) -> str:
        return f"{self.fraction * 100:.6g}%"


_DECIMAL_NUMBER: Final = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def parse_percentage(text: str) -> float:
    """``"10%"`` → the fraction, computed in float32 as upstream's parsePercentage
    (float32(value) / 100); any sign or size (the caller checks the range)."""
    number = text[:-1] if text.endswith("%") else text
    if not _DECIMAL_NUMBER.fullmatch(number):
        raise ValueError(f"not a number: {number!r}")
    return float(np.float32(float(number)) / np.float32(100))


#: An absolute amount (bytes, inodes or pids) or a fraction of capacity.
Amount = int | Percentage


def _amount_of(value: Amount, capacity: int) -> int:
    return value.of(capacity) if isinstance(value, Percentage) else value


def format_quantity(amount: int, fmt: str = BINARY_SI) -> str:
    """An integer amount as Kubernetes prints it (resource.NewQuantity(n, fmt).String())."""
    return Quantity(Decimal(amount), fmt).canonical()


def format_request(amount: int) -> str:
    """A request the user wrote in some suffix family we no longer know: binary when the
    value is a multiple of 1024 (``128Mi``), decimal otherwise (``1G``)."""
    if amount == 0:
        return "0"
    return format_quantity(amount, BINARY_SI if amount % 1024 == 0 else DECIMAL_SI)


@dataclass(frozen=True)
class Threshold:
    """``signal < value``: met when the signal's available amount is below the value.

    ``value`` is an absolute int (bytes, inodes or pids) or a :class:`Percentage` of the
    signal's capacity; a float is read as a fraction (``0.1`` = 10%). ``grace_period`` is in
    seconds: 0 makes the threshold hard. ``min_reclaim`` is how far above the threshold the
    signal must get again before a threshold that drove an eviction counts as resolved.
    """

    signal: str
    value: Amount
    grace_period: float = 0.0
    min_reclaim: Amount = 0
    #: The suffix family the value was written in (for messages); not part of equality.
    value_format: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.signal not in SIGNAL_TO_RESOURCE:
            raise ValueError(f"unsupported eviction signal {self.signal}")
        object.__setattr__(self, "value", _checked_amount("value", self.value, positive=True))
        object.__setattr__(
            self, "min_reclaim", _checked_amount("min_reclaim", self.min_reclaim, positive=False)
        )
        g = float(self.grace_period)
        if not (math.isfinite(g) and g >= 0):
            raise ValueError(f"grace_period must be a non-negative number, got {g!r}")
        object.__setattr__(self, "grace_period", g)

    @property
    def hard(self) -> bool:
        """Upstream isHardEvictionThreshold: no grace period (a soft "0s" counts as hard)."""
        return self.grace_period == 0

    def amount(self, capacity: int) -> int:
        """The threshold as an amount of the signal, for a signal capacity."""
        return _amount_of(self.value, capacity)

    def reclaim_amount(self, capacity: int) -> int:
        """The minimum reclaim as an amount of the signal, for a signal capacity."""
        return _amount_of(self.min_reclaim, capacity)

    def is_met(self, observation: Observation, *, enforce_min_reclaim: bool = False) -> bool:
        """available < amount (+ minimum reclaim when enforced)."""
        limit = self.amount(observation.capacity)
        if enforce_min_reclaim:
            limit += self.reclaim_amount(observation.capacity)
        return limit > observation.available

    def display_amount(self, capacity: int) -> str:
        """The amount as upstream prints it: absolute values in the family they were
        written in, percentages as BinarySI integers (GetThresholdQuantity)."""
        if isinstance(self.value, Percentage):
            return format_quantity(self.value.of(capacity), BINARY_SI)
        if self.value_format is not None:
            return format_quantity(self.value, self.value_format)
        return format_request(self.value)

    def __str__(self) -> str:
        soft = f" (grace {self.grace_period:g}s)" if not self.hard else ""
        value = str(self.value) if isinstance(self.value, Percentage) else self.display_amount(0)
        return f"{self.signal}<{value}{soft}"


def _checked_amount(name: str, value: object, *, positive: bool) -> Amount:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an int amount or a Percentage, got {value!r}")
    if isinstance(value, float):
        value = Percentage(value)
    if isinstance(value, Percentage):
        if positive and value.fraction <= 0:
            raise ValueError(f"{name} percentage must be above 0%, got {value}")
        return value
    if isinstance(value, int | np.integer):
        v = int(value)
        if v < 0 or (positive and v == 0):
            raise ValueError(f"{name} must be {'positive' if positive else 'non-negative'}")
        return v
    raise ValueError(f"{name} must be an int amount or a Percentage, got {value!r}")


def thresholds_met(
    thresholds: Iterable[Threshold],
    observations: Mapping[str, Observation],
    *,
    enforce_min_reclaim: bool = False,
) -> list[Threshold]:
    """The thresholds met by these observations, regardless of grace periods; signals
    without an observation meet nothing."""
    out = []
    for t in thresholds:
        o = observations.get(t.signal)
        if o is not None and t.is_met(o, enforce_min_reclaim=enforce_min_reclaim):
            out.append(t)
    return out


def thresholds_for_layout(
    thresholds: Iterable[Threshold], layout: FsLayout
) -> tuple[Threshold, ...]:
    """Replace containerfs thresholds by copies of the nodefs ones (one filesystem, or a
    split image filesystem) or of the imagefs ones (separate imagefs), as upstream's
    UpdateContainerFsThresholds; user containerfs settings are dropped."""
    source = "imagefs" if layout is FsLayout.SEPARATE_IMAGEFS else "nodefs"
    kept = [t for t in thresholds if not t.signal.startswith("containerfs.")]
    derived = [
        replace(t, signal="containerfs." + t.signal.split(".", 1)[1])
        for t in kept
        if t.signal.split(".", 1)[0] == source
    ]
    return tuple(kept + derived)
