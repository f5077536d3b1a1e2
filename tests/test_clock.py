"""services/clock.py's timestamp texts: the cached and strptime-free fast paths give what
the reference (datetime's strftime / strptime) gives, for every input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.clock import (
    RealClock,
    ScaledClock,
    clock_for,
    parse_rfc3339,
    rfc3339,
    rfc3339_micro,
)

#: Years 1970..9999, as float seconds (microsecond fractions and worse included).
TIMES = st.floats(min_value=0.0, max_value=253_402_300_799.0, allow_nan=False)


def _reference_micro(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _reference_parse(text: str) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()


@given(TIMES)
def test_rfc3339_is_strftime(ts: float) -> None:
    want = datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert rfc3339(ts) == want
    assert rfc3339(ts) == want  # the cached answer too


@given(TIMES)
def test_rfc3339_micro_is_strftime(ts: float) -> None:
    assert rfc3339_micro(ts) == _reference_micro(ts)


@pytest.mark.parametrize(
    "ts",
    [0.0, 0.9999995, 0.9999994, 1.0000005, 1_700_000_000.9999999, 1_700_000_000.5000005, -1.5],
)
def test_rfc3339_micro_rounding_edges(ts: float) -> None:
    assert rfc3339_micro(ts) == _reference_micro(ts)


@given(TIMES)
def test_parse_is_strptime(ts: float) -> None:
    for text in (rfc3339(ts), rfc3339_micro(ts)):
        assert parse_rfc3339(text) == _reference_parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-24T03:30:01.5Z",
        "2026-11-24T03:30:01.000001Z",
        "2026-02-28T23:59:59Z",
        "2024-02-29T00:00:00.123Z",
    ],
)
def test_parse_short_fractions(text: str) -> None:
    assert parse_rfc3339(text) == _reference_parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:60Z",
        "2026-01-01T00:00:00.1234567Z",
        "2026-01-01 00:00:00Z",
        "garbage",
        "",
    ],
)
def test_parse_refuses_what_strptime_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        _reference_parse(text)
    with pytest.raises(ValueError):
        parse_rfc3339(text)


def test_scaled_clocks_of_one_origin_agree_whenever_they_were_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every component builds its own ScaledClock from the supervisor's origin and the
    scale: read at the same wall instant, they give the same simulated time, however late
    each was made, and that time runs `scale` times as fast as the wall since the origin."""
    wall = [1_000.0]
    monkeypatch.setattr("services.clock.time.time", lambda: wall[0])
    early = clock_for(60, 1_000.0)
    wall[0] = 1_030.0
    late = clock_for(60, 1_000.0)
    assert early.now() == late.now() == 1_000.0 + 30 * 60
    wall[0] = 1_031.0
    assert early.now() == late.now() == 1_000.0 + 31 * 60
    assert isinstance(early, ScaledClock) and early.origin == 1_000.0


def test_scale_one_is_the_wall_clock() -> None:
    assert isinstance(clock_for(1, 123.0), RealClock)
