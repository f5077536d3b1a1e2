"""The scheduler's gRPC edge: decision traces (`kubera explain`), health, and what-if
scheduling on a fork of the leader's state (services/scheduler/whatif).

It serves whatever hosts a Scheduler (a `SchedulerHost`: services/hosts/scheduler.py's
SchedulerReplica), whose Scheduler is rebuilt every term, so it asks the host for the
current one on every call.
"""

from __future__ import annotations

from typing import Any, Protocol

import grpc

from protos.kubera.v1 import scheduler_pb2 as pb
from protos.kubera.v1 import scheduler_pb2_grpc as pb_grpc
from services.grpcserver import start_server
from services.scheduler.scheduler import Scheduler
from services.scheduler.trace import Attempt
from services.scheduler.whatif import Sessions
from services.scheduler.whatif.wire import answer, serve_whatif


class SchedulerHost(Protocol):
    """What the API reads from the process that runs the scheduler."""

    #: The current term's Scheduler (None before the first is built).
    scheduler: Scheduler | None

    @property
    def leading(self) -> bool:
        """Whether this replica schedules now (leads, or needs no election)."""
        ...

    @property
    def mode(self) -> str:
        """The replica's mode: leader or shared-state."""
        ...

    @property
    def terms(self) -> int:
        """How many terms this replica has led."""
        ...


def attempt_to_proto(a: Attempt) -> pb.TraceAttempt:
    return pb.TraceAttempt(
        pod=a.pod,
        uid=a.uid,
        profile=a.profile,
        cycle=a.cycle,
        time=a.time,
        result=a.result,
        node=a.node,
        message=a.message,
        nodes_total=a.nodes_total,
        nodes_evaluated=a.nodes_evaluated,
        nodes_feasible=a.nodes_feasible,
        rejections=[
            pb.TraceRejection(plugin=r.plugin, reason=r.reason, count=r.count, nodes=r.nodes)
            for r in a.rejections
        ],
        top_scores=[
            pb.TraceScore(node=s.node, total=s.total, by_plugin=s.by_plugin) for s in a.top_scores
        ],
        duration_seconds=a.duration_s,
        preemption=preemption_to_proto(a.preemption),
    )


def preemption_to_proto(d: Any) -> pb.TracePreemption | None:
    """A preemption.Decision as its message (None when preemption did not run)."""
    if d is None:
        return None
    return pb.TracePreemption(
        eligible=d.eligible,
        reason=d.reason,
        potential_nodes=d.potential_nodes,
        dry_runs=d.dry_runs,
        candidates=[
            pb.TracePreemptionCandidate(node=n, victims=v, pdb_violations=k)
            for n, v, k in d.candidates
        ],
        node=d.node,
        victims=d.victims,
        why=d.why,
    )


def shared_state_to_proto(summary: dict[str, Any]) -> pb.SharedStateStats:
    """OmegaStats.summary() as its message (the summary's keys say the units)."""
    return pb.SharedStateStats(
        binds=summary["binds"],
        conflicts=summary["conflicts"],
        lost_pods=summary["lost_pods"],
        conflict_fraction=summary["conflict_fraction"],
        useful_busy_seconds=summary["useful_busy_s"],
        wasted_busy_seconds=summary["wasted_busy_s"],
        bind_latency_mean_seconds=summary["bind_latency_mean_s"],
        queue_wait_p50_seconds=summary["queue_wait_p50_s"],
        queue_wait_p90_seconds=summary["queue_wait_p90_s"],
        queue_wait_p99_seconds=summary["queue_wait_p99_s"],
        attempts_per_pod_mean=summary["attempts_per_pod_mean"],
        attempts_per_pod_max=summary["attempts_per_pod_max"],
    )


class SchedulerServicer(pb_grpc.SchedulerServicer):
    def __init__(self, host: SchedulerHost) -> None:
        self.host = host
        #: The what-if sessions of the current term's Scheduler (new with each term).
        self._sessions: Sessions | None = None

    def _whatif_sessions(self, sched: Scheduler | None) -> Sessions:
        if self._sessions is None or self._sessions.owner is not sched:
            clock = sched.clock if sched is not None else None
            self._sessions = Sessions(sched, clock.monotonic if clock is not None else float)
        return self._sessions

    async def WhatIf(
        self, request: pb.WhatIfRequest, context: grpc.aio.ServicerContext
    ) -> pb.WhatIfResponse:
        sched = self.host.scheduler
        return await serve_whatif(
            request,
            context,
            lambda: answer(
                request,
                scheduler=sched,
                leading=self.host.leading,
                leader=str(getattr(self.host, "leader_identity", "") or ""),
                sessions=self._whatif_sessions(sched),
                attempt_to_proto=attempt_to_proto,
            ),
        )

    async def Explain(
        self, request: pb.ExplainRequest, context: grpc.aio.ServicerContext
    ) -> pb.ExplainResponse:
        sched = self.host.scheduler
        if sched is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the scheduler is not running")
            raise AssertionError("abort() raises")
        key = f"{request.namespace or 'default'}/{request.name}"
        attempts = sched.traces.get(key)
        gated = sched.gated_attempt(key)
        if gated is not None:  # held by a PreEnqueue plugin (e.g. waiting for its claims)
            attempts.append(gated)
        return pb.ExplainResponse(attempts=[attempt_to_proto(a) for a in attempts])

    async def Health(
        self, request: pb.SchedulerHealthRequest, context: grpc.aio.ServicerContext
    ) -> pb.SchedulerHealthResponse:
        sched = self.host.scheduler
        if sched is None:
            return pb.SchedulerHealthResponse(leading=False)
        pending = {q: len(pods) for q, pods in sched.queue.pending_pods().items()}
        resp = pb.SchedulerHealthResponse(
            leading=self.host.leading,
            identity=sched.identity,
            scheduled=sched.scheduled,
            pending=pending,
            mode=self.host.mode,
            terms=self.host.terms,
            preemption_attempts=sched.cycles.preemption_attempts,
            preemption_victims=sched.cycles.preemption_victims,
        )
        if sched.omega is not None:
            resp.shared_state.CopyFrom(shared_state_to_proto(sched.omega.summary()))
        return resp


async def serve(
    host: SchedulerHost,
    address: str = "127.0.0.1",
    port: int = 0,
    *,
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """The scheduler's API (traces, Explain); `credentials`: serve TLS."""
    return await start_server(
        lambda s: pb_grpc.add_SchedulerServicer_to_server(SchedulerServicer(host), s),
        "the scheduler's API",
        address,
        port,
        credentials=credentials,
    )
