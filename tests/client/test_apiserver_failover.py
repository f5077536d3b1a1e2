"""Clients of several apiserver replicas on one storage (`kubera up --apiservers K`): calls
go to one replica; when it dies, the call that saw it fails UNAVAILABLE (as with one
apiserver) and the next goes to the other replica; an informer re-watches there from its
last resourceVersion, keeping its cache (no relist), and misses no event."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import pytest

from services.api.machinery.errors import UnavailableError
from services.api.machinery.kinds import BY_KIND
from services.chaos.relay import Relay
from services.client import Client
from services.client.informer import Handlers, Informer
from services.storage import StorageUnavailableError
from services.storage.memory import MemoryStorage
from tests.builders import pod
from tests.client.test_reconnect import Restartable
from tests.waiting import eventually

PODS = BY_KIND["Pod"]
T = TypeVar("T")


@pytest.fixture
async def replicas() -> AsyncIterator[list[Restartable]]:
    storage = MemoryStorage()
    out = [Restartable(storage), Restartable(storage)]
    for r in out:
        await r.start()
    try:
        yield out
    finally:
        for r in out:
            await r.stop()


def addresses(replicas: list[Restartable]) -> str:
    return ",".join(f"127.0.0.1:{r.port}" for r in replicas)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def retried(call: Callable[[], Awaitable[T]]) -> T:
    """`call()`, once more after an UnavailableError, as callers retry: the call that
    was in flight on the replica when it died fails; a call that could not connect at all
    went to the other replica by itself."""
    try:
        return await call()
    except UnavailableError:
        return await call()


async def test_calls_move_to_the_other_replica_when_one_dies(
    replicas: list[Restartable],
) -> None:
    async with Client(addresses(replicas), timeout=5) as client:
        first = client.endpoints.current
        await client.create(pod("a"))
        await replicas[0].kill()
        got = await retried(lambda: client.get(PODS, "a", "default"))
        assert got.metadata.name == "a"  # type: ignore[attr-defined]
        assert client.endpoints.current != first
        await client.create(pod("b"))
        assert client.endpoints.failovers == 1


async def test_a_call_that_cannot_connect_is_sent_to_the_next_replica(
    replicas: list[Restartable],
) -> None:
    """Nothing listens at the first address: every call, a write too, is sent to the
    second without an error (its request never left), and applied once."""
    dead = f"127.0.0.1:{free_port()}"
    async with Client(f"{dead},127.0.0.1:{replicas[1].port}", timeout=5) as client:
        created = await client.create(pod("a"))
        assert created.metadata.name == "a"  # type: ignore[attr-defined]
        assert client.endpoints.failovers == 1
        items, _ = await client.list(PODS)
        assert [p.metadata.name for p in items] == ["a"]  # type: ignore[attr-defined]
    async with Client(f"{dead},127.0.0.1:{replicas[1].port}", timeout=5) as client:
        seen = []
        async for ev in client.watch(PODS):
            seen.append(ev.object.metadata.name)  # type: ignore[attr-defined]
            break
        assert seen == ["a"] and client.endpoints.failovers == 1


@pytest.mark.parametrize(
    "error",
    [StorageUnavailableError("etcd at 127.0.0.1:2379: connection reset"), UnavailableError("busy")],
    ids=["storage", "with-reason"],
)
async def test_an_unavailable_the_apiserver_sends_keeps_the_replica(
    replicas: list[Restartable],
    error: Exception,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An UNAVAILABLE that the apiserver answered with (its etcd unreachable, or its own
    ServiceUnavailable) is the caller's error, as with one apiserver, but the replica was
    reached: the client stays on it (every replica is on the same etcd) and logs nothing;
    a transport failure on the same client still moves it on."""
    async with Client(addresses(replicas), timeout=5) as client:
        first = client.endpoints.current

        async def revision() -> int:
            raise error

        monkeypatch.setattr(replicas[0].storage, "revision", revision)  # Health's read
        for _ in range(3):
            with pytest.raises(UnavailableError):
                await client.health()
        assert client.endpoints.current == first and client.endpoints.failovers == 0
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        monkeypatch.undo()
        await replicas[0].kill()
        await retried(client.health)
        assert client.endpoints.current != first and client.endpoints.failovers == 1


async def test_a_call_through_a_relay_to_a_dead_replica_is_sent_to_the_next(
    replicas: list[Restartable],
) -> None:
    """Replicas dial through chaos relays, which accept the TCP connection themselves:
    when the relay's target refuses, the relay closes the connection before the HTTP/2
    handshake, which gRPC reports as a failed connect, so a write is still sent on to
    the next replica without an error, and applied once."""
    relays = [
        await Relay.start("127.0.0.1", free_port()),
        await Relay.start("127.0.0.1", replicas[1].port),
    ]
    try:
        async with Client(",".join(r.address for r in relays), timeout=5) as client:
            created = await client.create(pod("a"))
            assert created.metadata.name == "a"  # type: ignore[attr-defined]
            assert client.endpoints.current == relays[1].address
            assert client.endpoints.failovers == 1
            items, _ = await client.list(PODS)
            assert [p.metadata.name for p in items] == ["a"]  # type: ignore[attr-defined]
    finally:
        for relay in relays:
            await relay.close()


async def test_every_replica_down_is_one_error(replicas: list[Restartable]) -> None:
    async with Client(addresses(replicas), timeout=5) as client:
        for r in replicas:
            await r.kill()
        with pytest.raises(UnavailableError):
            await client.list(PODS)
        assert client.endpoints.failovers <= 2  # each replica tried once at most


async def test_a_fenced_copy_shares_the_replica_in_use(replicas: list[Restartable]) -> None:
    async with Client(addresses(replicas), timeout=5) as client:
        other = client.fenced(None)
        await client.list(PODS)
        await replicas[0].kill()
        await retried(lambda: client.list(PODS))
        assert other.endpoints.current == client.endpoints.current
        assert other.endpoints.current == f"127.0.0.1:{replicas[1].port}"
        await other.list(PODS)


@pytest.mark.parametrize("through_relay", [False, True], ids=["direct", "relay"])
async def test_informer_fails_over_keeping_its_cache(
    replicas: list[Restartable], through_relay: bool
) -> None:
    """Every event after the kill reaches the informer through the other replica; the
    informer resumes from its resourceVersion (no relist), its handlers see each change
    once, and the objects it had stay in its store."""
    relays = [await Relay.start("127.0.0.1", r.port) for r in replicas] if through_relay else []
    address = ",".join(r.address for r in relays) if relays else addresses(replicas)
    added: list[str] = []
    async with Client(address, timeout=5) as client:
        for i in range(3):
            await client.create(pod(f"before-{i}"))
        informer = Informer(client, PODS)
        informer.add_handlers(Handlers(on_add=lambda o: added.append(o.metadata.name)))  # type: ignore[attr-defined]
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.synced.wait(), 10)
            await replicas[0].kill()
            survivor = replicas[1].api
            assert survivor is not None
            for i in range(3):
                await survivor.create(pod(f"after-{i}"))
            await survivor.delete(PODS, "default", "before-0")
            want = {f"default/before-{i}" for i in (1, 2)} | {
                f"default/after-{i}" for i in range(3)
            }
            await eventually(lambda: set(informer.store) == want, 10)
            assert informer.relists == 0
            assert sorted(added) == sorted(
                [f"before-{i}" for i in range(3)] + [f"after-{i}" for i in range(3)]
            )
            assert client.endpoints.failovers == 1
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for relay in relays:
                await relay.close()


async def test_back_round_to_a_restarted_replica(replicas: list[Restartable]) -> None:
    """Both die in turn, the first coming back in between: the client goes round to it."""
    async with Client(addresses(replicas), timeout=5) as client:
        await client.create(pod("a"))
        await replicas[0].kill()
        await retried(lambda: client.list(PODS))
        await replicas[0].start()  # same port, new watch cache
        await replicas[1].kill()

        async def listed() -> list[str]:
            # the first's channel may still be waiting to redial (at most 0.25 s): until
            # then calls fail UNAVAILABLE and the client goes round again, as callers retry
            try:
                items, _ = await client.list(PODS)
            except UnavailableError:
                return []
            return [p.metadata.name for p in items]  # type: ignore[attr-defined]

        assert await eventually(listed, 10) == ["a"]
        assert client.endpoints.current == f"127.0.0.1:{replicas[0].port}"
