"""One CronJob sync against upstream's table (cronjob_controllerv2_test.go
TestControllerV2SyncCronJob): the CronJob and its prior Job as the table sets them up, one
`sync` at the table's `now`, then what upstream expects — a Job created or not, the
running one deleted (Replace), how many are active, how many Warning events, and when the
CronJob is looked at next.

The apiserver and the controller share one FakeClock (as every component shares the
cluster clock under the time scale), so creation timestamps are the table's exactly.

Left out of the table: invalid schedules and time zones (kubera's apiserver refuses to
store them, upstream's test writes them past validation), a time zone in the schedule
(refused the same way), the feature-gate cases, the injected client errors (AlreadyExists:
test_cronjob.py covers it against a real Job; a terminating namespace), and the slow
lister / slow CronJob list / time-drift cases, which need a Job the informer has not seen
(here the informers are synced before the sync runs)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.apiserver import ApiServer
from services.client import Client, SharedInformers
from services.clock import FakeClock, RealClock, parse_rfc3339, rfc3339
from services.controllers.cronjob import (
    NEXT_SCHEDULE_DELTA,
    CronJobConfig,
    CronJobController,
    job_from_template,
)
from services.storage.memory import MemoryStorage
from tests.controllers.test_cronjob import cron_doc
from tests.harness import TEST_API_CONFIG, control_plane
from tests.waiting import eventually

JOBS, CRONJOBS = BY_KIND["Job"], BY_KIND["CronJob"]
NS = "default"
M, H = 60.0, 3600.0
SHORT, MEDIUM, LONG = 10, 2 * 60 * 60, 1_000_000


def _t(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


JUST_BEFORE_THE_PRIOR_HOUR = _t("2016-05-19T08:59:00")
JUST_AFTER_THE_PRIOR_HOUR = _t("2016-05-19T09:01:00")
JUST_BEFORE_THE_HOUR = _t("2016-05-19T09:59:00")
TOP_OF_THE_HOUR = _t("2016-05-19T10:00:00")
JUST_AFTER_THE_HOUR = _t("2016-05-19T10:01:00")
JUST_BEFORE_THE_NEXT_HOUR = _t("2016-05-19T10:59:00")
WEEK_AFTER_THE_HOUR = _t("2016-05-26T10:00:00")


@dataclass(frozen=True)
class Case:
    policy: str
    now: float
    ran_previously: bool = False
    still_active: bool = False
    deadline: int | None = None
    suspend: bool = False
    time_zone: str | None = None
    schedule: str = "0 * * * ?"
    #: The table's cronjobCreationTime, lastScheduleTime and jobCreationTime (None: the
    #: defaults of its setup, see _set_up).
    created: float | None = None
    last: float | None = None
    job_at: float | None = None
    # expectations
    create: bool = False
    delete: bool = False
    active: int = 0
    warnings: int = 0
    requeue: float | None = None


def _cases() -> dict[str, Case]:
    out: dict[str, Case] = {}
    for p, policy in (("A", "Allow"), ("F", "Forbid"), ("R", "Replace")):
        out[f"never ran, not time, {p}"] = Case(
            policy, JUST_BEFORE_THE_HOUR, requeue=M + NEXT_SCHEDULE_DELTA
        )
        out[f"never ran, is time, {p}"] = Case(
            policy, JUST_AFTER_THE_HOUR, create=True, active=1, requeue=H - M + NEXT_SCHEDULE_DELTA
        )
        out[f"prev ran but done, not time, {p}"] = Case(
            policy, JUST_BEFORE_THE_HOUR, ran_previously=True, requeue=M + NEXT_SCHEDULE_DELTA
        )
        out[f"prev ran but done, is time, {p}"] = Case(
            policy,
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            create=True,
            active=1,
            requeue=H - M + NEXT_SCHEDULE_DELTA,
        )
        out[f"still active, not time, {p}"] = Case(
            policy,
            JUST_BEFORE_THE_HOUR,
            ran_previously=True,
            still_active=True,
            active=1,
            requeue=M + NEXT_SCHEDULE_DELTA,
        )
        for deadline, dead in ((None, "no deadline"), (LONG, "not past deadline")):
            out[f"prev ran but done, long overdue, {dead}, {p}"] = Case(
                policy,
                WEEK_AFTER_THE_HOUR,
                ran_previously=True,
                deadline=deadline,
                create=True,
                active=1,
                warnings=1,  # TooManyMissedTimes
                requeue=H + NEXT_SCHEDULE_DELTA,
            )
        for deadline, dead in ((MEDIUM, "past medium deadline"), (SHORT, "past short deadline")):
            out[f"prev ran but done, long overdue, {dead}, {p}"] = Case(
                policy,
                WEEK_AFTER_THE_HOUR,
                ran_previously=True,
                deadline=deadline,
                create=True,
                active=1,
                requeue=H + NEXT_SCHEDULE_DELTA,
            )
    after = H - M + NEXT_SCHEDULE_DELTA
    out |= {
        "never ran, not time in zone": Case(
            "Allow",
            JUST_BEFORE_THE_HOUR,
            time_zone="America/New_York",
            requeue=M + NEXT_SCHEDULE_DELTA,
        ),
        "never ran, is time in zone": Case(
            "Allow",
            JUST_AFTER_THE_HOUR,
            time_zone="America/New_York",
            create=True,
            active=1,
            requeue=after,
        ),
        "never ran, is time, suspended": Case("Allow", JUST_AFTER_THE_HOUR, suspend=True),
        "never ran, is time, past deadline": Case(
            "Allow",
            JUST_AFTER_THE_HOUR + M * (SHORT + 1),
            deadline=SHORT,
            requeue=H - M - M * (SHORT + 1) + NEXT_SCHEDULE_DELTA,
        ),
        "never ran, is time, not past deadline": Case(
            "Allow", JUST_AFTER_THE_HOUR, deadline=LONG, create=True, active=1, requeue=after
        ),
        "prev ran but done, is time, suspended": Case(
            "Allow", JUST_AFTER_THE_HOUR, ran_previously=True, suspend=True
        ),
        "prev ran but done, is time, past deadline": Case(
            "Allow", JUST_AFTER_THE_HOUR, ran_previously=True, deadline=SHORT, requeue=after
        ),
        "prev ran but done, is time, not past deadline": Case(
            "Allow",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            deadline=LONG,
            create=True,
            active=1,
            requeue=after,
        ),
        "still active, is time, A": Case(
            "Allow",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            still_active=True,
            create=True,
            active=2,
            requeue=after,
        ),
        "still active, is time, F": Case(
            "Forbid",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            still_active=True,
            active=1,
            requeue=after,
        ),
        "still active, is time, R": Case(
            "Replace",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            still_active=True,
            create=True,
            delete=True,
            active=1,
            requeue=after,
        ),
        "still active, is time, suspended": Case(
            "Allow",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            still_active=True,
            suspend=True,
            active=1,
        ),
        "still active, is time, past deadline": Case(
            "Allow",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            still_active=True,
            deadline=SHORT,
            active=1,
            requeue=after,
        ),
        "still active, is time, not past deadline": Case(
            "Allow",
            JUST_AFTER_THE_HOUR,
            ran_previously=True,
            still_active=True,
            deadline=LONG,
            create=True,
            active=2,
            requeue=after,
        ),
    }
    return out | _every_cases()


def _every_cases() -> dict[str, Case]:
    """The table's "with @every schedule" block ("@every 1h")."""
    every = {"schedule": "@every 1h", "policy": "Allow"}
    prior, before = JUST_BEFORE_THE_PRIOR_HOUR, JUST_BEFORE_THE_HOUR
    d = NEXT_SCHEDULE_DELTA
    ran: dict[str, Any] = {"ran_previously": True, "created": prior}
    return {
        "with @every schedule, never ran, not time": Case(
            **every, now=TOP_OF_THE_HOUR, created=before, requeue=H - M + d
        ),
        "with @every schedule, never ran, is time": Case(
            **every, now=before, created=prior, create=True, active=1, requeue=H + d
        ),
        "with @every schedule, never ran, is time, past deadline": Case(
            **every, now=before + SHORT + 1, created=prior, deadline=SHORT,
            requeue=H - (SHORT + 1) + d,
        ),
        "with @every schedule, never ran, is time, not past deadline": Case(
            **every, now=before + SHORT - 1, created=prior, deadline=LONG, create=True,
            active=1, requeue=H - (SHORT - 1) + d,
        ),
        "with @every schedule, prev ran but done, not time": Case(
            **every, **ran, now=TOP_OF_THE_HOUR, last=before, job_at=prior, requeue=H - M + d
        ),
        "with @every schedule, prev ran but done, is time": Case(
            **every, **ran, now=TOP_OF_THE_HOUR + H, last=before, job_at=prior, create=True,
            active=1, requeue=H - M + d,
        ),
        "with @every schedule, prev ran but done, is time, past deadline": Case(
            **every, **ran, now=JUST_BEFORE_THE_NEXT_HOUR + SHORT + 1, last=before, job_at=prior,
            deadline=SHORT, requeue=H - (SHORT + 1) + d,
        ),
        "with @every schedule, still active, not time": Case(
            **every, **ran, still_active=True, now=TOP_OF_THE_HOUR, last=before, job_at=before,
            active=1, requeue=H - M + d,
        ),
        "with @every schedule, still active, is time": Case(
            **every, **ran, still_active=True, now=JUST_AFTER_THE_HOUR, last=prior, job_at=prior,
            create=True, active=2, requeue=H - 2 * M + d,
        ),
        "with @every schedule, still active, is time, past deadline": Case(
            **every, **ran, still_active=True, now=JUST_BEFORE_THE_NEXT_HOUR + SHORT + 1,
            last=before, job_at=before, deadline=SHORT, active=1, requeue=H - (SHORT + 1) + d,
        ),
        "with @every schedule, still active, is time, not past deadline": Case(
            **every, **ran, still_active=True, now=JUST_BEFORE_THE_NEXT_HOUR + SHORT - 1,
            last=before, job_at=before, deadline=LONG, create=True, active=2,
            requeue=H - (SHORT - 1) + d,
        ),
        "with @every schedule, prev ran but done, long overdue, no deadline": Case(
            **every, ran_previously=True, created=JUST_AFTER_THE_PRIOR_HOUR,
            last=JUST_AFTER_THE_HOUR, job_at=JUST_AFTER_THE_PRIOR_HOUR, now=WEEK_AFTER_THE_HOUR,
            create=True, active=1, warnings=1, requeue=M + d,
        ),
        "with @every schedule, prev ran but done, long overdue, past deadline": Case(
            **every, ran_previously=True, created=JUST_AFTER_THE_PRIOR_HOUR,
            last=JUST_AFTER_THE_HOUR, job_at=JUST_AFTER_THE_PRIOR_HOUR,
            now=WEEK_AFTER_THE_HOUR + M + SHORT + 1, deadline=SHORT, active=0,
            requeue=H - (SHORT + 1) + d,
        ),
    }  # fmt: skip


CASES = _cases()


class _Events:
    """The controller's recorder, kept in a list."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.seen.append((type_, reason))

    async def close(self) -> None:
        return None


@pytest.fixture
async def plane() -> AsyncIterator[tuple[Client, FakeClock]]:
    clock = FakeClock(start=JUST_BEFORE_THE_PRIOR_HOUR)
    # objects stamped on the fake clock; the watch caches paced by the wall's
    api = ApiServer(MemoryStorage(), TEST_API_CONFIG, clock=clock, wall=RealClock())
    async with control_plane(api=api) as cp:
        yield cp.client, clock


async def _set_up(client: Client, clock: FakeClock, case: Case) -> batch_pb2.CronJob:
    """The table's CronJob (created just before the hour, or before the prior hour when
    it ran before) and, when it ran, its Job of just after the prior hour: finished, or
    in status.active when still active."""
    spec: dict[str, Any] = {"schedule": case.schedule, "concurrencyPolicy": case.policy}
    if case.deadline is not None:
        spec["startingDeadlineSeconds"] = case.deadline
    if case.suspend:
        spec["suspend"] = True
    if case.time_zone:
        spec["timeZone"] = case.time_zone
    doc = cron_doc(name="mycronjob", **spec)
    doc["metadata"]["namespace"] = NS
    default_created = JUST_BEFORE_THE_PRIOR_HOUR if case.ran_previously else JUST_BEFORE_THE_HOUR
    clock.advance((case.created or default_created) - clock.now())
    cj = await client.create(codec.decode(doc, validate="strict").obj)
    assert isinstance(cj, batch_pb2.CronJob)
    if case.ran_previously:
        job_at = case.job_at or JUST_AFTER_THE_PRIOR_HOUR
        job = await client.create(job_from_template(cj, job_at))
        assert isinstance(job, batch_pb2.Job)
        cj.status.last_schedule_time = rfc3339(case.last or JUST_AFTER_THE_PRIOR_HOUR)
        if case.still_active:
            cj.status.active.append(
                core_pb2.ObjectReference(
                    kind="Job",
                    api_version="batch/v1",
                    namespace=NS,
                    name=job.metadata.name,
                    uid=job.metadata.uid,
                )
            )
        else:
            job.status.conditions.add(type="Complete", status="True")
            job.status.start_time = rfc3339(job_at)
            job.status.completion_time = rfc3339(job_at + 10)
            await client.update_status(job)
        cj = await client.update_status(cj)  # type: ignore[assignment]
    return cj


async def _jobs(client: Client) -> dict[str, batch_pb2.Job]:
    items, _ = await client.list(JOBS, namespace=NS)
    return {j.metadata.uid: j for j in items if isinstance(j, batch_pb2.Job)}


@pytest.mark.parametrize("name", list(CASES))
async def test_sync_cronjob(plane: tuple[Client, FakeClock], name: str) -> None:
    case = CASES[name]
    client, clock = plane
    cj = await _set_up(client, clock, case)
    before = await _jobs(client)
    clock.advance(case.now - clock.now())

    informers = SharedInformers(client)
    controller = CronJobController(
        client, informers, config=CronJobConfig(record_events=False), clock=clock
    )
    events = _Events()
    controller.events = events  # type: ignore[assignment]
    requeues: list[float] = []
    controller.queue.add_after = lambda key, delay: requeues.append(delay)  # type: ignore[method-assign]
    informers.start()
    try:
        await informers.wait_synced()
        rv = cj.metadata.resource_version
        await eventually(
            lambda: (
                (got := controller.cj_informer.store.get(f"{NS}/mycronjob")) is not None
                and got.metadata.resource_version == rv  # type: ignore[attr-defined]
                and len(controller.job_informer.store.values()) == len(before)
            )
        )
        await controller.sync(f"{NS}/mycronjob")
    finally:
        await informers.stop()

    after = await _jobs(client)
    created = [u for u in after if u not in before]
    deleted = [u for u in before if u not in after]
    fresh = await client.get(CRONJOBS, "mycronjob", NS)
    assert isinstance(fresh, batch_pb2.CronJob)
    assert len(created) == (1 if case.create else 0), events.seen
    assert bool(deleted) is case.delete
    assert len(fresh.status.active) == case.active
    assert sum(1 for t, _ in events.seen if t == "Warning") == case.warnings, events.seen
    if case.requeue is None:
        assert requeues == []
    else:
        assert requeues == [pytest.approx(case.requeue)]
    if case.create:
        [job] = [after[u] for u in created]
        scheduled = parse_rfc3339(fresh.status.last_schedule_time)
        assert job.metadata.name == f"mycronjob-{int(scheduled) // 60}"
