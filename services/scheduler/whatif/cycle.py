"""A Schedule step on a fork: the pods of the step, each through the profile's real
scheduling cycle, as the leader would take them from its queue.

    all pods created in the fork (the plugins' pod indexes see them: a gang counts its pods)
    PreEnqueue                 a pod a plugin gates is answered "gated", never tried
    QueueSort                  the profile's order (PrioritySort: priority, then arrival)
    per pod                    ScheduleOne's own cycle (PreFilter → Filter with the
                               nominated pods → PreScore → Score → select host) on the fork's
                               snapshot; then assume → Reserve → Permit
      Fit error, `preempt`     PostFilter (DefaultPreemption on the fork's handle: its
                               deletes and patches recorded, not sent); the victims leave the
                               fork, the pod is nominated and tried again, as the leader's
                               next attempt would once the victims are gone
      Permit Wait              the pod waits in its framework (a gang member); the member
                               that completes the quorum allows them all, and they bind
    end of step                pods still waiting are rejected (Unreserve, forgotten): a gang
                               places whole or not at all, as the leader's Permit timeout
                               would end it
    a placed pod is bound in the fork (Fork.bind); a pod not placed is taken out of it

No PreBind, Bind or PostBind runs: they write (volumes, claims, the binding).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2
from services.api.machinery.meta import object_key
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, PodInfo, QueuedPodInfo
from services.scheduler.schedule_one import (
    PREEMPTION_DECISION_KEY,
    FitError,
    ScheduleOne,
    ScheduleResult,
)
from services.scheduler.trace import Attempt, TraceStore
from services.scheduler.whatif.fork import Fork
from services.scheduler.whatif.handle import DryRunClient
from services.scheduler.whatif.steps import (
    ERROR,
    GATED,
    SCHEDULED,
    UNSCHEDULABLE,
    PodResult,
    Schedule,
)

#: The reason a gang member still waiting at Permit at the end of a step is given.
GANG_INCOMPLETE = (
    "not every pod of its gang could be placed: rejected at Permit, as the scheduler "
    "rejects the waiting pods when the gang's wait times out"
)


class SessionCycles(ScheduleOne):
    """ScheduleOne on a fork: its scheduling cycle as the leader runs it (node order,
    percentageOfNodesToScore, nominated pods, score ties broken by the fork's RNG); the
    loop, binding cycles and reports are never run, and nothing it would spawn (event
    reports, nomination writes) is started."""

    async def place(
        self, fwk: Framework, state: CycleState, pi: PodInfo, attempt: Attempt
    ) -> ScheduleResult:
        """The pod's node (raises FitError when none fits)."""
        return await self._schedule_pod(fwk, state, pi, attempt)

    def _spawn(self, coro: object) -> None:
        close = getattr(coro, "close", None)
        if callable(close):
            close()


def session_cycles(fork: Fork) -> SessionCycles:
    base = fork.base
    return SessionCycles(
        clock=base.clock,
        frameworks=fork.frameworks,
        cache=fork.cache,
        snapshot=fork.snapshot,
        queue=base.queue,
        percentage_of_nodes_to_score=base.percentage_of_nodes_to_score,
        rng=fork.rng,
        reporter=base.reporter,
        metrics=base.metrics,
        traces=TraceStore(),
        equivalence_cache=None,
        omega=None,
        max_binding_tasks=1,
        nominator=fork.nominator,
    )


@dataclass
class _Waiting:
    fwk: Framework
    state: CycleState
    assumed: PodInfo
    result: PodResult


async def run_schedule(fork: Fork, cycles: SessionCycles, step: Schedule) -> list[PodResult]:
    """The step's answer, one PodResult per pod in the step's order."""
    fork.overlay(step.objects)
    results: dict[int, PodResult] = {}
    queued: list[tuple[int, QueuedPodInfo]] = []
    added: dict[str, int] = {}
    for i, pod in enumerate(step.pods):
        key = object_key(pod)
        if key in added or fork.pod(key) is not None:
            results[i] = PodResult(key, ERROR, reasons=[f'pod "{key}" already exists'])
            continue
        added[key] = i
        if not pod.metadata.uid:  # not admitted (a caller of the session itself)
            copy = core_pb2.Pod()
            copy.CopyFrom(pod)
            copy.metadata.uid = "whatif-" + hashlib.sha1(key.encode()).hexdigest()[:16]
            pod = copy
        if pod.spec.node_name:  # bound by its author: no scheduler takes it
            fork.bind(PodInfo(pod))
            results[i] = PodResult(key, SCHEDULED, node=pod.spec.node_name)
            continue
        fork.add_pending(pod)
        queued.append((i, QueuedPodInfo(PodInfo(pod), timestamp=float(i))))
    first = next(iter(fork.frameworks.values()))
    compare = _order(first)

    def by_queue_sort(a: tuple[int, QueuedPodInfo], b: tuple[int, QueuedPodInfo]) -> int:
        return compare(a[1], b[1])

    queued.sort(key=functools.cmp_to_key(by_queue_sort))
    waiting: list[_Waiting] = []
    for i, qpi in queued:
        fwk = fork.frameworks.get(qpi.pod.spec.scheduler_name)
        st = fwk.run_pre_enqueue(qpi.pod) if fwk is not None else Status.success()
        if not st.is_success():
            results[i] = PodResult(qpi.key, GATED, reasons=[f"{st.plugin}: {st.message}"])
            continue
        results[i] = await _one(fork, cycles, qpi, step.preempt, waiting)
        _settle(fork, waiting, end=False)
        # The leader's own loop runs on this event loop: a long step must not stall it.
        await asyncio.sleep(0)
    _settle(fork, waiting, end=True)
    for key, i in added.items():
        if results[i].result != SCHEDULED:
            fork.remove_pod(key)
    return [results[i] for i in range(len(step.pods))]


def _order(fwk: Framework) -> Callable[[QueuedPodInfo, QueuedPodInfo], int]:
    """QueueSort's `less` as a comparison (the activeQ's order)."""
    less = fwk.queue_sort_less

    def compare(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        if less(a, b):
            return -1
        return 1 if less(b, a) else 0

    return compare


async def _one(
    fork: Fork,
    cycles: SessionCycles,
    qpi: QueuedPodInfo,
    preempt: bool,
    waiting: list[_Waiting],
) -> PodResult:
    pi = qpi.pod_info
    key = qpi.key
    fwk = fork.frameworks.get(pi.pod.spec.scheduler_name)
    if fwk is None:
        return PodResult(
            key,
            ERROR,
            reasons=[f'no profile "{pi.pod.spec.scheduler_name}" in this scheduler'],
        )
    if pi.problems:
        return PodResult(key, ERROR, reasons=["invalid pod: " + "; ".join(pi.problems)])
    victims: list[str] = []
    decision = None
    for attempt_no in (1, 2):
        attempt = Attempt(key, pi.uid, fwk.profile_name, 0, fork.base.clock.now())
        state = CycleState()
        fork.sync()
        try:
            result = await cycles.place(fwk, state, pi, attempt)
        except FitError as fe:
            if not preempt or attempt_no == 2 or not fwk.has_post_filter_plugins():
                return PodResult(
                    key, UNSCHEDULABLE, reasons=[fe.message], attempt=attempt, preemption=decision
                )
            nominated, post_msg, decision = await _preempt(fork, fwk, state, pi, fe)
            if not nominated:
                fe.post_filter_msg = post_msg
                return PodResult(
                    key, UNSCHEDULABLE, reasons=[fe.message], attempt=attempt, preemption=decision
                )
            victims = _evict(fork, fwk)
            pi = _nominated(pi, nominated)
            fork.nominator.add(pi, nominated)
            continue
        except Exception as e:  # noqa: BLE001 - the pod's answer, as the leader's Error attempt
            return PodResult(key, ERROR, reasons=[str(e)], attempt=attempt)
        return _reserve_and_permit(
            fork, fwk, state, pi, result, attempt, victims, decision, waiting
        )
    raise AssertionError("unreachable")


async def _preempt(
    fork: Fork, fwk: Framework, state: CycleState, pi: PodInfo, fe: FitError
) -> tuple[str, str, object]:
    """PostFilter on the fork: (the node the pod is nominated to or "", PostFilter's
    message, the preemption decision)."""
    result, st = await fwk.run_post_filter(state, pi, fe.statuses)
    decision = state.get(PREEMPTION_DECISION_KEY)
    node = result.nominated_node_name if result is not None and st.is_success() else ""
    return node, st.message if st.reasons else "", decision


def _evict(fork: Fork, fwk: Framework) -> list[str]:
    """The victims the PostFilter deleted (through the handle's DryRunClient) leave the
    fork; their keys."""
    client = getattr(fwk.handle, "client", None)
    assert isinstance(client, DryRunClient), "a session's frameworks write nothing"
    gone, client.deleted[:] = list(client.deleted), []
    for key in gone:
        fork.remove_pod(key)
    return gone


def _nominated(pi: PodInfo, node: str) -> PodInfo:
    copy = core_pb2.Pod()
    copy.CopyFrom(pi.pod)
    copy.status.nominated_node_name = node
    return PodInfo(copy)


def _reserve_and_permit(
    fork: Fork,
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    result: ScheduleResult,
    attempt: Attempt,
    victims: list[str],
    decision: object,
    waiting: list[_Waiting],
) -> PodResult:
    attempt.node = result.node
    scores = {s.node: s.total for s in attempt.top_scores}
    answer = PodResult(
        pi.key,
        SCHEDULED,
        node=result.node,
        score=scores.get(result.node),
        attempt=attempt,
        victims=victims,
        preemption=decision,
    )
    assumed = pi.assigned(result.node)
    try:
        fork.cache.assume_pod(assumed)
        fork.nominator.delete(pi.uid)
        st = fwk.run_reserve(state, assumed, result.node)
        if st.is_success():
            st = fwk.run_permit(state, assumed, result.node)
    except Exception as e:  # noqa: BLE001 - undone below like a failed Reserve
        st = Status.as_error(e)
    if st.is_wait():
        waiting.append(_Waiting(fwk, state, assumed, answer))
        return answer
    if not st.is_success():
        _undo(fork, fwk, state, assumed)
        answer.result = ERROR if st.code == Code.ERROR else UNSCHEDULABLE
        answer.node, answer.score = "", None
        answer.reasons = [st.message or f"rejected by {st.plugin}"]
        return answer
    fork.bind(assumed)
    return answer


def _undo(fork: Fork, fwk: Framework, state: CycleState, assumed: PodInfo) -> None:
    fwk.run_unreserve(state, assumed, assumed.pod.spec.node_name)
    if fork.cache.is_assumed(assumed.pod):
        fork.cache.forget_pod(assumed.pod)
    fork.sync()


def _settle(fork: Fork, waiting: list[_Waiting], *, end: bool) -> None:
    """Bind the waiting pods that every Permit plugin allowed, undo the rejected ones; at
    the end of the step, reject those still waiting (see the module docstring)."""
    for w in list(waiting):
        uid = w.assumed.uid
        wp = w.fwk.waiting_pod(uid)
        if wp is not None and not wp.done and end:
            plugins = ", ".join(sorted(wp.pending))
            wp.reject(plugins, f"{plugins}: {GANG_INCOMPLETE}")
        if wp is not None and not wp.done:
            continue
        waiting.remove(w)
        w.fwk.waiting_pods.remove(uid)
        st = wp.result if wp is not None and wp.result is not None else Status.success()
        if st.is_success():
            fork.bind(w.assumed)
            continue
        _undo(fork, w.fwk, w.state, w.assumed)
        w.result.result, w.result.node, w.result.score = UNSCHEDULABLE, "", None
        w.result.reasons = [st.message]
