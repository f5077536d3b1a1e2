"""The hollow kubelet's node-pressure eviction manager, as pure logic.

A real kubelet watches memory, disk, inodes and PIDs and, when one runs short, first frees
node-level resources (unused images) and then fails one pod per housekeeping pass. kubera
runs thousands of hollow kubelets in one process, so this module is the decision only: the
node pool observes usage, calls :meth:`EvictionManager.synchronize` once per monitoring
period with plain numbers, and carries out the returned :class:`Decision` (post node
conditions, forget images, kill a pod with phase Failed / reason ``Evicted``). Nothing here
does I/O, reads a clock or needs asyncio; ``now`` is always a parameter.

Everything follows upstream ``pkg/kubelet/eviction`` (eviction_manager.go, helpers.go,
api/types.go) and the seeds' "Node-pressure Eviction" page:

* thresholds ``signal < quantity | percentage``; percentages are float32 fractions of the
  signal's capacity, truncated to an integer amount (GetThresholdQuantity);
* a threshold is met when ``available < amount`` (strictly); a threshold that drove an
  eviction stays met until ``available >= amount + minimum reclaim``;
* soft thresholds drive evictions only after being met continuously for their grace period;
  node conditions appear as soon as any threshold (hard or soft) is met and stay for
  ``pressure_transition_period`` after the last time one was;
* memory is reclaimed before anything else; disk signals first delete unused images (per
  filesystem layout, as buildSignalToNodeReclaimFuncs) and evict only if, after that, some
  configured threshold is still met with its minimum reclaim;
* pods are ranked per resource (rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure)
  and at most one pod is evicted per pass; critical pods (static, or priority at least
  2,000,000,000) are never evicted; hard thresholds kill with the immediate grace period
  (1 s upstream), soft ones with min(evictionMaxPodGracePeriod, the pod's grace).

Where upstream leaves an order to Go's map iteration or an unstable sort, this module picks
a deterministic one and says so at the spot.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final, NamedTuple

import numpy as np

from services.api.duration import parse_duration
from services.api.quantity import BINARY_SI, DECIMAL_SI, Quantity, QuantityError

# ============================================================================ names

MEMORY_AVAILABLE: Final = "memory.available"
NODEFS_AVAILABLE: Final = "nodefs.available"
NODEFS_INODES_FREE: Final = "nodefs.inodesFree"
IMAGEFS_AVAILABLE: Final = "imagefs.available"
IMAGEFS_INODES_FREE: Final = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE: Final = "containerfs.available"
CONTAINERFS_INODES_FREE: Final = "containerfs.inodesFree"
PID_AVAILABLE: Final = "pid.available"
#: Every signal, in the order of the docs' signal table; also the (deterministic) order in
#: which met thresholds of equal standing are reclaimed.
SIGNALS: Final = (
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    PID_AVAILABLE,
)
DISK_SIGNALS: Final = frozenset(SIGNALS[1:7])

MEMORY_PRESSURE: Final = "MemoryPressure"
DISK_PRESSURE: Final = "DiskPressure"
PID_PRESSURE: Final = "PIDPressure"
CONDITIONS: Final = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)
#: The taints the node lifecycle controller puts on a node with each condition (effect
#: NoSchedule); the kubelet's admission checks the memory one.
CONDITION_TAINTS: Final = {
    MEMORY_PRESSURE: "node.kubernetes.io/memory-pressure",
    DISK_PRESSURE: "node.kubernetes.io/disk-pressure",
    PID_PRESSURE: "node.kubernetes.io/pid-pressure",
}

RESOURCE_MEMORY: Final = "memory"
RESOURCE_EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_INODES: Final = "inodes"
RESOURCE_PIDS: Final = "pids"

SIGNAL_TO_CONDITION: Final = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    **dict.fromkeys(DISK_SIGNALS, DISK_PRESSURE),
    PID_AVAILABLE: PID_PRESSURE,
}
SIGNAL_TO_RESOURCE: Final = {
    MEMORY_AVAILABLE: RESOURCE_MEMORY,
    NODEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    IMAGEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    CONTAINERFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: RESOURCE_INODES,
    IMAGEFS_INODES_FREE: RESOURCE_INODES,
    CONTAINERFS_INODES_FREE: RESOURCE_INODES,
    PID_AVAILABLE: RESOURCE_PIDS,
}

#: status.reason of an evicted pod (and of a pod the eviction admission rejects).
REASON_EVICTED: Final = "Evicted"
#: Grace period of a hard-threshold eviction: 0 s, as the docs (and our issue) say. Upstream's
#: code passes 1 s (immediateEvictionGracePeriodSeconds) so a real runtime still gets a stop
#: signal through; a hollow kubelet has nothing to signal.
IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS: Final = 0
#: How long upstream waits for an evicted pod to be cleaned up before the next pass.
POD_CLEANUP_TIMEOUT_SECONDS: Final = 30.0
#: Pods at or above this priority (system-cluster-critical, system-node-critical) are
#: critical: admitted under pressure and never evicted (kubelettypes.IsCriticalPod).
SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000

QOS_GUARANTEED: Final = "Guaranteed"
QOS_BURSTABLE: Final = "Burstable"
QOS_BEST_EFFORT: Final = "BestEffort"

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


# ====================================================================== amounts


def _q(value: object) -> str:
    """A value quoted for an error message (Go's %q for strings)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _float32(x: float) -> float:
    return float(np.float32(x))


@dataclass(frozen=True)
class Percentage:
    """A fraction (0..1) of a signal's capacity, rounded to float32 like upstream's
    ThresholdValue.Percentage so percentages yield the same amounts as a kubelet."""

    fraction: float

    def __post_init__(self) -> None:
        f = float(self.fraction)
        if not (math.isfinite(f) and 0.0 <= f <= 1.0):
            raise ValueError(f"a percentage fraction must be within [0, 1], got {f!r}")
        object.__setattr__(self, "fraction", _float32(f))

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


def _format_request(amount: int) -> str:
    """A request the user wrote in some suffix family we no longer know: binary when the
    value is a multiple of 1024 (``128Mi``), decimal otherwise (``1G``)."""
    if amount == 0:
        return "0"
    return format_quantity(amount, BINARY_SI if amount % 1024 == 0 else DECIMAL_SI)


# =================================================================== thresholds


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
        return _format_request(self.value)

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


# ----------------------------------------------------------------- config parsing

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


# ================================================================= observations


class FsLayout(enum.Enum):
    """Where images and containers' writable layers live (the docs' three options)."""

    #: One filesystem for everything: nodefs = imagefs = containerfs.
    SINGLE = "single"
    #: Images and writable layers on a dedicated imagefs ("split disk"); containerfs = imagefs.
    SEPARATE_IMAGEFS = "separate-imagefs"
    #: Images alone on imagefs; writable layers on containerfs, which is on root ("split
    #: image"; upstream's KubeletSeparateDiskGC).
    SPLIT_IMAGEFS = "split-imagefs"


class Observation(NamedTuple):
    """One signal this pass: what is available and what the signal's capacity is."""

    available: int
    capacity: int


@dataclass
class NodeStats:
    """What the node's "cadvisor" reports this pass (one summary)."""

    memory_capacity: int
    memory_working_set: int
    nodefs_capacity: int
    nodefs_available: int
    #: Inode counts; a zero ``nodefs_inodes`` means "not reported" (no inodesFree signal).
    nodefs_inodes: int = 0
    nodefs_inodes_free: int = 0
    #: Images (and, unless containerfs is split off, writable layers) on their own
    #: filesystem; when False the imagefs_* fields are ignored and imagefs is nodefs.
    imagefs_separate: bool = False
    imagefs_capacity: int = 0
    imagefs_available: int = 0
    imagefs_inodes: int = 0
    imagefs_inodes_free: int = 0
    #: Writable layers on a containerfs apart from imagefs (needs imagefs_separate); when
    #: False the containerfs signals observe imagefs, like upstream's summary.
    containerfs_split: bool = False
    containerfs_capacity: int = 0
    containerfs_available: int = 0
    containerfs_inodes: int = 0
    containerfs_inodes_free: int = 0
    #: rlimit: the pid limit (0 = not reported, no pid.available signal) and pids in use.
    pid_max: int = 0
    pids_used: int = 0
    #: When these stats were taken; a pass whose stats are not newer than the previous
    #: pass's evicts nothing (thresholdsUpdatedStats). None: always fresh.
    time: float | None = None

    def __post_init__(self) -> None:
        if self.containerfs_split and not self.imagefs_separate:
            raise ValueError("containerfs_split needs imagefs_separate (split image filesystem)")

    @property
    def layout(self) -> FsLayout:
        if not self.imagefs_separate:
            return FsLayout.SINGLE
        return FsLayout.SPLIT_IMAGEFS if self.containerfs_split else FsLayout.SEPARATE_IMAGEFS


def signal_observations(stats: NodeStats) -> dict[str, Observation]:
    """signal → (available, capacity), like upstream makeSignalObservations.

    memory.available = capacity − working set (capacity = available + working set, as
    upstream derives it); a filesystem's signals come from the filesystem that holds it:
    imagefs is nodefs unless separate, containerfs is imagefs unless split. Available
    amounts are clipped at 0 (a real summary never reports less).
    """

    def obs(available: int, capacity: int) -> Observation:
        return Observation(max(0, int(available)), int(capacity))

    mem_avail = max(0, stats.memory_capacity - stats.memory_working_set)
    out = {MEMORY_AVAILABLE: obs(mem_avail, mem_avail + stats.memory_working_set)}
    fs: dict[str, tuple[int, int, int, int]] = {
        "nodefs": (
            stats.nodefs_available,
            stats.nodefs_capacity,
            stats.nodefs_inodes_free,
            stats.nodefs_inodes,
        )
    }
    fs["imagefs"] = (
        (
            stats.imagefs_available,
            stats.imagefs_capacity,
            stats.imagefs_inodes_free,
            stats.imagefs_inodes,
        )
        if stats.imagefs_separate
        else fs["nodefs"]
    )
    fs["containerfs"] = (
        (
            stats.containerfs_available,
            stats.containerfs_capacity,
            stats.containerfs_inodes_free,
            stats.containerfs_inodes,
        )
        if stats.containerfs_split
        else fs["imagefs"]
    )
    for name, (avail, cap, ifree, inodes) in fs.items():
        out[f"{name}.available"] = obs(avail, cap)
        if inodes > 0:
            out[f"{name}.inodesFree"] = obs(ifree, inodes)
    if stats.pid_max > 0:
        out[PID_AVAILABLE] = obs(stats.pid_max - stats.pids_used, stats.pid_max)
    return out


# ========================================================================= pods


@dataclass(frozen=True)
class ContainerStats:
    """One container, for the eviction message (usage and requests per container)."""

    name: str
    memory: int = 0
    memory_request: int = 0
    #: Writable layer + logs (what upstream's message counts for ephemeral storage).
    ephemeral_storage: int = 0
    ephemeral_storage_request: int = 0


@dataclass
class PodStats:
    """One active pod: identity, what ranking needs from its spec, and its usage now.

    Ephemeral storage is split the way upstream measures it per filesystem: the containers'
    writable layers (``writable_layer``: on imagefs when imagefs is separate and not split),
    local volumes such as emptyDir (``local_volumes``) and container logs (the rest), the
    last two always on nodefs. kubera's usage model puts a pod's disk use in logs unless
    told otherwise, so by default everything counts against nodefs.
    """

    key: str
    uid: str = ""
    priority: int = 0
    qos: str = QOS_BEST_EFFORT
    #: Pod-level requests (upstream GetResourceRequestQuantity: containers, init
    #: containers and overhead); 0 = none.
    memory_request: int = 0
    ephemeral_storage_request: int = 0
    #: Memory working set.
    memory: int = 0
    #: Total ephemeral storage: writable layers + logs + local volumes.
    ephemeral_storage: int = 0
    #: Total inodes, same places as ephemeral storage.
    inodes: int = 0
    pids: int = 0
    writable_layer: int = 0
    writable_layer_inodes: int = 0
    local_volumes: int = 0
    termination_grace_period_seconds: float | None = 30.0
    #: Container names, or ContainerStats for exact per-container messages. With bare
    #: names the pod's usage and requests are shared out evenly among them.
    containers: Sequence[str | ContainerStats] = ()
    #: False when the summary had no stats for the pod (upstream ranks those first).
    has_stats: bool = True
    #: Static (or mirror) pods are critical whatever their priority.
    static: bool = False
    #: Already being killed: not a candidate again.
    terminating: bool = False

    @property
    def critical(self) -> bool:
        return self.static or self.priority >= SYSTEM_CRITICAL_PRIORITY

    def container_stats(self) -> list[ContainerStats]:
        """Per-container stats; bare names share the pod's numbers evenly."""
        named = [c for c in self.containers if isinstance(c, str)]
        if not named:
            return [c for c in self.containers if isinstance(c, ContainerStats)]
        n = len(named)
        logs_and_layer = max(0, self.ephemeral_storage - self.local_volumes)
        shared = ContainerStats(
            "",
            memory=self.memory // n,
            memory_request=self.memory_request // n,
            ephemeral_storage=logs_and_layer // n,
            ephemeral_storage_request=self.ephemeral_storage_request // n,
        )
        return [
            c if isinstance(c, ContainerStats) else replace(shared, name=c) for c in self.containers
        ]


@dataclass(frozen=True)
class ImageStats:
    """An image on the node; unused, unpinned images are what image GC deletes."""

    name: str
    size_bytes: int
    in_use: bool = False
    inodes: int = 0
    pinned: bool = False


# What each disk signal's ranking measures (buildSignalToRankFunc): "root" is the
# writable layers, "logs" logs plus local volumes; images add nothing to a pod.
_ROOT, _LOGS = "root", "logs"
_RANK_MEASURES: Final[dict[FsLayout, dict[str, frozenset[str]]]] = {
    FsLayout.SINGLE: dict.fromkeys(DISK_SIGNALS, frozenset({_ROOT, _LOGS})),
    FsLayout.SEPARATE_IMAGEFS: {
        **dict.fromkeys((NODEFS_AVAILABLE, NODEFS_INODES_FREE), frozenset({_LOGS})),
        **dict.fromkeys(
            (
                IMAGEFS_AVAILABLE,
                IMAGEFS_INODES_FREE,
                CONTAINERFS_AVAILABLE,
                CONTAINERFS_INODES_FREE,
            ),
            frozenset({_ROOT}),
        ),
    },
    FsLayout.SPLIT_IMAGEFS: {
        **dict.fromkeys(
            (
                NODEFS_AVAILABLE,
                NODEFS_INODES_FREE,
                CONTAINERFS_AVAILABLE,
                CONTAINERFS_INODES_FREE,
            ),
            frozenset({_ROOT, _LOGS}),
        ),
        **dict.fromkeys((IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE), frozenset()),
    },
}

# Which disk signals run image GC (buildSignalToNodeReclaimFuncs); the others with a
# reclaim list only run container GC, which frees nothing here (no dead containers are
# modelled) but still leads to the re-check, as upstream.
_IMAGE_GC_SIGNALS: Final[dict[FsLayout, frozenset[str]]] = {
    FsLayout.SINGLE: DISK_SIGNALS,
    FsLayout.SEPARATE_IMAGEFS: frozenset(
        (IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE, CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE)
    ),
    FsLayout.SPLIT_IMAGEFS: frozenset((IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE)),
}
_RECLAIM_SIGNALS: Final[dict[FsLayout, frozenset[str]]] = {
    FsLayout.SINGLE: DISK_SIGNALS,
    FsLayout.SEPARATE_IMAGEFS: _IMAGE_GC_SIGNALS[FsLayout.SEPARATE_IMAGEFS],
    FsLayout.SPLIT_IMAGEFS: DISK_SIGNALS,
}


def rank_measures(signal: str, layout: FsLayout) -> frozenset[str]:
    """The parts of a pod's disk use ("root", "logs") that count for a disk signal."""
    return _RANK_MEASURES[layout][signal]


def pod_disk_usage(pod: PodStats, measures: frozenset[str]) -> tuple[int, int]:
    """(bytes, inodes) of the measured parts of the pod's ephemeral storage."""
    bytes_, inodes = 0, 0
    if _ROOT in measures:
        bytes_ += pod.writable_layer
        inodes += pod.writable_layer_inodes
    if _LOGS in measures:
        bytes_ += max(0, pod.ephemeral_storage - pod.writable_layer)
        inodes += max(0, pod.inodes - pod.writable_layer_inodes)
    return bytes_, inodes


# ====================================================================== ranking
#
# Upstream ranks with a chain of comparators and Go's unstable sort.Sort; each key below
# is the same chain as a tuple, and Python's stable sort keeps the input order for pods
# the chain cannot tell apart (upstream leaves that order unspecified).


def _memory_key(p: PodStats) -> tuple[int, int, int, int]:
    if not p.has_stats:  # pods without stats go first (exceedMemoryRequests, memory)
        return (0, 0, p.priority, 0)
    over = p.memory - p.memory_request
    return (1, 0 if over > 0 else 1, p.priority, -over)


def rank_memory_pressure(pods: Iterable[PodStats]) -> list[PodStats]:
    """Pods whose working set exceeds their memory request first, then lower priority
    first, then the largest usage above request first (rankMemoryPressure)."""
    return sorted(pods, key=_memory_key)


def rank_disk_pressure(
    pods: Iterable[PodStats], *, measures: frozenset[str], resource: str
) -> list[PodStats]:
    """rankDiskPressureFunc: pods whose measured use exceeds their request first, then
    lower priority, then the largest use above the ephemeral-storage request.

    For ``inodes`` upstream compares inode use with an inode request (which no pod has,
    so any inode use "exceeds") and then subtracts the ephemeral-storage *byte* request
    from the inode count; both are kept as upstream does them.
    """

    def key(p: PodStats) -> tuple[int, int, int, int]:
        if not p.has_stats:
            return (0, 0, p.priority, 0)
        used_bytes, used_inodes = pod_disk_usage(p, measures)
        if resource == RESOURCE_INODES:
            used, request = used_inodes, 0
        else:
            used, request = used_bytes, p.ephemeral_storage_request
        over = used - p.ephemeral_storage_request
        return (1, 0 if used > request else 1, p.priority, -over)

    return sorted(pods, key=key)


def rank_pid_pressure(pods: Iterable[PodStats]) -> list[PodStats]:
    """Lower priority first, then (pods without stats first) the most processes first
    (rankPIDPressure)."""
    return sorted(
        pods, key=lambda p: (p.priority, 1, -p.pids) if p.has_stats else (p.priority, 0, 0)
    )


def rank_pods(signal: str, pods: Iterable[PodStats], layout: FsLayout) -> list[PodStats]:
    """Rank pods for eviction under pressure on ``signal``."""
    if signal == MEMORY_AVAILABLE:
        return rank_memory_pressure(pods)
    if signal == PID_AVAILABLE:
        return rank_pid_pressure(pods)
    return rank_disk_pressure(
        pods, measures=rank_measures(signal, layout), resource=SIGNAL_TO_RESOURCE[signal]
    )


# ============================================================ threshold helpers


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


def _reclaim_order(t: Threshold) -> tuple[int, int, int]:
    """Memory first (byEvictionPriority); then, where upstream's order is Go map order,
    the docs' signal order, hard before soft."""
    return (0 if t.signal == MEMORY_AVAILABLE else 1, SIGNALS.index(t.signal), 0 if t.hard else 1)


def node_conditions(thresholds: Iterable[Threshold]) -> set[str]:
    return {SIGNAL_TO_CONDITION[t.signal] for t in thresholds}


# ====================================================================== message


def eviction_message(
    resource: str,
    pod: PodStats,
    thresholds: Sequence[Threshold],
    observations: Mapping[str, Observation],
) -> tuple[str, dict[str, str]]:
    """Upstream's evictionMessage: the message set on the pod and the event annotations.

    "The node was low on resource: R. Threshold quantity: Q, available: A. " then, for
    memory and ephemeral storage, "Container C was using U, request is Q, has larger
    consumption of R. " for each container above its request. Every sentence ends with a
    space, as upstream's.
    """
    message = f"The node was low on resource: {resource}. "
    for t in thresholds:
        if SIGNAL_TO_RESOURCE[t.signal] != resource or t.signal not in observations:
            continue
        o = observations[t.signal]
        fmt = BINARY_SI if resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE) else DECIMAL_SI
        message += (
            f"Threshold quantity: {t.display_amount(o.capacity)}, "
            f"available: {format_quantity(o.available, fmt)}. "
        )
        break
    annotations: dict[str, str] = {}
    if not pod.has_stats:
        return message, annotations
    offenders: list[str] = []
    usages: list[str] = []
    if resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        for c in pod.container_stats():
            if resource == RESOURCE_MEMORY:
                used, request = c.memory, c.memory_request
            else:
                used, request = c.ephemeral_storage, c.ephemeral_storage_request
            if used > request:
                usage = format_quantity(used, BINARY_SI)
                message += (
                    f"Container {c.name} was using {usage}, request is "
                    f"{_format_request(request)}, has larger consumption of {resource}. "
                )
                offenders.append(c.name)
                usages.append(usage)
    annotations["offending_containers"] = ",".join(offenders)
    annotations["offending_containers_usage"] = ",".join(usages)
    annotations["starved_resource"] = resource
    return message, annotations


# ====================================================================== manager


class Eviction(NamedTuple):
    """One pod to kill: phase Failed, reason Evicted, this message, this grace period."""

    pod_key: str
    grace_seconds: float
    message: str
    signal: str


@dataclass(frozen=True)
class Decision:
    """What one synchronize pass decided."""

    #: MemoryPressure / DiskPressure / PIDPressure → status (every key present).
    conditions: dict[str, bool]
    #: signal → (available, capacity) this pass, for metrics and describe.
    observations: dict[str, Observation]
    #: Thresholds met now, regardless of grace periods (they drive the conditions).
    thresholds_observed: tuple[Threshold, ...] = ()
    #: Thresholds met and past their grace periods (they drive reclaim and eviction).
    thresholds_met: tuple[Threshold, ...] = ()
    #: The signal reclaimed this pass, if any.
    reclaim_signal: str | None = None
    #: Unused images to delete (node-level reclaim), largest first.
    images_to_delete: tuple[str, ...] = ()
    #: At most one pod per pass.
    evict: tuple[Eviction, ...] = ()
    #: Event annotations of the eviction (offending containers, starved resource).
    eviction_annotations: dict[str, str] = field(default_factory=dict)
    #: The previous eviction's pod is still being cleaned up; nothing was decided.
    waiting_for_cleanup: bool = False


PodSource = Sequence[PodStats] | Callable[[], Sequence[PodStats]]


class EvictionManager:
    """One node's eviction manager: the state upstream keeps between synchronize passes.

    State between passes (all keyed by value, none shared between managers):

    * when each currently-met threshold was first seen met (grace periods): a threshold
      that stops being met is forgotten, so a soft threshold's clock restarts;
    * when each pressure condition was last observed (transition period);
    * the thresholds that were met past their grace period last pass (those keep being met
      until their minimum reclaim is satisfied);
    * the time of the last stats, and the pod evicted last, until it is cleaned up.
    """

    def __init__(self, config: EvictionConfig | None = None) -> None:
        self.config = config if config is not None else EvictionConfig()
        self._configured = self.config.thresholds()
        self._layout: FsLayout | None = None
        self._thresholds: tuple[Threshold, ...] = ()
        self._first_observed: dict[Threshold, float] = {}
        self._condition_last_observed: dict[str, float] = {}
        self._conditions: frozenset[str] = frozenset()
        self._met: list[Threshold] = []
        self._observed: list[Threshold] = []
        self._last_stats_time: float | None = None
        self._pending: tuple[str, float] | None = None

    @property
    def conditions(self) -> dict[str, bool]:
        return {c: c in self._conditions for c in CONDITIONS}

    @property
    def thresholds(self) -> tuple[Threshold, ...]:
        """The thresholds in force (containerfs ones derived once the layout is known)."""
        return self._thresholds if self._layout is not None else self._configured

    def idle(self) -> bool:
        """True when a pass with no threshold met would change nothing: no condition, no
        threshold being timed or awaiting its minimum reclaim, no eviction in flight. The
        pool may skip such nodes until a signal gets near a threshold."""
        return not (self._conditions or self._first_observed or self._met or self._pending)

    def admit(
        self, pod_qos: str, tolerates_memory_pressure: bool, *, critical: bool = False
    ) -> tuple[bool, str, str]:
        return admit(pod_qos, tolerates_memory_pressure, self.conditions, critical=critical)

    def synchronize(
        self,
        now: float,
        stats: NodeStats,
        pods: PodSource,
        images: Iterable[ImageStats] = (),
    ) -> Decision:
        """One housekeeping pass (upstream synchronize). ``pods`` are the node's active
        pods, or a callable returning them: it is called only if pods must be looked at."""
        layout = stats.layout
        if self._layout is None:
            self._layout = layout
            self._thresholds = thresholds_for_layout(self._configured, layout)
        elif layout is not self._layout:
            raise ValueError(
                f"the node's filesystem layout changed from {self._layout.value} to "
                f"{layout.value}; the kubelet detects it once"
            )
        observations = signal_observations(stats)
        cache: list[Sequence[PodStats]] = []

        def active_pods() -> Sequence[PodStats]:
            if not cache:
                cache.append(pods() if callable(pods) else pods)
            return cache[0]

        # Upstream blocks after an eviction until the pod is cleaned up (or 30 s pass);
        # no pass runs meanwhile, so nothing changes state here.
        if self._pending is not None:
            key, at = self._pending
            if now - at < POD_CLEANUP_TIMEOUT_SECONDS and any(p.key == key for p in active_pods()):
                return Decision(
                    conditions=self.conditions,
                    observations=observations,
                    thresholds_observed=tuple(self._observed),
                    thresholds_met=tuple(self._met),
                    waiting_for_cleanup=True,
                )
            self._pending = None

        observed = thresholds_met(self._thresholds, observations)
        if self._met:
            unresolved = thresholds_met(self._met, observations, enforce_min_reclaim=True)
            observed += [t for t in unresolved if t not in observed]
        first_observed = {t: self._first_observed.get(t, now) for t in observed}
        last_observed = dict(self._condition_last_observed)
        for condition in node_conditions(observed):
            last_observed[condition] = now
        conditions = frozenset(
            c
            for c, at in last_observed.items()
            if now - at < self.config.pressure_transition_period
        )
        met = [t for t in observed if now - first_observed[t] >= t.grace_period]

        fresh = (
            stats.time is None
            or self._last_stats_time is None
            or stats.time > self._last_stats_time
        )
        self._first_observed = first_observed
        self._condition_last_observed = last_observed
        self._conditions = conditions
        self._met = met
        self._observed = observed
        if stats.time is not None:
            self._last_stats_time = stats.time

        decision = Decision(
            conditions=self.conditions,
            observations=observations,
            thresholds_observed=tuple(observed),
            thresholds_met=tuple(met),
        )
        if not met or not fresh:
            return decision

        ordered = sorted(met, key=_reclaim_order)
        to_reclaim = ordered[0]
        resource = SIGNAL_TO_RESOURCE[to_reclaim.signal]
        decision = replace(decision, reclaim_signal=to_reclaim.signal)

        if to_reclaim.signal in _RECLAIM_SIGNALS[layout]:
            deleted: list[ImageStats] = []
            if to_reclaim.signal in _IMAGE_GC_SIGNALS[layout]:
                deleted = sorted(
                    (i for i in images if not i.in_use and not i.pinned),
                    key=lambda i: -i.size_bytes,
                )
            decision = replace(decision, images_to_delete=tuple(i.name for i in deleted))
            after = signal_observations(_after_image_gc(stats, deleted))
            # Upstream re-checks every configured threshold, with minimum reclaim and
            # regardless of grace periods: any one still met means pods must go.
            if not thresholds_met(self._thresholds, after, enforce_min_reclaim=True):
                return decision

        candidates = [p for p in active_pods() if not p.terminating]
        for pod in rank_pods(to_reclaim.signal, candidates, layout):
            if pod.critical:
                continue  # evictPod refuses critical pods; the next one in rank goes
            grace: float = IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
            if not to_reclaim.hard:
                grace = self.config.max_pod_grace_period
                if pod.termination_grace_period_seconds is not None:
                    grace = min(grace, pod.termination_grace_period_seconds)
            message, annotations = eviction_message(resource, pod, ordered, observations)
            self._pending = (pod.key, now)
            return replace(
                decision,
                evict=(Eviction(pod.key, grace, message, to_reclaim.signal),),
                eviction_annotations=annotations,
            )
        return decision


def _after_image_gc(stats: NodeStats, deleted: Sequence[ImageStats]) -> NodeStats:
    """The stats once these images are gone: their bytes and inodes return to the
    filesystem that holds images (imagefs if separate, else nodefs)."""
    if not deleted:
        return stats
    freed = sum(i.size_bytes for i in deleted)
    freed_inodes = sum(i.inodes for i in deleted)
    if stats.imagefs_separate:
        return replace(
            stats,
            imagefs_available=stats.imagefs_available + freed,
            imagefs_inodes_free=stats.imagefs_inodes_free + freed_inodes,
        )
    return replace(
        stats,
        nodefs_available=stats.nodefs_available + freed,
        nodefs_inodes_free=stats.nodefs_inodes_free + freed_inodes,
    )


# ==================================================================== admission


def admit(
    pod_qos: str,
    tolerates_memory_pressure: bool,
    conditions: Mapping[str, bool],
    *,
    critical: bool = False,
) -> tuple[bool, str, str]:
    """The eviction manager's pod admission (upstream managerImpl.Admit): (ok, reason,
    message).

    No pressure condition, or a critical pod: admitted. Memory pressure alone: admitted
    unless BestEffort, and BestEffort too if it tolerates the memory-pressure NoSchedule
    taint. Any other pressure condition (alone or with memory pressure): every pod is
    rejected with reason Evicted and "The node had condition: [DiskPressure]. ".
    """
    active = [c for c in CONDITIONS if conditions.get(c)]
    if not active or critical:
        return True, "", ""
    if active == [MEMORY_PRESSURE] and (pod_qos != QOS_BEST_EFFORT or tolerates_memory_pressure):
        return True, "", ""
    return False, REASON_EVICTED, f"The node had condition: [{' '.join(active)}]. "
