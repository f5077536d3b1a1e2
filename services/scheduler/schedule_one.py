"""One pod at a time: the scheduling cycle and the binding cycle (upstream schedule_one.go).

    schedule_one(pod):
      scheduling cycle (serial)   snapshot → PreFilter → Filter (percentageOfNodesToScore)
                                  → [PostFilter] → PreScore → Score → select host
                                  → assume in cache → Reserve → Permit
      binding cycle (concurrent)  [PreBindPreFlight → nominatedNodeName] → WaitOnPermit
                                  → PreBind → Bind (fenced or checked) → PostBind
      every failure path after assume: Unreserve, forget the assumed pod, requeue, clear
      the pod's nominatedNodeName

NominatedNodeNameForExpectation (beta, on in 1.35): a pod whose binding cycle will wait,
at Permit (a gang member) or in a PreBind with work to do (volumes to bind, DRA claims),
gets status.nominatedNodeName = its node before it waits, so other components (a cluster
autoscaler, users) see where it is going; the bind clears it (the apiserver's
ClearingNominatedNodeNameAfterBinding), and so does every failure after the node was
chosen (upstream's clearNominatedNode), but for a bind refused because the pod was bound
elsewhere or deleted or this replica lost its term (the nomination is then not its own). The scheduler's own nominator does not count such
a pod twice: while it is assumed, its nomination is not taken from the informer.

`ScheduleOne` takes what the cycles work on (the frameworks, cache, snapshot, queue, the
failure reporter) from the Scheduler (scheduler.py), which owns the informers and the term.

One pod never stops the loop. Any exception while scheduling a pod (a plugin, a Filter
Error status, a helper, a pod holding values validation would have refused) ends that
pod's attempt as an Error: Unreserve and forget if it was assumed, a FailedScheduling
event (failure_report.py), backoff; it is logged once per pod and distinct message.

In shared-state (Omega) mode (`omega` is set, see omega.py) a bind refused with
AllocationConflict (another replica filled the node first) is forgotten and requeued with
backoff like any bind error, and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api.machinery.errors import (
    AllocationConflictError,
    NotFoundError,
    PreconditionError,
)
from services.clock import Clock
from services.scheduler import batching
from services.scheduler.cache import equivalence
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.dispatcher import APIDispatcher, nominate
from services.scheduler.failure_report import FailureReporter
from services.scheduler.feasible import Feasible, FilterError, find_feasible
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, PodInfo, QueuedPodInfo
from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.omega import OmegaStats
from services.scheduler.podgroup_attempts import PodGroupAttempts
from services.scheduler.preemption import set_nominated_node_name
from services.scheduler.queue import nomination
from services.scheduler.queue.scheduling_queue import SchedulingQueue
from services.scheduler.trace import Attempt, ScoredNode, TraceStore, unschedulable_message

#: The scheduler's logger (one name for the loop and the Scheduler, as operators filter it).
log = logging.getLogger("services.scheduler.scheduler")

TOP_SCORES = 5
#: Where DefaultPreemption leaves its decision in the CycleState (plugins/defaultpreemption.py).
PREEMPTION_DECISION_KEY = "DefaultPreemption/decision"


def top_positions(totals: np.ndarray, k: int) -> np.ndarray:
    """The positions of the k highest totals, highest first, ties in position order:
    `np.argsort(-totals, kind="stable")[:k]`, sorting only the totals that can be among
    them (those at least the k-th highest) rather than every feasible node's."""
    n = len(totals)
    if n <= 4 * k:
        return np.argsort(-totals, kind="stable")[:k]
    kth = np.partition(totals, n - k)[n - k]
    candidates = np.flatnonzero(totals >= kth)  # ascending: ties keep position order
    return candidates[np.argsort(-totals[candidates], kind="stable")[:k]]


class InvalidPodError(Exception):
    """The pod holds values validation would have refused (it reached storage some other
    way): it is not placed; its attempt is an Error naming the fields, retried with backoff
    (an update can fix it)."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        self.problems = problems
        super().__init__("invalid pod: " + "; ".join(problems))


class FitError(Exception):
    def __init__(
        self, num_all_nodes: int, statuses: dict[str, Status], pre_filter_msg: str = ""
    ) -> None:
        self.num_all_nodes = num_all_nodes
        self.statuses = statuses
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = ""
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return unschedulable_message(
            self.num_all_nodes,
            self.statuses,
            pre_filter_msg=self.pre_filter_msg,
            post_filter_msg=self.post_filter_msg,
        )

    def rejecting_plugins(self) -> set[str]:
        return {s.plugin for s in self.statuses.values() if s.plugin}


@dataclass
class ScheduleResult:
    node: str
    evaluated: int
    feasible: int
    scores: list[ScoredNode] = field(default_factory=list)


class ScheduleOne:
    """The scheduling loop: pops pods, runs their scheduling cycle, and spawns their binding
    cycles (at most `max_binding_tasks` at once, not counting pods still waiting at Permit)."""

    def __init__(
        self,
        *,
        clock: Clock,
        frameworks: dict[str, Framework],
        cache: Cache,
        snapshot: Snapshot,
        queue: SchedulingQueue,
        percentage_of_nodes_to_score: int | None,
        rng: random.Random,
        reporter: FailureReporter,
        metrics: SchedulerMetrics,
        traces: TraceStore,
        equivalence_cache: equivalence.EquivalenceCache | None,
        omega: OmegaStats | None,
        max_binding_tasks: int,
        nominator: Nominator | None = None,
        gates: features.FeatureGates | None = None,
        dispatcher: APIDispatcher | None = None,
    ) -> None:
        """`percentage_of_nodes_to_score`: the configuration's, for profiles without their
        own. `reporter`: writes FailedScheduling events. `omega`: Omega's measures, only in
        shared-state mode. `gates`: feature gate overrides (services/api/features.py).
        `dispatcher`: SchedulerAsyncAPICalls' (the nominatedNodeName writes go through it,
        not waited for)."""
        self.clock = clock
        self.frameworks = frameworks
        self.cache = cache
        self.snapshot = snapshot
        self.queue = queue
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng
        self.metrics = metrics
        #: Pod groups' attempts at their quorum (upstream's podgroup_* series).
        self.pod_groups = PodGroupAttempts(metrics.pod_groups(), clock)
        self.traces = traces
        self.equivalence = equivalence_cache
        self.omega = omega
        #: Pods nominated to nodes by preemption (they count there for pods not above them).
        self.nominator = nominator if nominator is not None else Nominator()
        #: NominatedNodeNameForExpectation: write nominatedNodeName before a binding waits.
        self.nominate_for_expectation = features.enabled(
            gates, features.NOMINATED_NODE_NAME_FOR_EXPECTATION
        )
        self.dispatcher = dispatcher
        #: OpportunisticBatching (batching.py); None with the gate off.
        self.batching = (
            batching.Batching(clock, metrics)
            if features.enabled(gates, features.OPPORTUNISTIC_BATCHING)
            else None
        )
        self._binding_slots = asyncio.Semaphore(max_binding_tasks)
        self._bindings: set[asyncio.Task[None]] = set()
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._next_start_node = 0
        self._node_local_profiles: dict[str, bool] = {}
        self._attempt_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.reporter = reporter
        self._logged_errors: dict[str, str] = {}
        self.scheduled = 0
        #: DefaultPreemption's attempts and the victims it chose (upstream's
        #: preemption_attempts_total and preemption_victims).
        self.preemption_attempts = 0
        self.preemption_victims = 0

    @property
    def binding_cycles(self) -> int:
        """Binding cycles in flight (their binds may still be on the wire)."""
        return len(self._bindings)

    def tasks(self) -> list[asyncio.Task[None]]:
        """The binding cycles and event reports in flight (to cancel at the end of a term)."""
        return [*self._bindings, *self._side_tasks]

    def forget(self, key: str) -> None:
        """The pod `key` (namespace/name) was deleted: drop what was remembered of it."""
        self.reporter.forget(key)
        self._logged_errors.pop(key, None)

    async def loop(self) -> None:
        """Pop and schedule pods until the queue is closed."""
        while True:
            # One turn of the event loop per pod: with pods queued, pop() and the cycle
            # never wait, and the informers (nodes arriving, binds confirmed) and binding
            # cycles would only run when the binding slots are all taken. The binding cycle
            # the previous pod started thus sends its bind at once (the first bind of a
            # burst, or of a leader's term, waits for nothing).
            await asyncio.sleep(0)
            qpi = await self.queue.pop()
            if qpi is None:
                return
            try:
                await self.schedule_one(qpi)
            except Exception as e:  # noqa: BLE001 - a bug must not stop scheduling
                # schedule_one turns every failure into an Error attempt itself; this is the
                # last net, for a failure in that very handling: log it, back the pod off.
                self.log_error(qpi.key, f"scheduling failed: {e}", e)
                with contextlib.suppress(Exception):
                    self.queue.add_unschedulable_if_not_present(
                        qpi, self.queue.scheduling_cycle, error=True
                    )
                self.queue.done(qpi.pod_info.uid)

    # -------------------------------------------------------- the cycles

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        pod = qpi.pod
        fwk = self.frameworks.get(pod.spec.scheduler_name)
        if fwk is None or self.cache.is_assumed(pod):
            self.queue.done(pod.metadata.uid)
            return
        start = self.clock.monotonic()
        queued_at = qpi.initial_attempt_timestamp
        queue_wait = self.clock.now() - (queued_at if queued_at is not None else qpi.timestamp)
        cycle = self.queue.scheduling_cycle
        attempt = Attempt(qpi.key, pod.metadata.uid, fwk.profile_name, cycle, self.clock.now())
        state = CycleState()
        try:
            self.cache.update_snapshot(self.snapshot)
            if qpi.pod_info.problems:
                attempt.nodes_total = self.snapshot.num_nodes()
                raise InvalidPodError(qpi.pod_info.problems)
            result = await self._schedule_pod(fwk, state, qpi.pod_info, attempt)
        except FitError as fe:
            try:
                await self._run_post_filter(fwk, state, qpi, fe, attempt)
            except Exception as e:  # noqa: BLE001 - the pod stays unschedulable; logged
                self.log_error(qpi.key, f"PostFilter failed: {e}", e)
            self._fail(
                fwk,
                qpi,
                cycle,
                attempt,
                fe.message,
                Status.unschedulable(fe.message),
                fe.rejecting_plugins(),
                start,
            )
            return
        except Exception as e:  # noqa: BLE001 - an Error status, requeued with backoff
            self.log_error(qpi.key, str(e), None if isinstance(e, InvalidPodError) else e)
            self._clear_nominated(qpi.pod)
            self._fail(fwk, qpi, cycle, attempt, str(e), Status.as_error(e), set(), start)
            return
        attempt.node = result.node
        assumed_info = qpi.pod_info.assigned(result.node)
        assumed = assumed_info.pod
        try:
            self.cache.assume_pod(assumed_info)
            self.nominator.delete(pod.metadata.uid)
            st = fwk.run_reserve(state, assumed_info, result.node)
            if st.is_success():
                st = fwk.run_permit(state, assumed_info, result.node)
                self.pod_groups.permit(assumed, fwk.profile_name, start, st)
        except Exception as e:  # noqa: BLE001 - undone below like a failed Reserve
            self.log_error(qpi.key, f"assume/Reserve/Permit failed: {e}", e)
            st = Status.as_error(e)
        if not st.is_success() and not st.is_wait():
            fwk.run_unreserve(state, assumed_info, result.node)
            if self.cache.is_assumed(assumed):
                self.cache.forget_pod(assumed)
            self._clear_nominated(qpi.pod)
            self._fail(fwk, qpi, cycle, attempt, st.message, st, {st.plugin}, start)
            return
        attempt.result = "scheduled"
        attempt.duration_s = self.clock.monotonic() - start
        self.traces.add(attempt)
        # A pod waiting at Permit (a gang member) takes its binding slot only once allowed:
        # a gang larger than the slots would otherwise hold them all while it waits for
        # members that can never be scheduled, and the loop would block on the next one.
        waiting = st.is_wait()
        if not waiting:
            await self._binding_slots.acquire()
        task = asyncio.create_task(
            self._binding_cycle(
                fwk,
                state,
                qpi,
                assumed_info,
                result.node,
                cycle,
                attempt,
                start,
                queue_wait,
                holds_slot=not waiting,
            )
        )
        self._bindings.add(task)
        task.add_done_callback(self._bindings.discard)

    async def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: PodInfo,
        node: str,
        cycle: int,
        attempt: Attempt,
        start: float,
        queue_wait: float = 0.0,
        *,
        holds_slot: bool = True,
    ) -> None:
        expected = ""
        try:
            st = Status.success()
            if self.nominate_for_expectation:
                st, expected = await self._nominate_for_expectation(fwk, state, assumed, node)
            if st.is_success():
                st = await fwk.wait_on_permit(assumed)
            elif fwk.will_wait_on_permit(assumed):  # a PreBindPreFlight error ends the wait
                fwk.reject_waiting_pod(assumed.uid, st.plugin, st.message)
                await fwk.wait_on_permit(assumed)
            if not holds_slot and not st.is_success():
                self.pod_groups.rejected(assumed.uid)  # a waiting member: its gang failed
            if not holds_slot:
                await self._binding_slots.acquire()
                holds_slot = True
            bind_start = self.clock.monotonic()
            if st.is_success():
                st = await fwk.run_pre_bind(state, assumed, node)
            if st.is_success():
                st = await fwk.run_bind(state, assumed, node)
            # Busy: the scheduling cycle (duration_s, set before binding); the bind's wait
            # on the apiserver is counted apart (see omega.OmegaStats).
            busy, bind_s = attempt.duration_s, self.clock.monotonic() - bind_start
            if st.is_success():
                self.cache.finish_binding(assumed.pod)
                fwk.run_post_bind(state, assumed, node)
                self.scheduled += 1
                if self.omega is not None:
                    self.omega.bound(busy, bind_s, queue_wait, qpi.attempts)
                self._observe_attempt("scheduled", fwk.profile_name, self.clock.monotonic() - start)
                self.metrics.pod_scheduling_attempts.observe(qpi.attempts)
                self.queue.done(assumed.uid)
                return
            fwk.run_unreserve(state, assumed, node)
            # The informer may already have replaced the assumed copy with the apiserver's:
            # someone else bound the pod while our bind was in flight (another shared-state
            # replica, or the leader after this one's term ended). Nothing is left to forget.
            if self.cache.is_assumed(assumed.pod):
                self.cache.forget_pod(assumed.pod)
            if isinstance(st.error, PreconditionError | NotFoundError):
                # Bound elsewhere, deleted, or this replica is no longer the leader: the
                # informer brings the truth; nothing to retry here, and the pod's
                # nomination is not this replica's to clear (a new leader may have set it).
                self.nominator.delete(assumed.uid)
                attempt.result, attempt.message = "error", st.message
                if self.omega is not None and isinstance(st.error, PreconditionError):
                    self.omega.lost_pod(busy, bind_s)
                self.queue.done(assumed.uid)
                return
            # AllocationConflict (shared-state): another replica filled the node first, our
            # cache was behind. Retried after backoff, by when the informer has brought the
            # winner's bind; counted, and not reported as FailedScheduling (the pod is not
            # unschedulable).
            self._clear_nominated(qpi.pod, expected)
            omega = self.omega if isinstance(st.error, AllocationConflictError) else None
            conflict = omega is not None
            if omega is not None:
                omega.conflicted(busy, bind_s)
                attempt.result = "conflict"
            else:
                attempt.result = "unschedulable" if st.is_rejected() else "error"
            self._fail(
                fwk,
                qpi,
                cycle,
                attempt,
                st.message,
                st,
                {st.plugin} if st.plugin and not conflict else set(),
                start,
                record=False,
                report=not conflict,
            )
        except Exception as e:  # noqa: BLE001 - undone like a failed bind, with backoff
            self.log_error(qpi.key, f"binding cycle failed: {e}", e)
            with contextlib.suppress(Exception):
                fwk.run_unreserve(state, assumed, node)
            with contextlib.suppress(Exception):
                if self.cache.is_assumed(assumed.pod):
                    self.cache.forget_pod(assumed.pod)
            with contextlib.suppress(Exception):
                self._clear_nominated(qpi.pod, expected)
            attempt.result = "error"
            st = Status.as_error(e)
            self._fail(fwk, qpi, cycle, attempt, st.message, st, set(), start, record=False)
        finally:
            if holds_slot:
                self._binding_slots.release()

    async def _schedule_pod(
        self, fwk: Framework, state: CycleState, pi: PodInfo, attempt: Attempt
    ) -> ScheduleResult:
        snap = self.snapshot
        nodes = snap.list()
        attempt.nodes_total = len(nodes)
        if not nodes:
            raise FitError(0, {}, "no nodes available to schedule pods")
        pre_result, st = fwk.run_pre_filter(state, pi, nodes)
        if not st.is_success():
            if st.code == Code.ERROR:
                raise RuntimeError(st.message)
            raise FitError(len(nodes), {n.name: st for n in nodes}, pre_filter_msg=st.message)
        # Opportunistic batching (batching.py): the last cycle's results, when they hold.
        batch = self.batching.of(fwk) if self.batching is not None else None
        hint = None
        if batch is not None:
            hint = batch.hint(
                fwk,
                state,
                pi,
                snap,
                pre_result,
                cycle=attempt.cycle,
                start=self._next_start_node,
                percentage=self._percentage(fwk),
                nominator=self.nominator,
            )
        nominated, st = nomination.evaluate_nominated_node(
            fwk, state, pi, snap.get, pre_result, self.nominator
        )
        if st.code == Code.ERROR:
            raise FilterError(st)
        if nominated is not None:
            if batch is not None and hint is not None:
                batch.store(hint, cycle=attempt.cycle, chosen=nominated.name)
            attempt.nodes_evaluated = attempt.nodes_feasible = 1
            return ScheduleResult(nominated.name, 1, 1)
        batched = hint.batched if hint is not None else None
        if batched is not None:
            found = batched.found
            self._advance_start(found.processed)
        else:
            found = self._find_feasible(fwk, state, pi, pre_result)
        rows, statuses = found.rows, found.statuses
        attempt.nodes_evaluated = len(statuses) + len(rows)
        attempt.nodes_feasible = len(rows)
        if not len(rows):
            attempt.record_rejections(statuses)
            raise FitError(len(nodes), statuses)
        if statuses:
            attempt.record_rejections(statuses)
        raw: dict[str, np.ndarray] | None = None
        if len(rows) == 1:
            node = nodes[rows[0]].name
        else:
            if batched is not None and batched.scores is not None:
                feasible, (totals, by_plugin) = batched.infos, batched.scores
            else:
                feasible = snap.infos(rows)
                st = fwk.run_pre_score(state, pi, feasible)
                if not st.is_success():
                    raise RuntimeError(st.message)
                raw = {} if hint is not None and hint.signature is not None else None
                totals, by_plugin = fwk.run_score_rows(state, pi, snap, rows, feasible, raw)
            best = self._select_host(totals)
            ranked = top_positions(totals, TOP_SCORES)
            tops = totals[ranked].tolist()
            plugin_tops = [(p, scores[ranked].tolist()) for p, scores in by_plugin.items()]
            attempt.top_scores = [
                ScoredNode(feasible[i].name, tops[j], {p: v[j] for p, v in plugin_tops})
                for j, i in enumerate(ranked.tolist())
            ]
            node = feasible[best].name
        if batch is not None and hint is not None:
            batch.store(
                hint,
                cycle=attempt.cycle,
                chosen=node,
                snapshot=snap,
                pre_result=pre_result,
                found=found,
                raw=raw,
                nominator=self.nominator,
                percentage=self._percentage(fwk),
            )
        return ScheduleResult(node, attempt.nodes_evaluated, len(rows))

    def _percentage(self, fwk: Framework) -> int | None:
        """The profile's percentageOfNodesToScore, else the configuration's."""
        pct = fwk.percentage_of_nodes_to_score
        return self.percentage_of_nodes_to_score if pct is None else pct

    def _find_feasible(
        self,
        fwk: Framework,
        state: CycleState,
        pi: PodInfo,
        pre_result: PreFilterResult | None,
    ) -> Feasible:
        """Filter nodes from a rotating start until enough feasible ones are found
        (percentageOfNodesToScore), as upstream's findNodesThatPassFilters (feasible.py)."""
        snap = self.snapshot
        known = None
        eq = self.equivalence
        if (
            eq is not None
            and self._node_local(fwk)
            and equivalence.eligible_pod(pi, bool(snap.have_pods_with_required_anti_affinity()))
        ):
            known = eq.entries(equivalence.pod_signature(pi), snap.layout_version, snap.num_nodes())
        found = find_feasible(
            fwk,
            state,
            pi,
            snap,
            pre_result,
            percentage=self._percentage(fwk),
            start=self._next_start_node,
            nominator=self.nominator,
            known=known,
            eq=eq,
        )
        self._advance_start(found.processed)
        return found

    def _advance_start(self, processed: int) -> None:
        """The next cycle filters from `processed` candidates further on."""
        n = max(self.snapshot.num_nodes(), 1)
        self._next_start_node = (self._next_start_node + processed) % n

    def _node_local(self, fwk: Framework) -> bool:
        """equivalence.node_local of the profile's Filter plugins (fixed once the framework
        is built, so asked once per profile, not per cycle)."""
        ok = self._node_local_profiles.get(fwk.profile_name)
        if ok is None:
            ok = equivalence.node_local(fwk.list_plugins().get("filter", ()))
            self._node_local_profiles[fwk.profile_name] = ok
        return ok

    def _select_host(self, totals: np.ndarray) -> int:
        """The position of the highest total; ties broken uniformly at random, with one
        draw per tie set."""
        ties = np.flatnonzero(totals == totals.max())
        if len(ties) == 1:
            return int(ties[0])
        return int(ties[self.rng.randrange(len(ties))])

    async def _run_post_filter(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        fe: FitError,
        attempt: Attempt,
    ) -> None:
        result, st = await fwk.run_post_filter(state, qpi.pod_info, fe.statuses)
        if st.reasons and not st.is_success():
            fe.post_filter_msg = st.message
        decision = state.get(PREEMPTION_DECISION_KEY)
        if decision is not None:
            attempt.preemption = decision
            self.preemption_attempts += 1
            self.metrics.preemption_attempts_total.inc()
            if decision.victims:
                self.preemption_victims += len(decision.victims)
                self.metrics.preemption_victims.observe(len(decision.victims))
                self.metrics.pod_groups().observe_preemption(
                    decision.pdb_violations, decision.pod_group_disruptions
                )
        if result is None:
            return
        # upstream handleSchedulingFailure: the PostFilter result's nomination overrides.
        node = result.nominated_node_name
        pod = qpi.pod
        if pod.status.nominated_node_name != node:
            copy = core_pb2.Pod()
            copy.CopyFrom(pod)
            copy.status.nominated_node_name = node
            qpi.pod_info = PodInfo(copy)
            self._spawn(self._set_nominated(pod, node))
        self.nominator.add(qpi.pod_info, node)

    async def _nominate_for_expectation(
        self, fwk: Framework, state: CycleState, assumed: PodInfo, node: str
    ) -> tuple[Status, str]:
        """Upstream bindingCycle under NominatedNodeNameForExpectation: PreBindPreFlight,
        and when a PreBind has work or the pod waits at Permit, status.nominatedNodeName =
        `node` (a failed write is logged and binding goes on). The PreBindPreFlight status
        (Success, or the Error that ends the binding cycle) and the node written ("")."""
        st = fwk.run_pre_bind_pre_flights(state, assumed, node)
        if st.code == Code.ERROR or st.is_rejected():
            return st, ""
        if not st.is_success() and not fwk.will_wait_on_permit(assumed):
            return Status.success(), ""  # bound at once: nothing worth announcing
        try:
            await self._write_nominated(assumed.pod, node)
        except Exception as e:  # noqa: BLE001 - not worth failing the binding for
            log.info("could not set the nominated node of %s: %s", assumed.key, e)
            return Status.success(), ""
        return Status.success(), node

    def _clear_nominated(self, pod: core_pb2.Pod, written: str = "") -> None:
        """Upstream's clearNominatedNode on a failure after the node was chosen: the
        nominator forgets the pod, and its status.nominatedNodeName (the one the informer
        last showed, or `written` by this binding cycle) is cleared (best effort)."""
        self.nominator.delete(pod.metadata.uid)
        node = written or pod.status.nominated_node_name
        if node:
            copy = core_pb2.Pod()
            copy.CopyFrom(pod)
            copy.status.nominated_node_name = node
            self._spawn(self._set_nominated(copy, ""))

    async def _write_nominated(self, pod: core_pb2.Pod, node: str) -> None:
        """status.nominatedNodeName = `node`: queued on the dispatcher, or written now."""
        if self.dispatcher is not None:
            nominate(self.dispatcher, pod, node)
        else:
            await set_nominated_node_name(self.reporter.client, pod, node)

    async def _set_nominated(self, pod: core_pb2.Pod, node: str) -> None:
        try:
            await self._write_nominated(pod, node)
        except Exception as e:  # noqa: BLE001 - best effort; the next attempt retries
            log.info("could not set the nominated node of %s: %s", pod.metadata.name, e)

    def _observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        """schedule_attempts_total and scheduling_attempt_duration_seconds, their label
        children resolved once per (result, profile)."""
        children = self._attempt_children.get((result, profile))
        if children is None:
            m = self.metrics
            children = (
                m.schedule_attempts_total.labels(result=result, profile=profile),
                m.scheduling_attempt_duration_seconds.labels(result=result, profile=profile),
            )
            self._attempt_children[(result, profile)] = children
        children[0].inc()
        children[1].observe(seconds)

    def log_error(self, key: str, message: str, exc: BaseException | None) -> None:
        """Log a pod's Error once per distinct message (a pod backing off and failing the
        same way again does not flood the log); the traceback, if any, goes with it."""
        if self._logged_errors.get(key) == message:
            return
        self._logged_errors[key] = message
        log.error("scheduling %s: %s", key, message, exc_info=exc)

    def _fail(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        cycle: int,
        attempt: Attempt,
        message: str,
        st: Status,
        plugins: set[str],
        start: float,
        *,
        record: bool = True,
        report: bool = True,
    ) -> None:
        result = "error" if st.code == Code.ERROR else "unschedulable"
        attempt.result = attempt.result or result
        attempt.message = message
        attempt.duration_s = self.clock.monotonic() - start
        if record:
            self.traces.add(attempt)
        self._observe_attempt(result, fwk.profile_name, attempt.duration_s)
        qpi.unschedulable_plugins = {p for p in plugins if p}
        if st.code == Code.ERROR:
            qpi.unschedulable_plugins = set()
        self.queue.add_unschedulable_if_not_present(qpi, cycle, error=st.code == Code.ERROR)
        self.queue.done(qpi.pod_info.uid)
        if report:
            self._spawn(self.reporter.report(fwk.profile_name, qpi.pod, message, result))
