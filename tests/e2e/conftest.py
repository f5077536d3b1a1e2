"""Fixtures of the end-to-end tests: `cluster`, one `kubera up --detach` (in a private
KUBERA_HOME, kubera.testing.Cluster), its actors on the session's one Ray (`shared_ray`,
tests/conftest.py).

Clusters are shared. A module states its `kubera up` flags as a module-level `UP_ARGS`
tuple (none: the defaults); modules whose flags are equal once normalised (`cluster_key`)
use one cluster, started when the first of them needs it and stopped once the session
(an xdist worker) goes on to a test of other flags (`pytest_runtest_teardown`), so a
worker runs at most one shared cluster at a time. tests/conftest.py puts modules of one
key next to each other. A module on a shared cluster creates its objects in namespaces of
its own and deletes the cluster-scoped objects it made; the namespaces it leaves behind
are deleted after its last test (`namespaces_left_behind_deleted`, tests/e2e/helpers.py).

A module keeps a cluster of its own, started before its first test and stopped after its
last one, when it says `EXCLUSIVE = "why"` (it changes what other modules would see:
cordons, taints or drains nodes, kills or restarts components, counts every pod), when
its flags name files of its own (it overrides the `up_args` fixture, e.g. for a node
template written to a temporary directory), or when it overrides `own_ray` to True (a Ray
its cluster starts and `kubera down` stops, as a user's is: the modules that test that
path or kill Ray nodes). The helpers the tests call are in tests/e2e/helpers.py."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import namespaces_left_behind_deleted, running, shared_key


class SharedClusters:
    """At most one running shared cluster per session, by key."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory, ray_address: str) -> None:
        self._tmp = tmp_path_factory
        self._ray_address = ray_address
        self._stack = contextlib.ExitStack()
        self.key: tuple[str, ...] | None = None
        self._cluster: Cluster | None = None

    def get(self, key: tuple[str, ...]) -> Cluster:
        if self.key != key or self._cluster is None:
            self.close()
            home = self._tmp.mktemp("kubera-shared")
            self._cluster = self._stack.enter_context(
                running(home, *key, ray_address=self._ray_address)
            )
            self.key = key
        return self._cluster

    def close(self) -> None:
        self.key, self._cluster = None, None
        self._stack.close()


_SHARED = pytest.StashKey[SharedClusters]()


@pytest.fixture(scope="session")
def shared_clusters(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared_ray: str
) -> Iterator[SharedClusters]:
    clusters = SharedClusters(tmp_path_factory, shared_ray)
    request.config.stash[_SHARED] = clusters
    try:
        yield clusters
    finally:
        clusters.close()
        del request.config.stash[_SHARED]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the shared cluster once the next test runs on other flags (or on none)."""
    clusters = item.config.stash.get(_SHARED, None)
    if clusters is None or clusters.key is None:
        return
    if nextitem is not None and getattr(nextitem, "module", None) is item.module:
        return  # the module's `cluster` is the shared one until its last test
    if nextitem is None or shared_key(nextitem) != clusters.key:
        clusters.close()


@pytest.fixture(scope="module")
def up_args() -> tuple[str, ...]:
    """The flags of the module's own `kubera up --detach` (a module whose flags name files
    of its own overrides it)."""
    return ()


@pytest.fixture(scope="module")
def own_ray() -> bool:
    """Whether the module's cluster starts a Ray of its own (False: it uses `shared_ray`)."""
    return False


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    up_args: tuple[str, ...],
    own_ray: bool,
) -> Iterator[Cluster]:
    key = shared_key(request.node)
    if key is not None:
        k = request.getfixturevalue("shared_clusters").get(key)
        with namespaces_left_behind_deleted(k):
            yield k
        return
    args = up_args or tuple(getattr(request.module, "UP_ARGS", ()))
    ray_address = "" if own_ray else request.getfixturevalue("shared_ray")
    home = tmp_path_factory.mktemp("kubera-home")
    with running(home, *args, ray_address=ray_address) as k:
        yield k
