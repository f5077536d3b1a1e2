"""`start()` / `stop()` over a component's `run(stop)` (services/lifecycle.py)."""

from __future__ import annotations

import asyncio

import pytest

from services.lifecycle import Background


class Recorder(Background):
    _background_name = "recorder"

    def __init__(self) -> None:
        self.events: list[str] = []

    async def run(self, stop: asyncio.Event) -> None:
        self.events.append("started")
        await stop.wait()
        await asyncio.sleep(0)  # cleanup that takes a turn of the loop
        self.events.append("cleaned up")


async def test_stop_waits_for_run_to_clean_up() -> None:
    r = Recorder()
    assert not r.running
    await r.start()
    await asyncio.sleep(0)
    assert r.running and r.events == ["started"]
    await r.stop()
    assert not r.running and r.events == ["started", "cleaned up"]


async def test_starting_twice_is_refused_with_the_components_name() -> None:
    r = Recorder()
    await r.start()
    with pytest.raises(RuntimeError, match="recorder already started"):
        await r.start()
    await r.stop()


async def test_stop_before_start_is_a_no_op() -> None:
    r = Recorder()
    await r.stop()
    assert r.events == []
