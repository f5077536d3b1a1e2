"""LeaderElectionConfig and Callbacks validate like client-go's NewLeaderElector."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from services.leaderelection import Callbacks, LeaderElectionConfig

BASE: dict[str, Any] = {"identity": "sched-0", "key": "/kubera/election/kube-scheduler"}


def test_defaults_are_kube_schedulers() -> None:
    cfg = LeaderElectionConfig(**BASE)
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert (cfg.lease_namespace, cfg.lease_name) == ("kube-system", "kube-scheduler")


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
        LeaderElectionConfig(**{**BASE, **overrides})


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
        lease_duration=lease, renew_deadline=renew, retry_period=retry, **BASE
    )
    assert cfg.retry_period == retry


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
