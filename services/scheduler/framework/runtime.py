"""The framework runtime: one `Framework` per profile runs its plugins at every extension point.

Upstream framework/runtime/framework.go. Built from a resolved `config.Profile` (which plugins
run where, with which score weights and args), a registry (name -> PluginSpec) and the
scheduler's handle. Semantics kept from upstream:

- PreFilter: Skip drops the plugin's Filter for this cycle; UnschedulableAndUnresolvable stops
  at once, Unschedulable lets the others run (so preemption sees all of them); an empty
  intersection of PreFilterResults is UnschedulableAndUnresolvable.
- Filter: plugins in order, the first rejection wins and names its plugin; a status that is
  neither Success nor a rejection is an Error.
- Filter and Score over snapshot rows (int64 indexes into `snapshot.list()`) for the
  scheduling cycle: plugins with `filter_rows` / `score_rows` run vectorised, the others
  per node on the NodeInfos of the rows (filtering.py, scoring.py).
- Score: per plugin, Score (or `score_batch`) -> NormalizeScore -> must lie in [0, 100] ->
  times the plugin's weight; the total is the sum.
- Reserve in order, Unreserve in reverse order, always all of them.
- Permit: a rejection stops; Wait (timeout capped at 15 minutes) makes the pod a waiting pod
  that `allow_waiting_pod` / `reject_waiting_pod` resolve from elsewhere and a timeout rejects
  ("rejected due to timeout after waiting 10s at plugin P").
- PreBindPreFlight (before the binding cycle waits): Success when any PreBind plugin has
  work for the pod, Skip when all say Skip (their PreBind is then not run), else an Error.
- Bind: the first plugin that does not Skip decides.

A plugin raising an exception is a bug; the framework turns it into an Error status of that
plugin so every failure path of the scheduler still unreserves and requeues.

Time: permit deadlines use the handle's injected clock; extension point durations (metrics
only) use `timer`, perf_counter by default.

Parts that need no Framework live beside it: the Filter and Score runners (filtering.py,
scoring.py) take the ordered plugins of their point; waiting pods (waiting_pods.py) and the
extension point durations (metrics_recorder.py) own their state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from protos.kubera.v1 import core_pb2
from services.clock import Clock
from services.scheduler import registry as reg
from services.scheduler.framework import filtering, scoring
from services.scheduler.framework.instantiate import instantiate
from services.scheduler.framework.interface import (
    BindPlugin,
    Handle,
    PermitPlugin,
    PluginSpec,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
)
from services.scheduler.framework.metrics_recorder import (
    EP_BIND,
    EP_FILTER,
    EP_PERMIT,
    EP_POST_BIND,
    EP_POST_FILTER,
    EP_PRE_BIND,
    EP_PRE_FILTER,
    EP_PRE_SCORE,
    EP_RESERVE,
    EP_SCORE,
    EP_UNRESERVE,
    MetricsRecorder,
)
from services.scheduler.framework.status import (
    Code,
    FrameworkError,
    Status,
    plugin_error,
    rejection_or_error,
)
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueuedPodInfo,
)
from services.scheduler.framework.waiting_pods import WaitingPod, WaitingPods

if TYPE_CHECKING:
    from services.scheduler.config import Profile

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: The longest a Permit plugin may make a pod wait (upstream maxTimeout).
MAX_PERMIT_TIMEOUT = 15 * 60.0

#: What a plugin that does not implement EnqueueExtensions is requeued by: everything.
ALL_EVENTS = [ClusterEventWithHint(ClusterEvent("*", ActionType.ALL))]
#: Only plugins at these points can reject a pod, so only their events can help it.
_ENQUEUE_POINTS = (reg.PRE_ENQUEUE, reg.PRE_FILTER, reg.FILTER, reg.RESERVE, reg.PERMIT)


# =========================================================================== framework


class Framework:
    """One profile's plugins, instantiated once, run per extension point in the configured
    order (upstream frameworkImpl)."""

    def __init__(
        self,
        profile: Profile,
        registry: Mapping[str, PluginSpec],
        *,
        handle: Handle,
        metrics: Any = None,
        waiting_pods: WaitingPods | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`profile` is a config.Profile (scheduler_name, plugins, plugin_config,
        percentage_of_nodes_to_score). `metrics`: anything with a
        `framework_extension_point_duration_seconds` histogram (SchedulerMetrics), or None.
        Raises ValueError when the profile cannot be built (unknown plugin, a plugin at a
        point it does not implement, not exactly one QueueSort, no Bind plugin)."""
        self.profile_name: str = profile.scheduler_name
        self.percentage_of_nodes_to_score: int | None = profile.percentage_of_nodes_to_score
        self.handle = handle
        self._clock: Clock = handle.clock
        self._rec = MetricsRecorder(self.profile_name, metrics, timer)
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()

        plugin_points = profile.plugins
        needed: list[str] = []
        for point in reg.EXTENSION_POINTS:
            for entry in plugin_points.get(point, ()):
                if entry.name not in needed:
                    needed.append(entry.name)
        self.plugins: dict[str, Any] = {
            name: instantiate(self.profile_name, name, registry, profile.plugin_config, handle)
            for name in needed
        }
        #: point -> [(name, plugin)], in order.
        self._at: dict[str, list[tuple[str, Any]]] = {}
        for point in reg.EXTENSION_POINTS:
            entries: list[tuple[str, Any]] = []
            for entry in plugin_points.get(point, ()):
                plugin = self.plugins[entry.name]
                if not isinstance(plugin, reg.PROTOCOLS[point]):
                    raise ValueError(
                        f"profile {self.profile_name!r}: plugin {entry.name!r} does not "
                        f"extend {point}"
                    )
                if any(n == entry.name for n, _ in entries):
                    raise ValueError(
                        f"profile {self.profile_name!r}: plugin {entry.name!r} already "
                        f"registered at {point}"
                    )
                entries.append((entry.name, plugin))
            self._at[point] = entries
        if len(self._at[reg.QUEUE_SORT]) != 1:
            raise ValueError(
                f"only one queue sort plugin required for profile with scheduler name "
                f"{self.profile_name!r}, but got {len(self._at[reg.QUEUE_SORT])}"
            )
        if not self._at[reg.BIND]:
            raise ValueError(
                f"at least one bind plugin is needed for profile with scheduler name "
                f"{self.profile_name!r}"
            )
        self.score_weights: dict[str, int] = {
            e.name: max(int(e.weight), 1) for e in plugin_points.get(reg.SCORE, ())
        }
        qs: QueueSortPlugin = self._at[reg.QUEUE_SORT][0][1]
        #: The activeQ's order: less(a, b) is True when a pops before b.
        self.queue_sort_less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] = qs.less
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = [p for _, p in self._at[reg.PRE_ENQUEUE]]

    # -------------------------------------------------------------- introspection
    def list_plugins(self) -> dict[str, list[str]]:
        """Extension point -> plugin names, in the order they run."""
        return {point: [n for n, _ in entries] for point, entries in self._at.items()}

    def filter_plugins(self) -> list[tuple[str, Any]]:
        """(name, plugin) of the Filter plugins, in the order they run (preemption's exact
        pre-checks call one of them directly)."""
        return list(self._at[reg.FILTER])

    def pre_filter_plugins(self) -> list[tuple[str, Any]]:
        """(name, plugin) of the PreFilter plugins, in order (whose AddPod/RemovePod
        extensions preemption's dry runs call)."""
        return list(self._at[reg.PRE_FILTER])

    def has_filter_plugins(self) -> bool:
        return bool(self._at[reg.FILTER])

    def has_score_plugins(self) -> bool:
        return bool(self._at[reg.SCORE])

    def has_post_filter_plugins(self) -> bool:
        return bool(self._at[reg.POST_FILTER])

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin -> the cluster events that may make a pod it rejected schedulable. Only
        plugins that can reject (PreEnqueue, PreFilter, Filter, Reserve, Permit) register;
        one without events_to_register is requeued by every event (upstream default)."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for point in _ENQUEUE_POINTS:
            for name, plugin in self._at[point]:
                if name in out:
                    continue
                fn = getattr(plugin, "events_to_register", None)
                out[name] = list(fn()) if callable(fn) else list(ALL_EVENTS)
        return out

    # ---------------------------------------------------------------- PreEnqueue
    def run_pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        """Success when every PreEnqueue plugin lets the pod into activeQ; else the first
        refusal, naming its plugin."""
        for name, plugin in self._at[reg.PRE_ENQUEUE]:
            pe: PreEnqueuePlugin = plugin
            try:
                st = pe.pre_enqueue(pod)
            except Exception as e:  # noqa: BLE001
                return Status.as_error(e, plugin=name)
            if not st.is_success():
                return st.with_plugin(name)
        return Status.success()

    # ----------------------------------------------------------------- PreFilter
    def run_pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        start = self._rec.timer()
        skip: set[str] = set()
        result: PreFilterResult | None = None
        narrowing: list[str] = []
        returned = Status.success()
        try:
            for name, plugin in self._at[reg.PRE_FILTER]:
                pf: PreFilterPlugin = plugin
                try:
                    r, st = pf.pre_filter(state, pod_info, nodes)
                except Exception as e:  # noqa: BLE001
                    r, st = None, Status.as_error(e, plugin=name)
                if st.is_skip():
                    skip.add(name)
                    continue
                if not st.is_success():
                    if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        returned = st.with_plugin(name)
                        return None, returned
                    if st.code == Code.UNSCHEDULABLE:
                        returned = st.with_plugin(name)
                        continue
                    returned = plugin_error(name, f"running PreFilter plugin {name!r}", st)
                    return None, returned
                if r is not None and r.node_names is not None:
                    narrowing.append(name)
                    result = r if result is None else result.merge(r)
                    if result.node_names is not None and not result.node_names:
                        if len(narrowing) == 1:
                            msg = f"node(s) didn't satisfy plugin {narrowing[0]}"
                        else:
                            msg = (
                                "node(s) didn't satisfy plugin(s) "
                                f"[{' '.join(sorted(narrowing))}] simultaneously"
                            )
                        returned = Status.unresolvable(msg, plugin=name)
                        return result, returned
            return result, returned
        finally:
            state.skip_filter_plugins = skip
            self._rec.observe(EP_PRE_FILTER, returned, start)

    # -------------------------------------------------------------------- Filter
    def run_filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        """Whether the pod fits the node: the first plugin that rejects it decides."""
        return filtering.run_filter(self._at[reg.FILTER], state, pod_info, node_info)

    def run_pre_filter_extension(
        self, op: str, state: CycleState, pod_info: PodInfo, other: PodInfo, node_info: NodeInfo
    ) -> Status:
        """PreFilter AddPod ("add_pod") / RemovePod ("remove_pod") (filtering.py)."""
        return filtering.run_pre_filter_extension(
            self._at[reg.PRE_FILTER], op, state, pod_info, other, node_info
        )

    def run_filter_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status]:
        """run_filter for many nodes (filtering.run_filter_batch). One Status per node."""
        start = self._rec.timer()
        statuses, alive = filtering.run_filter_batch(self._at[reg.FILTER], state, pod_info, nodes)
        if self._rec.enabled:
            errored = any(s.code == Code.ERROR for s in statuses)
            self._observe_filter(errored, alive or not nodes, start)
        return statuses

    def run_filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> tuple[np.ndarray, dict[int, Status]]:
        """run_filter for the snapshot's rows `rows` (filtering.run_filter_rows): (passed,
        aligned with rows; position in rows -> Status of each position that did not)."""
        start = self._rec.timer()
        ok, rejected = filtering.run_filter_rows(
            self._at[reg.FILTER], state, pod_info, snapshot, snapshot.list(), rows
        )
        if self._rec.enabled:
            errored = any(s.code == Code.ERROR for s in rejected.values())
            self._observe_filter(errored, bool(ok.any()) or not len(rows), start)
        return ok, rejected

    def _observe_filter(self, errored: bool, feasible: bool, start: float) -> None:
        if errored:
            summary = Status(Code.ERROR)
        elif feasible:
            summary = Status.success()
        else:
            summary = Status(Code.UNSCHEDULABLE)
        self._rec.observe(EP_FILTER, summary, start)

    # ---------------------------------------------------------------- PostFilter
    async def run_post_filter(
        self, state: CycleState, pod_info: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """Until one plugin makes the pod schedulable (Success), fails (Error) or proves it
        hopeless (UnschedulableAndUnresolvable); otherwise Unschedulable with every reason."""
        start = self._rec.timer()
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        final: Status | None = None
        try:
            for name, plugin in self._at[reg.POST_FILTER]:
                pf: PostFilterPlugin = plugin
                try:
                    r, st = await pf.post_filter(state, pod_info, statuses)
                except Exception as e:  # noqa: BLE001
                    r, st = None, Status.as_error(e, plugin=name)
                if st.is_success():
                    final = st.with_plugin(name)
                    return r, final
                if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    final = st.with_plugin(name)
                    return r, final
                if not st.is_rejected():
                    final = plugin_error(name, f"running PostFilter plugin {name!r}", st)
                    return None, final
                if r is not None and r.nominated_node_name:
                    result = r
                reasons.extend(st.reasons)
                rejector = rejector or name
            final = Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)
            return result, final
        finally:
            self._rec.observe(EP_POST_FILTER, final or Status(Code.UNSCHEDULABLE), start)

    # ------------------------------------------------------------------ PreScore
    def run_pre_score(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status:
        start = self._rec.timer()
        skip: set[str] = set()
        status = Status.success()
        try:
            for name, plugin in self._at[reg.PRE_SCORE]:
                ps: PreScorePlugin = plugin
                try:
                    st = ps.pre_score(state, pod_info, nodes)
                except Exception as e:  # noqa: BLE001
                    st = Status.as_error(e, plugin=name)
                if st.is_skip():
                    skip.add(name)
                    continue
                if not st.is_success():
                    status = plugin_error(name, f"running PreScore plugin {name!r}", st)
                    return status
            return status
        finally:
            state.skip_score_plugins = skip
            self._rec.observe(EP_PRE_SCORE, status, start)

    # --------------------------------------------------------------------- Score
    def run_score(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """(node -> total weighted score, plugin -> node -> its weighted score).

        Per plugin: Score (or `score_batch(state, pod_info, nodes) -> (scores, Status)` when
        the plugin has it), NormalizeScore, a [0, 100] check, times the weight. Plugins whose
        PreScore returned Skip are left out. Raises FrameworkError on an Error."""
        return self._timed_score(scoring.run_score, state, pod_info, nodes)

    def run_score_rows(
        self,
        state: CycleState,
        pod_info: PodInfo,
        snapshot: Any,
        rows: np.ndarray,
        nodes: Sequence[NodeInfo],
        raw_out: dict[str, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """run_score over the snapshot's rows `rows` (`nodes`: their NodeInfos): (total per
        row, plugin -> its weighted score per row), int64 arrays (scoring.run_score_rows;
        `raw_out` gets the scores before NormalizeScore)."""
        return self._timed_score(
            scoring.run_score_rows, state, pod_info, snapshot, rows, nodes, raw_out
        )

    def run_normalize_rows(
        self,
        state: CycleState,
        pod_info: PodInfo,
        raw: Mapping[str, np.ndarray],
        rows: np.ndarray,
        nodes: Sequence[NodeInfo],
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """run_score_rows from raw scores known from an earlier cycle (scoring.
        run_normalize_rows): NormalizeScore over `rows` only, then the weights."""
        return self._timed_score(scoring.run_normalize_rows, state, pod_info, raw, rows, nodes)

    def _timed_score(self, runner: Callable[..., _T], *args: Any) -> _T:
        start = self._rec.timer()
        status = Status.success()
        try:
            return runner(self._at[reg.SCORE], self.score_weights, *args)
        except FrameworkError as e:
            status = e.status
            raise
        finally:
            self._rec.observe(EP_SCORE, status, start)

    # ------------------------------------------------------------ Reserve / Unreserve
    def run_reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Reserve in order; stops at the first failure (the caller then runs Unreserve)."""
        start = self._rec.timer()
        status = Status.success()
        try:
            for name, plugin in self._at[reg.RESERVE]:
                rp: ReservePlugin = plugin
                try:
                    st = rp.reserve(state, pod_info, node_name)
                except Exception as e:  # noqa: BLE001
                    st = Status.as_error(e, plugin=name)
                if not st.is_success():
                    status = rejection_or_error(name, "Reserve", st)
                    return status
            return status
        finally:
            self._rec.observe(EP_RESERVE, status, start)

    def run_unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        """Every Reserve plugin's Unreserve, in reverse order; none may stop the others."""
        start = self._rec.timer()
        for name, plugin in reversed(self._at[reg.RESERVE]):
            rp: ReservePlugin = plugin
            try:
                rp.unreserve(state, pod_info, node_name)
            except Exception:  # noqa: BLE001 - Unreserve must not fail; keep unwinding
                log.exception("Unreserve of plugin %s failed for %s", name, pod_info.key)
        self._rec.observe(EP_UNRESERVE, Status.success(), start)

    # -------------------------------------------------------------------- Permit
    def run_permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Success, a rejection (naming the plugin), an Error, or Wait: the pod is then a
        waiting pod until every waiting plugin allows it, one rejects it, or time runs out."""
        start = self._rec.timer()
        status = Status.success()
        waits: dict[str, float] = {}
        try:
            for name, plugin in self._at[reg.PERMIT]:
                pp: PermitPlugin = plugin
                try:
                    st, timeout = pp.permit(state, pod_info, node_name)
                except Exception as e:  # noqa: BLE001
                    st, timeout = Status.as_error(e, plugin=name), 0.0
                if st.is_success():
                    continue
                if st.is_rejected():
                    status = st.with_plugin(name)
                    return status
                if st.is_wait():
                    waits[name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
                    continue
                status = plugin_error(name, f"running Permit plugin {name!r}", st)
                return status
            if waits:
                now = self._clock.monotonic()
                self.waiting_pods.add(
                    WaitingPod(
                        pod_info,
                        node_name,
                        timeouts=dict(waits),
                        pending={p: now + t for p, t in waits.items()},
                    )
                )
                status = Status(
                    Code.WAIT,
                    (
                        "one or more plugins asked to wait and no plugin rejected pod "
                        f'"{pod_info.pod.metadata.name}"',
                    ),
                )
            return status
        finally:
            self._rec.observe(EP_PERMIT, status, start)

    def waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def allow_waiting_pod(self, uid: str, plugin: str) -> bool:
        """Plugin `plugin` lets the waiting pod go; it binds once every waiting plugin has.
        False when no such pod waits."""
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.allow(plugin)
        return True

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> bool:
        """Reject the waiting pod (Unschedulable with `reason`, from `plugin`)."""
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject(plugin, reason)
        return True

    def expire_waiting_pods(self) -> list[str]:
        """Reject every waiting pod whose deadline has passed on the clock; the uids.
        wait_on_permit does this by itself; this is for sweeps and for tests that move a
        FakeClock explicitly."""
        now = self._clock.monotonic()
        return [wp.pod_info.uid for wp in self.waiting_pods if wp.expire_if_due(now)]

    async def wait_on_permit(self, pod_info: PodInfo) -> Status:
        """Block while the pod waits on Permit: Success when allowed; Unschedulable with the
        rejection's reason and plugin, or on timeout "rejected due to timeout after waiting
        10s at plugin P". Success at once for a pod that is not waiting."""
        wp = self.waiting_pods.get(pod_info.uid)
        if wp is None:
            return Status.success()
        try:
            while not wp.done:
                if wp.expire_if_due(self._clock.monotonic()):
                    break
                remaining = wp.next_deadline() - self._clock.monotonic()
                timer = asyncio.ensure_future(self._clock.sleep(remaining))
                woken = asyncio.ensure_future(wp.wait_event())
                try:
                    await asyncio.wait({timer, woken}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    timer.cancel()
                    woken.cancel()
        finally:
            self.waiting_pods.remove(pod_info.uid, wp)
        st = wp.result or Status.success()
        if st.is_success() or st.is_rejected():
            return st
        return plugin_error(st.plugin, "waiting on permit for pod", st)

    def will_wait_on_permit(self, pod_info: PodInfo) -> bool:
        """Whether the pod is a waiting pod (its binding cycle will wait at Permit)."""
        return self.waiting_pods.get(pod_info.uid) is not None

    # ------------------------------------------------------------------- PreBind
    def run_pre_bind_pre_flights(
        self, state: CycleState, pod_info: PodInfo, node_name: str
    ) -> Status:
        """Upstream RunPreBindPreFlights: Success when one or more PreBind plugins have
        work for the pod, Skip when all say Skip (remembered in the CycleState, so their
        PreBind does not run), an Error naming the plugin otherwise."""
        result = Status.skip()
        for name, plugin in self._at[reg.PRE_BIND]:
            if isinstance(plugin, PreBindPreFlightPlugin):
                try:
                    st = plugin.pre_bind_pre_flight(state, pod_info, node_name)
                except Exception as e:  # noqa: BLE001
                    st = Status.as_error(e, plugin=name)
            else:
                st = Status.success()
            if st.code == Code.ERROR:
                return plugin_error(name, f"running PreBindPreFlight {name!r}", st)
            if st.is_success():
                result = Status.success()
            elif st.is_skip():
                state.skip_pre_bind_plugins.add(name)
            else:
                return Status.as_error(
                    RuntimeError(
                        f"PreBindPreFlight {name} returned {st.code_name!r}, which is unsupported."
                        " It is supposed to return Success, Skip, or Error status"
                    ),
                    plugin=name,
                )
        return result

    async def run_pre_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        start = self._rec.timer()
        status = Status.success()
        try:
            for name, plugin in self._at[reg.PRE_BIND]:
                if name in state.skip_pre_bind_plugins:
                    continue
                pb: PreBindPlugin = plugin
                try:
                    st = await pb.pre_bind(state, pod_info, node_name)
                except Exception as e:  # noqa: BLE001
                    st = Status.as_error(e, plugin=name)
                if not st.is_success():
                    status = rejection_or_error(name, "PreBind", st)
                    return status
            return status
        finally:
            self._rec.observe(EP_PRE_BIND, status, start)

    # ---------------------------------------------------------------------- Bind
    async def run_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Bind plugins in order until one does not Skip; Skip when all do."""
        start = self._rec.timer()
        status = Status.skip()
        try:
            for name, plugin in self._at[reg.BIND]:
                bp: BindPlugin = plugin
                try:
                    st = await bp.bind(state, pod_info, node_name)
                except Exception as e:  # noqa: BLE001
                    st = Status.as_error(e, plugin=name)
                if st.is_skip():
                    status = st.with_plugin(name)
                    continue
                status = (
                    st.with_plugin(name)
                    if st.is_success()
                    else rejection_or_error(name, "Bind", st)
                )
                return status
            return status
        finally:
            self._rec.observe(EP_BIND, status, start)

    # ------------------------------------------------------------------ PostBind
    def run_post_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        """Informational: every PostBind plugin, in order."""
        start = self._rec.timer()
        for name, plugin in self._at[reg.POST_BIND]:
            pb: PostBindPlugin = plugin
            try:
                pb.post_bind(state, pod_info, node_name)
            except Exception:  # noqa: BLE001 - informational; the pod is bound already
                log.exception("PostBind of plugin %s failed for %s", name, pod_info.key)
        self._rec.observe(EP_POST_BIND, Status.success(), start)
