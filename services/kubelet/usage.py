"""How much a hollow pod uses over time, and the node totals of many pods at once.

Hollow kubelets run no containers, so a pod's memory, disk, inodes and pids come from a
model: the pod annotation ``kubera.io/usage`` or a node template's default for the pod's
labels. The eviction loop needs every node's totals every monitoring period for tens of
thousands of pods in one Python process, so :class:`UsageTable` keeps the linear part of
every model in numpy arrays and sums per node with one scatter-add; only pods with spikes
or a periodic part are evaluated one by one.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from services.api.errors import quote as _q
from services.api.labels import Selector, SelectorError, from_label_selector
from services.api.quantity import ERR_BEYOND_INT64_MILLI, Quantity, QuantityError

USAGE_ANNOTATION: Final = "kubera.io/usage"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
INODES: Final = "inodes"
PIDS: Final = "pids"
RESOURCES: Final = (MEMORY, EPHEMERAL_STORAGE, INODES, PIDS)
_RESOURCE_INDEX: Final = {r: i for i, r in enumerate(RESOURCES)}
# No pod uses more than this of anything; keeps floor() results inside int64.
_CEILING: Final = float(2**62)


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
        return _CEILING if self.max is None else min(self.max, _CEILING)

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
    return _parse_object(spec, source)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str, source: str) -> UsageModel:
    """Annotations repeat across the replicas of a workload; the model is immutable."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageSpecError(f"{source}: invalid JSON: {e.msg} (at character {e.pos})") from None
    return _parse_object(obj, source)


def _parse_object(obj: object, source: str) -> UsageModel:
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


@functools.lru_cache(maxsize=1024)
def _parse_default(canonical_json: str, source: str) -> UsageModel:
    return _parse_object(json.loads(canonical_json), source)


def _selector(source: str, raw: Mapping[str, Any]) -> Selector:
    """A plain label map (every label must match) or a LabelSelector
    (``matchLabels`` / ``matchExpressions``)."""
    try:
        if raw and set(raw) <= {"matchLabels", "matchExpressions"}:
            return from_label_selector(raw.get("matchLabels"), raw.get("matchExpressions"))
        return Selector.from_set({str(k): str(v) for k, v in raw.items()})
    except SelectorError as e:
        raise UsageSpecError(f"{source}: selector: {e}") from None


def resolve_usage(
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    defaults: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]] = (),
) -> UsageModel:
    """A pod's usage model: the first node-template default whose selector matches the
    pod's labels, overridden resource by resource by the pod's ``kubera.io/usage``
    annotation. No annotation and no matching default: the empty model (zero usage)."""
    base = UsageModel()
    for i, (selector, spec) in enumerate(defaults):
        source = f"usageDefaults[{i}]"
        if _selector(source, selector).matches(labels):
            try:
                canonical = json.dumps(spec, sort_keys=True)
            except (TypeError, ValueError):
                raise UsageSpecError(f"{source}: {spec!r}: expected a JSON object") from None
            base = _parse_default(canonical, f"{source}.usage")
            break
    text = annotations.get(USAGE_ANNOTATION)
    if text is None:
        return base
    return parse_usage(text).over(base)


# ========================================================================= table


class UsageTable:
    """Every running pod's usage model, laid out for per-node sums.

    Invariants: a live slot has its key in ``_slot`` and ``_live[slot]``; a free slot is in
    ``_free`` with ``_live`` False and is ignored by every sum. Columns are per slot, rows
    per resource in :data:`RESOURCES` order; a resource without a curve has start = rate
    = 0 and cap = +inf, so it sums to zero.
    """

    def __init__(self, capacity: int = 1024) -> None:
        capacity = max(1, capacity)
        self._start = np.zeros((len(RESOURCES), capacity))
        self._rate = np.zeros((len(RESOURCES), capacity))
        self._cap = np.full((len(RESOURCES), capacity), _CEILING)
        self._started_at = np.zeros(capacity)
        self._node = np.zeros(capacity, dtype=np.int64)
        self._live = np.zeros(capacity, dtype=bool)
        self._size = 0  # slots ever used: [0, _size)
        self._slot: dict[str, int] = {}
        self._free: list[int] = []
        self._models: dict[int, UsageModel] = {}
        self._extras: dict[int, UsageModel] = {}  # slots whose model has spikes/periodic
        self._by_node: dict[int, set[str]] = {}
        self._max_node = -1

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self._slot

    def _grow(self) -> None:
        n = self._live.shape[0] * 2
        self._start = np.pad(self._start, ((0, 0), (0, n - self._start.shape[1])))
        self._rate = np.pad(self._rate, ((0, 0), (0, n - self._rate.shape[1])))
        self._cap = np.pad(
            self._cap, ((0, 0), (0, n - self._cap.shape[1])), constant_values=_CEILING
        )
        self._started_at = np.pad(self._started_at, (0, n - self._started_at.shape[0]))
        self._node = np.pad(self._node, (0, n - self._node.shape[0]))
        self._live = np.pad(self._live, (0, n - self._live.shape[0]))

    def add(self, pod_key: str, node_index: int, model: UsageModel, started_at: float) -> None:
        """Track a pod (replacing any previous entry for the same key)."""
        if node_index < 0:
            raise ValueError(f"node_index must be non-negative, got {node_index}")
        self.remove(pod_key)
        if self._free:
            slot = self._free.pop()
        else:
            if self._size == self._live.shape[0]:
                self._grow()
            slot = self._size
            self._size += 1
        for i, r in enumerate(RESOURCES):
            u = model.get(r)
            self._start[i, slot] = 0.0 if u is None else u.start
            self._rate[i, slot] = 0.0 if u is None else u.rate
            self._cap[i, slot] = _CEILING if u is None else u.cap
        self._started_at[slot] = started_at
        self._node[slot] = node_index
        self._live[slot] = True
        self._slot[pod_key] = slot
        self._models[slot] = model
        if model.has_extras:
            self._extras[slot] = model
        self._by_node.setdefault(node_index, set()).add(pod_key)
        self._max_node = max(self._max_node, node_index)

    def remove(self, pod_key: str) -> bool:
        """Forget a pod; False if it was not tracked."""
        slot = self._slot.pop(pod_key, None)
        if slot is None:
            return False
        self._live[slot] = False
        self._models.pop(slot, None)
        self._extras.pop(slot, None)
        node = int(self._node[slot])
        keys = self._by_node.get(node)
        if keys is not None:
            keys.discard(pod_key)
            if not keys:
                del self._by_node[node]
        self._free.append(slot)
        return True

    def pods_on_node(self, node_index: int) -> set[str]:
        return set(self._by_node.get(node_index, ()))

    def pod_usage(self, pod_key: str, now: float) -> dict[str, int]:
        """One pod's usage now (zeros if it is not tracked)."""
        slot = self._slot.get(pod_key)
        if slot is None:
            return dict.fromkeys(RESOURCES, 0)
        return self._models[slot].at(now - float(self._started_at[slot]))

    def node_totals(self, now: float, num_nodes: int | None = None) -> dict[str, np.ndarray]:
        """Per resource, an int64 array indexed by node: the sum of its pods' usage now.
        Its length is ``num_nodes`` if given (larger indices are dropped), else the
        highest node index ever added + 1."""
        n_nodes = self._max_node + 1 if num_nodes is None else num_nodes
        n = self._size
        out = {r: np.zeros(n_nodes, dtype=np.int64) for r in RESOURCES}
        if n == 0 or n_nodes == 0:
            return out
        t = np.maximum(now - self._started_at[:n], 0.0)
        values = self._start[:, :n] + self._rate[:, :n] * t
        for slot, model in self._extras.items():
            ts = max(0.0, now - float(self._started_at[slot]))
            for i, r in enumerate(RESOURCES):
                u = model.get(r)
                if u is not None and u.has_extras:
                    values[i, slot] = values[i, slot] + u.extra(ts)
        values = np.floor(np.minimum(np.maximum(values, 0.0), self._cap[:, :n]))
        live = self._live[:n] & (self._node[:n] < n_nodes)
        nodes = self._node[:n][live]
        for i, r in enumerate(RESOURCES):
            np.add.at(out[r], nodes, values[i][live].astype(np.int64))
        return out
