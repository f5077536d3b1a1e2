"""Fixtures shared by every test folder: a real etcd and a Ray head (each started by the
first test of the session that asks for it, stopped by PID at the end of the session; under
`make test`'s two pytest-xdist workers each worker is a session, with its own etcd and Ray),
and the storage backends the same tests run against. Loading it also
loads the hypothesis profile $HYPOTHESIS_PROFILE names (tests/profiles.py: `fast` unless
`make test-deep` asks for `deep`)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kubera.launch.etcd import EtcdProcess
from services.storage import Storage
from services.storage.etcd import EtcdStorage
from services.storage.memory import MemoryStorage
from tests import profiles
from tests.e2e.helpers import shared_key
from tests.harness import wipe
from tests.rayhead import ray_head

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
profiles.load()


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdProcess]:
    d: Path = tmp_path_factory.mktemp("etcd")
    proc = EtcdProcess(d / "data", log_path=d / "etcd.log").start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def shared_ray() -> Iterator[str]:
    """The address of one Ray cluster (a head on loopback) for the whole session, for the
    clusters tests start with `kubera up --ray-address` (tests/rayhead.py `on_ray`)."""
    with ray_head() as address:
        yield address


async def _wipe(storage: Storage) -> None:
    await wipe(storage)


@pytest.fixture(params=["memory", "etcd"])
async def storage(request: pytest.FixtureRequest) -> AsyncIterator[Storage]:
    """Each test runs on the in-memory fake and on real etcd (wiped before the test)."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    etcd: EtcdProcess = request.getfixturevalue("etcd_server")
    s = EtcdStorage(etcd.endpoint)
    await s.connect()
    await _wipe(s)
    try:
        yield s
    finally:
        await s.close()


#: The order modules start in (lower first): the ones that run the CLI end to end, then
#: the other ones on a real Ray, then on a real etcd, then the rest. `make test` hands the
#: modules to its two workers in this order (`--no-loadscope-reorder`; pytest-xdist would
#: otherwise start the modules with the most tests first), so the long clusters start early
#: and the short unit modules fill the end of both workers instead of one worker finishing
#: a cluster alone.
_START_ORDER = ("e2e", "ray", "integration")


def _start_rank(item: pytest.Item) -> int:
    marks = {m.name for m in item.iter_markers()}
    return next((i for i, name in enumerate(_START_ORDER) if name in marks), len(_START_ORDER))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Sort modules by `_START_ORDER`, a module by its first-ranked test; a module's tests
    stay together and in their order (its module fixtures are set up once), and modules of
    one rank keep the collection's order, except that modules on one shared cluster
    (tests/e2e/conftest.py) follow the first of them, so a worker starts it once."""
    rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        rank[module] = min(rank.get(module, len(_START_ORDER)), _start_rank(item))
    position = {item.nodeid: i for i, item in enumerate(items)}
    first: dict[str, int] = {}
    group: dict[tuple[int, tuple[str, ...]], int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in first:
            continue
        first[module] = position[item.nodeid]
        key = shared_key(item)
        if key is not None:
            first[module] = group.setdefault((rank[module], key), first[module])
    items.sort(
        key=lambda it: (rank[m := it.nodeid.split("::", 1)[0]], first[m], position[it.nodeid])
    )
