"""Fixtures for CLI tests: a real gRPC apiserver on in-memory storage, in a thread.

The CLI runs `asyncio.run` inside each command, so the server cannot share the test's
event loop: it gets its own loop in a background thread, started before the test and
stopped after it, and the tests talk to it over loopback exactly as users do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubera.fuzz.harness import ServerThread


@pytest.fixture
def apiserver() -> Iterator[str]:
    """The address ("127.0.0.1:PORT") of a fresh apiserver with empty storage."""
    s = ServerThread()
    address = s.start()
    try:
        yield address
    finally:
        s.stop()


@pytest.fixture(scope="module")
def shared_apiserver() -> Iterator[str]:
    """One apiserver for a whole module, for tests that build on each other in order."""
    s = ServerThread()
    address = s.start()
    try:
        yield address
    finally:
        s.stop()
