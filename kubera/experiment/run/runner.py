"""Running an experiment: one fresh kubera per (test case, workload, sweep point).

    for each selected run:
        kubera up --detach <the workload's cluster settings>   (kubera.testing.Cluster)
        collector.start()            pod watch, elections, 1-second samples (collect.py)
        for op in plan(test case, workload): executor.run(op)  (opexec.py)
        executor.finish()            faults done, churn stopped, windows closed
        collector.stop() → the RunResult's series, latencies, attempts, replicas, leaders
        kubera down                  always: on errors and Ctrl-C too

A run that fails records its `error` and the experiment goes on with the next one; Ctrl-C
stops the current run (its cluster goes down, it is recorded as interrupted) and ends the
experiment. With `--etcd URL` every run starts from a clean keyspace: kubera's prefixes
(/registry/ and /kubera/) are deleted first (said on the progress line), and the `check`
op replays only the history written after that.

Beside the run's series, each measurement window gets `bound:<window name>`: binds per
second of only the pods it measures (its namespaces and label selector), which is what
upstream's throughput collector counts; the plain `bound` series counts every pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubera.experiment.measure import endstate, research
from kubera.experiment.measure.collect import Collector
from kubera.experiment.measure.model import (
    ExperimentResult,
    LeaderTerm,
    ReplicaStats,
    RunResult,
    first_binds,
    takeovers,
)
from kubera.experiment.measure.nodes import steady_window, window_figures
from kubera.experiment.run import etcdprobe
from kubera.experiment.run.opexec import OpExecutor
from kubera.experiment.run.progress import Progress
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import ClusterSettings, Experiment, TestCase, Workload, plan
from kubera.launch.context import Context
from kubera.testing import Cluster
from services.api import features
from services.client import Client
from services.storage import Delete
from services.storage.etcd import EtcdStorage
from services.storage.keys import KUBERA_PREFIX, REGISTRY_PREFIX


@dataclass(frozen=True)
class RunOptions:
    """What `kubera experiment run` passes to every run."""

    ray_address: str = ""
    etcd: str = ""
    #: Seconds any one op may wait (and `kubera up` may take).
    timeout: float = 600.0


def cluster_args(cluster: ClusterSettings, ops: list[Any], opts: RunOptions) -> list[str]:
    """`kubera up` flags for a workload's cluster settings (hollow nodes: as many as its
    createNodes ops ask for, started by `up`; otherwise none, the ops create Node objects)."""
    args: list[str] = []
    if cluster.hollow_nodes:
        nodes = sum(op.count for op in ops if isinstance(op, o.CreateNodes))
        args += ["--nodes", str(nodes)]
        if cluster.node_template is not None:
            args += ["--node-template", cluster.node_template.path]
        if cluster.nodes_per_pool is not None:
            args += ["--nodes-per-pool", str(cluster.nodes_per_pool)]
    else:
        # Node objects with no kubelet behind them, as scheduler_perf's: its cluster runs
        # no node lifecycle controller, which would find them silent after its grace
        # period (40 s) and taint every one unreachable in a longer run.
        args += ["--nodes", "0", "--controllers", "*,-nodelifecycle"]
    args += ["--schedulers", str(cluster.schedulers), "--scheduler-mode", cluster.scheduler_mode]
    if cluster.shared_state_partition != "hash":
        args += ["--shared-state-partition", cluster.shared_state_partition]
    if cluster.controller_managers < 1:
        args.append("--no-controllers")
    else:
        args += ["--controller-managers", str(cluster.controller_managers)]
    if cluster.apiservers != 1:
        args += ["--apiservers", str(cluster.apiservers)]
    le = cluster.leader_election
    if le is not None:
        args += [
            "--leader-elect-lease-duration",
            f"{le.lease_duration:g}s",
            "--leader-elect-renew-deadline",
            f"{le.renew_deadline:g}s",
            "--leader-elect-retry-period",
            f"{le.retry_period:g}s",
        ]
    if cluster.time_scale != 1:
        args += ["--time-scale", f"{cluster.time_scale:g}"]
    if cluster.scheduler_config_path:
        args += ["--scheduler-config", cluster.scheduler_config_path]
    if cluster.disable_admission_plugins:
        args += ["--disable-admission-plugins", ",".join(cluster.disable_admission_plugins)]
    if opts.ray_address:
        args += ["--ray-address", opts.ray_address]
    if opts.etcd:
        args += ["--etcd", opts.etcd]
    args += ["--timeout", f"{max(180.0, opts.timeout):g}"]
    return args


#: The scheduler profile of a workload that enables upstream's GenericWorkload gate and
#: names no scheduler config: GangScheduling in the default profile. Upstream's podgroup
#: files turn on GenericWorkload alone and expect gang semantics (1.37 runs the GangScheduling
#: plugin with the Workload API); kubera has no such gates, and its plugin is opt-in per profile.
GANG_SCHEDULING_PROFILE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: GangScheduling
"""


def workload_api_args(w: Workload, home: Path) -> list[str]:
    """`--scheduler-config` with GANG_SCHEDULING_PROFILE (written into the run's home) when
    the workload's feature gates enable GenericWorkload and it names no scheduler config."""
    if not w.feature_gates.get("GenericWorkload") or w.cluster.scheduler_config_path:
        return []
    path = home / "gang-scheduling.yaml"
    path.write_text(GANG_SCHEDULING_PROFILE)
    return ["--scheduler-config", str(path)]


def feature_gate_args(w: Workload) -> list[str]:
    """`--feature-gates` with the workload's gates that a running kubera honours
    (features.CLUSTER_GATES: the scheduler's); the others are warned about when the file
    is read (spec/config.py)."""
    gates = {k: v for k, v in w.feature_gates.items() if k in features.CLUSTER_GATES}
    if not gates:
        return []
    return ["--feature-gates", ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))]


def settings_json(cluster: ClusterSettings) -> dict[str, Any]:
    """The cluster settings as given, for results.json (templates by their path)."""
    out = asdict(cluster)
    out["node_template"] = cluster.node_template.source if cluster.node_template else None
    out.pop("scheduler_config", None)
    return out


async def clean_keyspace(endpoint: str) -> int:
    """Delete every key under kubera's prefixes; the revision after (history before it is
    another run's)."""
    storage = EtcdStorage(endpoint)
    try:
        for prefix in (REGISTRY_PREFIX, KUBERA_PREFIX):
            kvs, _ = await storage.list(prefix)
            keys = [kv.key for kv in kvs]
            for i in range(0, len(keys), 100):
                await storage.txn([], [Delete(k) for k in keys[i : i + 100]])
        return await storage.revision()
    finally:
        await storage.close()


@contextlib.contextmanager
def signals_held(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[list[int]]:
    """SIGINT and SIGTERM wait while the block runs: a second Ctrl-C (or `docker stop`)
    must not cut `kubera down` in the middle and leave processes behind. The block gets the
    list of signals that came; the handlers before are back after it. (Only the main thread
    can set handlers: elsewhere nothing is held.)"""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def hold(signum: int, frame: object) -> None:
        got.append(signum)

    previous = {s: signal.signal(s, hold) for s in signums}
    try:
        yield got
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def kubera_home(home: Path) -> Iterator[None]:
    """KUBERA_HOME set to the run's cluster, for the chaos functions that read the context."""
    old = os.environ.get("KUBERA_HOME")
    os.environ["KUBERA_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("KUBERA_HOME", None)
        else:
            os.environ["KUBERA_HOME"] = old


def new_run(tc: TestCase, w: Workload) -> RunResult:
    return RunResult(
        id=f"{tc.name}/{w.name}",
        test_case=tc.name,
        workload=w.base_name or w.name,
        params=dict(w.params),
        labels=list(w.labels),
        sweep=dict(w.sweep),
        threshold=w.threshold,
        threshold_metric=w.threshold_metric,
        metrics_collector_config=dict(tc.metrics_collector_config or {}),
        cluster=settings_json(w.cluster),
    )


class Runner:
    """Runs the selected runs of an experiment, one cluster each."""

    def __init__(
        self, experiment: Experiment, opts: RunOptions, progress: Progress | None = None
    ) -> None:
        self.experiment = experiment
        self.opts = opts
        self.progress = progress or Progress(enabled=False)
        #: The experiment so far (complete once `run` returns; partial after Ctrl-C).
        self.result = ExperimentResult(config=experiment.path, started="", runs=[])
        #: A Ctrl-C/SIGTERM came while a cluster went down: no further run starts.
        self.stop_requested = False

    def run(self, workload: str | None = None) -> ExperimentResult:
        self.result = result = ExperimentResult(
            config=self.experiment.path,
            started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            runs=[],
        )
        selected = self.experiment.runs(workload)
        with self.progress:
            for i, (tc, w) in enumerate(selected):
                if self.stop_requested:
                    raise KeyboardInterrupt
                run = new_run(tc, w)
                result.runs.append(run)
                self.progress.start_run(run.id, i + 1, len(selected))
                try:
                    self.run_one(tc, w, run)
                except KeyboardInterrupt:
                    run.error = run.error or "interrupted (Ctrl-C)"
                    raise
                finally:
                    self.progress.end_run(run)
        return result

    def run_one(self, tc: TestCase, w: Workload, run: RunResult) -> None:
        say = self.progress.say
        try:
            ops = plan(tc, w)
        except Exception as e:  # noqa: BLE001 - a plan that fails is this run's error
            run.error = f"plan: {e}"
            return
        check_from = 1
        if self.opts.etcd:
            say(f"--etcd: deleting {REGISTRY_PREFIX} and {KUBERA_PREFIX} for a clean keyspace")
            try:
                check_from = asyncio.run(clean_keyspace(self.opts.etcd)) + 1
            except Exception as e:  # noqa: BLE001
                run.error = f"cleaning etcd at {self.opts.etcd}: {e}"
                return
        cluster = Cluster(timeout=max(300.0, self.opts.timeout))
        up_returned = False
        self.progress.phase("kubera up")
        try:
            with kubera_home(cluster.home):
                args = cluster_args(w.cluster, ops, self.opts)
                args += feature_gate_args(w)
                r = cluster.start(*args, *workload_api_args(w, Path(cluster.home)))
                up_returned = True
                if r.returncode != 0:
                    run.error = f"kubera up failed: {r.stderr.strip()}"
                    return
                ctx = Context(**cluster.context)
                asyncio.run(self._execute(ctx, cluster, ops, w, run, check_from))
        except Exception as e:  # noqa: BLE001 - recorded; the next run goes on
            run.error = run.error or f"{type(e).__name__}: {e}"
        finally:
            self.progress.phase("kubera down")
            with signals_held() as got, kubera_home(cluster.home):
                if not up_returned:
                    _settle_interrupted_up(cluster)
                cluster.down()
            if got:
                self.stop_requested = True
                self.progress.say("interrupted while the cluster went down: no further run")

    async def _execute(
        self,
        ctx: Context,
        cluster: Cluster,
        ops: list[Any],
        w: Workload,
        run: RunResult,
        check_from: int,
    ) -> None:
        # before the run's clock starts: its timeline is the workload's alone
        self.progress.phase("etcd put rate")
        try:
            run.etcd_put_rate = round(await etcdprobe.put_rate(ctx.etcd), 1)
        except Exception as e:  # noqa: BLE001 - a yardstick missing, not a failed run
            run.warnings.append(f"etcd put rate not measured: {e}")
        t0 = time.monotonic()
        run.t0 = time.time()

        def load() -> Context:
            return Context(**json.loads(cluster.context_file.read_text()))

        collector = Collector(ctx, t0=t0, load_context=load)
        client = Client(ctx.apiserver, timeout=60)
        executor = OpExecutor(
            ctx,
            client,
            collector,
            run,
            hollow_nodes=w.cluster.hollow_nodes,
            load_context=load,
            check_from_revision=check_from,
            timeout=self.opts.timeout,
            on_phase=self.progress.phase,
            node_template=w.cluster.node_template.text if w.cluster.node_template else None,
        )
        await collector.start()
        ticker = asyncio.create_task(self._tick(collector, executor, run))
        try:
            for op in ops:
                await executor.run(op)
            await executor.finish()
        except BaseException as e:
            what = (
                "interrupted (Ctrl-C)"
                if isinstance(e, asyncio.CancelledError | KeyboardInterrupt)
                else f"{e}"
            )
            run.error = f"{run.error}; {what}" if run.error else what
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(_cancel_background(executor), 30)
            if not isinstance(e, Exception):
                raise
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            await collector.stop()
            await client.close()
            for loop, error in collector.errors.items():
                self.progress.say(f"collector ({loop}): last error: {error}")
            for warning in run.warnings:
                self.progress.say(f"warning: {warning}")
            finish(run, collector, time.monotonic() - t0, executor.binds_by_holder)
            for name, (namespaces, selector) in executor.window_pods.items():
                run.series[f"bound:{name}"] = collector.pods.bound_per_second(
                    len(run.series["t"]), namespaces, selector
                )

    async def _tick(self, collector: Collector, executor: OpExecutor, run: RunResult) -> None:
        while True:
            self.progress.update(collector, len(run.faults), executor.warnings())
            await asyncio.sleep(0.5)


def _settle_interrupted_up(cluster: Cluster, wait: float = 60.0) -> None:
    """A Ctrl-C during `kubera up --detach` ends the CLI but not the supervisor it started
    in its own session; wait for it to write its context, so `down` finds what to stop."""
    if cluster.context_file.exists() or not (cluster.home / "logs" / "supervisor.log").exists():
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not cluster.context_file.exists():
        time.sleep(0.2)


async def _cancel_background(executor: OpExecutor) -> None:
    """After a failed op: stop churn, let paused processes get their SIGCONT."""
    await executor.stop_background()
    if executor.faults:
        await asyncio.wait(executor.faults, timeout=30)


def research_measures(collector: Collector) -> dict[str, Any]:
    """The research measures of the run's end (measure/research.py): from the objects the
    collector listed as the run ended, and the pod timeline for the queue-drain time."""
    state = collector.end_state or endstate.EndState()
    nodes, pending, devices = endstate.records(state)
    timeline = collector.pods
    waiting = sum(
        1 for uid, p in timeline.pods.items() if p.bound is None and uid not in timeline.gone
    )
    drain = research.queue_drain(
        (timeline.created_at(p) for p in timeline.pods.values()),
        (p.bound for p in timeline.pods.values() if p.bound is not None),
        waiting,
    )
    return research.measures(nodes, pending, devices, drain=drain)


def finish(
    run: RunResult,
    collector: Collector,
    duration: float,
    binds_by_holder: dict[str, int] | None = None,
) -> None:
    """Everything the collector measured, into the run."""
    run.duration = round(duration, 3)
    seconds = len(collector.series)
    per_second = collector.pods.per_second(seconds)
    run.series = {"t": [float(i) for i in range(seconds)], **per_second}
    run.series.update(collector.series.columns)
    run.latency = collector.pods.latencies()
    gangs = collector.pods.gangs()
    if gangs:
        run.latency["gang"] = collector.pods.gang_latencies()
        whole = [g for g in gangs if g.last_bound is not None]
        if whole:  # the span the whole groups took: their throughput's denominator
            last = max(g.last_bound or 0.0 for g in whole)
            run.latency["gangSpan"] = [round(last - min(g.first_created for g in whole), 6)]
        partial = [g for g in gangs if g.last_bound is None]
        if partial:
            run.warnings.append(
                f"{len(partial)} of {len(gangs)} gangs never had every member bound "
                f"(the first: {partial[0].key}, {partial[0].bound} of {partial[0].members})"
            )
    run.research = research_measures(collector)
    run.attempts = collector.attempts()
    omega = collector.omega_stats()
    preemption = collector.preemption_stats()
    batches = collector.batch_stats()
    run.replicas = [
        ReplicaStats(
            name=n,
            binds=b,
            conflicts=c,
            **_omega(omega.get(n)),
            preemption_attempts=preemption.get(n, (0, 0))[0],
            preemption_victims=preemption.get(n, (0, 0))[1],
            batched_pods=batches.get(n, (0, 0))[0],
            unbatched_pods=batches.get(n, (0, 0))[1],
        )
        for n, b, c in collector.replica_stats(binds_by_holder)
    ]
    run.leaders = [
        LeaderTerm(
            component=t.component,
            identity=t.identity,
            start=round(t.start, 3),
            end=None if t.end is None else round(t.end, 3),
        )
        for t in collector.terms.terms
    ]
    binds = sorted(p.bound for p in collector.pods.pods.values() if p.bound is not None)
    run.fault_first_bind = first_binds(run.faults, run.leaders, binds)
    run.fault_takeover = takeovers(run.faults, run.leaders) if run.faults else []
    if run.fault_first_write or any(f.kind == "kill-apiserver" for f in run.faults):
        writes = run.fault_first_write[: len(run.faults)]
        run.fault_first_write = writes + [None] * (len(run.faults) - len(writes))
    run.nodes.update(node_figures(run, collector))


def _omega(stats: tuple[int, float, float] | None) -> dict[str, Any]:
    if stats is None:
        return {}
    lost, useful, wasted = stats
    return {"lost": lost, "useful_busy_s": useful, "wasted_busy_s": wasted}


def node_figures(run: RunResult, collector: Collector) -> dict[str, float]:
    """The hollow nodes' figures (measure/nodes.py) of a run with node pools; {} without."""
    pools = [str(p.get("name", "")) for p in collector.ctx.node_pools]
    if not pools:
        return {}
    start, end = steady_window(run.phases, run.duration)
    out: dict[str, float] = {}
    count = sum(int(p.get("count", 0)) for p in collector.ctx.node_pools)
    if collector.nodes_ready is not None:
        out["nodes_ready"], out["nodes"] = collector.nodes_ready
        count = collector.nodes_ready[1] or count
    if len(collector.leases):
        out.update(collector.leases.figures(start, end, run.t0))
    out.update(window_figures(run.series, start, end, pools, count))
    return out
