"""The scheduler's Prometheus histograms over a measurement window, across its processes.

Upstream's scheduler_perf runs one scheduler in the test process and resets its metrics when a
collectMetrics window opens, so a window's histogram is what the scheduler observed in it.
kubera runs several scheduler replicas (processes), a replica may die mid-window (chaos kills
the leader; Ray starts a new process with a new identity) and each leadership term of a
replica serves a fresh registry (its counts start again from zero). So a window's histogram is
the sum over every *process registry* of what it observed inside the window:

- the collector keeps the latest scrape of every replica it knows, one text per registry
  (``ProcessTexts``: a scrape whose counts went down opened a new registry, whose key is
  ``<replica>#<n>``; the previous registry keeps its last scrape), and snapshots all of them
  at a window's start and end (a dead or paused replica by its last scrape);
- ``window_difference`` subtracts per key: a key only at the end (a process or registry born
  in the window) counts from zero, and so does a series whose count went down; then the
  series are summed over the keys (``sum_histograms``).

What a registry observed after its last scrape before its process died or its term ended
is lost, as Prometheus loses it too: a second's worth at the sampling period, more when a
CPU-starved replica answered its last scrapes late (then a failover window's histograms
count fewer observations than pods bound; the binds per replica come from etcd's history).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from prometheus_client.parser import text_string_to_metric_families

from kubera.experiment.measure.measures import Sample, samples


@dataclasses.dataclass
class HistogramSeries:
    """One labelled histogram series: cumulative bucket counts by upper bound, count, sum."""

    labels: dict[str, str]
    buckets: dict[float, float] = dataclasses.field(default_factory=dict)
    count: float = 0.0
    sum: float = 0.0


Histograms = dict[str, dict[tuple[tuple[str, str], ...], HistogramSeries]]


def parse_histograms(text: str) -> Histograms:
    """The histogram series of a Prometheus text exposition: metric → labels → series."""
    out: Histograms = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name
            for suffix in ("_bucket", "_count", "_sum"):
                if name.endswith(suffix):
                    base = name[: -len(suffix)]
                    break
            else:
                continue
            labels = {k: v for k, v in sample.labels.items() if k != "le"}
            key = tuple(sorted(labels.items()))
            series = out.setdefault(base, {}).setdefault(key, HistogramSeries(labels=labels))
            if suffix == "_bucket":
                series.buckets[float(sample.labels["le"])] = float(sample.value)
            elif suffix == "_count":
                series.count = float(sample.value)
            else:
                series.sum = float(sample.value)
    return out


def histogram_difference(start: str, end: str) -> Histograms:
    """``end - start`` per series of one process; a series absent at the start counts from
    zero, and one that went backwards (its registry restarted) counts from its restart."""
    before = parse_histograms(start)
    after = parse_histograms(end)
    out: Histograms = {}
    for metric, series_by_key in after.items():
        for key, s in series_by_key.items():
            prev = before.get(metric, {}).get(key)
            if prev is not None and s.count >= prev.count:
                diff = HistogramSeries(
                    labels=s.labels,
                    buckets={le: c - prev.buckets.get(le, 0.0) for le, c in s.buckets.items()},
                    count=s.count - prev.count,
                    sum=s.sum - prev.sum,
                )
            else:
                diff = s
            out.setdefault(metric, {})[key] = diff
    return out


def sum_histograms(parts: Iterable[Histograms]) -> Histograms:
    """The series of several processes added up, series by series (same metric and labels)."""
    out: Histograms = {}
    for part in parts:
        for metric, series_by_key in part.items():
            into = out.setdefault(metric, {})
            for key, s in series_by_key.items():
                acc = into.get(key)
                if acc is None:
                    into[key] = HistogramSeries(
                        labels=dict(s.labels), buckets=dict(s.buckets), count=s.count, sum=s.sum
                    )
                    continue
                for le, c in s.buckets.items():
                    acc.buckets[le] = acc.buckets.get(le, 0.0) + c
                acc.count += s.count
                acc.sum += s.sum
    return out


def window_difference(start: Mapping[str, str], end: Mapping[str, str]) -> Histograms:
    """A window's histograms from its per-process snapshots (key → Prometheus text): each
    key's ``end - start`` (a key only at the end counts from zero), summed over the keys."""
    return sum_histograms(histogram_difference(start.get(k, ""), text) for k, text in end.items())


def compact(
    start: Mapping[str, str], end: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The snapshots a window keeps: keys whose text did not change add nothing and are left
    out (a dead replica's registry, a follower that observed nothing)."""
    kept_end = {k: v for k, v in end.items() if start.get(k) != v}
    kept_start = {k: start[k] for k in kept_end if k in start}
    return kept_start, kept_end


def observed(text: str) -> float:
    """Every observation in a scrape: the sum of its scheduler histograms' ``_count``s."""
    return observations(samples(text, ("scheduler_",)))


def observations(found: Iterable[Sample]) -> float:
    """`observed` of samples parsed already."""
    return sum(
        s.value for s in found if s.name.startswith("scheduler_") and s.name.endswith("_count")
    )


class ProcessTexts:
    """The latest Prometheus text of every scheduler registry (see the module docstring).

    ``observe(name, text, at)`` takes a scrape of replica ``name`` started at ``at``; a scrape
    older than one already taken is ignored (two scrapes of one replica may overlap), and
    one whose observations went down opened the replica's next registry."""

    def __init__(self) -> None:
        self._registries: dict[str, list[str]] = {}  # replica → its registries' last texts
        self._seen: dict[str, tuple[float, float]] = {}  # replica → (scrape start, observed)

    def observe(self, name: str, text: str, at: float, count: float | None = None) -> None:
        """`count`: the scrape's `observed(text)` when the caller has parsed it already."""
        if not text:
            return
        last = self._seen.get(name)
        if last is not None and at < last[0]:
            return
        count = observed(text) if count is None else count
        registries = self._registries.setdefault(name, [])
        if not registries or (last is not None and count < last[1]):
            registries.append(text)
        else:
            registries[-1] = text
        self._seen[name] = (at, count)

    def texts(self) -> dict[str, str]:
        """Every registry's last text: ``<replica>`` for its first, ``<replica>#<n>`` after."""
        return {
            name if n == 0 else f"{name}#{n}": text
            for name, registries in self._registries.items()
            for n, text in enumerate(registries)
        }
