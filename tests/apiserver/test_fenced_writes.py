"""Fenced writes in the registry, on the in-memory fake and on real etcd: every write made
under `fencing.CURRENT` is compared with the election key's create_revision in its own
txn, so a leader whose term is over changes nothing; reads are never fenced."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.fencing import BOUND_BY, Fencing, parse_bound_by
from services.api.machinery.errors import InvalidError, PreconditionError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import fencing
from services.apiserver.registry import ApiServer
from services.leaderelection.lock import StorageLock
from services.storage import Get, Storage
from tests.builders import pod

PODS = BY_KIND["Pod"]
KEY = "/kubera/leaderelection/kube-system/kube-scheduler"

Write = Callable[[ApiServer], Awaitable[object]]


@contextlib.contextmanager
def under(token: Fencing | None) -> Iterator[None]:
    """Serve what follows as a request carrying `token` (what the gRPC edge does)."""
    reset = fencing.CURRENT.set(token)
    try:
        yield
    finally:
        fencing.CURRENT.reset(reset)


async def _labelled(api: ApiServer) -> core_pb2.Pod:
    p: core_pb2.Pod = await api.get(PODS, "default", "p")  # type: ignore[assignment]
    p.metadata.labels["written"] = "yes"
    return p


async def _update(api: ApiServer) -> object:
    return await api.update(await _labelled(api))


async def _update_status(api: ApiServer) -> object:
    p: core_pb2.Pod = await api.get(PODS, "default", "p")  # type: ignore[assignment]
    p.status.message = "written"
    return await api.update_status(p)


async def _batch_create(api: ApiServer) -> object:
    results = await api.batch_create([pod("b1"), pod("b2")])
    assert all(r.error is None for r in results), results
    return results


async def _batch_update(api: ApiServer) -> object:
    results = await api.batch_update([await _labelled(api)])
    assert all(r.error is None for r in results), results
    return results


#: Every kind of write, each on the pod "p" (unbound, so a delete removes it at once).
WRITES: dict[str, Write] = {
    "create": lambda api: api.create(pod("new")),
    "update": _update,
    "update_status": _update_status,
    "patch": lambda api: api.patch(PODS, "default", "p", '{"metadata":{"labels":{"w":"1"}}}'),
    "delete": lambda api: api.delete(PODS, "default", "p"),
    "batch_create": _batch_create,
    "batch_update": _batch_update,
    "bind": lambda api: api.bind("default", "p", "n1"),
}


async def _state(storage: Storage) -> dict[str, tuple[int, bytes]]:
    items, _ = await storage.list("/registry/")
    return {kv.key: (kv.mod_revision, kv.value) for kv in items}


@pytest.fixture
async def lock(storage: Storage) -> StorageLock:
    return StorageLock(storage, KEY, lease_duration=15)


async def _won(lock: StorageLock, identity: str = "a"):  # type: ignore[no-untyped-def]
    held, _ = await lock.create(identity)
    assert held is not None
    return held


@pytest.mark.parametrize("write", list(WRITES))
async def test_a_write_under_the_current_token_succeeds(
    api: ApiServer, lock: StorageLock, write: str
) -> None:
    await api.create(pod("p"))
    held = await _won(lock)
    with under(Fencing(KEY, held.create_revision)):
        await WRITES[write](api)
    # The election key itself is untouched by fenced writes (only compared).
    kv = await api.storage.get(KEY)
    assert kv is not None and kv.mod_revision == held.mod_revision


async def test_a_fenced_bind_records_the_token_on_the_pod(
    api: ApiServer, lock: StorageLock
) -> None:
    await api.create(pod("p"))
    held = await _won(lock)
    token = Fencing(KEY, held.create_revision)
    with under(token):
        bound = await api.bind("default", "p", "n1")
    stored: core_pb2.Pod = await api.get(PODS, "default", "p")  # type: ignore[assignment]
    for p in (bound, stored):
        assert p.spec.node_name == "n1"  # type: ignore[attr-defined]
        assert p.metadata.annotations[BOUND_BY] == f"fenced {KEY}@{held.create_revision}"  # type: ignore[attr-defined]
    assert parse_bound_by(stored.metadata.annotations[BOUND_BY]) == (
        "fenced",
        KEY,
        held.create_revision,
    )


async def test_an_explicit_bind_token_wins_over_the_requests(
    api: ApiServer, lock: StorageLock
) -> None:
    await api.create(pod("p"))
    held = await _won(lock)
    with under(Fencing(KEY, held.create_revision + 1000)):
        p = await api.bind("default", "p", "n1", fencing=Fencing(KEY, held.create_revision))
    assert p.metadata.annotations[BOUND_BY] == f"fenced {KEY}@{held.create_revision}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("successor", [None, "b"], ids=["released", "taken-over"])
@pytest.mark.parametrize("write", list(WRITES))
async def test_a_write_under_a_stale_token_is_refused_and_changes_nothing(
    api: ApiServer, lock: StorageLock, write: str, successor: str | None
) -> None:
    await api.create(pod("p"))
    held = await _won(lock)
    stale = Fencing(KEY, held.create_revision)
    assert await lock.release(held)
    holder = "is not held by anyone"
    if successor is not None:
        new = await _won(lock, successor)
        assert new.create_revision != held.create_revision
        holder = f"is held since revision {new.create_revision}"
    before = await _state(api.storage)

    with under(stale), pytest.raises(PreconditionError, match="stale leader") as err:
        await WRITES[write](api)

    assert str(stale) in str(err.value) and holder in str(err.value)
    assert await _state(api.storage) == before


async def test_a_stale_bind_leaves_the_pod_unbound_and_unannotated(
    api: ApiServer, lock: StorageLock
) -> None:
    await api.create(pod("p"))
    held = await _won(lock)
    await lock.release(held)
    await _won(lock, "b")
    with pytest.raises(PreconditionError, match=r"stale leader.*Binding of pod default/p refused"):
        await api.bind("default", "p", "n1", fencing=Fencing(KEY, held.create_revision))
    p: core_pb2.Pod = await api.get(PODS, "default", "p")  # type: ignore[assignment]
    assert p.spec.node_name == "" and BOUND_BY not in p.metadata.annotations


async def test_reads_are_never_fenced(api: ApiServer, lock: StorageLock) -> None:
    await api.create(pod("p"))
    held = await _won(lock)
    await lock.release(held)
    before = await _state(api.storage)
    with under(Fencing(KEY, held.create_revision)):
        assert (await api.get(PODS, "default", "p")).metadata.name == "p"  # type: ignore[attr-defined]
        items, _ = await api.list(PODS, "default")
        assert [o.metadata.name for o in items] == ["p"]  # type: ignore[attr-defined]
        dry = await api.create(pod("dry"), dry_run=True)
        assert dry.metadata.name == "dry"  # type: ignore[attr-defined]
        # A txn of Gets alone (batch_update's read) is a read, whatever the token.
        res = await api.store.txn([], [Get(PODS.key("default", "p"))])
        assert res.succeeded and res.gets[0] is not None
    assert await _state(api.storage) == before


@pytest.mark.parametrize(
    "token",
    [Fencing("", 5), Fencing(KEY, 0), Fencing(KEY, -1)],
    ids=["no-key", "revision-0", "negative-revision"],
)
@pytest.mark.parametrize("via", ["argument", "request"])
async def test_a_bind_with_an_invalid_token_is_invalid(
    api: ApiServer, token: Fencing, via: str
) -> None:
    await api.create(pod("p"))
    before = await _state(api.storage)
    ctx = under(token) if via == "request" else contextlib.nullcontext()
    with ctx, pytest.raises(InvalidError, match="fencing token needs the election key"):
        await api.bind("default", "p", "n1", fencing=token if via == "argument" else None)
    assert await _state(api.storage) == before
