"""Op execution (kubera/experiment/run/opexec.py) against a fake apiserver, and the cluster
flags a workload's settings become (runner.cluster_args)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from kubera import chaos
from kubera.experiment.measure.measures import PodTimeline
from kubera.experiment.output.results import RunResult
from kubera.experiment.run.opexec import OpExecutor
from kubera.experiment.run.runner import RunOptions, cluster_args
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import ClusterSettings
from kubera.experiment.spec.objects import OpError, node_doc, pod_doc
from kubera.experiment.spec.templates import read_template
from kubera.launch.context import Context
from services.client.client import BatchResult
from services.leaderelection import LeaseTimings


class FakeCollector:
    def __init__(self) -> None:
        self.pods = PodTimeline()
        self.t = 0.0

    def now(self) -> float:
        self.t += 0.01
        return self.t

    async def snapshot(self) -> dict[str, str]:
        return {"scheduler-0": f"snapshot at {self.t:.2f}"}

    def cpu_now(self) -> dict[str, tuple[tuple[int, ...], float]]:
        return {"scheduler-0": ((7,), self.t), "gone": ((8,), 0.0)}

    def rss_now(self) -> dict[str, float]:
        return {"apiserver": 100.0 + self.t, "pool-0": 50.0}

    def pool_names(self) -> set[str]:
        return {"pool-0"}


class FakeApiserver:
    """Creates get a name and UID; pods are bound by the watch `bind_after` seconds later
    (never when None)."""

    def __init__(self, collector: FakeCollector, bind_after: float | None = 0.0) -> None:
        self.collector = collector
        self.bind_after = bind_after
        self.created: list[Any] = []
        self.deleted: list[str] = []
        self.uids = itertools.count()
        self.tasks: list[asyncio.Task[None]] = []
        self.lists = 0
        #: Seconds after a delete until the watch says DELETED (never when None).
        self.gone_after: float | None = 0.0

    async def batch_create(self, objs: list[Any]) -> list[BatchResult]:
        out = []
        for obj in objs:
            m = obj.metadata
            if not m.name:
                m.name = f"{m.generate_name}{next(self.uids)}"
            m.uid = f"uid-{m.name}"
            self.created.append(obj)
            out.append(BatchResult(obj, None))
            if type(obj).__name__ == "Pod" and self.bind_after is not None:
                self.tasks.append(asyncio.create_task(self._bind(m.uid, f"{m.namespace}/{m.name}")))
        return out

    async def _bind(self, uid: str, key: str) -> None:
        await asyncio.sleep(self.bind_after or 0)
        self.collector.pods.observe(uid, key, "node-0", "Pending", self.collector.now())

    async def create(self, obj: Any) -> Any:
        return (await self.batch_create([obj]))[0].object

    async def delete(self, kind: Any, name: str, namespace: str = "", **kw: Any) -> None:
        self.deleted.append(f"{namespace}/{name}")
        if self.gone_after is not None:
            self.tasks.append(asyncio.create_task(self._gone(f"uid-{name}")))

    async def _gone(self, uid: str) -> None:
        await asyncio.sleep(self.gone_after or 0)
        self.collector.pods.deleted(uid, self.collector.now())

    async def list(self, kind: Any, namespace: str = "", **kw: Any) -> tuple[list[Any], int]:
        self.lists += 1
        gone = {key.split("/", 1)[1] for key in self.deleted}
        items = [
            obj
            for obj in self.created
            if isinstance(obj, kind.message)
            and obj.metadata.name not in gone
            and (not namespace or obj.metadata.namespace == namespace)
        ]
        return items, 1


def executor(bind_after: float | None = 0.0, timeout: float = 5.0) -> tuple[OpExecutor, Any]:
    collector = FakeCollector()
    api = FakeApiserver(collector, bind_after)
    ctx = Context(apiserver="127.0.0.1:1", etcd="http://127.0.0.1:2")
    ex = OpExecutor(
        ctx,
        api,  # type: ignore[arg-type]
        collector,  # type: ignore[arg-type]
        RunResult(id="T/w", test_case="T", workload="w"),
        hollow_nodes=False,
        load_context=lambda: ctx,
        timeout=timeout,
    )
    return ex, api


@pytest.mark.parametrize(
    ("strategy", "label"),
    [
        (o.UniqueNodeLabelStrategy(label_key="k"), ["node-0-0", "node-0-1", "node-0-2"]),
        (
            o.LabelNodePrepareStrategy(label_key="k", label_values=("z1", "z2")),
            ["z1", "z2", "z1"],
        ),
        (None, [None, None, None]),
    ],
)
def test_create_nodes_applies_the_label_strategy_per_node(
    strategy: o.NodeStrategy | None, label: list[str | None]
) -> None:
    op = o.CreateNodes(index=0, count=3, strategy=strategy)
    docs = [node_doc(op, i) for i in range(3)]
    assert [d["metadata"].get("labels", {}).get("k") for d in docs] == label
    assert docs[0]["status"]["allocatable"]["cpu"] == "4"  # upstream's default node


def test_node_allocatable_strategy_sets_allocatable_only() -> None:
    # upstream's PreparePatch patches status.allocatable; the capacity stays as created
    op = o.CreateNodes(
        index=0,
        count=1,
        strategy=o.NodeAllocatableStrategy(node_allocatable={"example.com/x": "8"}),
    )
    status = node_doc(op, 0)["status"]
    assert status["allocatable"]["example.com/x"] == "8"
    assert "example.com/x" not in status["capacity"]


def test_templated_pods_carry_upstreams_signature_label_one_value_per_batch(tmp_path: Any) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: p-\n  labels: {app: a}\n"
        "spec:\n  containers: [{name: c, image: i}]\n"
    )
    template = read_template(str(path), "pod.yaml")
    docs = [pod_doc(template, i, 5, {}, signature_batch_size=2) for i in range(5)]
    assert [d["metadata"]["labels"] for d in docs] == [
        {"app": "a", "signature": f"signature-label-{v}"} for v in (0, 0, 1, 1, 2)
    ]
    # the default batch (upstream: 1) gives every pod its own value
    assert pod_doc(template, 3, 5, {})["metadata"]["labels"]["signature"] == "signature-label-3"
    # upstream's default pod (no podTemplatePath) gets none
    assert "signature" not in pod_doc(None, 0, 1, {}).get("metadata", {}).get("labels", {})


async def test_create_pods_applies_the_ops_signature_batch_size(tmp_path: Any) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\nspec: {}\n")
    ex, api = executor()
    op = o.CreatePods(
        index=0,
        count=4,
        namespace="ns-0",
        pod_template=read_template(str(path), "pod.yaml"),
        signature_batch_size=3,
    )
    await ex.run(op)
    pods = [p for p in api.created if type(p).__name__ == "Pod"]
    assert [p.metadata.labels["signature"] for p in pods] == [
        "signature-label-0",
        "signature-label-0",
        "signature-label-0",
        "signature-label-1",
    ]


async def test_create_nodes_creates_plain_nodes_through_the_api() -> None:
    ex, api = executor()
    await ex.run(o.CreateNodes(index=0, count=7))
    assert [type(n).__name__ for n in api.created] == ["Node"] * 7
    assert ex.result.phases[0].name == "createNodes[0]"


async def test_create_pods_waits_until_every_pod_is_bound_and_measures_a_window() -> None:
    ex, api = executor(bind_after=0.3)
    op = o.CreatePods(index=1, count=5, namespace="ns-1", collect_metrics=True)
    await ex.run(op)
    pods = [p for p in api.created if type(p).__name__ == "Pod"]
    assert len(pods) == 5
    assert all(p.bound is not None for p in ex.collector.pods.pods.values())
    assert [w.name for w in ex.result.collected] == ["ns-1"]
    assert ex.window_pods == {"ns-1": (("ns-1",), {})}
    (metrics,) = ex.result.scheduler_metrics
    assert metrics.window == "ns-1" and set(metrics.end) == {"scheduler-0"}
    # the namespace was created on first use
    assert [type(x).__name__ for x in api.created[:1]] == ["Namespace"]


async def test_a_window_records_its_measured_phase_pods_seconds_and_cpu() -> None:
    ex, _ = executor(bind_after=0.3)
    await ex.run(o.CreatePods(index=1, count=5, namespace="ns-1", collect_metrics=True))
    (phase,) = ex.result.measured
    (window,) = ex.result.collected
    assert (phase.window, phase.pods) == ("ns-1", 5)
    timeline = ex.collector.pods
    last_bind = max(p.bound for p in timeline.pods.values() if p.bound is not None)
    first_sent = min(timeline.created_at(p) for p in timeline.pods.values())
    assert first_sent >= window.start
    assert phase.seconds == pytest.approx(last_bind - first_sent, abs=1e-3)
    # the fake collector's scheduler used CPU over the window; "gone" never changed
    assert phase.cpu["scheduler-0"] is not None and phase.cpu["scheduler-0"] > 0
    assert phase.cpu["gone"] == 0.0


async def test_create_pods_that_never_bind_fail_the_op_after_the_timeout() -> None:
    ex, _ = executor(bind_after=None, timeout=0.3)
    with pytest.raises(OpError, match="3 pods scheduled"):
        await ex.run(o.CreatePods(index=2, count=3, namespace="ns"))
    assert ex.result.phases[0].name == "createPods[2]"  # recorded even when it failed


async def test_skip_wait_to_completion_returns_before_the_binds() -> None:
    ex, _ = executor(bind_after=None)
    await ex.run(o.CreatePods(index=0, count=3, namespace="ns", skip_wait_to_completion=True))
    assert len(ex.collector.pods.pods) == 0


async def test_steady_state_replaces_each_bound_pod() -> None:
    ex, api = executor(bind_after=0.0)
    op = o.CreatePods(index=0, count=4, namespace="ns", steady_state=True, duration=0.5)
    await ex.run(op)
    pods = [p for p in api.created if type(p).__name__ == "Pod"]
    assert len(pods) > 4
    assert len(api.deleted) == len(pods) - 4  # every bound pod deleted and replaced, once


async def test_a_barrier_waits_on_the_pod_timeline_not_on_lists() -> None:
    ex, api = executor(bind_after=0.5)
    await ex.run(o.CreatePods(index=0, count=3, namespace="ns", skip_wait_to_completion=True))
    await ex.run(o.Barrier(index=1, namespaces=("ns",)))
    assert all(p.bound is not None for p in ex.collector.pods.pods.values())
    assert len(ex.collector.pods.pods) == 3
    assert api.lists == 1  # which pods; then the timeline (a list only every 5 s)


async def test_a_barrier_that_is_never_reached_fails_after_the_timeout() -> None:
    ex, _ = executor(bind_after=None, timeout=0.3)
    await ex.run(o.CreatePods(index=0, count=2, namespace="ns", skip_wait_to_completion=True))
    with pytest.raises(OpError, match="pods Scheduled"):
        await ex.run(o.Barrier(index=1))


async def test_delete_pods_waits_for_the_deletions_on_the_timeline() -> None:
    ex, api = executor(bind_after=0.0)
    api.gone_after = 0.3
    await ex.run(o.CreatePods(index=0, count=4, namespace="ns"))
    await ex.run(o.DeletePods(index=1, namespace="ns"))
    assert len(api.deleted) == 4
    assert set(ex.collector.pods.gone) == {p.metadata.uid for p in api.created[1:]}
    assert api.lists == 1  # the victims; then the timeline


async def test_delete_pods_falls_back_to_a_list_when_the_watch_misses_a_deletion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("kubera.experiment.run.opexec.RECHECK_EVERY", 0.2)
    ex, api = executor(bind_after=0.0)
    api.gone_after = None  # no DELETED ever reaches the timeline
    await ex.run(o.CreatePods(index=0, count=2, namespace="ns"))
    await ex.run(o.DeletePods(index=1, namespace="ns"))
    assert api.lists >= 2


async def test_windows_of_the_same_name_get_unique_names() -> None:
    ex, _ = executor(bind_after=0.0)
    for i in range(3):
        await ex.run(o.CreatePods(index=i, count=1, namespace="ns", collect_metrics=True))
    names = ["ns", "ns-2", "ns-3"]
    assert [w.name for w in ex.result.collected] == names
    assert [m.window for m in ex.result.scheduler_metrics] == names
    assert list(ex.window_pods) == names
    assert all(pods == (("ns",), {}) for pods in ex.window_pods.values())


async def test_stop_collecting_without_a_window_is_an_error() -> None:
    ex, _ = executor()
    with pytest.raises(OpError, match="no measurement window"):
        await ex.run(o.StopCollectingMetrics(index=3))


async def test_chaos_faults_are_recorded_and_a_check_waits_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ex, _ = executor()
    killed: list[str] = []

    class Storage:
        async def close(self) -> None:
            pass

    async def connect(ctx: Any) -> Storage:
        return Storage()

    async def wait_leader(storage: Any, lease: str, timeout: float, **kw: Any) -> chaos.Leader:
        return chaos.Leader(lease, f"leader-of-{lease}", 7, 1, "", {})

    monkeypatch.setattr(chaos, "connect_storage", connect)
    monkeypatch.setattr(chaos, "wait_leader", wait_leader)

    async def kill(target: chaos.Leader) -> None:
        killed.append(target.identity)

    monkeypatch.setattr(chaos, "kill", kill)
    verdicts: list[int] = []

    async def fake_check(etcd: str, settle: float, *, start_revision: int = 1) -> Any:
        verdicts.append(len(killed))
        return None, {}

    monkeypatch.setattr("kubera.experiment.run.opexec.check", fake_check)
    await ex.run(o.Chaos(index=0, action="killLeader", every=0.05, times=3))
    assert killed == []  # in the background
    await ex.run(o.Check(index=1, settle=0))
    assert verdicts == [3]
    assert [f.kind for f in ex.result.faults] == ["kill"] * 3
    assert ex.result.faults[0].target == "leader-of-kube-system/kube-scheduler"


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        (
            ClusterSettings(),
            # Node objects without kubelets: no node lifecycle controller (scheduler_perf's
            # cluster runs none), so a run longer than its grace keeps its nodes untainted
            ["--nodes", "0", "--controllers", "*,-nodelifecycle", "--schedulers", "1"],
        ),
        (
            ClusterSettings(hollow_nodes=True, schedulers=3, scheduler_mode="shared-state"),
            ["--nodes", "12", "--schedulers", "3", "--scheduler-mode", "shared-state"],
        ),
        (ClusterSettings(controller_managers=0), ["--no-controllers"]),
        (
            ClusterSettings(
                leader_election=LeaseTimings(lease_duration=2, renew_deadline=1.5, retry_period=0.5)
            ),
            ["--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1.5s"],
        ),
        (ClusterSettings(time_scale=10), ["--time-scale", "10"]),
        (ClusterSettings(apiservers=2), ["--apiservers", "2"]),
    ],
)
def test_cluster_settings_become_up_flags(cluster: ClusterSettings, expected: list[str]) -> None:
    ops = [o.CreateNodes(index=0, count=10), o.CreateNodes(index=1, count=2)]
    args = cluster_args(cluster, ops, RunOptions())
    joined = " ".join(args)
    assert " ".join(expected) in joined
    # hollow nodes have kubelets that heartbeat: every controller runs
    assert ("--controllers" in args) is (not cluster.hollow_nodes)


def test_ray_address_and_etcd_pass_through() -> None:
    args = cluster_args(
        ClusterSettings(), [], RunOptions(ray_address="10.0.0.1:6379", etcd="http://e:2379")
    )
    assert args[args.index("--ray-address") + 1] == "10.0.0.1:6379"
    assert args[args.index("--etcd") + 1] == "http://e:2379"


POD_CSV = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p-0,1000,1024,0,0,,LS,Running,100,100.4,100
p-1,2000,2048,1,1000,,BE,Running,100.2,,100.2
p-2,500,512,1,250,,LS,Running,100.6,100.8,100.6
"""
NODE_CSV = """\
sn,cpu_milli,memory_mib,gpu,model
n-0,32000,65536,2,V100M16
"""


async def test_trace_replay_creates_and_deletes_on_the_scaled_trace_clock(
    tmp_path: Any,
) -> None:
    pods_csv, nodes_csv = tmp_path / "pods.csv", tmp_path / "nodes.csv"
    pods_csv.write_text(POD_CSV)
    nodes_csv.write_text(NODE_CSV)
    ex, api = executor()
    op = o.TraceReplay(
        index=0,
        pod_trace_path=str(pods_csv),
        node_trace_path=str(nodes_csv),
        time_scale=2.0,
        namespace="trace",
    )
    t0 = asyncio.get_running_loop().time()
    await ex.run(op)
    took = asyncio.get_running_loop().time() - t0
    kinds = [type(x).__name__ for x in api.created]
    assert kinds == ["Namespace", "Node", "Pod", "Pod", "Pod"]
    assert [p.metadata.name for p in api.created[2:]] == ["p-0", "p-1", "p-2"]
    # deletions at (100.4 - 100) / 2 and (100.8 - 100) / 2 seconds; p-1 is never deleted
    assert api.deleted == ["trace/p-0", "trace/p-2"]
    assert 0.35 <= took < 2.0


async def test_a_generated_name_taken_is_sent_again() -> None:
    from services.api.machinery.errors import AlreadyExistsError

    ex, api = executor()
    real = api.batch_create
    collided: list[int] = []

    async def once_colliding(objs: list[Any]) -> list[BatchResult]:
        if not collided:
            collided.append(len(objs))
            rest = objs[1:]
            return [BatchResult(None, AlreadyExistsError("taken")), *await real(rest)]
        return await real(objs)

    api.batch_create = once_colliding  # type: ignore[method-assign]
    await ex.run(o.CreatePods(index=0, count=4, namespace="ns"))
    pods = [p for p in api.created if type(p).__name__ == "Pod"]
    assert len(pods) == 4 and len({p.metadata.name for p in pods}) == 4


def test_an_unknown_workload_is_refused_before_any_cluster(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubera.cli.main import main

    path = tmp_path / "x.yaml"
    path.write_text(
        "- name: T\n  workloadTemplate:\n  - opcode: createPods\n    count: 1\n"
        "    collectMetrics: true\n  workloads:\n  - name: w\n"
    )
    out = tmp_path / "out"
    code = main(["experiment", "run", str(path), "--workload", "nope", "--output", str(out)])
    assert code == 2
    assert "no workload 'nope' (there are: T/w)" in capsys.readouterr().err
    assert not out.exists()


def churn_op(**kw: Any) -> o.Churn:
    from kubera.experiment.spec.templates import Template

    template = Template(
        path="pod.yaml",
        source="pod.yaml",
        text="kind: Pod\napiVersion: v1\n",
        data={"kind": "Pod", "apiVersion": "v1"},
    )
    return o.Churn(
        index=4,
        mode="create",
        templates=(template,),
        interval_milliseconds=10,
        namespace="churn",
        **kw,
    )


async def test_failed_churn_rounds_become_the_runs_warnings() -> None:
    from services.api.machinery.errors import ForbiddenError

    ex, api = executor()
    real = api.batch_create
    failures = 0

    async def sometimes(objs: list[Any]) -> list[BatchResult]:
        nonlocal failures
        if type(objs[0]).__name__ == "Pod" and failures < 3:
            failures += 1
            raise ForbiddenError("quota exceeded")
        return await real(objs)

    api.batch_create = sometimes  # type: ignore[method-assign]
    await ex.run(churn_op(number=5))
    await asyncio.sleep(0.3)
    assert len(ex.warnings()) == 1
    await ex.finish()
    (warning,) = ex.result.warnings
    assert warning == "churn[4]: 3 rounds failed, the last: quota exceeded"
    assert len([p for p in api.created if type(p).__name__ == "Pod"]) == 2  # rounds 3, 4


async def test_a_churn_task_that_dies_fails_the_run_at_its_end() -> None:
    ex, api = executor()
    real = api.batch_create

    async def broken(objs: list[Any]) -> list[BatchResult]:
        if type(objs[0]).__name__ == "Pod":
            raise RuntimeError("the client broke")
        return await real(objs)

    api.batch_create = broken  # type: ignore[method-assign]
    await ex.run(churn_op())
    await asyncio.sleep(0.1)
    with pytest.raises(OpError, match="churn\\[4\\]: the client broke"):
        await ex.finish()


async def test_faults_still_running_after_the_timeout_are_cut_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ex, _ = executor(timeout=0.3)
    stuck = asyncio.Event()

    async def hanging_fault(op: o.Chaos) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            stuck.set()  # cancelled: a pause's SIGCONT would run here

    monkeypatch.setattr(ex, "fault", hanging_fault)
    await ex.run(o.Chaos(index=0, action="restartEtcd", at=0.1))
    await ex.finish()
    assert stuck.is_set()
    assert ex.result.error is not None and "chaos[0] cut short" in ex.result.error


def test_the_progress_line_shows_the_last_warning() -> None:
    import io

    from kubera.experiment.run.progress import Progress

    out = io.StringIO()
    progress = Progress(stream=out)
    progress.start_run("T/w", 1, 1)
    progress.update(FakeCollector(), 0, ["churn[4]: 2 rounds failed, the last: quota exceeded"])
    progress.phase("barrier[5]")
    assert "warning: churn[4]: 2 rounds failed" in out.getvalue().splitlines()[-1]


def test_signals_wait_while_the_cluster_goes_down() -> None:
    import os
    import signal

    from kubera.experiment.run.runner import signals_held

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def interrupt_int(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Both handlers are set here, so the test does not depend on the ones it inherits (a suite
    # started as a background job inherits SIGINT as SIG_IGN).
    before_term = signal.signal(signal.SIGTERM, interrupt)
    before_int = signal.signal(signal.SIGINT, interrupt_int)
    try:
        with signals_held() as got:
            os.kill(os.getpid(), signal.SIGTERM)  # delivered here, held: no KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGINT)
            finished = True
        assert finished and got == [signal.SIGTERM, signal.SIGINT]
        assert signal.getsignal(signal.SIGTERM) is interrupt
        assert signal.getsignal(signal.SIGINT) is interrupt_int
    finally:
        signal.signal(signal.SIGTERM, before_term)
        signal.signal(signal.SIGINT, before_int)


def test_a_signal_during_teardown_starts_no_further_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubera.experiment.run.runner import Runner
    from kubera.experiment.spec.cases import Experiment, TestCase, Workload

    tc = TestCase(name="T", ops=[], workloads=[Workload(name="a"), Workload(name="b")])
    runner = Runner(Experiment(path="x.yaml", test_cases=[tc]), RunOptions())

    def run_one(tc: Any, w: Any, run: RunResult) -> None:
        runner.stop_requested = True  # as the teardown does when a signal came

    monkeypatch.setattr(runner, "run_one", run_one)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert [r.id for r in runner.result.runs] == ["T/a"]
    assert runner.result.runs[0].error is None  # it completed: not marked interrupted
