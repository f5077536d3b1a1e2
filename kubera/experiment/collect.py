"""Measurements of one experiment run, over time, into its RunResult.

Three background loops, each cheap and bounded (a timeout on every call, errors skipped
as a missing sample, never a failed run):

- a pod watch through the apiserver (all namespaces; it lists again when it falls behind
  or the apiserver restarts) stamps each pod's first sight, bind (first event with
  spec.nodeName) and Running (first event with phase Running) on the runner's clock; the
  runner adds the time it *sent* each create (measures.PodTimeline says why);
- every 0.25 s the election keys in etcd (`/kubera/leaderelection/…`: value = holder,
  create_revision = term), whose changes are the leader terms. They are the leader of
  record the fencing and the checker use; the published Lease objects follow them;
- every second: etcd's revision (→ revisions per second), the live replica records
  (`/kubera/replicas/…`: pid, metrics address), a scrape of every scheduler replica's
  Prometheus endpoint (queue depth from the leader's `scheduler_pending_pods`, binds,
  conflicts and `scheduler_pod_scheduling_attempts` from every replica, as counters that
  survive restarts), and CPU (Δ utime+stime) and RSS of every component process from
  /proc: etcd and the apiserver (context file, re-read as chaos restarts them), node
  pools, scheduler and controller-manager replicas (their records), Ray's own processes
  (summed as "ray") and this runner ("runner").

Replica processes are named by first appearance: `scheduler-0`, `scheduler-1`, …; a
replica Ray re-creates after a kill is a new process with a new identity and so gets the
next number.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubera import chaos
from kubera.experiment.measures import (
    Counter,
    CpuMeter,
    PodTimeline,
    RateMeter,
    Sample,
    Series,
    Terms,
    bucket_counts,
    read_stat,
    samples,
    total,
)
from kubera.launch.context import Context
from services.api.kinds import BY_KIND
from services.client import Client
from services.storage.etcd import EtcdStorage
from services.storage.keys import ELECTION_PREFIX, REPLICAS_PREFIX

#: Election Lease → the component name used in the results.
LEASES = {lease: component for component, lease in chaos.COMPONENT_LEASES.items()}
#: Record `component` → the name prefix of its processes.
COMPONENTS = {"kube-scheduler": "scheduler", "kube-controller-manager": "controller-manager"}
QUEUES = ("active", "backoff", "unschedulable")
SCRAPED = ("scheduler_", "kubera_scheduler_shared_state_")
ATTEMPTS = "scheduler_pod_scheduling_attempts_bucket"
CALL_TIMEOUT = 2.0
STOP_TIMEOUT = 5.0


def scrape(address: str, timeout: float = CALL_TIMEOUT) -> str:
    """The Prometheus text of http://ADDRESS/metrics ("" when it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=timeout) as r:  # noqa: S310
            return str(r.read().decode(errors="replace"))
    except OSError:
        return ""


@dataclass
class Replica:
    """A scheduler replica process seen in the records, with its counters."""

    name: str
    identity: str
    metrics: str
    binds: Counter
    conflicts: Counter
    attempts: dict[float, Counter]


class Collector:
    """Measures one run; `start()` after the cluster is up, `stop()` before it goes down."""

    def __init__(
        self,
        ctx: Context,
        *,
        t0: float,
        load_context: Callable[[], Context] | None = None,
        period: float = 1.0,
    ) -> None:
        self.ctx = ctx
        self.t0 = t0  # time.monotonic() at the run's start
        self._load = load_context
        self.period = period
        self.pods = PodTimeline()
        self.series = Series()
        self.terms = Terms()
        self.replicas: dict[str, Replica] = {}  # identity → replica
        self._names: dict[str, str] = {}  # identity → process name
        self._counts: dict[str, int] = {}  # prefix → next number
        self._cpu = CpuMeter()
        self._revisions = RateMeter()
        self._tasks: list[asyncio.Task[None]] = []
        self._client: Client | None = None
        self._storage: EtcdStorage | None = None
        self.leader_metrics = ""  # the scheduler leader's (else any replica's) address
        self.errors: dict[str, str] = {}  # the last error of each loop, for the report
        self._stopping = False

    def now(self) -> float:
        return time.monotonic() - self.t0

    # ----------------------------------------------------------------- life

    async def start(self) -> None:
        self._client = Client(self.ctx.apiserver, timeout=30)
        self._storage = EtcdStorage(self.ctx.etcd, timeout=CALL_TIMEOUT)
        self._tasks = [
            asyncio.create_task(self._watch_pods(), name="collect-pods"),
            asyncio.create_task(self._poll_elections(), name="collect-elections"),
            asyncio.create_task(self._sample_loop(), name="collect-samples"),
        ]

    async def stop(self) -> None:
        """Every loop stops, then one last sample: the counters' final values and the
        row of the run's last (partial) second. Bounded: grpc.aio can turn a cancellation
        into a CANCELLED RPC error, so the loops also check `_stopping`, and nothing here
        waits more than a few seconds."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._relist(), STOP_TIMEOUT)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.sample(), STOP_TIMEOUT)
        self._tasks = []
        for closing in (self._client, self._storage):
            if closing is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(closing.close(), STOP_TIMEOUT)

    def sent(self, keys: Iterable[str]) -> None:
        """The runner sends creates of these pods (namespace/name) now."""
        self.pods.sent(keys, self.now())

    # ------------------------------------------------------------- the pods

    async def _watch_pods(self) -> None:
        assert self._client is not None
        pods = BY_KIND["Pod"]
        while not self._stopping:
            try:
                items, rv = await self._client.list(pods)
                t = self.now()
                for p in items:
                    self._observe(p, t)
                async for ev in self._client.watch(pods, resource_version=str(rv)):
                    if ev.type in ("ADDED", "MODIFIED"):
                        self._observe(ev.object, self.now())
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - behind, or the apiserver restarting: list again
                if self._stopping:
                    return
                self.errors["pods"] = str(e)
                await asyncio.sleep(0.2)

    async def _relist(self) -> None:
        """One list at the end: binds and Running the watch had not delivered yet (it may
        lag the apiserver by a second or more under load) are stamped now, so every pod
        bound in the run has its latency (an upper bound for those few)."""
        assert self._client is not None
        items, _ = await self._client.list(BY_KIND["Pod"])
        t = self.now()
        for p in items:
            self._observe(p, t)

    def _observe(self, pod: Any, t: float) -> None:
        m = pod.metadata
        key = f"{m.namespace}/{m.name}"
        self.pods.observe(m.uid, key, pod.spec.node_name, pod.status.phase, t, m.labels)

    # ------------------------------------------------------------ elections

    async def _poll_elections(self) -> None:
        assert self._storage is not None
        while not self._stopping:
            try:
                kvs, _ = await asyncio.wait_for(self._storage.list(ELECTION_PREFIX), CALL_TIMEOUT)
                t = self.now()
                held = {kv.key[len(ELECTION_PREFIX) :]: kv for kv in kvs}
                for lease, component in LEASES.items():
                    kv = held.get(lease)
                    holder = None if kv is None else (kv.value.decode(), kv.create_revision)
                    self.terms.observe(component, holder, t)
                    if component == "scheduler" and kv is not None:
                        rep = self.replicas.get(kv.value.decode())
                        if rep is not None:
                            self.leader_metrics = rep.metrics
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - etcd restarting: the next poll sees it
                if self._stopping:
                    return
                self.errors["elections"] = str(e)
            await asyncio.sleep(0.25)

    # -------------------------------------------------------------- samples

    async def _sample_loop(self) -> None:
        next_at = time.monotonic()
        while not self._stopping:
            try:
                await asyncio.wait_for(self.sample(), 5 * self.period)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - a lost sample, not a lost run
                if self._stopping:
                    return
                self.errors["samples"] = str(e)
            next_at += self.period
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    async def sample(self) -> None:
        """One row of the series: every measure that answers within its timeout."""
        values: dict[str, float] = {}
        t = self.now()
        if self._load is not None:
            with contextlib.suppress(Exception):
                self.ctx = self._load()
        records = await self._records(values, t)
        scraped = await asyncio.gather(
            *(asyncio.to_thread(scrape, r.metrics) for r in records), return_exceptions=True
        )
        queue_source: list[Sample] | None = None
        for rep, text in zip(records, scraped, strict=True):
            if not isinstance(text, str) or not text:
                continue
            found = samples(text, SCRAPED)
            self._count(rep, found)
            if rep.metrics == self.leader_metrics or queue_source is None:
                queue_source = found
        for q in QUEUES:
            if queue_source is not None:
                values[f"queue:{q}"] = total(queue_source, "scheduler_pending_pods", queue=q)
        self._processes(values, t)
        self.series.tick(round(t, 3), values)

    async def _records(self, values: dict[str, float], t: float) -> list[Replica]:
        """etcd's revision rate, and the scheduler replicas alive now (with the PIDs of
        every replica, for the /proc figures)."""
        assert self._storage is not None
        kvs, revision = await asyncio.wait_for(self._storage.list(REPLICAS_PREFIX), CALL_TIMEOUT)
        values["etcd_revisions"] = round(self._revisions.sample(t, revision), 3)
        self._replica_pids: dict[str, int] = {}
        live: list[Replica] = []
        for kv in kvs:
            try:
                rec = json.loads(kv.value)
            except ValueError:
                continue
            prefix = COMPONENTS.get(rec.get("component", ""))
            identity, pid = rec.get("identity", ""), int(rec.get("pid", 0))
            if prefix is None or not identity or read_stat(pid) is None:
                continue  # a dead process's record
            name = self._name(prefix, identity)
            self._replica_pids[name] = pid
            if prefix == "scheduler" and rec.get("metrics"):
                rep = self.replicas.get(identity)
                if rep is None:
                    rep = self.replicas[identity] = Replica(
                        name, identity, rec["metrics"], Counter(), Counter(), {}
                    )
                live.append(rep)
        return live

    def _name(self, prefix: str, identity: str) -> str:
        if identity not in self._names:
            n = self._counts.get(prefix, 0)
            self._counts[prefix] = n + 1
            self._names[identity] = f"{prefix}-{n}"
        return self._names[identity]

    def _count(self, rep: Replica, found: list[Sample]) -> None:
        shared = any(s.name.startswith("kubera_scheduler_shared_state_binds") for s in found)
        if shared:
            rep.binds.observe(total(found, "kubera_scheduler_shared_state_binds_total"))
            rep.conflicts.observe(total(found, "kubera_scheduler_shared_state_conflicts_total"))
        else:
            rep.binds.observe(total(found, "scheduler_schedule_attempts_total", result="scheduled"))
            rep.conflicts.observe(0.0)
        buckets: dict[float, float] = {}
        for s in found:
            if s.name == ATTEMPTS:
                le = float(s.labels.get("le", "inf"))
                buckets[le] = buckets.get(le, 0.0) + s.value
        for le, v in buckets.items():
            rep.attempts.setdefault(le, Counter()).observe(v)

    def _processes(self, values: dict[str, float], t: float) -> None:
        procs: dict[str, list[int]] = {"runner": [os.getpid()]}
        if self.ctx.pids.get("etcd"):
            procs["etcd"] = [self.ctx.pids["etcd"]]
        if self.ctx.apiserver_pid:
            procs["apiserver"] = [self.ctx.apiserver_pid]
        for pool in self.ctx.node_pools:
            if pool.get("pid"):
                procs[str(pool["name"])] = [int(pool["pid"])]
        for name, pid in getattr(self, "_replica_pids", {}).items():
            procs[name] = [pid]
        ray = [pid for key, pid in self.ctx.pids.items() if key.startswith("ray-")]
        if ray:
            procs["ray"] = ray
        for name, pids in procs.items():
            cpu = rss = 0.0
            seen = False
            for pid in pids:
                stat = read_stat(pid)
                if stat is None:
                    continue
                seen = True
                cpu += stat[0]
                rss += stat[1]
            if seen:
                key = name if len(pids) == 1 else f"{name}:{','.join(map(str, pids))}"
                values[f"cpu:{name}"] = round(self._cpu.sample(key, pids[0], t, cpu), 4)
                values[f"rss_mb:{name}"] = round(rss, 2)

    # ------------------------------------------------------------- results

    async def snapshot(self) -> str:
        """The scheduler leader's Prometheus text now (any replica's without a leader)."""
        address = self.leader_metrics or next(
            (r.metrics for r in self.replicas.values()), self.ctx.scheduler_metrics
        )
        return await asyncio.to_thread(scrape, address) if address else ""

    def replica_stats(
        self, binds_by_holder: dict[str, int] | None = None
    ) -> list[tuple[str, int, int]]:
        """(name, binds, conflicts) of every scheduler replica seen during the run. The
        checker's fenced binds per leader identity (`binds_by_holder`, exact: read from
        etcd's history) replace the scraped count where they have the replica, since a
        killed leader's last binds happen after its last scrape."""
        exact = binds_by_holder or {}
        return [
            (r.name, exact.get(r.identity, round(r.binds.increase)), round(r.conflicts.increase))
            for r in sorted(self.replicas.values(), key=lambda r: int(r.name.rsplit("-", 1)[1]))
        ]

    def attempts(self) -> dict[int, int]:
        """Bound pods per scheduling attempts needed (bucket upper bounds of upstream's
        scheduler_pod_scheduling_attempts, summed over every replica)."""
        cumulative: dict[float, float] = {}
        for r in self.replicas.values():
            for le, c in r.attempts.items():
                cumulative[le] = cumulative.get(le, 0.0) + c.increase
        return bucket_counts(cumulative)
