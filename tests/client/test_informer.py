"""Informers over the real gRPC apiserver (in-memory storage): events, and relist on gone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.client import Client
from services.client.informer import Handlers, Informer
from tests.builders import pod
from tests.harness import control_plane

PODS = BY_KIND["Pod"]


@pytest.fixture
async def setup() -> AsyncIterator[tuple[ApiServer, Client]]:
    config = ApiServerConfig(watch_cache_capacity=10, bookmark_interval=0.1)
    async with control_plane(config=config) as cp:
        yield cp.api, cp.client


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    def handlers(self) -> Handlers:
        def add(o) -> None:
            self.events.append(("add", o.metadata.name))
            self.changed.set()

        def update(old, new) -> None:
            self.events.append(("update", new.metadata.name))
            self.changed.set()

        def delete(o) -> None:
            self.events.append(("delete", o.metadata.name))
            self.changed.set()

        return Handlers(add, update, delete)

    async def wait_for(self, pred, timeout: float = 10.0) -> None:
        async def loop() -> None:
            while not pred(self.events):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), timeout)


async def test_informer_lists_then_follows_changes(setup) -> None:
    api, client = setup
    await api.create(pod("a"))
    rec = Recorder()
    inf = Informer(client, PODS)
    inf.add_handlers(rec.handlers())
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)
        assert rec.events == [("add", "a")]
        await api.create(pod("b"))
        await api.patch(PODS, "default", "a", '{"metadata": {"labels": {"x": "y"}}}')
        await api.delete(PODS, "default", "b")
        await rec.wait_for(lambda ev: ("delete", "b") in ev)
        assert rec.events == [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b")]
        assert set(inf.store) == {"default/a"}
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_informer_relists_when_its_version_is_gone(setup) -> None:
    api, client = setup
    await api.create(pod("keep"))
    await api.create(pod("goes"))
    rec = Recorder()
    inf = Informer(client, PODS)
    inf.add_handlers(rec.handlers())
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(inf.synced.wait(), 10)
    task.cancel()  # the informer is away while the window moves on
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await api.delete(PODS, "default", "goes")
    for i in range(15):  # more than the 10-event window
        await api.create(pod(f"n{i}"))
    _, now = await api.list(PODS)
    assert await api.caches["pods"].wait_revision(now, 10)
    task = asyncio.create_task(inf.run())
    try:
        await rec.wait_for(lambda ev: ("delete", "goes") in ev and ("add", "n14") in ev)
        assert inf.relists == 1
        assert set(inf.store) == {"default/keep", *(f"default/n{i}" for i in range(15))}
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.parametrize("event", ["add", "update", "delete"])
async def test_a_raising_handler_costs_only_its_object(
    setup, event: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One handler raising for "poison" is logged once with the key; the other handler
    still sees "poison", and the informer goes on to the following objects."""
    api, client = setup
    rec = Recorder()

    def boom(*objs) -> None:
        if objs[-1].metadata.name == "poison":
            raise OverflowError("poison")

    raising = Handlers(
        on_add=boom if event == "add" else None,
        on_update=boom if event == "update" else None,
        on_delete=boom if event == "delete" else None,
    )
    inf = Informer(client, PODS)
    inf.add_handlers(raising)
    inf.add_handlers(rec.handlers())
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)
        await api.create(pod("poison"))
        await api.patch(PODS, "default", "poison", '{"metadata": {"labels": {"x": "y"}}}')
        await api.delete(PODS, "default", "poison")
        await api.create(pod("after"))
        await rec.wait_for(lambda ev: ("add", "after") in ev)
        assert rec.events == [
            ("add", "poison"),
            ("update", "poison"),
            ("delete", "poison"),
            ("add", "after"),
        ]
        assert inf.handler_errors == 1
        failures = [r for r in caplog.records if "handler failed" in r.getMessage()]
        assert [r.getMessage() for r in failures] == [
            f"informer pods: {event} handler failed for default/poison; skipped it"
        ]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_an_object_failing_the_same_way_again_is_counted_not_logged_again(
    setup, caplog: pytest.LogCaptureFixture
) -> None:
    api, client = setup
    rec = Recorder()

    def boom(old, new) -> None:
        raise OverflowError("poison")

    inf = Informer(client, PODS)
    inf.add_handlers(Handlers(on_update=boom))
    inf.add_handlers(rec.handlers())
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)
        await api.create(pod("poison"))
        for i in range(3):
            await api.patch(
                PODS, "default", "poison", f'{{"metadata": {{"labels": {{"n": "{i}"}}}}}}'
            )
        await rec.wait_for(lambda ev: ev.count(("update", "poison")) == 3)
        assert inf.handler_errors == 3
        failures = [r for r in caplog.records if "handler failed" in r.getMessage()]
        assert len(failures) == 1 and failures[0].exc_info is not None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_every_handler_gets_the_one_decoded_object_of_an_event(setup) -> None:
    api, client = setup
    seen: list[list[object]] = [[], []]
    changed = asyncio.Event()

    def on(i: int) -> Handlers:
        def add(o) -> None:
            seen[i].append(o)
            changed.set()

        def update(old, new) -> None:
            seen[i].append(new)
            changed.set()

        return Handlers(add, update)

    inf = Informer(client, PODS)
    inf.add_handlers(on(0))
    inf.add_handlers(on(1))
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)
        await api.create(pod("a"))
        await api.patch(PODS, "default", "a", '{"metadata": {"labels": {"x": "y"}}}')

        async def both_updated() -> None:
            while len(seen[1]) < 2:
                changed.clear()
                await changed.wait()

        await asyncio.wait_for(both_updated(), 10)
        assert len(seen[0]) == len(seen[1]) == 2
        # Decoded once per event: both handlers hold the very object the store holds.
        assert all(a is b for a, b in zip(seen[0], seen[1], strict=True))
        assert seen[1][-1] is inf.store["default/a"]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
