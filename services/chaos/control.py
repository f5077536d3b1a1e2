"""The chaos control service of one component process: partition, heal and report its
relays; report the process itself; kill or pause it.

A replica (scheduler, controller-manager) that dials etcd and the apiserver through
`Relay`s serves this beside its other APIs, so `kubera chaos partition-leader` can cut
exactly the leader off while it still believes it leads. Node pools and the apiserver
serve it too (no relays: Partition is a no-op there) on their own gRPC port, for Status
(the process's CPU, memory and where it runs: process.py) and Kill / Pause, the faults a
caller on another machine (another PID namespace) cannot inject with a signal.

Kill and Pause answer first and act a moment later (`ACT_AFTER`), so the answer is on the
wire before the process dies or stops. Pause starts its watchdog (`sh -c 'sleep S; kill
-CONT PID'`, a process of its own session, so it outlives a kill of ours) before it
answers. Bad requests are INVALID_ARGUMENT here, at the gRPC edge; the relays themselves
raise ValueError.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

import grpc

from protos.kubera.v1 import chaos_pb2 as pb
from protos.kubera.v1 import chaos_pb2_grpc as pb_grpc
from services.auth.grpcauth import env_ca, token_channel
from services.chaos.process import self_report
from services.chaos.relay import Relay
from services.grpcserver import start_server
from services.storage import Storage
from services.storage.keys import REPLICAS_PREFIX

#: The longest partition one call may ask for, in seconds.
MAX_PARTITION_SECONDS = 3600.0
#: Seconds between a Kill's or Pause's answer and the signal to this process: the answer
#: (a few bytes on an open connection) is flushed well within it.
ACT_AFTER = 0.1


def describe(relay: Relay) -> str:
    label = f"{relay.name} " if relay.name else ""
    return f"{label}{relay.address} -> {relay.target}"


async def _check_seconds(seconds: float, context: grpc.aio.ServicerContext) -> None:
    """A partition's or a pause's length: INVALID_ARGUMENT unless in (0, the maximum]."""
    # Written so NaN fails too.
    if not 0 < seconds <= MAX_PARTITION_SECONDS:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"seconds: must be > 0 and <= {MAX_PARTITION_SECONDS:g}, got {seconds:g}",
        )


class ChaosControl(pb_grpc.ChaosServicer):
    def __init__(self, relays: Sequence[Relay], identity: str, component: str) -> None:
        self.relays = list(relays)
        self.identity = identity
        self.component = component

    async def Partition(
        self, request: pb.PartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.PartitionResponse:
        seconds = request.seconds
        await _check_seconds(seconds, context)
        for relay in self.relays:
            relay.partition(seconds)
        return pb.PartitionResponse(
            until_seconds_from_now=seconds, relays=[describe(r) for r in self.relays]
        )

    async def Heal(
        self, request: pb.HealRequest, context: grpc.aio.ServicerContext
    ) -> pb.HealResponse:
        was = [relay.heal() for relay in self.relays]
        return pb.HealResponse(was_partitioned=any(was))

    async def Status(
        self, request: pb.StatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        me = self_report()
        return pb.StatusResponse(
            partitioned=any(r.partitioned for r in self.relays),
            remaining_seconds=max((r.remaining() for r in self.relays), default=0.0),
            pid=me["pid"],
            identity=self.identity,
            component=self.component,
            cpu_seconds=me["cpu_seconds"],
            rss_bytes=me["rss_bytes"],
            host=me["host"],
            boot_id=me["boot_id"],
            pid_ns=me["pid_ns"],
            start_ticks=me["start_ticks"],
        )

    async def Kill(
        self, request: pb.KillRequest, context: grpc.aio.ServicerContext
    ) -> pb.KillResponse:
        pid = os.getpid()
        asyncio.get_running_loop().call_later(ACT_AFTER, os.kill, pid, signal.SIGKILL)
        return pb.KillResponse(pid=pid)

    async def Pause(
        self, request: pb.PauseRequest, context: grpc.aio.ServicerContext
    ) -> pb.PauseResponse:
        seconds = request.seconds
        await _check_seconds(seconds, context)
        pid = os.getpid()
        # The watchdog counts from the SIGSTOP, not from now.
        watchdog = subprocess.Popen(  # noqa: S603 - fixed argv, numbers only
            ["sh", "-c", f"sleep {ACT_AFTER + seconds:.3f}; kill -CONT {pid}"],  # noqa: S607
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        loop = asyncio.get_running_loop()
        loop.call_later(ACT_AFTER, os.kill, pid, signal.SIGSTOP)
        # Reaped once it is done (after our SIGCONT), so it leaves no zombie.
        loop.call_later(ACT_AFTER + seconds + 1.0, _reap, watchdog)
        return pb.PauseResponse(pid=pid, watchdog_pid=watchdog.pid)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        asyncio.get_running_loop().call_later(1.0, _reap, proc)


async def replica_records(storage: Storage, lease: str = "") -> list[dict[str, Any]]:
    """The records replicas registered for `lease` ("namespace/name"; "": every lease)
    under /kubera/replicas/ (services/hosts/replica.py), each with its "lease" added;
    records of processes that are gone included (a SIGKILLed one leaves its record)."""
    prefix = f"{REPLICAS_PREFIX}{lease}/" if lease else REPLICAS_PREFIX
    kvs, _ = await storage.list(prefix)
    found = []
    for kv in kvs:
        try:
            rec = json.loads(kv.value)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        namespace, name = kv.key[len(REPLICAS_PREFIX) :].split("/")[:2]
        found.append({**rec, "lease": f"{namespace}/{name}"})
    return found


async def control_status(
    address: str, timeout: float = 5.0, *, ca: bytes | None = None
) -> pb.StatusResponse | None:
    """The Status of the chaos control at `address` (a process's figures and where it
    runs), or None when it does not answer within `timeout`. `ca`: dial TLS trusting it
    (None: the CA of $KUBERA_CA_FILE, if set; b"": plaintext)."""
    if not address:
        return None
    try:
        async with token_channel(address, "", ca=env_ca() if ca is None else ca) as ch:
            return await pb_grpc.ChaosStub(ch).Status(  # type: ignore[no-any-return]
                pb.StatusRequest(), timeout=timeout
            )
    except grpc.RpcError:
        return None


def add_control(
    server: grpc.aio.Server, relays: Sequence[Relay], identity: str, component: str
) -> None:
    """Serve the Chaos service over `relays` on `server` too (a node pool's, the
    apiserver's: no relays, for Status, Kill and Pause)."""
    pb_grpc.add_ChaosServicer_to_server(ChaosControl(relays, identity, component), server)


async def serve_control(
    relays: Sequence[Relay],
    identity: str,
    component: str,
    host: str = "127.0.0.1",
    *,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """A started Chaos server over `relays` on an ephemeral port; returns it and the port.
    `interceptors`: authentication (services/auth/grpcauth.py `admin_only`: every method
    but Status the admin's); `credentials`: serve TLS."""
    servicer = ChaosControl(relays, identity, component)
    return await start_server(
        lambda s: pb_grpc.add_ChaosServicer_to_server(servicer, s),
        f"the chaos control of {component} {identity}",
        host,
        interceptors=interceptors,
        credentials=credentials,
    )
