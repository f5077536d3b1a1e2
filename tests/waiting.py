"""Waiting in tests for state that no event announces: poll a condition until it holds."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any


async def eventually(cond: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll `cond` (sync, or returning an awaitable) until it returns something truthy;
    returns that. Fails the test when `timeout` seconds pass first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = cond()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return got
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(interval)


def until(check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2) -> Any:
    """The blocking twin of `eventually`, for end-to-end tests that drive the CLI: poll
    `check` until it returns something truthy; returns that, or fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(interval)
