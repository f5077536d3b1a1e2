"""The eviction part of a KubeletConfiguration: :class:`EvictionConfig`, its defaults and
the validation that turns raw settings into :class:`~.thresholds.Threshold` values.

Parsing follows upstream ParseThresholdConfig (parseThresholdStatement,
parseMinimumReclaims) and the kubelet's defaulting rules; every error is an
:class:`EvictionConfigError` naming the field, the value and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from services.api.machinery.duration import parse_duration
from services.api.machinery.errors import quote as _q
from services.api.machinery.quantity import ERR_BEYOND_INT64_MILLI, Quantity, QuantityError
from services.kubelet.eviction.signals import (
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    SIGNAL_TO_RESOURCE,
    SIGNALS,
)
from services.kubelet.eviction.thresholds import Amount, Percentage, Threshold, parse_percentage

#: Linux defaults of evictionHard (pkg/kubelet/eviction/defaults_linux.go).
DEFAULT_EVICTION_HARD: Final[Mapping[str, str]] = {
    MEMORY_AVAILABLE: "100Mi",
    NODEFS_AVAILABLE: "10%",
    NODEFS_INODES_FREE: "5%",
    IMAGEFS_AVAILABLE: "15%",
    IMAGEFS_INODES_FREE: "5%",
}
DEFAULT_PRESSURE_TRANSITION_PERIOD: Final = 300.0
DEFAULT_MONITORING_PERIOD: Final = 10.0


class EvictionConfigError(ValueError):
    """An eviction setting is invalid; the message names the field, the value and what
    was expected."""


_EXPECT_THRESHOLD = 'expected a quantity like "100Mi" or a percentage like "10%"'


def _seconds(path: str, raw: object, *, what: str = "a duration") -> float:
    """A Go duration string or a number of seconds."""
    if isinstance(raw, bool):
        raise EvictionConfigError(f'{path}: {_q(raw)}: expected {what} like "1m30s"')
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = parse_duration(raw)
        except ValueError:
            raise EvictionConfigError(
                f'{path}: {_q(raw)}: expected {what} like "1m30s" or "90s"'
            ) from None
    else:
        raise EvictionConfigError(f'{path}: {_q(raw)}: expected {what} like "1m30s"')
    if not math.isfinite(value) or value < 0:
        raise EvictionConfigError(f"{path}: {_q(raw)}: must not be negative")
    return value


def _check_signal(path: str, signal: object) -> str:
    if not isinstance(signal, str) or signal not in SIGNAL_TO_RESOURCE:
        raise EvictionConfigError(
            f"{path}: unsupported eviction signal {_q(signal)}; "
            f"expected one of {', '.join(SIGNALS)}"
        )
    return signal


def _parse_statement(
    path: str, raw: object, *, min_reclaim: bool
) -> tuple[Amount, str | None] | None:
    """One evictionHard/evictionSoft (or evictionMinimumReclaim) value, upstream's
    parseThresholdStatement (parseMinimumReclaims): None when upstream ignores it."""
    if isinstance(raw, Percentage):
        return raw, None
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise EvictionConfigError(f"{path}: {_q(raw)}: {_EXPECT_THRESHOLD}")
    text = str(raw)
    if not min_reclaim and text.startswith("<"):
        text = text[1:]  # the flag form "memory.available<100Mi" as a map value
    if text.endswith("%"):
        if not min_reclaim and text in ("0%", "100%"):
            return None  # upstream ignores 0% and 100% thresholds
        try:
            fraction = parse_percentage(text)
        except ValueError:
            raise EvictionConfigError(f"{path}: {_q(raw)}: {_EXPECT_THRESHOLD}") from None
        if min_reclaim and fraction <= 0:
            raise EvictionConfigError(f"{path}: {_q(raw)}: a percentage must be above 0%")
        if fraction < 0:
            raise EvictionConfigError(f"{path}: {_q(raw)}: a percentage must be at least 0%")
        if fraction > 1:
            raise EvictionConfigError(f"{path}: {_q(raw)}: a percentage must be at most 100%")
        if fraction == 0:
            return None  # "0.0%": a threshold of nothing is never met
        return Percentage(fraction), None
    try:
        qty = Quantity.parse(text)
    except QuantityError:
        raise EvictionConfigError(f"{path}: {_q(raw)}: {_EXPECT_THRESHOLD}") from None
    if min_reclaim and qty.sign() < 0:
        raise EvictionConfigError(f"{path}: {_q(raw)}: must not be negative")
    if not min_reclaim and qty.sign() <= 0:
        raise EvictionConfigError(f"{path}: {_q(raw)}: must be positive")
    if not qty.fits_int64_milli():
        raise EvictionConfigError(f"{path}: {_q(raw)}: {ERR_BEYOND_INT64_MILLI}")
    return qty.int_value(), qty.format


def _as_map(path: str, raw: object, sep: str) -> dict[str, object]:
    """A KubeletConfiguration map, or the flag form ("a<1Gi,b<10%" / "a=1m30s,b=2m")."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        out: dict[str, object] = {}
        for k, v in raw.items():
            if not isinstance(k, str):
                raise EvictionConfigError(f"{path}: key {_q(k)}: expected a signal name")
            out[k] = v
        return out
    if isinstance(raw, str):
        out = {}
        for item in filter(None, (part.strip() for part in raw.split(","))):
            key, found, value = item.partition(sep)
            if not found:
                raise EvictionConfigError(
                    f"{path}: {_q(item)}: expected signal{sep}value, e.g. "
                    + ('"memory.available<100Mi"' if sep == "<" else '"memory.available=1m30s"')
                )
            out[key.strip()] = value.strip()
        return out
    raise EvictionConfigError(f"{path}: {_q(raw)}: expected a map of signal to value")


@dataclass
class EvictionConfig:
    """The eviction part of a KubeletConfiguration (plus kubera's monitoring period).

    Threshold maps take ``"100Mi"``, ``"<100Mi"``, ``"10%"``, ints or :class:`Percentage`;
    grace periods take Go durations or seconds. The constructor validates everything (an
    :class:`EvictionConfigError` names the field); :meth:`from_dict` applies the kubelet's
    defaulting rules to raw KubeletConfiguration keys.
    """

    #: evictionHard: thresholds that evict at once. Default: the kubelet's Linux defaults.
    hard: dict[str, object] = field(default_factory=lambda: dict(DEFAULT_EVICTION_HARD))
    #: evictionSoft: thresholds that evict after holding for their grace period.
    soft: dict[str, object] = field(default_factory=dict)
    #: evictionSoftGracePeriod: required for every soft threshold.
    soft_grace_period: dict[str, object] = field(default_factory=dict)
    #: evictionMaxPodGracePeriod (s): caps the pod's own grace period on soft evictions.
    max_pod_grace_period: float = 0.0
    #: evictionMinimumReclaim: per signal, how far past its threshold to reclaim.
    minimum_reclaim: dict[str, object] = field(default_factory=dict)
    #: evictionPressureTransitionPeriod (s): how long a pressure condition outlives the
    #: last threshold of its kind that was met.
    pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD
    #: The housekeeping interval (s) between two synchronize passes (kubera:
    #: evictionMonitoringPeriod; upstream's housekeeping-interval, 10 s).
    monitoring_period: float = DEFAULT_MONITORING_PERIOD

    def __post_init__(self) -> None:
        for name in ("max_pod_grace_period", "pressure_transition_period", "monitoring_period"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise EvictionConfigError(f"{name}: {_q(value)}: expected a number of seconds")
            if not math.isfinite(value) or value < 0:
                raise EvictionConfigError(f"{name}: {_q(value)}: must not be negative")
        # Upstream never sees a zero transition period (it defaults 0 to 5m), and a zero
        # one would report no condition at all (the window test is "since < period").
        for name in ("pressure_transition_period", "monitoring_period"):
            if getattr(self, name) <= 0:
                raise EvictionConfigError(f"{name}: {_q(getattr(self, name))}: must be positive")
        self.thresholds()  # validates the maps

    def thresholds(self) -> tuple[Threshold, ...]:
        """The configured thresholds (upstream ParseThresholdConfig): hard ones, then soft
        ones with their grace periods, each carrying its signal's minimum reclaim."""
        graces = {
            _check_signal(f'evictionSoftGracePeriod["{s}"]', s): _seconds(
                f'evictionSoftGracePeriod["{s}"]', v
            )
            for s, v in self.soft_grace_period.items()
        }
        reclaims: dict[str, Amount] = {}
        for s, v in self.minimum_reclaim.items():
            path = f'evictionMinimumReclaim["{s}"]'
            _check_signal(path, s)
            parsed = _parse_statement(path, v, min_reclaim=True)
            assert parsed is not None  # minimum reclaims are never ignored
            reclaims[s] = parsed[0]
        out: list[Threshold] = []
        for source, statements in (("evictionHard", self.hard), ("evictionSoft", self.soft)):
            for s, v in statements.items():
                path = f'{source}["{s}"]'
                _check_signal(path, s)
                parsed = _parse_statement(path, v, min_reclaim=False)
                if parsed is None:
                    continue
                grace = 0.0
                if source == "evictionSoft":
                    if s not in graces:
                        raise EvictionConfigError(
                            f"{path}: {_q(v)}: a soft threshold needs a grace period; "
                            f'set evictionSoftGracePeriod["{s}"], e.g. "1m30s"'
                        )
                    grace = graces[s]
                value, fmt = parsed
                out.append(Threshold(s, value, grace, reclaims.get(s, 0), value_format=fmt))
        return tuple(out)

    def warnings(self) -> list[str]:
        """Settings accepted but ignored, as upstream warns about them."""
        return [
            f"{source}[{_q(s)}] is ignored: containerfs thresholds follow nodefs or imagefs"
            for source, m in (("evictionHard", self.hard), ("evictionSoft", self.soft))
            for s in m
            if s in (CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE)
        ]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> EvictionConfig:
        """From KubeletConfiguration keys (other keys of a full KubeletConfiguration are
        ignored; an unknown ``eviction…`` key is an error, it is likely a typo).

        Like the kubelet: without ``evictionHard`` the defaults apply; with it, only the
        signals given have hard thresholds unless ``mergeDefaultEvictionSettings: true``
        (then the defaults fill in the rest). A zero ``evictionPressureTransitionPeriod``
        means the default 5m.
        """
        d = d or {}
        for key in d:
            if isinstance(key, str) and key.startswith("eviction") and key not in _CONFIG_KEYS:
                raise EvictionConfigError(
                    f"{key}: unknown eviction setting; expected one of {', '.join(_CONFIG_KEYS)}"
                )
        merge = d.get("mergeDefaultEvictionSettings", False)
        if not isinstance(merge, bool):
            raise EvictionConfigError(
                f"mergeDefaultEvictionSettings: {_q(merge)}: expected true or false"
            )
        raw_hard = d.get("evictionHard")
        if raw_hard is None:
            hard: dict[str, object] = dict(DEFAULT_EVICTION_HARD)
        else:
            hard = _as_map("evictionHard", raw_hard, "<")
            if merge:
                hard = {**DEFAULT_EVICTION_HARD, **hard}
        raw_grace = d.get("evictionMaxPodGracePeriod", 0)
        if isinstance(raw_grace, bool) or not isinstance(raw_grace, int):
            raise EvictionConfigError(
                f"evictionMaxPodGracePeriod: {_q(raw_grace)}: expected whole seconds, e.g. 30"
            )
        if raw_grace < 0:
            raise EvictionConfigError(
                f"evictionMaxPodGracePeriod: {_q(raw_grace)}: must not be negative"
            )
        transition = d.get("evictionPressureTransitionPeriod")
        transition_s = (
            0.0 if transition is None else _seconds("evictionPressureTransitionPeriod", transition)
        )
        monitoring = d.get("evictionMonitoringPeriod")
        monitoring_s = (
            DEFAULT_MONITORING_PERIOD
            if monitoring is None
            else _seconds("evictionMonitoringPeriod", monitoring)
        )
        if monitoring_s <= 0:
            raise EvictionConfigError(
                f"evictionMonitoringPeriod: {_q(monitoring)}: must be positive"
            )
        return cls(
            hard=hard,
            soft=_as_map("evictionSoft", d.get("evictionSoft"), "<"),
            soft_grace_period=_as_map(
                "evictionSoftGracePeriod", d.get("evictionSoftGracePeriod"), "="
            ),
            max_pod_grace_period=float(raw_grace),
            minimum_reclaim=_as_map("evictionMinimumReclaim", d.get("evictionMinimumReclaim"), "="),
            pressure_transition_period=transition_s or DEFAULT_PRESSURE_TRANSITION_PERIOD,
            monitoring_period=monitoring_s,
        )


_CONFIG_KEYS: Final = (
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMaxPodGracePeriod",
    "evictionMinimumReclaim",
    "evictionPressureTransitionPeriod",
    "evictionMonitoringPeriod",
)
