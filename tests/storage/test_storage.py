"""The storage contract, run against both the in-memory fake and a real etcd."""

from __future__ import annotations

import asyncio

import pytest

from services.storage import CompactedError, Compare, Delete, Get, Put, Storage


async def test_put_then_get_reports_revisions(storage: Storage) -> None:
    r1 = await storage.txn([Compare("/a", "create", "==", 0)], [Put("/a", b"1")])
    assert r1.succeeded
    kv = await storage.get("/a")
    assert kv is not None and kv.value == b"1"
    assert kv.create_revision == kv.mod_revision == r1.revision
    r2 = await storage.txn([Compare("/a", "mod", "==", r1.revision)], [Put("/a", b"2")])
    kv2 = await storage.get("/a")
    assert r2.succeeded and kv2 is not None
    assert kv2.create_revision == r1.revision and kv2.mod_revision == r2.revision > r1.revision
    assert kv2.version == 2


async def test_create_compare_refuses_an_existing_key(storage: Storage) -> None:
    await storage.txn([], [Put("/a", b"1")])
    res = await storage.txn([Compare("/a", "create", "==", 0)], [Put("/a", b"x")], [Get("/a")])
    assert not res.succeeded
    assert res.gets[0] is not None and res.gets[0].value == b"1"
    assert (await storage.get("/a")).value == b"1"  # type: ignore[union-attr]


async def test_stale_mod_revision_never_overwrites(storage: Storage) -> None:
    r1 = await storage.txn([], [Put("/a", b"1")])
    await storage.txn([], [Put("/a", b"2")])
    res = await storage.txn([Compare("/a", "mod", "==", r1.revision)], [Put("/a", b"stale")])
    assert not res.succeeded
    assert (await storage.get("/a")).value == b"2"  # type: ignore[union-attr]


async def test_list_is_prefix_scoped_and_sorted(storage: Storage) -> None:
    for k in ("/r/pods/b", "/r/pods/a", "/r/podsx/c", "/r/nodes/n"):
        await storage.txn([], [Put(k, b"v")])
    items, rev = await storage.list("/r/pods/")
    assert [kv.key for kv in items] == ["/r/pods/a", "/r/pods/b"]
    assert rev >= max(kv.mod_revision for kv in items)


async def test_missing_key_compares_as_zero(storage: Storage) -> None:
    res = await storage.txn(
        [Compare("/none", "create", "==", 0), Compare("/none", "mod", "==", 0)], [Put("/x", b"1")]
    )
    assert res.succeeded


async def _collect(storage: Storage, prefix: str, start: int, n: int) -> list:
    out = []
    async for batch in storage.watch(prefix, start):
        out.extend(batch.events)
        if len(out) >= n:
            return out
    return out


async def test_watch_from_a_revision_replays_history_in_order(storage: Storage) -> None:
    r1 = await storage.txn([], [Put("/w/a", b"1")])
    await storage.txn([], [Put("/w/a", b"2")])
    await storage.txn([], [Delete("/w/a")])
    await storage.txn([], [Put("/other", b"x")])
    events = await asyncio.wait_for(_collect(storage, "/w/", r1.revision, 3), 10)
    assert [(e.type, e.kv.value) for e in events] == [("PUT", b"1"), ("PUT", b"2"), ("DELETE", b"")]
    assert events[2].prev is not None and events[2].prev.value == b"2"


async def test_watch_sees_later_writes(storage: Storage) -> None:
    rev = (await storage.txn([], [Put("/w/seed", b"0")])).revision

    async def writer() -> None:
        await asyncio.sleep(0.05)
        await storage.txn([], [Put("/w/a", b"1")])

    task = asyncio.create_task(writer())
    events = await asyncio.wait_for(_collect(storage, "/w/", rev + 1, 1), 10)
    await task
    assert events[0].kv.key == "/w/a"


async def test_watch_from_a_compacted_revision_is_refused(storage: Storage) -> None:
    r1 = await storage.txn([], [Put("/c/a", b"1")])
    r2 = await storage.txn([], [Put("/c/a", b"2")])
    await storage.compact(r2.revision)
    with pytest.raises(CompactedError):
        await asyncio.wait_for(_collect(storage, "/c/", r1.revision, 1), 10)


async def test_multi_key_txn_is_all_or_nothing(storage: Storage) -> None:
    await storage.txn([], [Put("/m/taken", b"1")])
    res = await storage.txn(
        [Compare("/m/a", "create", "==", 0), Compare("/m/taken", "create", "==", 0)],
        [Put("/m/a", b"1"), Put("/m/taken", b"2")],
    )
    assert not res.succeeded
    assert await storage.get("/m/a") is None


async def test_a_get_after_a_put_in_one_txn_sees_the_put(storage) -> None:
    res = await storage.txn([], [Put("/t/k", b"v1"), Get("/t/k")])
    assert res.gets[0] is not None and res.gets[0].value == b"v1"


async def test_a_put_moves_the_key_to_its_new_lease(storage) -> None:
    old = await storage.grant_lease(30)
    new = await storage.grant_lease(30)
    await storage.txn([], [Put("/t/leased", b"a", lease=old)])
    await storage.txn([], [Put("/t/leased", b"b", lease=new)])
    await storage.revoke_lease(old)
    kv = await storage.get("/t/leased")
    assert kv is not None and kv.value == b"b" and kv.lease == new
    await storage.revoke_lease(new)
    assert await storage.get("/t/leased") is None
