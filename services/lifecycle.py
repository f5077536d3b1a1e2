"""One lifecycle for every component: `Component(client, config)`, then `start()` /
`stop()`.

A component's work is one coroutine, `run(stop)`, that returns once `stop` is set (a
leader's term, or a test's whole run). `Background` runs it as a task: `start()` returns at
once, `stop()` sets the event and waits for `run` to finish its cleanup. Replicas that lead
through an elector call `run(stop)` themselves, with the elector's event.
"""

from __future__ import annotations

import asyncio


class Background:
    """Mixin: `start()` / `stop()` / `running` over the class's `run(stop)`."""

    _background_name = "component"
    _background_stop: asyncio.Event | None = None
    _background_task: asyncio.Task[None] | None = None

    async def run(self, stop: asyncio.Event) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        """Run in the background until `stop()`."""
        if self._background_task is not None:
            raise RuntimeError(f"{self._background_name} already started")
        self._background_stop = asyncio.Event()
        self._background_task = asyncio.create_task(
            self.run(self._background_stop), name=self._background_name
        )

    async def stop(self) -> None:
        """Set the stop event and wait for `run` to finish."""
        if self._background_stop is not None:
            self._background_stop.set()
        if self._background_task is not None:
            await self._background_task

    @property
    def running(self) -> bool:
        return self._background_task is not None and not self._background_task.done()
