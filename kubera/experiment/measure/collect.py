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
  (summed as "ray") and this runner ("runner"), and the whole machine's busy cores
  (`machine_cpu`, /proc/stat). Each replica's latest scrape is kept per
  registry (histograms.ProcessTexts) for the measurement windows' snapshots (`snapshot()`);
- with hollow nodes (node pools in the context), a watch of the node Leases in
  kube-node-lease (`nodes.LeaseLog`: every renewal as it lands) and, as the run ends, one
  count of the nodes Ready (measure/nodes.py turns both into the run's `nodes` figures).

Only a process in our PID namespace (services.chaos.is_local: the same kernel boot id and
PID namespace, from its record) is read in /proc; one elsewhere (another machine of the
Ray cluster, another container) reports its own figures through its chaos control's
Status, and a replica there counts as alive while its Status answers as the recorded
process.

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
from dataclasses import dataclass, field
from typing import Any

from kubera import chaos
from kubera.experiment.measure import endstate
from kubera.experiment.measure.cpu import CpuSample
from kubera.experiment.measure.histograms import ProcessTexts, observations
from kubera.experiment.measure.measures import (
    SCHEDULING_GROUP_KEY,
    Counter,
    CpuMeter,
    PodTimeline,
    RateMeter,
    Sample,
    Series,
    Terms,
    bucket_counts,
    machine_busy,
    read_stat,
    samples,
    total,
)
from kubera.experiment.measure.nodes import NODE_LEASES, LeaseLog, ready_nodes
from kubera.launch.context import Context
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.chaos import control_status, is_local
from services.client import Client, first_address
from services.clock import parse_rfc3339
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
    #: Shared-state mode (Omega's measures): pods lost to another replica, busy seconds.
    lost: Counter = field(default_factory=Counter)
    useful: Counter = field(default_factory=Counter)
    wasted: Counter = field(default_factory=Counter)
    #: DefaultPreemption's attempts and victims (upstream's series).
    preemptions: Counter = field(default_factory=Counter)
    victims: Counter = field(default_factory=Counter)
    #: Opportunistic batching: pods placed from a batch, and the others that asked.
    batched: Counter = field(default_factory=Counter)
    unbatched: Counter = field(default_factory=Counter)


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
        #: Replica processes alive now: in /proc (name → pid), or elsewhere (name →
        #: (pid, CPU seconds, RSS MB) as their Status reported them).
        self._replica_pids: dict[str, int] = {}
        self._remote: dict[str, tuple[int, float, float]] = {}
        #: The apiserver and node pools recorded as running elsewhere (never read in /proc).
        self._elsewhere: set[str] = set()
        self._revisions = RateMeter()
        self._machine = RateMeter()
        #: Node Lease renewals (hollow nodes only) and the nodes (Ready, all) as the run ended.
        self.leases = LeaseLog()
        self.nodes_ready: tuple[int, int] | None = None
        #: The cluster's objects as the run ended (endstate.py), for the research measures.
        self.end_state: endstate.EndState | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._client: Client | None = None
        self._storage: EtcdStorage | None = None
        self.leader_metrics = ""  # the scheduler leader's (else any replica's) address
        self.errors: dict[str, str] = {}  # the last error of each loop, for the report
        #: The latest scrape of every scheduler registry, for the windows' snapshots.
        self.texts = ProcessTexts()
        self._live: set[str] = set()  # identities of the replicas alive at the last sample
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
        if self.ctx.node_pools:
            self._tasks.append(asyncio.create_task(self._watch_leases(), name="collect-leases"))

    async def stop(self) -> None:
        """Every loop stops, then one last sample: the counters' final values and the
        row of the run's last (partial) second. Bounded: grpc.aio can turn a cancellation
        into a CANCELLED RPC error, so the loops also check `_stopping`, and nothing here
        waits more than a few seconds but the one list of the cluster's objects as the run
        ends (`end_state`, for the research measures: at most a minute)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self.end_state = await asyncio.wait_for(endstate.read(self._client), 60)
        if self.ctx.node_pools and self._client is not None:
            listed = self.end_state.objects.get("Node") if self.end_state is not None else None
            with contextlib.suppress(Exception):
                if listed is None:
                    items, _ = await asyncio.wait_for(self._client.list(BY_KIND["Node"]), 30)
                    listed = list(items)
                self.nodes_ready = (ready_nodes(listed), len(listed))
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
                self.pods.listed((p.metadata.uid for p in items), t)
                # Batched as the components' informers watch, so the collector's timestamps
                # do not trail the binds the workload's own watch has already seen.
                async for batch in self._client.watch_batches(
                    pods, options=ListOptions(resource_version=str(rv))
                ):
                    t = self.now()
                    for ev in batch:
                        if ev.type in ("ADDED", "MODIFIED"):
                            self._observe(ev.object, t)
                        elif ev.type == "DELETED":
                            self.pods.deleted(ev.object.metadata.uid, t)
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
        attempted = any(c.type == "PodScheduled" for c in pod.status.conditions)
        labels: Any = m.labels
        group = pod.spec.scheduling_group.pod_group_name
        if not group and pod.spec.HasField("workload_ref"):
            ref = pod.spec.workload_ref  # a Workload's pod group (and replica)
            group = "/".join(x for x in (ref.name, ref.pod_group, ref.pod_group_replica_key) if x)
        if group:
            labels = {**labels, SCHEDULING_GROUP_KEY: group}
        self.pods.observe(
            m.uid, key, pod.spec.node_name, pod.status.phase, t, labels, attempted=attempted
        )

    # --------------------------------------------------------- node leases

    async def _watch_leases(self) -> None:
        assert self._client is not None
        leases = BY_KIND["Lease"]

        def saw(lease: Any) -> None:
            spec = lease.spec
            if spec.renew_time:
                self.leases.saw(
                    lease.metadata.name,
                    parse_rfc3339(spec.renew_time),
                    self.now(),
                    float(spec.lease_duration_seconds),
                )

        while not self._stopping:
            try:
                items, rv = await self._client.list(leases, namespace=NODE_LEASES)
                for lease in items:
                    saw(lease)
                async for batch in self._client.watch_batches(
                    leases, namespace=NODE_LEASES, options=ListOptions(resource_version=str(rv))
                ):
                    for ev in batch:
                        if ev.type in ("ADDED", "MODIFIED"):
                            saw(ev.object)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - behind, or the apiserver restarting
                if self._stopping:
                    return
                self.errors["leases"] = str(e)
                await asyncio.sleep(0.2)

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
        self._live = {r.identity for r in records}
        scraped_at = time.monotonic()
        scraped = await asyncio.gather(
            *(asyncio.to_thread(scrape, r.metrics) for r in records), return_exceptions=True
        )
        queue_source: list[Sample] | None = None
        for rep, text in zip(records, scraped, strict=True):
            if not isinstance(text, str) or not text:
                continue
            found = samples(text, SCRAPED)
            self.texts.observe(rep.name, text, scraped_at, observations(found))
            self._count(rep, found)
            if rep.metrics == self.leader_metrics or queue_source is None:
                queue_source = found
        for q in QUEUES:
            if queue_source is not None:
                values[f"queue:{q}"] = total(queue_source, "scheduler_pending_pods", queue=q)
        await self._locate_others()
        busy = machine_busy()
        if busy is not None:
            values["machine_cpu"] = round(self._machine.sample(t, busy), 4)
        self._processes(values, t)
        self.series.tick(round(t, 3), values)

    async def _records(self, values: dict[str, float], t: float) -> list[Replica]:
        """etcd's revision rate, and the scheduler replicas alive now (with every replica's
        PID for the /proc figures, or its own figures when it runs elsewhere)."""
        assert self._storage is not None
        kvs, revision = await asyncio.wait_for(self._storage.list(REPLICAS_PREFIX), CALL_TIMEOUT)
        values["etcd_revisions"] = round(self._revisions.sample(t, revision), 3)
        recs = []
        for kv in kvs:
            try:
                rec = json.loads(kv.value)
            except ValueError:
                continue
            if COMPONENTS.get(rec.get("component", "")) and rec.get("identity"):
                recs.append(rec)
        # Replicas elsewhere answer for themselves (None: gone, or paused).
        answers = await asyncio.gather(
            *(
                control_status(str(r.get("control", "")), CALL_TIMEOUT)
                if not is_local(r)
                else _none()
                for r in recs
            )
        )
        self._replica_pids, self._remote = {}, {}
        live: list[Replica] = []
        for rec, answer in zip(recs, answers, strict=True):
            prefix, identity = COMPONENTS[rec["component"]], rec["identity"]
            pid = int(rec.get("pid", 0))
            if is_local(rec):
                if read_stat(pid) is None:
                    continue  # a dead process's record
                name = self._name(prefix, identity)
                self._replica_pids[name] = pid
            else:
                if answer is None or answer.pid != pid:
                    continue  # gone (or not answering now)
                name = self._name(prefix, identity)
                self._remote[name] = (pid, answer.cpu_seconds, answer.rss_bytes / 2**20)
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
            rep.lost.observe(
                total(found, "kubera_scheduler_shared_state_conflicts_total", reason="pod")
            )
            busy = "kubera_scheduler_shared_state_busy_seconds_total"
            rep.useful.observe(total(found, busy, work="useful"))
            rep.wasted.observe(total(found, busy, work="wasted"))
        else:
            rep.binds.observe(total(found, "scheduler_schedule_attempts_total", result="scheduled"))
            rep.conflicts.observe(0.0)
        rep.preemptions.observe(total(found, "scheduler_preemption_attempts_total"))
        rep.victims.observe(total(found, "scheduler_preemption_victims_sum"))
        rep.batched.observe(total(found, "scheduler_batch_attempts_total", result="hint_used"))
        rep.unbatched.observe(total(found, "scheduler_batch_attempts_total", result="no_hint"))
        buckets: dict[float, float] = {}
        for s in found:
            if s.name == ATTEMPTS:
                le = float(s.labels.get("le", "inf"))
                buckets[le] = buckets.get(le, 0.0) + s.value
        for le, v in buckets.items():
            rep.attempts.setdefault(le, Counter()).observe(v)

    async def _locate_others(self) -> None:
        """The apiserver's and the node pools' own figures when they run elsewhere (as
        their records in the context say: their chaos control's Status, on their gRPC
        port, answers for them); those here are read in /proc."""
        api = next((c for c in self.ctx.components if c.get("name") == "apiserver"), {})
        where: dict[str, tuple[dict, str, int]] = {
            "apiserver": (api, first_address(self.ctx.apiserver), self.ctx.apiserver_pid)
        }
        for pool in self.ctx.node_pools:
            where[str(pool["name"])] = (pool, str(pool.get("address", "")), int(pool.get("pid", 0)))
        targets = {
            name: (address, pid)
            for name, (rec, address, pid) in where.items()
            if pid and not is_local(rec)
        }
        self._elsewhere = set(targets)
        answers = await asyncio.gather(
            *(control_status(address, CALL_TIMEOUT) for address, _ in targets.values())
        )
        for (name, (_, pid)), answer in zip(targets.items(), answers, strict=True):
            if answer is not None and answer.pid == pid and not is_local(answer):
                self._remote[name] = (pid, answer.cpu_seconds, answer.rss_bytes / 2**20)

    def _processes(self, values: dict[str, float], t: float) -> None:
        for name, (pid, cpu, rss) in self._remote.items():
            values[f"cpu:{name}"] = round(self._cpu.sample(name, pid, t, cpu), 4)
            values[f"rss_mb:{name}"] = round(rss, 2)
        for name, pids in self._local_processes().items():
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

    def cpu_now(self) -> CpuSample:
        """Every component process's CPU seconds used so far (measure/cpu.py): read now in
        /proc, or as its own Status last reported it when it runs elsewhere."""
        out: CpuSample = {name: ((pid,), cpu) for name, (pid, cpu, _) in self._remote.items()}
        for name, pids in self._local_processes().items():
            stats = [read_stat(pid) for pid in pids]
            if all(s is not None for s in stats):
                out[name] = (tuple(pids), sum(s[0] for s in stats if s is not None))
        return out

    def _local_processes(self) -> dict[str, list[int]]:
        """Component name → its PIDs in our PID namespace (the apiserver's replicas and
        Ray's processes each summed under one name)."""
        procs: dict[str, list[int]] = {"runner": [os.getpid()]}
        if self.ctx.pids.get("etcd"):
            procs["etcd"] = [self.ctx.pids["etcd"]]
        if self.ctx.apiserver_pid:
            # every replica's (`kubera up --apiservers K`): the apiserver's CPU in all
            procs["apiserver"] = [int(a["pid"]) for a in self.ctx.apiservers if a.get("pid")] or [
                self.ctx.apiserver_pid
            ]
        for pool in self.ctx.node_pools:
            if pool.get("pid"):
                procs[str(pool["name"])] = [int(pool["pid"])]
        for name, pid in self._replica_pids.items():
            procs[name] = [pid]
        for name in (*self._remote, *self._elsewhere):
            procs.pop(name, None)  # its PID is another namespace's: not ours to read
        ray = [pid for key, pid in self.ctx.pids.items() if key.startswith("ray-")]
        if ray:
            procs["ray"] = ray
        return procs

    # ------------------------------------------------------------- results

    async def snapshot(self, wait_first: float = CALL_TIMEOUT * 2) -> dict[str, str]:
        """Every scheduler registry's Prometheus text now (histograms.py): the live replicas
        scraped now, the others (dead, paused, an ended term's registry) by their last
        scrape. Waits for the first sample (up to `wait_first` s) to know the replicas; with
        none known, the context's scheduler as `scheduler`."""
        deadline = time.monotonic() + wait_first
        while not len(self.series) and not self._stopping and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        live = [r for r in self.replicas.values() if r.identity in self._live]
        if not self.replicas:
            address = self.ctx.scheduler_metrics
            text = await asyncio.to_thread(scrape, address) if address else ""
            return {"scheduler": text} if text else {}
        at = time.monotonic()
        texts = await asyncio.gather(*(asyncio.to_thread(scrape, r.metrics) for r in live))
        for rep, text in zip(live, texts, strict=True):
            self.texts.observe(rep.name, text, at)
        return self.texts.texts()

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

    def omega_stats(self) -> dict[str, tuple[int, float, float]]:
        """Replica name → (pods lost to another replica, useful busy seconds, wasted busy
        seconds): the shared-state replicas' Omega counters over the run."""
        return {
            r.name: (
                round(r.lost.increase),
                round(r.useful.increase, 3),
                round(r.wasted.increase, 3),
            )
            for r in self.replicas.values()
        }

    def preemption_stats(self) -> dict[str, tuple[int, int]]:
        """Replica name → (preemption attempts, victims) over the run."""
        return {
            r.name: (round(r.preemptions.increase), round(r.victims.increase))
            for r in self.replicas.values()
        }

    def batch_stats(self) -> dict[str, tuple[int, int]]:
        """Replica name → (pods placed from a batch, pods that got no hint) over the run
        (upstream's scheduler_batch_attempts_total)."""
        return {
            r.name: (round(r.batched.increase), round(r.unbatched.increase))
            for r in self.replicas.values()
        }

    def attempts(self) -> dict[int, int]:
        """Bound pods per scheduling attempts needed (bucket upper bounds of upstream's
        scheduler_pod_scheduling_attempts, summed over every replica)."""
        cumulative: dict[float, float] = {}
        for r in self.replicas.values():
            for le, c in r.attempts.items():
                cumulative[le] = cumulative.get(le, 0.0) + c.increase
        return bucket_counts(cumulative)


async def _none() -> None:
    return None
