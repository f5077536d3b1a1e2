"""Every route of the Kubernetes HTTP API under hypothesis, at a small size, through a real
socket into a real apiserver (in-memory storage, recorded): random bytes, random JSON and
bent valid objects and patches. Every answer is a status the API means (never 500), the
server logs no traceback, no request answered with an error wrote anything, and a wrong
token is always a 401."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubera.fuzz.grpc_inputs import fuzz_method
from kubera.fuzz.harness import FUZZ_API_CONFIG, METHODS, Caller, ErrorLog, ServerThread, Tally
from kubera.fuzz.http_inputs import HttpCaller, Request, Route, fuzz_http, seed_http
from tests.fuzz.test_grpc_fuzz import SMALL

EXAMPLES = 150


@pytest.fixture
def http_caller(errors: ErrorLog) -> Iterator[HttpCaller]:
    server = ServerThread(config=FUZZ_API_CONFIG, http=True, record_writes=True)
    server.start()
    c = HttpCaller(server.url, errors, writes=server.writes)
    try:
        yield c
    finally:
        server.stop()


@pytest.mark.parametrize("shape", ["raw", "random", "crafted"])
def test_no_http_input_makes_the_apiserver_answer_500_hang_log_a_traceback_or_write_partly(
    http_caller: HttpCaller, shape: str
) -> None:
    tally = Tally()
    assert seed_http(http_caller) >= 10  # an object of (almost) every kind to find
    fuzz_http(http_caller, tally, shape, examples=EXAMPLES, derandomize=True)
    print(tally.report())
    assert tally.total == EXAMPLES
    assert not tally.failures, tally.report()
    # and it still serves: a create and a get of a pod
    create = Request(
        "POST",
        Route("/api/v1/namespaces/default/pods", "pods"),
        "",
        "application/json",
        "application/json",
        b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"after-'
        + shape.encode()
        + b'"},"spec":{"containers":[{"name":"c","image":"i"}]}}',
    )
    assert http_caller.call(create)[0] == "201"
    get = Request(
        "GET",
        Route(f"/api/v1/namespaces/default/pods/after-{shape}", "pods/{name}"),
        "",
        "",
        "",
        b"",
    )
    assert http_caller.call(get)[0] == "200"


@pytest.mark.parametrize(
    ("code", "failed"),
    [("200", False), ("422", False), ("404", False), ("500", True), ("hung", True), ("502", True)],
)
def test_an_http_answer_fails_when_it_is_500_or_a_code_the_api_does_not_mean(
    code: str, failed: bool
) -> None:
    caller = HttpCaller.__new__(HttpCaller)
    caller.errors, caller.writes = ErrorLog(), None
    caller.call = lambda req: (code, "why")  # type: ignore[method-assign]
    tally = Tally()
    caller.run(tally, "raw", Request("GET", Route("/api", "/api"), "", "", "", b""))
    assert bool(tally.failures) == failed


ADMIN_TOKEN = "fuzz-admin-token"
TOKENS = f'{ADMIN_TOKEN},kubera-admin,admin,"system:masters"\nnode-token,system:node:n1,n1,"system:nodes"\n'


@pytest.fixture
def guarded(errors: ErrorLog) -> Iterator[tuple[HttpCaller, Caller]]:
    server = ServerThread(config=FUZZ_API_CONFIG, http=True, tokens=TOKENS, record_writes=True)
    address = server.start()
    http_caller = HttpCaller(server.url, errors, token=ADMIN_TOKEN, writes=server.writes)
    grpc_caller = Caller(address, errors, writes=server.writes)
    try:
        yield http_caller, grpc_caller
    finally:
        grpc_caller.close()
        server.stop()


def test_a_wrong_or_missing_token_is_401_on_every_route_and_writes_nothing(guarded) -> None:
    http_caller, _ = guarded
    tally = Tally()
    fuzz_http(http_caller, tally, "tokens", examples=EXAMPLES, derandomize=True)
    assert tally.total == EXAMPLES
    assert not tally.failures, tally.report()


@pytest.mark.parametrize("method", METHODS)
def test_a_grpc_call_without_a_token_is_unauthenticated_and_writes_nothing(guarded, method) -> None:
    _, grpc_caller = guarded
    tally = Tally()
    fuzz_method(grpc_caller, tally, method, "crafted", SMALL)
    codes = set(tally.codes[method])
    # Health is public (a load balancer's probe), every other method refuses first
    assert codes == ({"OK"} if method == "Health" else {"UNAUTHENTICATED"}), tally.report()


def test_with_the_admin_token_the_routes_answer_as_without_auth(guarded) -> None:
    http_caller, _ = guarded
    tally = Tally()
    seed_http(http_caller)
    fuzz_http(http_caller, tally, "crafted", examples=EXAMPLES, derandomize=True)
    assert not tally.failures, tally.report()
    assert any(code == "200" for c in tally.codes.values() for code in c)
