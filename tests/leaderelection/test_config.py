"""LeaseTimings, LeaderElectionConfig, LeaderElectionSettings and Callbacks validate like
client-go's NewLeaderElector."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from services.leaderelection import (
    Callbacks,
    LeaderElectionConfig,
    LeaderElectionSettings,
    LeaseTimings,
    TimingOverrides,
    violations,
)

BASE: dict[str, Any] = {"identity": "sched-0", "key": "/kubera/election/kube-scheduler"}


def test_defaults_are_kube_schedulers() -> None:
    t = LeaderElectionConfig(**BASE).timings
    assert (t.lease_duration, t.renew_deadline, t.retry_period) == (15.0, 10.0, 2.0)
    settings = LeaderElectionSettings()
    assert settings.timings == t
    assert (settings.lease_namespace, settings.lease_name) == ("kube-system", "kube-scheduler")


TIMING_FIELDS = ("lease_duration", "renew_deadline", "retry_period")


def _build(overrides: dict[str, Any]) -> None:
    """The config `overrides` describes: timing fields go into its LeaseTimings, the
    Lease's name into the deployment's settings, the rest into the elector's config."""
    timings = {k: v for k, v in overrides.items() if k in TIMING_FIELDS}
    if "lease_name" in overrides:
        LeaderElectionSettings(lease_name=overrides["lease_name"])
        return
    rest = {k: v for k, v in overrides.items() if k not in TIMING_FIELDS}
    LeaderElectionConfig(timings=LeaseTimings(**timings), **{**BASE, **rest})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            {"lease_duration": 10.0, "renew_deadline": 10.0},
            "lease_duration must be greater than renew_deadline",
            id="lease_duration_equal_to_renew_deadline_is_rejected",
        ),
        pytest.param(
            {"lease_duration": 5.0, "renew_deadline": 10.0},
            "lease_duration must be greater than renew_deadline",
            id="lease_duration_below_renew_deadline_is_rejected",
        ),
        pytest.param(
            {"renew_deadline": 2.4, "retry_period": 2.0},
            "renew_deadline must be greater than retry_period × 1.2",
            id="renew_deadline_equal_to_jittered_retry_is_rejected",
        ),
        pytest.param(
            {"renew_deadline": 2.2, "retry_period": 2.0},
            "renew_deadline must be greater than retry_period × 1.2",
            id="renew_deadline_within_jitter_of_retry_is_rejected",
        ),
        pytest.param(
            {"lease_duration": 0.0},
            "lease_duration must be greater than zero",
            id="zero_lease_duration_is_rejected",
        ),
        pytest.param(
            {"renew_deadline": -1.0},
            "renew_deadline must be greater than zero",
            id="negative_renew_deadline_is_rejected",
        ),
        pytest.param(
            {"retry_period": 0.0},
            "retry_period must be greater than zero",
            id="zero_retry_period_is_rejected",
        ),
        pytest.param(
            {"identity": ""}, "identity must not be empty", id="empty_identity_is_rejected"
        ),
        pytest.param({"key": ""}, "key must not be empty", id="empty_key_is_rejected"),
        pytest.param(
            {"lease_name": ""}, "lease_name must not be empty", id="empty_lease_name_is_rejected"
        ),
    ],
)
def test_invalid_config_names_field_and_rule(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _build(overrides)


@pytest.mark.parametrize(
    "timings",
    [
        pytest.param((15.0, 10.0, 2.0), id="kube_scheduler_defaults"),
        pytest.param((1.5, 1.0, 0.25), id="short_test_timings"),
        pytest.param((2.0, 1.0, 0.8), id="renew_just_above_jittered_retry"),
    ],
)
def test_valid_timings_are_accepted(timings: tuple[float, float, float]) -> None:
    lease, renew, retry = timings
    cfg = LeaderElectionConfig(
        timings=LeaseTimings(lease_duration=lease, renew_deadline=renew, retry_period=retry),
        **BASE,
    )
    assert cfg.timings.retry_period == retry


@pytest.mark.parametrize(
    ("timings", "broken"),
    [
        pytest.param((15.0, 10.0, 2.0), [], id="valid_timings_break_no_rule"),
        pytest.param(
            (0.0, 10.0, 20.0),
            [
                ("lease_duration", "positive"),
                ("lease_duration", "over_renew"),
                ("renew_deadline", "over_jittered_retry"),
            ],
            id="every_broken_rule_is_reported_positivity_first",
        ),
    ],
)
def test_violations_lists_every_broken_rule(
    timings: tuple[float, float, float], broken: list[tuple[str, str]]
) -> None:
    assert [(v.field, v.rule) for v in violations(*timings)] == broken


def test_overrides_replace_only_the_timings_they_set_and_are_checked_together() -> None:
    base = LeaseTimings()
    assert base.with_overrides(TimingOverrides(retry_period=1.0)) == LeaseTimings(retry_period=1.0)
    with pytest.raises(ValueError, match="lease_duration must be greater than renew_deadline"):
        base.with_overrides(TimingOverrides(renew_deadline=20.0))


async def _work(stop: asyncio.Event) -> None:
    await stop.wait()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"on_started_leading": None, "on_stopped_leading": lambda: None},
            "on_started_leading callback must not be None",
            id="on_started_leading_is_required",
        ),
        pytest.param(
            {"on_started_leading": _work, "on_stopped_leading": None},
            "on_stopped_leading callback must not be None",
            id="on_stopped_leading_is_required",
        ),
    ],
)
def test_required_callbacks(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Callbacks(**kwargs)


def test_optional_callbacks_default_to_none() -> None:
    cb = Callbacks(on_started_leading=_work, on_stopped_leading=lambda: None)
    assert cb.on_new_leader is None and cb.on_transition is None
