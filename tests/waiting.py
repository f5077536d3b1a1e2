"""Waiting in tests for state that no event announces: poll a condition until it holds."""

from __future__ import annotations

import asyncio
import inspect
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
