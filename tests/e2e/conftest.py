"""Fixtures of the end-to-end tests: `cluster`, one `kubera up --detach` (in a private
KUBERA_HOME, kubera.testing.Cluster) per test module, stopped after the module's tests,
and `shared_ray`, the one Ray cluster of the session those clusters run their actors on.

A module passes its `kubera up` flags by overriding the `up_args` fixture, and gets a Ray
of its cluster's own (started and stopped by `kubera up` and `kubera down`, as a user's
is) by overriding `own_ray` to True: the modules that test that path or kill Ray nodes.
The helpers the tests call are in tests/e2e/helpers.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import ray_head, running


@pytest.fixture(scope="module")
def up_args() -> tuple[str, ...]:
    """The flags of the module's `kubera up --detach` (none: the defaults)."""
    return ()


@pytest.fixture(scope="session")
def shared_ray() -> Iterator[str]:
    """The address of one Ray cluster (a head on loopback) for the whole session. Starting
    a Ray head costs a cluster most of its `kubera up`; the e2e clusters share this one,
    each in a Ray namespace of its own, and `kubera down` removes its actors from it."""
    with ray_head() as address:
        yield address


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
    ray_address = "" if own_ray else request.getfixturevalue("shared_ray")
    home = tmp_path_factory.mktemp("kubera-home")
    with running(home, *up_args, ray_address=ray_address) as k:
        yield k
