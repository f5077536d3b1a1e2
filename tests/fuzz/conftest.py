"""A real apiserver gRPC server for the fuzz runs, with every ERROR record captured."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kubera.fuzz.harness import FUZZ_API_CONFIG, Caller, ErrorLog, ServerThread


@pytest.fixture
def errors() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


@pytest.fixture
def caller(errors: ErrorLog) -> Iterator[Caller]:
    server = ServerThread(config=FUZZ_API_CONFIG, record_writes=True)
    address = server.start()
    c = Caller(address, errors, writes=server.writes)
    try:
        yield c
    finally:
        c.close()
        server.stop()
