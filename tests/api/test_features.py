"""Feature gates (services/api/features.py): `--feature-gates` read as component-base's
flag reads it (NAME=BOOL pairs, case-insensitive booleans, unknown gates refused), and the
overrides taking precedence over upstream's defaults."""

from __future__ import annotations

import pytest

from services.api import features

PARSE_CASES = [
    ("empty", "", {}),
    ("one gate on", "SchedulerAsyncAPICalls=true", {"SchedulerAsyncAPICalls": True}),
    (
        "several, spaces and case in the value",
        " SchedulerAsyncAPICalls=True , NodeDeclaredFeatures=FALSE ",
        {"SchedulerAsyncAPICalls": True, "NodeDeclaredFeatures": False},
    ),
    ("a trailing comma", "SchedulerAsyncAPICalls=false,", {"SchedulerAsyncAPICalls": False}),
]


@pytest.mark.parametrize(
    ("spec", "want"), [c[1:] for c in PARSE_CASES], ids=[c[0] for c in PARSE_CASES]
)
def test_parse(spec: str, want: dict[str, bool]) -> None:
    assert features.parse(spec) == want


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        ("SchedulerAsyncAPICalls", "missing bool value"),
        ("SchedulerAsyncAPICalls=yes", "invalid value of SchedulerAsyncAPICalls=yes"),
        # component-base: a name-less pair parses, and the empty name is unknown
        ("=true", "unrecognized feature gate: $"),
    ],
)
def test_parse_refuses(spec: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        features.parse(spec)


def test_an_override_wins_over_the_default() -> None:
    name = features.SCHEDULER_ASYNC_API_CALLS
    assert features.enabled(None, name) is False  # upstream's default, 1.34 to 1.37
    assert features.enabled({name: True}, name) is True
    assert features.enabled({}, name) is False
