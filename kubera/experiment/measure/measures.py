"""The arithmetic of an experiment's measurements, with no I/O: pod timelines, per-second
series, counters that survive restarts, Prometheus text samples and /proc figures.

collect.py feeds these from watches, scrapes and /proc reads once a second; the unit tests
feed them by hand. Every time here is seconds since the run's t0 (the runner's monotonic
clock), so the numbers of one run share one clock.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubera.launch import procs

# ------------------------------------------------------------------ pods


@dataclass
class PodTimes:
    """One pod incarnation (one UID): when it was seen first, bound, Running."""

    key: str  # namespace/name
    first_seen: float
    bound: float | None = None
    running: float | None = None
    labels: dict[str, str] = field(default_factory=dict)
    attempted: bool = False  # a PodScheduled condition seen: the scheduler tried it

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]


#: The label a pod joins a scheduler-plugins PodGroup (gang) with, its value the group's name
#: in the pod's namespace.
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
#: Where the timeline keeps a pod's spec.schedulingGroup.podGroupName (scheduling.k8s.io
#: PodGroups), or its spec.workloadRef as `workload/podGroup[/replicaKey]`, among its
#: labels: not a label key any pod can carry (no "/" prefix of a DNS subdomain), so it never
#: collides with one. `gangs` groups by either.
SCHEDULING_GROUP_KEY = "spec.schedulingGroup.podGroupName"


@dataclass(frozen=True)
class GangTimes:
    """One gang (pods sharing a pod-group label value in a namespace) on the timeline."""

    key: str  # namespace/group
    members: int
    bound: int
    first_created: float
    last_bound: float | None
    """When its last member was bound, once all `members` are; None before."""


class PodTimeline:
    """Per-pod create/bound/Running times from a pod watch plus the runner's own create
    stamps.

    Create time is the runner's clock when it *sent* the create (`sent`): the apiserver's
    creationTimestamp has second precision only, too coarse for sub-second latencies. A pod
    the runner did not create (a controller's, a churn op's through createAny) is stamped
    when the watch first saw it. A UID takes the latest send of its name at or before it
    was first seen, so a name created, deleted and created again gets each send right.
    Bound is the first event with spec.nodeName set; Running the first with phase Running.
    `gone` holds when each deleted UID's deletion was seen (a DELETED event, or missing from
    a list): what barriers and deletePods wait on instead of listing pods again and again.
    """

    def __init__(self) -> None:
        self.pods: dict[str, PodTimes] = {}
        self.gone: dict[str, float] = {}
        self._sends: dict[str, list[float]] = {}
        self.bound_count = 0
        self.running_count = 0

    def sent(self, keys: Iterable[str], t: float) -> None:
        for key in keys:
            bisect.insort(self._sends.setdefault(key, []), t)

    def observe(
        self,
        uid: str,
        key: str,
        node_name: str,
        phase: str,
        t: float,
        labels: Mapping[str, str] | None = None,
        *,
        attempted: bool = False,
    ) -> None:
        p = self.pods.get(uid)
        if p is None:
            p = self.pods[uid] = PodTimes(key, t, labels=dict(labels or {}))
        p.attempted = p.attempted or attempted
        if node_name and p.bound is None:
            p.bound = t
            self.bound_count += 1
        if phase == "Running" and p.running is None:
            p.running = t
            self.running_count += 1

    def deleted(self, uid: str, t: float) -> None:
        """The pod `uid` was deleted (seen at `t`)."""
        self.gone.setdefault(uid, t)

    def listed(self, uids: Iterable[str], t: float) -> None:
        """A full list at `t` held exactly `uids`: every other pod seen before is gone (its
        DELETED event fell in a gap of the watch)."""
        present = set(uids)
        for uid in self.pods:
            if uid not in present:
                self.gone.setdefault(uid, t)

    def created_at(self, p: PodTimes) -> float:
        sends = self._sends.get(p.key, [])
        i = bisect.bisect_right(sends, p.first_seen)
        return sends[i - 1] if i else p.first_seen

    def latencies(self) -> dict[str, list[float]]:
        """Per-pod seconds: scheduling (create→bound) and startup (create→Running)."""
        sched: list[float] = []
        startup: list[float] = []
        for p in self.pods.values():
            c = self.created_at(p)
            if p.bound is not None:
                sched.append(round(max(0.0, p.bound - c), 6))
            if p.running is not None:
                startup.append(round(max(0.0, p.running - c), 6))
        return {"scheduling": sched, "startup": startup}

    def per_second(self, seconds: int) -> dict[str, list[float]]:
        """Pods created, bound and Running in the second ending at each tick i: (i-1, i]
        (tick 0 holds t <= 0; what happens after the last tick counts in the last one,
        the run's partial last second)."""
        out = {name: [0.0] * seconds for name in ("created", "bound", "running")}
        if seconds <= 0:
            return out
        for p in self.pods.values():
            for name, t in (
                ("created", self.created_at(p)),
                ("bound", p.bound),
                ("running", p.running),
            ):
                if t is not None:
                    out[name][min(seconds - 1, max(0, math.ceil(t)))] += 1
        return out

    def bound_per_second(
        self, seconds: int, namespaces: Iterable[str], selector: Mapping[str, str]
    ) -> list[float]:
        """`per_second`'s bound column for the pods of `namespaces` (all when empty) whose
        labels include `selector`: what upstream's throughput collector counts for a
        measurement window."""
        wanted = set(namespaces)
        out = [0.0] * seconds
        for p in self.pods.values():
            if p.bound is None or seconds <= 0:
                continue
            if wanted and p.namespace not in wanted:
                continue
            if any(p.labels.get(k) != v for k, v in selector.items()):
                continue
            out[min(seconds - 1, max(0, math.ceil(p.bound)))] += 1
        return out

    def bound_between(
        self, start: float, end: float, namespaces: Iterable[str], selector: Mapping[str, str]
    ) -> tuple[list[float], float | None]:
        """The sorted bind times in [start, end] of the pods of `namespaces` (all when empty)
        whose labels include `selector` (a measurement window's binds), and when the first
        of those pods was created (sent), None without one."""
        wanted = set(namespaces)
        chosen = [
            p
            for p in self.pods.values()
            if p.bound is not None
            and start <= p.bound <= end
            and (not wanted or p.namespace in wanted)
            and all(p.labels.get(k) == v for k, v in selector.items())
        ]
        first = min((self.created_at(p) for p in chosen), default=None)
        return sorted(p.bound for p in chosen if p.bound is not None), first

    def gangs(self, label: str = POD_GROUP_LABEL) -> list[GangTimes]:
        """The gangs on the timeline: pods grouped by namespace and the value of `label`
        (scheduler-plugins' pod-group label) or their scheduling.k8s.io PodGroup (basic
        groups too: the time to the whole group bound), sorted by key. A pod deleted before it was
        bound left its gang and is not a member."""
        groups: dict[str, list[PodTimes]] = {}
        for uid, p in self.pods.items():
            group = p.labels.get(label) or p.labels.get(SCHEDULING_GROUP_KEY)
            if not group or (p.bound is None and uid in self.gone):
                continue
            groups.setdefault(f"{p.namespace}/{group}", []).append(p)
        out = []
        for key in sorted(groups):
            members = groups[key]
            bound = [p.bound for p in members if p.bound is not None]
            out.append(
                GangTimes(
                    key=key,
                    members=len(members),
                    bound=len(bound),
                    first_created=min(self.created_at(p) for p in members),
                    last_bound=max(bound) if len(bound) == len(members) else None,
                )
            )
        return out

    def bound_by_group(self, label: str = POD_GROUP_LABEL) -> dict[str, int]:
        """`namespace/group` → how many of its pods were ever bound (a bound pod deleted
        since still counts: the gang got it)."""
        out: dict[str, int] = {}
        for p in self.pods.values():
            group = p.labels.get(label)
            if group and p.bound is not None:
                key = f"{p.namespace}/{group}"
                out[key] = out.get(key, 0) + 1
        return out

    def gang_latencies(self, label: str = POD_GROUP_LABEL) -> list[float]:
        """Seconds from each whole gang's first member created to its last member bound,
        for the gangs every member of which is bound (see `gangs`)."""
        return [
            round(max(0.0, g.last_bound - g.first_created), 6)
            for g in self.gangs(label)
            if g.last_bound is not None
        ]


def groups_short(want: Mapping[str, int], bound: Mapping[str, int]) -> list[str]:
    """The groups of `want` (`namespace/name` → minMember) with fewer than minMember pods
    bound, sorted: what waitForPodGroups still waits for."""
    return sorted(k for k, n in want.items() if bound.get(k, 0) < n)


# ------------------------------------------------------------ series


class Series:
    """Columns sampled once a second. A column that starts late is zero before it started,
    and one whose source went away (a killed process) stays zero afterwards."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.columns: dict[str, list[float]] = {}

    def tick(self, t: float, values: dict[str, float]) -> None:
        n = len(self.t)
        self.t.append(t)
        for name, col in self.columns.items():
            col.append(float(values.get(name, 0.0)))
        for name, v in values.items():
            if name not in self.columns:
                self.columns[name] = [0.0] * n + [float(v)]

    def __len__(self) -> int:
        return len(self.t)


# --------------------------------------------------------- counters


class Counter:
    """The increase of a Prometheus counter scraped now and then, across restarts of the
    process behind it (a value below the last one starts from zero: Prometheus' rule)."""

    def __init__(self, last: float | None = 0.0) -> None:
        #: None: the first value is a baseline, not an increase (a process that ran before).
        self.last = last
        self.increase = 0.0

    def observe(self, value: float) -> None:
        if self.last is not None:
            self.increase += value if value < self.last else value - self.last
        self.last = value


# -------------------------------------------------------- prometheus

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str] = field(hash=False)
    value: float


def samples(text: str, prefixes: tuple[str, ...] = ("",)) -> list[Sample]:
    """The samples of a Prometheus text exposition whose names start with one of `prefixes`
    (comments and other series skipped cheaply, before any regex)."""
    out = []
    for line in text.splitlines():
        if not line or line[0] == "#" or not line.startswith(prefixes):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        try:
            value = float(m.group(4))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(3) or ""))
        out.append(Sample(m.group(1), labels, value))
    return out


def total(found: list[Sample], name: str, **match: str) -> float:
    """The sum of `name`'s samples whose labels include `match`."""
    return sum(
        s.value
        for s in found
        if s.name == name and all(s.labels.get(k) == v for k, v in match.items())
    )


def bucket_counts(cumulative: dict[float, float]) -> dict[int, int]:
    """Per-bucket counts from a histogram's cumulative buckets (upper bound → count up to
    it), keyed by the bucket's upper bound (+Inf as one past the largest finite bound)."""
    out: dict[int, int] = {}
    prev = 0.0
    bounds = sorted(cumulative)
    finite = [b for b in bounds if math.isfinite(b)]
    for b in bounds:
        n = cumulative[b] - prev
        prev = cumulative[b]
        if n > 0:
            key = int(b) if math.isfinite(b) else int(max(finite, default=0)) + 1
            out[key] = out.get(key, 0) + round(n)
    return out


# ------------------------------------------------------------- /proc

#: (CPU seconds used, RSS in MB) of a process now, None when it is gone.
read_stat = procs.usage


class CpuMeter:
    """Cores used by each named process between two samples (Δ CPU seconds / Δ wall)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[int, float, float]] = {}  # name → (pid, t, cpu s)

    def sample(self, name: str, pid: int, t: float, cpu_s: float) -> float:
        last = self._last.get(name)
        self._last[name] = (pid, t, cpu_s)
        if last is None or last[0] != pid or t <= last[1]:
            return 0.0  # first sight of this process: no interval yet
        return max(0.0, (cpu_s - last[2]) / (t - last[1]))


def machine_busy() -> float | None:
    """The whole machine's busy CPU seconds since boot (/proc/stat: all but idle and
    iowait); None where there is no /proc/stat."""
    try:
        with open("/proc/stat") as f:
            parts = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    return (sum(parts) - idle) / procs.CLOCK_TICKS


class RateMeter:
    """Increase per second of a monotone value (etcd's revision) between samples."""

    def __init__(self) -> None:
        self._last: tuple[float, float] | None = None

    def sample(self, t: float, value: float) -> float:
        last, self._last = self._last, (t, value)
        if last is None or t <= last[0] or value < last[1]:
            return 0.0
        return (value - last[1]) / (t - last[0])


# --------------------------------------------------------- leader terms


@dataclass
class Term:
    component: str
    identity: str
    token: int  # the election key's create_revision
    start: float
    end: float | None = None


class Terms:
    """Leader terms of each component from samples of its election key: a new
    (identity, create_revision) opens a term and ends the previous one; no key ends it."""

    def __init__(self) -> None:
        self.terms: list[Term] = []
        self._open: dict[str, Term] = {}

    def observe(self, component: str, holder: tuple[str, int] | None, t: float) -> None:
        cur = self._open.get(component)
        if cur is not None and holder == (cur.identity, cur.token):
            return
        if cur is not None:
            cur.end = t
            del self._open[component]
        if holder is not None:
            term = Term(component, holder[0], holder[1], t)
            self.terms.append(term)
            self._open[component] = term
