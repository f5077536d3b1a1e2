"""A configurable API call for the dispatcher's tests (upstream api_dispatcher_test.go's
mockAPICall, with its "low" and "high" relevances)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

LOW, HIGH = "low", "high"
#: upstream mockRelevances
RELEVANCES = {LOW: 1, HIGH: 2}


class MockCall:
    """`noop`: is_noop() answers it (a callable: asked each time). `noop_after_merge` /
    `noop_after_sync`: is_noop() turns True once merge() / sync() ran. `gate`: execute()
    waits for it; `fail`: execute() raises it. Counts every method's calls and records
    the order of executions in `log` (shared between calls)."""

    def __init__(
        self,
        uid: str,
        call_type: str = LOW,
        *,
        name: str = "",
        noop: bool | Callable[[], bool] = False,
        noop_after_merge: bool = False,
        noop_after_sync: bool = False,
        gate: asyncio.Event | None = None,
        fail: Exception | None = None,
        log: list[str] | None = None,
    ) -> None:
        self.uid = uid
        self.call_type = call_type
        self.name = name or f"{call_type}-{uid}"
        self._noop = noop
        self.noop_after_merge = noop_after_merge
        self.noop_after_sync = noop_after_sync
        self.gate = gate
        self.fail = fail
        self.log = log if log is not None else []
        self.executed = self.merged = self.synced = self.noop_asked = 0

    async def execute(self, client: Any) -> None:
        self.executed += 1
        self.log.append(f"start {self.name}")
        if self.gate is not None:
            await self.gate.wait()
        self.log.append(f"end {self.name}")
        if self.fail is not None:
            raise self.fail

    def merge(self, old: Any) -> None:
        self.merged += 1
        if self.noop_after_merge:
            self._noop = True

    def sync(self, obj: Any) -> Any:
        self.synced += 1
        if self.noop_after_sync:
            self._noop = True
        obj.metadata.annotations["synced"] = "true"
        return obj

    def is_noop(self) -> bool:
        self.noop_asked += 1
        return self._noop() if callable(self._noop) else self._noop
