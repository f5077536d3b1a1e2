"""The fuzz run at a large size (a benchmark: `bench`-marked, excluded from the default
suite). It prints how many inputs were tried per method, the count of each status code,
and every failure class (UNKNOWN, INTERNAL, a hang, a traceback in the server's log)
with its smallest input; then whether the server still answers.

    .venv/bin/pytest -p no:cacheprovider -m bench -s tests/fuzz/test_fuzz_bench.py
    KUBERA_FUZZ_EXAMPLES=2000 KUBERA_FUZZ_STORAGE=etcd ...   # per shape per method

KUBERA_FUZZ_STORAGE=etcd runs the apiserver on the session's real etcd instead of the
in-memory storage; KUBERA_FUZZ_OUT=DIR writes each failure class's smallest input there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from kubera.etcd import EtcdProcess
from services.storage.etcd import EtcdStorage
from tests.fuzz.harness import (
    Caller,
    DecoderTally,
    ErrorLog,
    ServerThread,
    Size,
    Tally,
    fuzz_all,
    fuzz_decoder,
)

pytestmark = pytest.mark.bench

EXAMPLES = int(os.environ.get("KUBERA_FUZZ_EXAMPLES", "500"))
LARGE = Size(examples=EXAMPLES, max_batch=2000, max_depth=100_000, max_raw=4096)


@pytest.fixture
def big_caller(request: pytest.FixtureRequest, errors: ErrorLog) -> Iterator[Caller]:
    if os.environ.get("KUBERA_FUZZ_STORAGE") == "etcd":
        etcd: EtcdProcess = request.getfixturevalue("etcd_server")
        server = ServerThread(lambda: EtcdStorage(etcd.endpoint))
    else:
        server = ServerThread()
    c = Caller(server.start(), errors)
    try:
        yield c
    finally:
        c.close()
        server.stop()


def test_fuzz_every_grpc_method(big_caller: Caller) -> None:
    tally = Tally()
    start = time.monotonic()
    fuzz_all(big_caller, tally, LARGE)
    elapsed = time.monotonic() - start
    broken = big_caller.serves("fz-after")
    if os.environ.get("KUBERA_FUZZ_OUT"):
        tally.dump(os.environ["KUBERA_FUZZ_OUT"])
    print()
    print(tally.report())
    after = "all answer" if not broken else "BROKEN: " + ", ".join(broken)
    print(f"{tally.total} inputs in {elapsed:.0f} s; then Health, Create, Get, Watch: {after}")


def test_fuzz_the_manifest_decoder() -> None:
    tally = DecoderTally()
    start = time.monotonic()
    fuzz_decoder(tally, EXAMPLES * 10)
    print()
    print(tally.report())
    print(f"in {time.monotonic() - start:.0f} s")
