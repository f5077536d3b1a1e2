"""Every gRPC method of the apiserver under hypothesis, at a small size: random bytes as
the request, well-formed requests with random fields, and bent valid requests. Every
answer is OK or a status code the API means, the server logs no traceback, and it still
answers Health (and serves a create, a get and a watch) afterwards."""

from __future__ import annotations

import pytest

from kubera.fuzz.grpc_inputs import Size, fuzz_method, seed
from kubera.fuzz.harness import METHODS, Caller, Tally

SMALL = Size(examples=40, max_batch=50, max_depth=3000, max_raw=512, derandomize=True)


@pytest.mark.parametrize("shape", ["raw", "random", "crafted"])
@pytest.mark.parametrize("method", METHODS)
def test_no_input_makes_the_apiserver_answer_unknown_or_internal_or_log_a_traceback(
    caller: Caller, method: str, shape: str
) -> None:
    tally = Tally()
    seed(caller)
    fuzz_method(caller, tally, method, shape, SMALL)
    print(tally.report())
    assert tally.tried[method] > 0  # Health has one well-formed request only
    assert caller.serves(f"fz-after-{method.lower()}-{shape}") == []
    assert not tally.failures, tally.report()


def test_the_apiserver_still_creates_gets_and_watches_after_a_fuzz_run(caller: Caller) -> None:
    tally = Tally()
    seed(caller)
    for method in ("Create", "Patch", "BatchCreate", "Watch"):
        fuzz_method(caller, tally, method, "crafted", SMALL)
    assert tally.total > 0
    assert caller.serves("fz-after") == []


@pytest.mark.parametrize(
    ("code", "logged", "failed"),
    [
        ("OK", [], False),
        ("INVALID_ARGUMENT", [], False),
        ("OUT_OF_RANGE", [], False),
        ("OPEN (stream still open)", [], False),
        ("UNKNOWN", [], True),
        ("INTERNAL", [], True),
        ("DEADLINE_EXCEEDED", [], False),  # sent by the server: too large resourceVersion
        ("DEADLINE_EXCEEDED (hung)", [], True),  # the client's deadline ran out
        ("OK", ["internal error | RecursionError: deep"], True),
    ],
)
def test_an_answer_fails_when_it_is_not_a_meant_code_or_the_server_logged_an_error(
    code: str, logged: list[str], failed: bool
) -> None:
    tally = Tally()
    tally.record("Create", "raw", code, "why", b"\x00", logged)
    assert bool(tally.failures) == failed
    assert tally.tried["Create"] == 1 and tally.codes["Create"][code] == 1


@pytest.mark.parametrize(
    ("code", "writes", "failed"),
    [
        ("INVALID_ARGUMENT", False, False),
        ("OK", True, False),
        ("INVALID_ARGUMENT", True, True),
        ("ABORTED", True, True),
    ],
)
def test_a_call_answered_with_an_error_that_wrote_to_storage_is_a_partial_write(
    code: str, writes: bool, failed: bool
) -> None:
    import asyncio

    from kubera.fuzz.harness import ErrorLog, RecordingStorage
    from services.storage import Put
    from services.storage.memory import MemoryStorage

    recording = RecordingStorage(MemoryStorage())
    caller = Caller.__new__(Caller)
    caller.errors, caller.writes = ErrorLog(), recording

    def call(method: str, request: bytes) -> tuple[str, str]:  # a handler that writes, then answers
        if writes:
            asyncio.run(recording.txn([], [Put("/registry/pods/default/x", b"x")]))
        return code, "why"

    caller.call = call  # type: ignore[method-assign]
    tally = Tally()
    caller.run(tally, "Create", "raw", b"\x00")
    assert bool(tally.failures) == failed, tally.report()
    if failed:
        assert "partial write" in tally.report()
