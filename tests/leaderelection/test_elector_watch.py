"""A standby learns the election key from its watch (memory store and real etcd): renewals
arrive as records, a released key is campaigned for at once, and a silent holder's key is
expired from the record the watch last told, all without reading the key (each read is a
round trip on the takeover's path). With its watch broken a standby still polls and takes
over. Tests wait on callbacks, never on sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.storage import Storage, StorageUnavailableError
from tests.leaderelection.test_elector import (
    LEASE,
    RETRY,
    SLACK,
    Candidate,
    Election,
)


class CountingStorage:
    """Delegates to a store, counting reads of single keys; `watch_broken` makes every
    watch fail at once."""

    def __init__(self, inner: Storage) -> None:
        self._inner = inner
        self.gets = 0
        self.watch_broken = False

    async def get(self, key: str) -> Any:
        self.gets += 1
        return await self._inner.get(key)

    def watch(self, prefix: str, start_revision: int) -> Any:
        if self.watch_broken:
            return self._broken()
        return self._inner.watch(prefix, start_revision)

    async def _broken(self) -> AsyncIterator[Any]:
        raise StorageUnavailableError("injected: the watch broke")
        yield  # an async generator, like the real watch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
async def election(storage: Storage) -> AsyncIterator[Election]:
    e = Election(storage)
    try:
        yield e
    finally:
        await e.close()


def standby(election: Election, name: str) -> tuple[Candidate, CountingStorage]:
    counting = CountingStorage(election.storage)
    return election.start(name, storage=counting), counting  # type: ignore[arg-type]


async def test_a_standby_follows_renewals_without_reading_the_key(election: Election) -> None:
    a = election.start("a")
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    b, counting = standby(election, "b")
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)
    reads = counting.gets

    renewals = len(a.probe.records)
    await a.probe.wait_for(lambda: len(a.probe.records) >= renewals + 5, 10 * RETRY + SLACK)
    assert counting.gets == reads, "every renewal came on the watch"
    assert b.elector.leader_identity == "a" and not b.probe.led_at


async def test_a_released_key_is_campaigned_for_without_reading_it(election: Election) -> None:
    a = election.start("a")
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    b, counting = standby(election, "b")
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)
    reads = counting.gets

    await a.shutdown()  # releases: the key is deleted
    await b.probe.wait_for(lambda: bool(b.probe.led_at), RETRY + SLACK)
    assert counting.gets == reads
    assert b.elector.fencing_token is not None


async def test_a_silent_holders_key_is_expired_from_what_the_watch_told(
    election: Election,
) -> None:
    a = election.start("a")
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    b, counting = standby(election, "b")
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)

    # Kill a right after a renewal: no release, its key is left to expire (or be expired).
    seen = len(a.probe.records)
    await a.probe.wait_for(lambda: len(a.probe.records) > seen, 2 * RETRY + SLACK)
    a.task.cancel()
    election.candidates.remove(a)
    with contextlib.suppress(asyncio.CancelledError):
        await a.task
    reads = counting.gets
    await b.probe.wait_for(lambda: bool(b.probe.led_at), LEASE + 2 * SLACK + 1.0)
    assert counting.gets == reads
    kv = await election.storage.get(election.key)
    assert kv is not None and kv.value == b"b"


async def test_with_its_watch_broken_a_standby_polls_and_takes_over(election: Election) -> None:
    a = election.start("a")
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    b, counting = standby(election, "b")
    counting.watch_broken = True
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)

    await a.shutdown()
    # Polled: within one jittered retry period of the release, plus round trips.
    await b.probe.wait_for(lambda: bool(b.probe.led_at), RETRY * 2.2 + SLACK)
    assert counting.gets >= 2
    assert b.elector.fencing_token is not None
