"""scheduler.proto's WhatIf messages to and from sessions, and the RPC's work: a new
fork or a session continued, a rollback, the steps, the answer.

Only the leader answers (its cache is the one that binds); a replica that does not lead
ends the call FAILED_PRECONDITION naming itself, and a caller tries the next replica
(remote.py). A session lives in the Scheduler it was forked from: when the term ends, its
sessions are gone (NOT_FOUND).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from protos.kubera.v1 import scheduler_pb2 as pb
from services.api.machinery import codec
from services.api.machinery.kinds import kind_of
from services.scheduler.trace import Attempt
from services.scheduler.whatif.fork import Base
from services.scheduler.whatif.session import Session, Sessions, StepError
from services.scheduler.whatif.steps import (
    AddNode,
    DeleteNode,
    DeletePod,
    PodResult,
    Schedule,
    Step,
    StepResult,
)

#: The most steps one request may carry (each Schedule step holds its pods).
MAX_STEPS = 100


class WhatIfError(Exception):
    """A request the leader refuses: `code` is the gRPC status it ends with."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def step_from_proto(msg: pb.WhatIfStep) -> Step:
    which = msg.WhichOneof("op")
    if which == "schedule":
        s = msg.schedule
        objects = []
        for a in s.objects:
            try:
                obj = codec.unpack(a)
            except Exception as e:  # noqa: BLE001 - the caller's bytes
                raise WhatIfError(grpc.StatusCode.INVALID_ARGUMENT, f"objects: {e}") from None
            objects.append((kind_of(obj).name, obj))
        return Schedule(list(s.pods), objects, s.preempt)
    if which == "delete_node":
        return DeleteNode(msg.delete_node)
    if which == "delete_pod":
        return DeletePod(msg.delete_pod.namespace or "default", msg.delete_pod.name)
    if which == "add_node":
        return AddNode(msg.add_node)
    raise WhatIfError(grpc.StatusCode.INVALID_ARGUMENT, "a step names no operation")


def pod_result_to_proto(
    r: PodResult, attempt_to_proto: Callable[[Attempt], pb.TraceAttempt]
) -> pb.WhatIfPodResult:
    out = pb.WhatIfPodResult(
        pod=r.pod, result=r.result, node=r.node, reasons=r.reasons, victims=r.victims
    )
    if r.score is not None:
        out.score = r.score
    if r.attempt is not None:
        r.attempt.preemption = r.preemption
        r.attempt.result = r.result
        out.attempt.CopyFrom(attempt_to_proto(r.attempt))
    return out


def step_result_to_proto(
    r: StepResult, attempt_to_proto: Callable[[Attempt], pb.TraceAttempt]
) -> pb.WhatIfStepResult:
    return pb.WhatIfStepResult(
        step=r.step,
        op=r.op,
        target=r.target,
        pods=[pod_result_to_proto(p, attempt_to_proto) for p in r.pods],
        message=r.message,
    )


async def answer(
    request: pb.WhatIfRequest,
    *,
    scheduler: Any,
    leading: bool,
    sessions: Sessions,
    leader: str = "",
    attempt_to_proto: Callable[[Attempt], pb.TraceAttempt],
    capture: Callable[[Any], Base] = Base.capture,
    seed: Callable[[], int] = lambda: random.getrandbits(32),
) -> pb.WhatIfResponse:
    """The WhatIf RPC's answer (raises WhatIfError with the status to end the call with)."""
    if scheduler is None:
        raise WhatIfError(grpc.StatusCode.UNAVAILABLE, "the scheduler is not running")
    identity = getattr(scheduler, "identity", "")
    if not leading:
        holder = f" ({leader} is)" if leader else ""
        raise WhatIfError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"{identity} is not the leader{holder}: a what-if runs on the leader's state",
        )
    if len(request.steps) > MAX_STEPS:
        raise WhatIfError(
            grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_STEPS} steps per request"
        )
    steps = [step_from_proto(s) for s in request.steps]
    if request.session:
        session = sessions.get(request.session)
        if session is None:
            raise WhatIfError(
                grpc.StatusCode.NOT_FOUND,
                f'what-if session "{request.session}" not found (it expired, was closed, '
                "or the scheduler's leader changed)",
            )
    else:
        if request.HasField("rollback_to"):
            raise WhatIfError(
                grpc.StatusCode.INVALID_ARGUMENT, "rollbackTo needs a session to roll back"
            )
        session = Session(capture(scheduler), seed=seed())
    async with session.lock:
        before = session.applied()
        try:
            if request.HasField("rollback_to"):
                await session.rollback(request.rollback_to)
            for step in steps:
                await session.apply(step)
        except StepError as e:
            # All or nothing: the session is left as the request found it.
            if len(session.steps) != len(before) or request.HasField("rollback_to"):
                await session.replay(before)
            raise WhatIfError(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
    kept = bool(request.session) or request.keep
    if request.close and request.session:
        sessions.close(request.session)
        kept = False
    elif kept and not request.session:
        sessions.open(session)
    return pb.WhatIfResponse(
        session=session.id if kept else "",
        leader=identity,
        steps=[step_result_to_proto(r, attempt_to_proto) for r in session.results()],
    )


async def serve_whatif(
    request: pb.WhatIfRequest,
    context: grpc.aio.ServicerContext,
    run: Callable[[], Awaitable[pb.WhatIfResponse]],
) -> pb.WhatIfResponse:
    """`run()`, a WhatIfError ending the call with its status."""
    try:
        return await run()
    except WhatIfError as e:
        await context.abort(e.code, str(e))
        raise AssertionError("abort() raises") from None
