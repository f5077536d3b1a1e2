"""Fixtures of the end-to-end tests: `cluster`, one `kubera up --detach` (in a private
KUBERA_HOME, kubera.testing.Cluster) per test module, stopped after the module's tests.

A module passes its `kubera up` flags by overriding the `up_args` fixture; the helpers the
tests call are in tests/e2e/helpers.py."""

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
def cluster(
    tmp_path_factory: pytest.TempPathFactory, up_args: tuple[str, ...]
) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("kubera-home"), *up_args) as k:
        yield k
