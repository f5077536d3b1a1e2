"""The address list a client dials (services/client/endpoints.py), with fake connections:
parsing, spreading by rotation and by key, moving on when the current replica is
unreachable (one step per outage however many calls saw it), and lazy, kept connections."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.client.endpoints import (
    Endpoints,
    first_address,
    join_addresses,
    parse_addresses,
    rotated,
    spread_index,
)


class Dialer:
    """Fake connections: the address, and a count of dials per address."""

    def __init__(self) -> None:
        self.dials: dict[str, int] = {}

    def __call__(self, address: str) -> str:
        self.dials[address] = self.dials.get(address, 0) + 1
        return f"conn:{address}"


@pytest.mark.parametrize(
    ("given_", "expected"),
    [
        ("a:1", ["a:1"]),
        ("a:1,b:2", ["a:1", "b:2"]),
        (" a:1 , b:2 ,", ["a:1", "b:2"]),
        ("a:1,a:1,b:2", ["a:1", "b:2"]),
        (["a:1", "b:2,c:3"], ["a:1", "b:2", "c:3"]),
        ("[::1]:5,127.0.0.1:6", ["[::1]:5", "127.0.0.1:6"]),
    ],
)
def test_parse_addresses(given_: str | list[str], expected: list[str]) -> None:
    assert parse_addresses(given_) == expected
    assert parse_addresses(join_addresses(expected)) == expected


@pytest.mark.parametrize("blank", ["", " , ", []])
def test_no_address_is_an_error(blank: str | list[str]) -> None:
    with pytest.raises(ValueError, match="no apiserver address"):
        parse_addresses(blank)


def test_first_address_is_the_first_given() -> None:
    assert first_address("b:2,a:1") == "b:2"
    assert first_address("") == ""


def test_no_address_is_one_empty_target_as_before() -> None:
    e = Endpoints("", Dialer())
    assert e.addresses == [""] and e.current == ""
    assert e.failed("") is False


def test_one_address_never_moves() -> None:
    d = Dialer()
    e = Endpoints("a:1", d)
    assert e.current == "a:1"
    assert e.failed("a:1") is False
    assert e.current == "a:1" and e.failovers == 0


def test_failed_moves_to_the_next_and_wraps_round() -> None:
    e = Endpoints("a:1,b:2,c:3", Dialer())
    assert [e.current] == ["a:1"]
    seen = []
    for _ in range(4):
        addr = e.current
        assert e.failed(addr) is True
        seen.append(e.current)
    assert seen == ["b:2", "c:3", "a:1", "b:2"]
    assert e.failovers == 4


def test_many_calls_failing_on_one_replica_move_one_step() -> None:
    """Ten calls in flight to a:1 all fail: the client moves to b:2 once, and a late
    failure report about a:1 does not push it on to c:3 (nor back round)."""
    e = Endpoints("a:1,b:2,c:3", Dialer())
    moved = [e.failed("a:1") for _ in range(10)]
    assert moved == [True] + [False] * 9
    assert e.current == "b:2" and e.failovers == 1


def test_connections_are_dialled_lazily_once_per_address_and_kept() -> None:
    d = Dialer()
    e = Endpoints("a:1,b:2", d)
    assert d.dials == {}
    assert e.connection() == "conn:a:1"
    assert e.connection() == "conn:a:1"
    e.failed("a:1")
    assert e.connection() == "conn:b:2"
    e.failed("b:2")
    assert e.connection() == "conn:a:1"  # the kept one: it redials by itself
    assert d.dials == {"a:1": 1, "b:2": 1}
    assert sorted(e.connections()) == ["conn:a:1", "conn:b:2"]


def test_spread_key_picks_a_stable_start() -> None:
    addresses = ["a:1", "b:2", "c:3"]
    starts = {Endpoints(addresses, Dialer(), spread_key=f"pool-{i}").current for i in range(30)}
    assert starts == set(addresses)  # 30 keys land on every replica
    same = [Endpoints(addresses, Dialer(), spread_key="scheduler").current for _ in range(3)]
    assert len(set(same)) == 1
    assert same[0] == addresses[spread_index("scheduler", 3)]


@given(st.lists(st.text(alphabet="abc:0123", min_size=1), min_size=1, unique=True), st.integers())
def test_rotated_is_a_rotation(addresses: list[str], index: int) -> None:
    r = rotated(addresses, index)
    assert sorted(r) == sorted(addresses)
    k = index % len(addresses)
    assert r[0] == addresses[k]
    assert (r + r)[len(addresses) - k : 2 * len(addresses) - k] == addresses


def test_rotations_spread_components_evenly() -> None:
    addresses = ["a:1", "b:2"]
    firsts = [rotated(addresses, i)[0] for i in range(6)]
    assert firsts.count("a:1") == firsts.count("b:2") == 3
