"""Fixtures of the end-to-end tests: `cluster`, one `kubera up --detach` (in a private
KUBERA_HOME, kubera.testing.Cluster) per test module, stopped after the module's tests,
its actors on the session's one Ray (`shared_ray`, tests/conftest.py).

A module passes its `kubera up` flags by overriding the `up_args` fixture, and gets a Ray
of its cluster's own (started and stopped by `kubera up` and `kubera down`, as a user's
is) by overriding `own_ray` to True: the modules that test that path or kill Ray nodes.
The helpers the tests call are in tests/e2e/helpers.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import running


@pytest.fixture(scope="module")
def up_args() -> tuple[str, ...]:
    """The flags of the module's `kubera up --detach` (none: the defaults)."""
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
    ray_address = "" if own_ray else request.getfixturevalue("shared_ray")
    home = tmp_path_factory.mktemp("kubera-home")
    with running(home, *up_args, ray_address=ray_address) as k:
        yield k
