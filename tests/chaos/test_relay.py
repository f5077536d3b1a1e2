"""The partition relay: plain TCP, gRPC to our apiserver and to real etcd pass through it;
a partition holds bytes (delivered after the heal, never dropped), makes no new upstream
connection and ends by itself; the Chaos control service drives it over gRPC."""

from __future__ import annotations

import asyncio
import math
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import grpc
import pytest

from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import chaos_pb2 as chaos_pb
from protos.kubera.v1 import chaos_pb2_grpc as chaos_grpc
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.chaos.control import describe, serve_control
from services.chaos.relay import Relay
from services.client import Client
from services.storage import Put, StorageUnavailableError
from services.storage.etcd import EtcdStorage
from tests.builders import pod
from tests.harness import control_plane
from tests.waiting import eventually

PODS = BY_KIND["Pod"]
#: Long enough that no test outlives it: those partitions end by heal().
LONG = 60.0
#: How long a call (or a read) must stay unanswered to count as stalled.
STALL = 0.3


@dataclass
class Target:
    """A TCP server to relay to: it echoes, and keeps each connection's writer so a test
    can push bytes towards the client."""

    port: int = 0
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    t = Target()
    server = await asyncio.start_server(t.handle, "127.0.0.1", 0)
    t.port = server.sockets[0].getsockname()[1]
    try:
        yield t
    finally:
        server.close()
        for w in t.writers:
            w.close()
        await server.wait_closed()


@pytest.fixture
async def relays() -> AsyncIterator[Callable[..., Awaitable[Relay]]]:
    """`await relays(port)`: a relay to 127.0.0.1:port, closed after the test."""
    started: list[Relay] = []

    async def start(port: int, name: str = "") -> Relay:
        relay = await Relay.start("127.0.0.1", port, name=name)
        started.append(relay)
        return relay

    try:
        yield start
    finally:
        for relay in started:
            await relay.close()


@pytest.fixture
async def relay(target: Target, relays) -> Relay:
    return await relays(target.port)


async def connect(relay: Relay) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = relay.address.rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))


async def stalls(aw: Awaitable[object]) -> bool:
    try:
        await asyncio.wait_for(aw, STALL)
    except TimeoutError:
        return True
    return False


# -- plain TCP -------------------------------------------------------------------------------


async def test_bytes_and_eof_pass_both_ways(relay: Relay) -> None:
    reader, writer = await connect(relay)
    payload = os.urandom(1024 * 1024)
    writer.write(payload)
    await writer.drain()
    assert await reader.readexactly(len(payload)) == payload
    writer.write_eof()
    assert await reader.read() == b""  # the echo server saw our FIN and closed
    writer.close()
    await eventually(lambda: relay.connections == 0)


@pytest.mark.parametrize("direction", ["client to target", "target to client"])
async def test_bytes_in_flight_are_held_in_a_partition_and_arrive_after_the_heal(
    relay: Relay, target: Target, direction: str
) -> None:
    reader, writer = await connect(relay)
    writer.write(b"hello")
    assert await reader.readexactly(5) == b"hello"
    relay.partition(LONG)
    if direction == "client to target":
        writer.write(b"held")
    else:
        target.writers[0].write(b"held")
    await eventually(lambda: relay.held_bytes == 4)
    assert await stalls(reader.read(1))
    assert relay.heal() is True
    assert await reader.readexactly(4) == b"held"
    assert relay.held_bytes == 0
    writer.close()


async def test_a_partition_makes_no_new_upstream_connection_until_the_heal(
    relay: Relay, target: Target
) -> None:
    relay.partition(LONG)
    reader, writer = await connect(relay)
    writer.write(b"early")
    await eventually(lambda: relay.connections == 1)
    assert await stalls(reader.read(1))
    assert target.writers == []
    relay.heal()
    assert await reader.readexactly(5) == b"early"
    assert len(target.writers) == 1
    writer.close()


async def test_a_partition_ends_by_itself_and_a_second_call_replaces_its_end(
    relay: Relay,
) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    relay.partition(0.2)
    until = relay.partition(0.5)
    assert relay.partitioned and relay.until == until
    assert 0.4 < relay.remaining() <= 0.5
    await eventually(lambda: not relay.partitioned, timeout=2)
    assert loop.time() - start >= 0.5
    assert relay.until is None and relay.remaining() == 0
    reader, writer = await connect(relay)
    writer.write(b"after")
    assert await reader.readexactly(5) == b"after"
    writer.close()


@pytest.mark.parametrize("seconds", [0, -1, math.inf, math.nan])
async def test_partition_refuses_a_duration_that_is_not_positive_and_finite(
    relay: Relay, seconds: float
) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        relay.partition(seconds)
    assert not relay.partitioned


async def test_close_ends_every_connection_including_ones_waiting_for_the_heal(
    relay: Relay,
) -> None:
    flowing_r, flowing_w = await connect(relay)
    flowing_w.write(b"x")
    assert await flowing_r.readexactly(1) == b"x"
    relay.partition(LONG)
    waiting_r, waiting_w = await connect(relay)
    await eventually(lambda: relay.connections == 2)
    await relay.close()
    assert relay.connections == 0
    assert await flowing_r.read() == b""
    assert await waiting_r.read() == b""
    flowing_w.close()
    waiting_w.close()


async def test_a_dead_target_ends_its_connections_and_a_restarted_one_is_dialled_afresh(
    relays,
) -> None:
    """The apiserver behind a replica's relay is killed and comes back on its port: the
    relay's connections to the dead one end (the client sees EOF, it does not hang), and
    the client's next connection reaches the new one through the same relay."""
    first = Target()
    server = await asyncio.start_server(first.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    relay = await relays(port)
    reader, writer = await connect(relay)
    writer.write(b"ping")
    assert await reader.readexactly(4) == b"ping"
    server.close()  # the process dies: its listener and every connection with it
    for w in first.writers:
        w.transport.abort()
    await server.wait_closed()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    reader, writer = await connect(relay)  # nothing listens: the relay closes it
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    second = Target()
    server = await asyncio.start_server(second.handle, "127.0.0.1", port)
    try:
        reader, writer = await connect(relay)
        writer.write(b"again")
        assert await asyncio.wait_for(reader.readexactly(5), 5) == b"again"
        writer.close()
    finally:
        server.close()
        for w in second.writers:
            w.close()
        await server.wait_closed()


# -- gRPC to the apiserver -------------------------------------------------------------------


@dataclass
class Relayed:
    api: ApiServer
    relay: Relay
    client: Client


@pytest.fixture
async def relayed_api(relays) -> AsyncIterator[Relayed]:
    config = ApiServerConfig(watch_cache_capacity=10, bookmark_interval=0.1)
    async with control_plane(config=config) as cp:
        relay = await relays(cp.port, "apiserver")
        cp.defer(relay.close)
        yield Relayed(cp.api, relay, cp.new_client(address=relay.address))


async def test_grpc_calls_stall_in_a_partition_and_work_after_the_heal(
    relayed_api: Relayed,
) -> None:
    client, relay = relayed_api.client, relayed_api.relay
    await client.health()
    await client.create(pod("before"))
    relay.partition(LONG)
    with pytest.raises(ApiError, match="DEADLINE_EXCEEDED"):
        await client.health(timeout=STALL)
    relay.heal()
    await client.health(timeout=5)
    created = await client.create(pod("after"))
    assert created.metadata.name == "after"


async def test_a_request_sent_in_a_partition_is_delivered_after_the_heal(
    relayed_api: Relayed,
) -> None:
    api, client, relay = relayed_api.api, relayed_api.client, relayed_api.relay
    await client.health()
    relay.partition(LONG)
    late = asyncio.create_task(client.create(pod("late")))
    await eventually(lambda: relay.held_bytes > 0)
    assert await api.get_or_none(PODS, "default", "late") is None
    assert not late.done()
    relay.heal()
    created = await late
    assert created.metadata.name == "late"
    assert await api.get_or_none(PODS, "default", "late") is not None


async def _calls_through_the_relay(client: Client, n: int = 2000) -> float:
    """`n` health calls, 100 at a time, multiplexed on one HTTP/2 connection through the
    relay (far more at once and the grpc.aio server itself cancels some, relay or not);
    the seconds they took, every one answered."""
    in_flight = asyncio.Semaphore(100)

    async def call() -> None:
        async with in_flight:
            await client.health()

    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(*(call() for _ in range(n)))
    return loop.time() - start


async def test_grpc_stream_throughput_through_the_relay(relayed_api: Relayed) -> None:
    """2000 calls, 100 at a time, multiplexed on one HTTP/2 connection through the relay,
    every one answered."""
    await _calls_through_the_relay(relayed_api.client)


@pytest.mark.bench  # a wall-clock bound: run with -m bench on a quiet machine
async def test_grpc_stream_throughput_through_the_relay_is_2000_calls_in_10s(
    relayed_api: Relayed,
) -> None:
    assert await _calls_through_the_relay(relayed_api.client) < 10


# -- real etcd -------------------------------------------------------------------------------


@pytest.mark.integration
async def test_etcd_through_the_relay_stalls_in_a_partition_and_recovers(
    etcd_server: EtcdProcess, relays
) -> None:
    host_port = etcd_server.endpoint.split("://", 1)[1]
    relay = await relays(int(host_port.rsplit(":", 1)[1]), "etcd")
    direct = EtcdStorage(etcd_server.endpoint)
    quick = EtcdStorage(relay.address, timeout=STALL)
    patient = EtcdStorage(relay.address, timeout=10)
    key = f"/chaos-test/{uuid.uuid4().hex}"
    try:
        for s in (direct, quick, patient):
            await s.connect()
        await quick.txn([], [Put(key, b"1")])
        await patient.get(key)
        relay.partition(LONG)
        with pytest.raises(StorageUnavailableError):
            await quick.get(key)
        late = asyncio.create_task(patient.txn([], [Put(key, b"late")]))
        await eventually(lambda: relay.held_bytes > 0)
        kv = await direct.get(key)
        assert kv is not None and kv.value == b"1"
        relay.heal()
        assert (await late).succeeded
        kv = await quick.get(key)
        assert kv is not None and kv.value == b"late"
    finally:
        for s in (direct, quick, patient):
            await s.close()


# -- the Chaos control service ---------------------------------------------------------------


@pytest.fixture
async def control(
    target: Target, relays
) -> AsyncIterator[tuple[chaos_grpc.ChaosStub, list[Relay]]]:
    both = [await relays(target.port, "etcd"), await relays(target.port, "apiserver")]
    server, port = await serve_control(both, "sched-0", "scheduler")
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield chaos_grpc.ChaosStub(channel), both
    finally:
        await channel.close()
        await server.stop(0.2)


async def test_control_partitions_reports_and_heals_every_relay(control) -> None:
    stub, both = control
    status = await stub.Status(chaos_pb.StatusRequest(), timeout=5)
    assert (status.partitioned, status.pid, status.identity, status.component) == (
        False,
        os.getpid(),
        "sched-0",
        "scheduler",
    )
    resp = await stub.Partition(chaos_pb.PartitionRequest(seconds=LONG), timeout=5)
    assert resp.until_seconds_from_now == LONG
    assert list(resp.relays) == [describe(r) for r in both]
    assert all(r.partitioned for r in both)
    status = await stub.Status(chaos_pb.StatusRequest(), timeout=5)
    assert status.partitioned and LONG - 5 < status.remaining_seconds <= LONG
    healed = await stub.Heal(chaos_pb.HealRequest(), timeout=5)
    assert healed.was_partitioned
    assert not any(r.partitioned for r in both)
    status = await stub.Status(chaos_pb.StatusRequest(), timeout=5)
    assert not status.partitioned and status.remaining_seconds == 0
    healed = await stub.Heal(chaos_pb.HealRequest(), timeout=5)
    assert not healed.was_partitioned


@pytest.mark.parametrize("seconds", [0, -1, 3600.5, math.nan])
async def test_control_refuses_a_partition_outside_0_to_3600_seconds(
    control, seconds: float
) -> None:
    stub, both = control
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Partition(chaos_pb.PartitionRequest(seconds=seconds), timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "seconds" in (err.value.details() or "")
    assert "3600" in (err.value.details() or "")
    assert not any(r.partitioned for r in both)


async def test_control_accepts_the_longest_partition(control) -> None:
    stub, both = control
    resp = await stub.Partition(chaos_pb.PartitionRequest(seconds=3600), timeout=5)
    assert resp.until_seconds_from_now == 3600
    assert all(r.partitioned for r in both)
