"""What the UI asks of the schedulers' own API: a pod's decision trace (`Explain`), and
each replica's queue and counters (`Health`, for the throughput panel).

The traces live in the schedulers (services/scheduler/trace.py), not in objects; a pod's
attempts may have been made by several leaders in turn, so, as `kubera explain pod` does,
every replica registered under /kubera/replicas/ that serves a scheduler API is asked
(`Explain`) and the attempts are merged, oldest first. The call carries the session's own
bearer token: the scheduler's API is the admin's, and the UI shows a trace only to whom
`kubera explain` would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict

from protos.kubera.v1 import scheduler_pb2 as spb
from protos.kubera.v1 import scheduler_pb2_grpc as spb_grpc
from services.auth.grpcauth import token_channel
from services.chaos import replica_records
from services.storage import Storage

#: Seconds one replica has to answer.
EXPLAIN_TIMEOUT = 5.0


class TraceError(Exception):
    """No replica could answer: `code` is the HTTP status to give (403, 503)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


async def scheduler_addresses(storage: Storage) -> list[str]:
    """The scheduler API of every registered replica (dead ones fail fast when asked)."""
    return sorted(
        {
            str(rec["scheduler"])
            for rec in await replica_records(storage)
            if rec.get("component") == "kube-scheduler" and rec.get("scheduler")
        }
    )


async def _explain(address: str, bearer: str, namespace: str, name: str) -> list[Any]:
    async with token_channel(address, bearer) as ch:
        resp = await spb_grpc.SchedulerStub(ch).Explain(
            spb.ExplainRequest(namespace=namespace, name=name), timeout=EXPLAIN_TIMEOUT
        )
        return list(resp.attempts)


async def pod_trace(storage: Storage, bearer: str, namespace: str, name: str) -> list[dict]:
    """The pod's attempts as JSON (TraceAttempt's field names), oldest first."""
    addresses = await scheduler_addresses(storage)
    if not addresses:
        raise TraceError(503, "this cluster runs no scheduler")
    found = await asyncio.gather(
        *(_explain(a, bearer, namespace, name) for a in addresses), return_exceptions=True
    )
    attempts = [a for r in found if isinstance(r, list) for a in r]
    errors = [r for r in found if isinstance(r, grpc.aio.AioRpcError)]
    if not attempts and errors and len(errors) == len(found):
        denied = [e for e in errors if e.code() == grpc.StatusCode.PERMISSION_DENIED]
        if denied:
            raise TraceError(403, f"scheduler: {denied[0].details()}")
        raise TraceError(503, f"scheduler: {errors[0].details()}")
    for r in found:
        if isinstance(r, BaseException) and not isinstance(r, grpc.aio.AioRpcError):
            raise r
    attempts.sort(key=lambda a: (a.time, a.cycle))
    return [
        MessageToDict(
            a, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        for a in attempts
    ]


async def _health(address: str, bearer: str) -> dict[str, Any]:
    async with token_channel(address, bearer) as ch:
        resp = await spb_grpc.SchedulerStub(ch).Health(
            spb.SchedulerHealthRequest(), timeout=EXPLAIN_TIMEOUT
        )
    return {
        "identity": resp.identity,
        "leading": resp.leading,
        "mode": resp.mode,
        "scheduled": resp.scheduled,
        "pending": dict(resp.pending),
        "terms": resp.terms,
    }


async def scheduler_health(storage: Storage, bearer: str) -> list[dict[str, Any]]:
    """Every scheduler replica that answers: its queues (pods per queue), pods scheduled
    and terms led; replicas that do not answer are left out."""
    addresses = await scheduler_addresses(storage)
    found = await asyncio.gather(*(_health(a, bearer) for a in addresses), return_exceptions=True)
    for r in found:
        if isinstance(r, BaseException) and not isinstance(r, grpc.aio.AioRpcError):
            raise r
    return [r for r in found if isinstance(r, dict) and r["identity"]]
