"""A pod's usage model on a hollow kubelet, and the node totals of many pods at once.

The model comes from the pod's ``kubera.io/usage`` annotation (its schema and parser are
vocabulary: services/api/helpers/usage.py) or a node template's default for the pod's labels
(`resolve_usage`). The eviction loop needs every node's totals every monitoring period for
tens of thousands of pods in one Python process, so :class:`UsageTable` keeps the linear
part of every model in numpy arrays and sums per node with one scatter-add; only pods with
spikes or a periodic part are evaluated one by one.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from protos.kubera.v1 import core_pb2
from services.api.helpers.usage import (
    RESOURCES,
    USAGE_ANNOTATION,
    USAGE_CEILING,
    UsageModel,
    UsageSpecError,
    parse_usage,
    parse_usage_object,
)
from services.api.machinery.labels import Selector, SelectorError, from_label_selector
from services.api.machinery.quantity import QuantityError, parse_quantity


@functools.lru_cache(maxsize=1024)
def _parse_default(canonical_json: str, source: str) -> UsageModel:
    return parse_usage_object(json.loads(canonical_json), source)


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


#: How far ahead a usage curve with spikes or a wave is searched for a limit crossing,
#: and in how many samples (a linear curve is solved exactly).
OVER_HORIZON_SECONDS = 3600.0
OVER_SAMPLES = 3600


def first_over(model: UsageModel, resource: str, limit: float) -> float | None:
    """The first time (seconds after start) at which the model's usage of `resource`
    exceeds `limit`, or None if it never does (within OVER_HORIZON_SECONDS for curves with
    spikes or a periodic part: those are sampled once a second, spike starts exactly).
    The container's OOM kill is queued for that time, so no pod is polled."""
    u = model.get(resource)
    if u is None or u.cap <= limit:
        return None
    if not u.has_extras:
        if u.at(0.0) > limit:
            return 0.0
        if u.rate <= 0:
            return None
        return (math.floor(limit) + 1 - u.start) / u.rate
    candidates = sorted(
        {
            *(s.at for s in u.spikes),
            *(OVER_HORIZON_SECONDS * i / OVER_SAMPLES for i in range(OVER_SAMPLES + 1)),
        }
    )
    for t in candidates:
        if u.at(t) > limit:
            return t
    return None


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
        self._cap = np.full((len(RESOURCES), capacity), USAGE_CEILING)
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
            self._cap, ((0, 0), (0, n - self._cap.shape[1])), constant_values=USAGE_CEILING
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
            self._cap[i, slot] = USAGE_CEILING if u is None else u.cap
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

    def model(self, pod_key: str) -> UsageModel | None:
        """The model a tracked pod runs on (None if it is not tracked)."""
        slot = self._slot.get(pod_key)
        return None if slot is None else self._models[slot]

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


def usage_container(pod: core_pb2.Pod, first_app: int) -> tuple[int, float | None]:
    """Which container's memory the pod's usage model is, and its memory limit: the app
    container with the largest limit (the kernel's OOM killer picks the largest), else
    the first app container, without a limit. (Upstream containers each have their own
    usage; kubera models one curve per pod and gives it to this container.)"""
    best, best_limit = first_app, None
    for i, c in enumerate(pod.spec.containers):
        raw = c.resources.limits.get("memory")
        if raw is None:
            continue
        try:
            limit = float(parse_quantity(raw).value)
        except (QuantityError, ValueError):
            continue
        if best_limit is None or limit > best_limit:
            best, best_limit = first_app + i, limit
    return best, best_limit
