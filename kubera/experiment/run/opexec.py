"""Executing a workload's planned ops against a running kubera, as scheduler_perf does.

`OpExecutor.run(op)` runs one op to completion (or starts it in the background: churn,
chaos); `finish()` stops the background work at the workload's end. What an op measures
goes into the RunResult the executor was given (phases, windows, faults, the checker's
verdict, the scheduler's metrics snapshots); the pod timings come from the Collector.

Semantics kept from upstream (test/integration/scheduler_perf/scheduler_perf.go):
createPods waits until every pod it created is bound unless skipWaitToCompletion;
collectMetrics makes the op a measurement window; namespaces are created on first use;
the default node and pod are upstream's; with persistent-volume templates each pod gets its
claim and volume first (volumes.py), and nodeAllocatableStrategy nodes their CSINodes.
kubera's ops: `chaos` runs in the background from the op's start (a `check` first waits
for every fault to finish, so the verdict covers them all); `check` replays etcd's history
as `kubera check` does (faults.py).
Waits on pods (createPods, barrier, deletePods) read the collector's pod timeline, not
lists, so measurement windows stay undisturbed. Each window (named uniquely in the run)
snapshots every scheduler process's metrics at its start and end (histograms.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from google.protobuf.message import Message

from kubera import chaos
from kubera.experiment.measure import cpu
from kubera.experiment.measure.collect import Collector
from kubera.experiment.measure.histograms import compact
from kubera.experiment.measure.measures import groups_short
from kubera.experiment.measure.model import (
    Fault,
    MeasuredPhase,
    MetricsSnapshots,
    Phase,
    RunResult,
    Window,
)
from kubera.experiment.run import pressure
from kubera.experiment.run.dra import (
    AllocationFailed,
    allocate_claims,
    matching_nodes,
    resource_slice_doc,
)
from kubera.experiment.run.faults import FAULT_KIND, check, wait_faults
from kubera.experiment.run.replay import ReplayError, replay
from kubera.experiment.run.volumes import create_volumes
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.objects import (
    OpError,
    csinode_doc,
    generated_name,
    node_doc,
    node_ready,
    pod_doc,
    to_message,
    with_claim,
)
from kubera.launch.context import Context
from services.api.dra.allocator import AllocationError
from services.api.dra.claims import ADMIN_ACCESS_NAMESPACE_LABEL
from services.api.machinery.errors import (
    AlreadyExistsError,
    ApiError,
    NotFoundError,
    UnavailableError,
)
from services.api.machinery.kinds import BY_KIND, kind_of
from services.api.machinery.listoptions import ListOptions
from services.client import Client

#: Objects per batch_create call (the apiserver splits further by its own caps).
CHUNK = 500
#: Seconds between checks of the collector's pod timeline (no API call).
POLL = 0.1
#: Seconds between API lists while waiting: nodes (hollow createNodes), and the cross-check
#: of a pod wait against the apiserver (a DELETED the watch missed in a gap).
LIST_EVERY = 1.0
RECHECK_EVERY = 5.0
#: Times an object named by generateName is sent again after a name collision.
GENERATE_NAME_RETRIES = 5


def _key(obj: Message) -> str:
    m = obj.metadata  # type: ignore[attr-defined]
    return f"{m.namespace}/{m.name}"


def _matches(labels: Any, selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class OpExecutor:
    """Runs one workload's ops on one cluster (see the module docstring)."""

    def __init__(
        self,
        ctx: Context,
        client: Client,
        collector: Collector,
        result: RunResult,
        *,
        hollow_nodes: bool,
        load_context: Callable[[], Context],
        check_from_revision: int = 1,
        timeout: float = 600.0,
        on_phase: Callable[[str], None] = lambda phase: None,
        node_template: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.client = client
        self.collector = collector
        self.result = result
        self.hollow_nodes = hollow_nodes
        self.load_context = load_context
        self.check_from_revision = check_from_revision
        self.timeout = timeout
        self.on_phase = on_phase
        self.node_template = node_template  # the hollow nodes' template text (None: default)
        self.nodes_expected = 0  # hollow mode: nodes createNodes asked for so far
        self.node_names: set[str] = set()  # the names createNodes gave its nodes
        self.namespaces: set[str] = set()
        self.background: list[asyncio.Task[None]] = []
        self.stopping = False
        self.faults: list[asyncio.Task[None]] = []
        #: When the last planned fault of the chaos ops running is due (monotonic).
        self.faults_due = 0.0
        self.window: tuple[float, str] | None = None
        #: The scheduler registries' texts at the open window's start (histograms.py).
        self.window_metrics: dict[str, str] = {}
        #: Every component's CPU seconds at the open window's start (measure/cpu.py).
        self.window_cpu: cpu.CpuSample = {}
        #: Window name → the pods it measures (namespaces, label selector), for its own
        #: `bound:<name>` series.
        self.window_pods: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {}
        #: The last check's fenced binds per leader identity (exact per-replica binds).
        self.binds_by_holder: dict[str, int] = {}
        #: Background op phase → (failed rounds, the last error): churn goes on after a
        #: failed create or delete, as upstream's does; the run's `warnings` say so.
        self.failures: dict[str, tuple[int, str]] = {}

    def now(self) -> float:
        return self.collector.now()

    async def run(self, op: o.BaseOp) -> None:
        """Run `op` and record its phase (its start and end on the run's clock)."""
        self.on_phase(op.phase)
        start = self.now()
        handler = getattr(self, f"op_{op.opcode}")
        try:
            await handler(op)
        finally:
            self.result.phases.append(
                Phase(
                    name=op.phase, opcode=op.opcode, start=round(start, 3), end=round(self.now(), 3)
                )
            )

    async def finish(self) -> None:
        """The workload's end: every fault finishes, background work (churn) stops, an open
        measurement window closes."""
        await self._faults_done()
        await self.stop_background()
        if self.window is not None:
            await self._close_window()

    async def stop_background(self) -> None:
        """Churn stops (bounded: grpc.aio may turn the cancellation into an RPC error the
        loop sees, so it also checks `stopping`). Its failed rounds become the run's
        warnings; a churn task that died of an error fails the run with it."""
        self.stopping = True
        tasks, self.background = self.background, []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        self.result.warnings.extend(self.warnings())
        died = [
            (task.get_name(), task.exception())
            for task in tasks
            if task.done() and not task.cancelled() and task.exception() is not None
        ]
        if died:
            name, e = died[0]
            raise OpError(f"{name}: {e}") from e

    def warnings(self) -> list[str]:
        """The background ops' failures so far, one line each."""
        return [
            f"{phase}: {n} round{'s' if n != 1 else ''} failed, the last: {last}"
            for phase, (n, last) in self.failures.items()
        ]

    def _failed(self, phase: str, e: Exception) -> None:
        n, _ = self.failures.get(phase, (0, ""))
        self.failures[phase] = (n + 1, str(e) or type(e).__name__)

    # ------------------------------------------------------------- helpers

    async def _until(
        self, done: Callable[[], Coroutine[Any, Any, bool]], what: str, poll: float = POLL
    ) -> None:
        deadline = time.monotonic() + self.timeout
        while not await done():
            if time.monotonic() > deadline:
                raise OpError(f"{what}: not done within {self.timeout:g}s")
            await asyncio.sleep(poll)

    async def _wait_pods(
        self,
        uids: Iterable[str],
        done: Callable[[str], bool],
        still_pending: Callable[[], Coroutine[Any, Any, set[str]]],
        what: str,
    ) -> None:
        """Wait (bounded by the op timeout) until `done(uid)` holds for every one of `uids`
        on the collector's pod timeline, which costs no API call; measurement windows stay
        undisturbed. Every RECHECK_EVERY s the apiserver's view (`still_pending`: one list)
        settles the pods the watch may have missed."""
        pending = set(uids)
        checked = time.monotonic()

        async def finished() -> bool:
            nonlocal pending, checked
            pending = {u for u in pending if not done(u)}
            if pending and time.monotonic() - checked >= RECHECK_EVERY:
                pending &= await still_pending()
                checked = time.monotonic()
            return not pending

        await self._until(finished, what)

    async def _ensure_namespace(self, name: str) -> None:
        if not name or name in self.namespaces:
            return
        ns = to_message({"metadata": {"name": name}}, kind="Namespace")
        with contextlib.suppress(AlreadyExistsError):
            await self.client.create(ns)
        self.namespaces.add(name)

    async def create(self, objs: list[Message]) -> list[Message]:
        """Create `objs` in batches; pods are stamped as sent on the collector's clock.

        An object named by generateName whose random name was taken is sent again (the
        apiserver answers AlreadyExists, as Kubernetes does, and upstream's clients retry);
        a batch refused as unavailable (the apiserver restarting under chaos) is sent again
        until the op's timeout. Any other error fails the op."""
        out: list[Message] = []
        for i in range(0, len(objs), CHUNK):
            chunk = objs[i : i + CHUNK]
            for attempt in range(GENERATE_NAME_RETRIES + 1):
                t = self.now()
                res = await self._batch(chunk)
                created = [r.object for r in res if r.object is not None]
                if created and isinstance(created[0], BY_KIND["Pod"].message):
                    self.collector.pods.sent((_key(p) for p in created), t)
                out.extend(created)
                retry = [
                    obj
                    for obj, r in zip(chunk, res, strict=True)
                    if isinstance(r.error, AlreadyExistsError) and generated_name(obj)
                ]
                bad = [r.error for r in res if r.error is not None]
                if len(bad) > len(retry) or (retry and attempt == GENERATE_NAME_RETRIES):
                    raise OpError(f"create failed: {bad[0]}")
                if not retry:
                    break
                chunk = retry
        return out

    async def _batch(self, chunk: list[Message]) -> list[Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return await self.client.batch_create(chunk)
            except UnavailableError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def _open_window(
        self, name: str, namespaces: tuple[str, ...] = (), selector: dict[str, str] | None = None
    ) -> None:
        """A measurement window opens: its name unique in the run (a second `namespace-1`
        is `namespace-1-2`), so its `bound:<name>` series and DataItems stay its own."""
        unique, n = name, 2
        while unique in self.window_pods:
            unique, n = f"{name}-{n}", n + 1
        self.window = (round(self.now(), 3), unique)
        self.window_pods[unique] = (namespaces, dict(selector or {}))
        self.window_metrics = await self.collector.snapshot()
        self.window_cpu = self.collector.cpu_now()

    async def _close_window(self) -> None:
        """The window closes: its span, and the scheduler registries' texts at its start and
        end (what changed) for its histogram DataItems."""
        assert self.window is not None
        start, name = self.window
        self.window = None
        end = round(self.now(), 3)
        cpu_after = self.collector.cpu_now()
        self.result.collected.append(Window(start=start, end=end, name=name))
        namespaces, selector = self.window_pods[name]
        binds, first = self.collector.pods.bound_between(start, end, namespaces, selector)
        # the phase starts when its first pod is sent (building the pods comes before)
        begin = start if first is None else max(start, first)
        self.result.measured.append(
            MeasuredPhase(
                window=name,
                pods=len(binds),
                seconds=round(binds[-1] - begin, 3) if binds else 0.0,
                cpu=cpu.used(self.window_cpu, cpu_after),
            )
        )
        self.window_cpu = {}
        before, after = compact(self.window_metrics, await self.collector.snapshot())
        self.window_metrics = {}
        self.result.scheduler_metrics.append(MetricsSnapshots(window=name, start=before, end=after))

    async def _wait_bound(self, uids: list[str], what: str) -> None:
        pods = self.collector.pods.pods
        pending = list(uids)

        async def done() -> bool:
            nonlocal pending
            pending = [u for u in pending if u not in pods or pods[u].bound is None]
            return not pending

        await self._until(done, what)

    # ------------------------------------------------------ upstream opcodes

    async def op_createNodes(self, op: o.CreateNodes) -> None:
        if self.hollow_nodes:
            # `kubera up --nodes N` started them: wait until this op's share is Ready.
            self.nodes_expected += op.count
            want = self.nodes_expected

            async def ready() -> bool:
                items, _ = await self.client.list(BY_KIND["Node"])
                return sum(1 for n in items if node_ready(n)) >= want

            await self._until(ready, f"{op.phase}: {want} hollow nodes Ready", LIST_EVERY)
            return
        docs = [node_doc(op, i, self.node_names) for i in range(op.count)]
        nodes = await self.create([to_message(doc, kind="Node") for doc in docs])
        if isinstance(op.strategy, o.NodeAllocatableStrategy):
            strategy = op.strategy
            await self.create(
                [to_message(csinode_doc(strategy, n.metadata.name)) for n in nodes]  # type: ignore[attr-defined]
            )

    async def op_createNamespaces(self, op: o.CreateNamespaces) -> None:
        objs = []
        for i, name in enumerate(op.names()):
            doc = (
                op.namespace_template.render(i, op.count)
                if op.namespace_template is not None
                else {}
            )
            doc.setdefault("metadata", {})["name"] = name
            objs.append(to_message(doc, kind="Namespace"))
        await self.create(objs)
        self.namespaces.update(op.names())

    def _pods(self, op: o.CreatePods, first: int, n: int) -> list[Message]:
        docs = [
            pod_doc(
                op.pod_template, first + i, op.count, op.template_params, op.signature_batch_size
            )
            for i in range(n)
        ]
        if op.pvc_template is not None:
            docs = [with_claim(d, f"pvc-{first + i}") for i, d in enumerate(docs)]
        return [to_message(d, kind="Pod", namespace=op.namespace) for d in docs]

    async def _volumes(self, op: o.CreatePods) -> None:
        """Each pod's claim and volume (run/volumes.py)."""
        await create_volumes(self.client, self.create, op)

    async def op_createPods(self, op: o.CreatePods) -> None:
        await self._ensure_namespace(op.namespace)
        if op.collect_metrics:
            await self._open_window(op.namespace, (op.namespace,))
        if op.steady_state:
            await self._steady_state(op)
        else:
            if op.pvc_template is not None:
                await self._volumes(op)
            created = await self.create(self._pods(op, 0, op.count))
            if not op.skip_wait_to_completion:
                uids = [p.metadata.uid for p in created]  # type: ignore[attr-defined]
                await self._wait_bound(uids, f"{op.phase}: {op.count} pods scheduled")
        if op.collect_metrics:
            await self._close_window()

    async def _steady_state(self, op: o.CreatePods) -> None:
        """Keep `count` pods: each one bound is deleted and replaced, for `duration` s."""
        pods = self.collector.pods.pods
        live = {p.metadata.uid: p for p in await self.create(self._pods(op, 0, op.count))}  # type: ignore[attr-defined]
        made = op.count
        end = time.monotonic() + op.duration
        while time.monotonic() < end:
            bound = [u for u in live if u in pods and pods[u].bound is not None]
            if bound:
                gone = [live.pop(u) for u in bound]
                await asyncio.gather(*(self._delete_pod(p) for p in gone))
                fresh = await self.create(self._pods(op, made, len(gone)))
                made += len(gone)
                live.update((p.metadata.uid, p) for p in fresh)  # type: ignore[attr-defined]
            await asyncio.sleep(POLL)

    async def delete_pod_named(self, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFoundError):
            await self.client.delete(BY_KIND["Pod"], name, namespace, grace_period_seconds=0)

    async def _delete_pod(self, pod: Any) -> None:
        """Delete a pod; refused as unavailable (the apiserver restarting under chaos): sent
        again until the op's timeout, as creates are."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(
                        BY_KIND["Pod"],
                        pod.metadata.name,
                        pod.metadata.namespace,
                        grace_period_seconds=0,
                    )
                return
            except UnavailableError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def op_createAny(self, op: o.CreateAny) -> None:
        if op.namespace:
            await self._ensure_namespace(op.namespace)
        objs = [
            to_message(
                op.template.render(i, op.count, op.template_params), namespace=op.namespace or ""
            )
            for i in range(op.count)
        ]
        await self.create(objs)

    async def op_createPodGroups(self, op: o.CreatePodGroups) -> None:
        await self.op_createAny(op)

    async def op_churn(self, op: o.Churn) -> None:
        await self._ensure_namespace(op.namespace)
        self.background.append(asyncio.create_task(self._churn(op), name=op.phase))

    async def _churn(self, op: o.Churn) -> None:
        interval = op.interval_milliseconds / 1000
        made: list[Message] = []
        rounds = 0
        while not self.stopping:
            deleting = op.mode == "recreate" and (rounds // max(1, op.number)) % 2 == 1
            if op.mode == "create" and op.number and rounds >= op.number:
                return
            try:
                if deleting:
                    for obj in made[: len(op.templates)]:
                        await self._delete_any(obj)
                        self._churned(op, "deleted")
                    made = made[len(op.templates) :]
                else:
                    for t in op.templates:
                        doc = t.render(rounds, 0)
                        doc.setdefault("metadata", {}).setdefault(
                            "generateName", f"churn-{op.index}-"
                        )
                        obj = to_message(doc, namespace=op.namespace)
                        made.extend(await self.create([obj]))
                        self._churned(op, "created")
            except (ApiError, OpError) as e:
                if self.stopping:
                    return
                self._failed(op.phase, e)
            rounds += 1
            await asyncio.sleep(interval)

    def _churned(self, op: o.Churn, what: str) -> None:
        """Count one object a churn op created or deleted (`kubera bench`'s churn counts)."""
        counts = self.result.churn.setdefault(op.phase, {"created": 0, "deleted": 0})
        counts[what] += 1

    async def _delete_any(self, obj: Any) -> None:
        kind = kind_of(obj)
        with contextlib.suppress(NotFoundError):
            await self.client.delete(
                kind, obj.metadata.name, obj.metadata.namespace, grace_period_seconds=0
            )

    async def op_barrier(self, op: o.Barrier) -> None:
        """Every pod of the barrier's namespaces and labels there now is scheduled (or, for
        stageRequirement Attempted, tried): one list, then the collector's pod timeline."""
        timeline = self.collector.pods
        scheduled_only = op.stage_requirement == "Scheduled"

        async def pending() -> set[str]:
            items, _ = await self.client.list(BY_KIND["Pod"])
            return {
                p.metadata.uid  # type: ignore[attr-defined]
                for p in items
                if (not op.namespaces or p.metadata.namespace in op.namespaces)  # type: ignore[attr-defined]
                and _matches(p.metadata.labels, op.label_selector)  # type: ignore[attr-defined]
                and not p.spec.node_name  # type: ignore[attr-defined]
                and (
                    scheduled_only or not any(c.type == "PodScheduled" for c in p.status.conditions)  # type: ignore[attr-defined]
                )
            }

        def done(uid: str) -> bool:
            p = timeline.pods.get(uid)
            if uid in timeline.gone:
                return True
            return p is not None and (p.bound is not None or (not scheduled_only and p.attempted))

        await self._wait_pods(
            await pending(), done, pending, f"{op.phase}: pods {op.stage_requirement}"
        )

    async def op_sleep(self, op: o.Sleep) -> None:
        await asyncio.sleep(op.duration)

    async def op_startCollectingMetrics(self, op: o.StartCollectingMetrics) -> None:
        if self.window is not None:
            raise OpError(f"{op.phase}: a measurement window is already open")
        await self._open_window(op.name, op.namespaces, op.label_selector)

    async def op_stopCollectingMetrics(self, op: o.StopCollectingMetrics) -> None:
        if self.window is None:
            raise OpError(f"{op.phase}: no measurement window is open")
        await self._close_window()

    async def op_deletePods(self, op: o.DeletePods) -> None:
        items, _ = await self.client.list(BY_KIND["Pod"], namespace=op.namespace)
        victims = [p for p in items if _matches(p.metadata.labels, op.label_selector)]  # type: ignore[attr-defined]
        if op.delete_pods_per_second > 0:
            for p in victims:
                await self._delete_pod(p)
                await asyncio.sleep(1 / op.delete_pods_per_second)
        else:
            sem = asyncio.Semaphore(64)

            async def one(p: Any) -> None:
                async with sem:
                    await self._delete_pod(p)

            await asyncio.gather(*(one(p) for p in victims))
        if op.skip_wait_to_completion:
            return
        uids = {p.metadata.uid for p in victims}  # type: ignore[attr-defined]
        gone = self.collector.pods.gone

        async def left() -> set[str]:
            items, _ = await self.client.list(BY_KIND["Pod"], namespace=op.namespace)
            return {p.metadata.uid for p in items} & uids  # type: ignore[attr-defined]

        await self._wait_pods(
            uids, gone.__contains__, left, f"{op.phase}: {len(uids)} pods deleted"
        )

    # --------------------------------------------- DRA and pod-group opcodes

    async def op_createResourceDriver(self, op: o.CreateResourceDriver) -> None:
        """One slice per node matching the glob, as upstream's test driver publishes them;
        no node matching is a warning (upstream silently publishes nothing)."""
        items, _ = await self.client.list(BY_KIND["Node"])
        names = matching_nodes(op.nodes, (n.metadata.name for n in items))  # type: ignore[attr-defined]
        if not names:
            self.result.warnings.append(
                f"{op.phase}: no node matches {op.nodes!r}: driver {op.driver_name} has no devices"
            )
        await self.create(
            [
                to_message(resource_slice_doc(op.driver_name, n, op.max_claims_per_node))
                for n in names
            ]
        )

    async def op_createResourceClaims(self, op: o.CreateResourceClaims) -> None:
        await self._ensure_namespace(op.namespace)
        await self.create(
            [
                to_message(op.template.render(i, op.count), namespace=op.namespace)
                for i in range(op.count)
            ]
        )

    async def op_allocResourceClaims(self, op: o.AllocResourceClaims) -> None:
        """Every unallocated claim of the namespace allocated on a random node (dra.py)."""
        claims, _ = await self.client.list(BY_KIND["ResourceClaim"], namespace=op.namespace)
        every = (
            claims if not op.namespace else (await self.client.list(BY_KIND["ResourceClaim"]))[0]
        )
        nodes, _ = await self.client.list(BY_KIND["Node"])
        classes, _ = await self.client.list(BY_KIND["DeviceClass"])
        slices, _ = await self.client.list(BY_KIND["ResourceSlice"])
        admin, _ = await self.client.list(
            BY_KIND["Namespace"],
            options=ListOptions(label_selector=f"{ADMIN_ACCESS_NAMESPACE_LABEL}=true"),
        )
        try:
            await allocate_claims(
                claims,
                every_claim=every,
                nodes=nodes,
                classes={c.metadata.name: c for c in classes},
                slices=slices,
                write=self.client.update_status,
                admin_namespaces=frozenset(n.metadata.name for n in admin),
            )
        except (AllocationFailed, AllocationError) as e:
            raise OpError(f"{op.phase}: {e}") from None

    async def op_waitForPodGroups(self, op: o.WaitForPodGroups) -> None:
        """Every PodGroup there now has minMember pods bound (the collector's pod timeline,
        by the pod-group label)."""
        groups, _ = await self.client.list(BY_KIND["PodGroup"], namespace=op.namespace)
        want = {f"{g.metadata.namespace}/{g.metadata.name}": g.spec.min_member for g in groups}
        timeline = self.collector.pods

        async def done() -> bool:
            return not groups_short(want, timeline.bound_by_group())

        await self._until(done, f"{op.phase}: {len(want)} pod groups with minMember pods bound")

    # -------------------------------------------------------- kubera's opcodes

    async def op_chaos(self, op: o.Chaos) -> None:
        start = time.monotonic()
        self.faults_due = max(self.faults_due, start + max(op.offsets(), default=0.0))
        self.faults.append(asyncio.create_task(self._chaos(op, start), name=op.phase))

    async def _chaos(self, op: o.Chaos, start: float) -> None:
        for offset, action in zip(op.offsets(), op.draws(), strict=True):
            await asyncio.sleep(max(0.0, start + offset - time.monotonic()))
            await self.fault(op if action == op.action else dataclasses.replace(op, action=action))

    async def fault(self, op: o.Chaos) -> None:
        """One fault of `op`, recorded at the time it was injected."""
        kind = FAULT_KIND[op.action]
        self.ctx = self.load_context()  # etcd's and the apiserver's PIDs change on restarts
        wait = max(30.0, self.timeout / 10)
        if kind in ("kill", "pause", "partition"):
            lease = chaos.COMPONENT_LEASES[op.component]
            storage = await chaos.connect_storage(self.ctx)
            try:
                target = await chaos.wait_leader(storage, lease, wait)
            finally:
                await storage.close()
            t = self.now()
            seconds = op.duration or 0.0
            self._record(
                Fault(
                    t=round(t, 3),
                    kind=kind,
                    target=target.identity,
                    duration=seconds if kind != "kill" else None,
                )
            )
            if kind == "kill":
                await chaos.kill(target)
            elif kind == "pause":
                await chaos.pause(target, seconds)
            else:
                await chaos.partition(target, seconds)
        elif kind == "restart-etcd":
            self._record(Fault(t=round(self.now(), 3), kind=kind, target="etcd"))
            await asyncio.to_thread(chaos.restart_etcd, self.ctx, wait)
        elif kind == "kill-pool":
            pools = self.ctx.node_pools
            if not pools:
                raise OpError(f"{op.phase}: killPool needs hollow nodes (cluster.hollowNodes)")
            name = op.pool or str(pools[0]["name"])
            self._record(Fault(t=round(self.now(), 3), kind=kind, target=name))
            await asyncio.to_thread(chaos.kill_pool, self.ctx, name)
        else:
            self._record(Fault(t=round(self.now(), 3), kind=kind, target="apiserver"))
            index = len(self.result.faults) - 1
            r = await chaos.kill_apiserver(self.ctx, timeout=wait, context_loader=self.load_context)
            writes = self.result.fault_first_write
            writes.extend([None] * (index + 1 - len(writes)))
            writes[index] = round(r.first_write_s, 3)

    def _record(self, fault: Fault) -> None:
        self.result.faults.append(fault)

    async def _faults_done(self) -> None:
        """Every chaos op's faults injected (and pauses over); the first failure raises.
        Bounded: faults still running the op timeout after the last one was due are cut
        short (faults.wait_faults), and the run's error says so."""
        tasks, self.faults = self.faults, []
        if not tasks:
            return
        wait = max(0.0, self.faults_due - time.monotonic()) + self.timeout
        cut, error = await wait_faults(tasks, wait)
        if cut:
            self.note_error(
                f"chaos: {', '.join(cut)} cut short: not done {self.timeout:g}s after the last "
                f"fault was due ({len(self.result.faults)} faults injected)"
            )
        if error is not None:
            raise OpError(f"chaos: {error}") from error

    def note_error(self, message: str) -> None:
        """Record `message` in the run's error without ending the run (after any before)."""
        old = self.result.error
        self.result.error = f"{old}; {message}" if old else message

    async def op_memoryPressure(self, op: o.MemoryPressure) -> None:
        if op.nodes <= 0:
            return
        if not self.hollow_nodes or not self.ctx.node_pools:
            raise OpError(f"{op.phase}: memoryPressure needs hollow nodes (cluster.hollowNodes)")
        try:
            figures = await pressure.eviction_reaction(
                self.client,
                self.ctx.node_pools,
                count=op.nodes,
                leave=op.leave,
                template_text=self.node_template,
                time_scale=self.ctx.time_scale,
                timeout=op.timeout,
            )
        except TimeoutError:
            raise OpError(
                f"{op.phase}: not every node evicted a pod within {op.timeout:g}s"
            ) from None
        self.result.nodes.update(figures)

    async def op_check(self, op: o.Check) -> None:
        await self._faults_done()
        self.result.check, self.binds_by_holder = await check(
            self.ctx.etcd, op.settle, start_revision=self.check_from_revision
        )

    async def op_traceReplay(self, op: o.TraceReplay) -> None:
        await self._ensure_namespace(op.namespace)

        async def create(docs: list[dict[str, Any]]) -> None:
            await self.create([to_message(d) for d in docs])

        try:
            await replay(op, create, self.delete_pod_named)
        except ReplayError as e:
            raise OpError(str(e)) from None
