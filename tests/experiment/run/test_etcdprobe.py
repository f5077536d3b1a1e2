"""The same-run etcd yardstick (kubera/experiment/run/etcdprobe.py) on a fake store: its
puts stay outside kubera's prefixes, at most IN_FLIGHT at a time, and are deleted after."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubera.experiment.run import etcdprobe
from services.storage import Delete, Put


class FakeStorage:
    def __init__(self, endpoint: str) -> None:
        self.keys: set[str] = set()
        self.inflight = self.most = 0
        self.closed = False
        STORES.append(self)

    async def connect(self) -> None:
        pass

    async def txn(self, compares: list[Any], ops: list[Any]) -> None:
        self.inflight += 1
        self.most = max(self.most, self.inflight)
        await asyncio.sleep(0)
        for op in ops:
            if isinstance(op, Put):
                self.keys.add(op.key)
            elif isinstance(op, Delete):
                self.keys.discard(op.key)
        self.inflight -= 1

    async def close(self) -> None:
        self.closed = True


STORES: list[FakeStorage] = []


async def test_put_rate_writes_outside_kuberas_prefixes_and_cleans_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(etcdprobe, "EtcdStorage", FakeStorage)
    seen: list[str] = []
    original = FakeStorage.txn

    async def txn(self: FakeStorage, compares: list[Any], ops: list[Any]) -> None:
        seen.extend(op.key for op in ops)
        await original(self, compares, ops)

    monkeypatch.setattr(FakeStorage, "txn", txn)
    rate = await etcdprobe.put_rate("127.0.0.1:1", puts=200, in_flight=8)
    store = STORES[-1]
    assert rate > 0 and store.closed and store.keys == set()
    assert 1 < store.most <= 8
    assert all(k.startswith("/kubera-etcd-probe/") for k in seen)
    assert not any(k.startswith(("/registry/", "/kubera/")) for k in seen)
