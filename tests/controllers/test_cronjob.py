"""The CronJob controller: the schedule arithmetic as tables (upstream utils_test.go:
TestMostRecentScheduleTime, TestNextScheduleTime, getJobName) and the controller against a
real gRPC apiserver (cronjob_controllerv2_test.go's TestControllerV2SyncCronJob cases:
concurrency policies, starting deadline, suspend, history limits), time moved by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from protos.kubera.v1 import batch_pb2
from services.api.helpers import cron
from services.api.helpers.wellknown import CRONJOB_SCHEDULED_TIMESTAMP
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.clock import rfc3339
from services.controllers.controller_utils import controller_of
from services.controllers.cronjob import (
    NEXT_SCHEDULE_DELTA,
    CronJobConfig,
    CronJobController,
    Missed,
    ScheduleTimes,
    job_from_template,
    job_name,
    jobs_to_clean,
    most_recent_schedule_time,
    next_schedule_time,
    next_schedule_time_duration,
)
from tests.controllers.conftest import NS, ControllerCluster

JOBS, CRONJOBS = BY_KIND["Job"], BY_KIND["CronJob"]
#: 2016-05-19T10:00:00Z, a Thursday, upstream's justBeforeTheHour is 09:59.
TOP = datetime(2016, 5, 19, 10, 0, tzinfo=UTC).timestamp()


def cron_doc(name: str = "hello", schedule: str = "*/1 * * * *", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"app": "hello"}, "annotations": {"a": "b"}},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "hello", "image": "busybox:1.28"}],
                            "restartPolicy": "OnFailure",
                        }
                    }
                },
            },
            **spec,
        },
    }


def make_cj(created: float, *, last: float | None = None, **spec: Any) -> batch_pb2.CronJob:
    doc = cron_doc(**spec)
    doc["metadata"]["creationTimestamp"] = rfc3339(created)
    doc["metadata"]["uid"] = "cj-uid"
    if last is not None:
        doc["status"] = {"lastScheduleTime": rfc3339(last)}
    obj = codec.decode(doc).obj
    assert isinstance(obj, batch_pb2.CronJob)
    return obj


# ============================================================================ schedule times


M, H, D = 60, 3600, 86400
WEEKDAY_HOURS = "30 6-16/4 * * 1-5"


@pytest.mark.parametrize(
    ("schedule", "created", "last", "deadline", "include_deadline", "now", "want"),
    [
        pytest.param(
            "0 * * * *", TOP, None, None, False, TOP + 30,
            ScheduleTimes(TOP, None, Missed.NONE),
            id="now before next schedule",
        ),
        pytest.param(
            "0 * * * *", TOP, None, None, False, TOP + 61 * M,
            ScheduleTimes(TOP, TOP + 60 * M, Missed.NONE),
            id="now just after next schedule",
        ),
        pytest.param(
            "0 * * * *", TOP + 10, None, None, False, TOP + 301 * M,
            ScheduleTimes(TOP + 10, TOP + 300 * M, Missed.FEW),
            id="missed 5 schedules",
        ),
        pytest.param(
            WEEKDAY_HOURS, TOP, TOP + 30 * M, None, False, TOP + 24 * H + 31 * M,
            ScheduleTimes(TOP + 30 * M, TOP + 24 * H + 30 * M, Missed.FEW),
            id="complex schedule",
        ),
        pytest.param(
            "30 10,11,12 * * 1-5", TOP, TOP + 30 * M, None, False, TOP + 30 * H + 30 * M,
            ScheduleTimes(TOP + 30 * M, None, Missed.FEW),
            id="another complex schedule: the estimate overshoots, none found",
        ),
        pytest.param(
            WEEKDAY_HOURS, TOP, TOP + 30 * M, None, False, TOP + 96 * H + 31 * M,
            ScheduleTimes(TOP + 30 * M, TOP + 96 * H + 30 * M, Missed.FEW),
            id="complex schedule with longer diff between executions",
        ),
        pytest.param(
            WEEKDAY_HOURS, TOP, None, None, False, TOP + 24 * H + 31 * M,
            ScheduleTimes(TOP, TOP + 24 * H + 30 * M, Missed.FEW),
            id="complex schedule with shorter diff between executions",
        ),
        pytest.param(
            "@every 1h", TOP - 59 * M, TOP + M, 10, False, TOP + 7 * D,
            ScheduleTimes(TOP + M, TOP + 6 * D + 23 * H + M, Missed.MANY),
            id="@every schedule, many missed",
        ),
        pytest.param(
            "0 * * * *", TOP, TOP, None, False, TOP + 30,
            ScheduleTimes(TOP, None, Missed.NONE),
            id="earliestTime being CreationTimestamp and LastScheduleTime",
        ),
        pytest.param(
            "*/5 * * * *", TOP, TOP + 30 * M, None, False, TOP + 31 * M,
            ScheduleTimes(TOP + 30 * M, None, Missed.NONE),
            id="earliestTime being LastScheduleTime",
        ),
        pytest.param(
            "*/5 * * * *", TOP, TOP + 30 * M, 60, False, TOP + 31 * M,
            ScheduleTimes(TOP + 30 * M, None, Missed.NONE),
            id="earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
        ),
        pytest.param(
            "*/5 * * * *", TOP, TOP + 30 * M, 60, True, TOP + 32 * M,
            ScheduleTimes(TOP + 31 * M, None, Missed.NONE),
            id="earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
        ),
        pytest.param(
            "*/1 * * * *", TOP + 30, None, None, False, TOP + 45,
            ScheduleTimes(TOP + 30, None, Missed.NONE),
            id="a new cronjob: the start time before its creation is not missed",
        ),
    ],
)  # fmt: skip
def test_most_recent_schedule_time(
    schedule: str,
    created: float,
    last: float | None,
    deadline: int | None,
    include_deadline: bool,
    now: float,
    want: ScheduleTimes,
) -> None:
    """upstream utils_test.go TestMostRecentScheduleTime, case for case."""
    spec: dict[str, Any] = {"schedule": schedule}
    if deadline is not None:
        spec["startingDeadlineSeconds"] = deadline
    cj = make_cj(created, last=last, **spec)
    got = most_recent_schedule_time(
        cj, now, cron.parse(schedule), include_starting_deadline=include_deadline
    )
    assert got == want


def test_a_schedule_no_date_matches_is_an_error() -> None:
    """TestMostRecentScheduleTime's "rogue cronjob" and TestNextScheduleTime's case 8: Feb 31."""
    cj = make_cj(TOP + 10, schedule="59 23 31 2 *")
    with pytest.raises(cron.ScheduleError, match="less than 1 second"):
        most_recent_schedule_time(cj, TOP + H, cron.parse("59 23 31 2 *"))
    with pytest.raises(cron.ScheduleError):
        next_schedule_time(cj, TOP + H, cron.parse("59 23 31 2 *"))


@pytest.mark.parametrize(
    ("schedule", "last", "now", "want"),
    [
        pytest.param(
            WEEKDAY_HOURS, TOP + 30 * M, TOP + 24 * H + 31 * M, 3 * H + 59 * M,
            id="complex schedule skipping weekend",
        ),
        pytest.param(
            "30 10,11,12 * * 1-5", TOP + 30 * M, TOP + 30 * H + 30 * M, 66 * H,
            id="another complex schedule skipping weekend",
        ),
        pytest.param(
            "0 12 * * 4", TOP + 2 * H, TOP + 19 * D + H + 30 * M, 48 * H + 30 * M,
            id="once a week cronjob, missed two runs",
        ),
        pytest.param("0 12 * * 5", None, TOP + 6 * H, 20 * H, id="no previous run of a cronjob"),
    ],
)  # fmt: skip
def test_next_schedule_time_duration(
    schedule: str, last: float | None, now: float, want: float
) -> None:
    """upstream utils_test.go TestNextScheduleTimeDuration."""
    cj = make_cj(TOP, last=last, schedule=schedule)
    got = next_schedule_time_duration(cj, now, cron.parse(schedule))
    assert got == pytest.approx(want + NEXT_SCHEDULE_DELTA)


def test_a_cronjob_created_in_the_future_waits_for_its_first_time_after_creation() -> None:
    # creationTimestamp ahead of the controller's now (clock skew): the next look is at
    # the first start time after the creation, not after now
    cj = make_cj(TOP + 5 * M + 10, schedule="*/1 * * * *")
    got = next_schedule_time_duration(cj, TOP, cron.parse("*/1 * * * *"))
    assert got == pytest.approx(6 * M + NEXT_SCHEDULE_DELTA)
    assert next_schedule_time(cj, TOP, cron.parse("*/1 * * * *")) == (None, Missed.NONE)


T1, T2 = TOP, TOP + H


@pytest.mark.parametrize(
    ("created", "last", "deadline", "now", "want"),
    [
        pytest.param(T1 - 10 * M, None, None, T1 - 7 * M, None, id="no start times, none needed"),
        pytest.param(T1 - 10 * M, None, None, T1 + 2, T1, id="no start times, one needed"),
        pytest.param(T1 - 10 * M, T1, None, T1 + 2 * M, None, id="last known, none needed"),
        pytest.param(T1 - 10 * M, T1, None, T2 + 5 * M, T2, id="last known, one needed"),
        pytest.param(T1 - 2 * H, T1 - H, None, T2 + 5 * M, T2, id="last known, two needed"),
        pytest.param(
            T1 - 2 * H, T1 - H, None, T2 + 10 * D, T2 + 10 * D, id="way ahead, no deadline"
        ),
        pytest.param(
            T1 - 2 * H, T1 - H, 2 * H, T2 + 10 * D, T2 + 10 * D, id="way ahead, short deadline"
        ),
    ],
)
def test_next_schedule_time(
    created: float, last: float | None, deadline: int | None, now: float, want: float | None
) -> None:
    """upstream utils_test.go TestNextScheduleTime (schedule "0 * * * ?")."""
    spec: dict[str, Any] = {"schedule": "0 * * * ?"}
    if deadline is not None:
        spec["startingDeadlineSeconds"] = deadline
    cj = make_cj(created, last=last, **spec)
    assert next_schedule_time(cj, now, cron.parse("0 * * * ?"))[0] == want


def test_schedule_times_follow_the_time_zone() -> None:
    # 09:00 in New York is 13:00Z in summer time (2016-05-19).
    cj = make_cj(TOP - 60, schedule="0 9 * * *", timeZone="America/New_York")
    nine = datetime(2016, 5, 19, 13, 0, tzinfo=UTC).timestamp()
    assert next_schedule_time_duration(cj, TOP, cron.parse("0 9 * * *")) == pytest.approx(
        nine - TOP + NEXT_SCHEDULE_DELTA
    )
    assert next_schedule_time(cj, nine + 1, cron.parse("0 9 * * *"))[0] == nine
    job = job_from_template(cj, nine)
    assert job.metadata.annotations[CRONJOB_SCHEDULED_TIMESTAMP] == "2016-05-19T09:00:00-04:00"


def test_job_from_template_names_and_owns_the_job() -> None:
    cj = make_cj(TOP - 60)
    job = job_from_template(cj, TOP)
    assert job.metadata.name == job_name(cj, TOP) == f"hello-{int(TOP) // 60}"
    assert job.metadata.labels["app"] == "hello" and job.metadata.annotations["a"] == "b"
    assert job.metadata.annotations[CRONJOB_SCHEDULED_TIMESTAMP] == "2016-05-19T10:00:00Z"
    ref = controller_of(job)
    assert ref is not None and (ref.kind, ref.name, ref.uid) == ("CronJob", "hello", "cj-uid")


def _job(name: str, cond: str, start: float) -> batch_pb2.Job:
    j = batch_pb2.Job()
    j.metadata.name = name
    j.status.start_time = rfc3339(start)
    if cond:
        j.status.conditions.add(type=cond, status="True")
    return j


def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    jobs = [
        _job("ok-old", "Complete", TOP),
        _job("ok-mid", "Complete", TOP + 60),
        _job("ok-new", "Complete", TOP + 120),
        _job("bad-old", "Failed", TOP),
        _job("bad-new", "Failed", TOP + 60),
        _job("running", "", TOP - 60),
    ]
    assert [j.metadata.name for j in jobs_to_clean(jobs, 1, 1)] == ["ok-old", "ok-mid", "bad-old"]
    assert jobs_to_clean(jobs, 3, 2) == []
    assert [j.metadata.name for j in jobs_to_clean(jobs, None, 0)] == ["bad-old", "bad-new"]


# ============================================================================ the controller


class CronHarness:
    def __init__(self, cluster: ControllerCluster) -> None:
        self.c = cluster
        self.controller = CronJobController(
            cluster.client,
            cluster.informers,
            config=CronJobConfig(record_events=False),
            clock=cluster.api_clock,
        )
        self.jobs = cluster.informers.get(JOBS)
        self.cronjobs = cluster.informers.get(CRONJOBS)
        self.syncs = 0
        sync = self.controller.sync

        async def counted(key: str) -> None:
            await sync(key)
            self.syncs += 1

        self.controller.sync = counted  # type: ignore[method-assign]

    async def create(self, **kw: Any) -> None:
        await self.c.create(cron_doc(**kw))
        await self.c.until(lambda: self.cronjobs.store.get(f"{NS}/hello") is not None)

    def cj(self, name: str = "hello") -> batch_pb2.CronJob:
        obj = self.cronjobs.store.get(f"{NS}/{name}")
        assert isinstance(obj, batch_pb2.CronJob)
        return obj

    def jobs_of(self, name: str = "hello") -> list[batch_pb2.Job]:
        uid = self.cj(name).metadata.uid
        out = [j for j in self.jobs.store.values() if (r := controller_of(j)) and r.uid == uid]
        return sorted(out, key=lambda j: j.metadata.name)  # type: ignore[attr-defined,arg-type]

    async def tick(self, seconds: float, name: str = "hello") -> None:
        """Move time on and sync, as the controller's requeue would; returns once a sync
        ran after the move."""
        self.c.api_clock.advance(seconds)
        before = self.syncs
        self.controller.queue.add(f"{NS}/{name}")
        await self.c.until(lambda: self.syncs > before)

    async def finish(self, job: batch_pb2.Job, cond: str) -> None:
        fresh = await self.c.client.get(JOBS, job.metadata.name, NS)
        assert isinstance(fresh, batch_pb2.Job)
        fresh.status.conditions.add(type=cond, status="True")
        fresh.status.start_time = fresh.status.start_time or rfc3339(self.c.api_clock.now())
        if cond == "Complete":
            fresh.status.completion_time = rfc3339(self.c.api_clock.now())
        await self.c.client.update_status(fresh)


@pytest.fixture
async def crons(cluster: ControllerCluster) -> AsyncIterator[CronHarness]:
    h = CronHarness(cluster)
    await cluster.start(h.controller)
    yield h


async def test_a_job_is_created_at_each_schedule_time(crons: CronHarness) -> None:
    await crons.create()
    assert crons.jobs_of() == []
    await crons.tick(61)
    await crons.c.until(lambda: len(crons.jobs_of()) == 1)
    [job] = crons.jobs_of()
    await crons.c.until(lambda: [r.name for r in crons.cj().status.active] == [job.metadata.name])
    scheduled = crons.cj().status.last_schedule_time
    assert job.metadata.name == f"hello-{int(datetime.fromisoformat(scheduled).timestamp()) // 60}"
    assert job.metadata.annotations[CRONJOB_SCHEDULED_TIMESTAMP] == scheduled
    assert job.spec.template.spec.restart_policy == "OnFailure"


async def test_forbid_skips_while_a_job_runs(crons: CronHarness) -> None:
    await crons.create(concurrencyPolicy="Forbid")
    await crons.tick(61)
    await crons.c.until(lambda: len(crons.cj().status.active) == 1)
    [first] = crons.jobs_of()
    await crons.tick(60)
    await crons.tick(60)
    assert crons.jobs_of() == [first]
    await crons.finish(first, "Complete")
    # Once it is done, the most recent missed time runs at once.
    await crons.c.until(lambda: len(crons.jobs_of()) == 2)
    await crons.c.until(
        lambda: (
            [r.name for r in crons.cj().status.active]
            == [j.metadata.name for j in crons.jobs_of() if j.metadata.uid != first.metadata.uid]
        )
    )
    assert crons.cj().status.last_successful_time


async def test_replace_deletes_the_running_job(crons: CronHarness) -> None:
    await crons.create(concurrencyPolicy="Replace")
    await crons.tick(61)
    await crons.c.until(lambda: len(crons.jobs_of()) == 1)
    [first] = crons.jobs_of()
    await crons.tick(60)
    await crons.c.until(
        lambda: (
            [j.metadata.name for j in crons.jobs_of()] != [first.metadata.name]
            and len(crons.jobs_of()) == 1
        )
    )
    assert [r.name for r in crons.cj().status.active] == [crons.jobs_of()[0].metadata.name]


async def test_allow_runs_jobs_side_by_side(crons: CronHarness) -> None:
    await crons.create()
    await crons.tick(61)
    await crons.c.until(lambda: len(crons.jobs_of()) == 1)
    await crons.tick(60)
    await crons.c.until(lambda: len(crons.jobs_of()) == 2)
    assert len(crons.cj().status.active) == 2


async def test_suspended_cronjob_creates_nothing(crons: CronHarness) -> None:
    await crons.create(suspend=True)
    await crons.tick(125)
    assert crons.jobs_of() == [] and not crons.cj().status.last_schedule_time


async def test_a_missed_start_past_the_deadline_is_skipped(crons: CronHarness) -> None:
    await crons.create(schedule="0 * * * *", startingDeadlineSeconds=10)
    # Far past the last top of the hour: the deadline leaves nothing to start.
    now = crons.c.api_clock.now()
    next_top = (int(now) // 3600 + 1) * 3600
    await crons.tick(next_top - now + 30)
    assert crons.jobs_of() == []
    await crons.tick(3600 + 5 - 30)  # 5 s after the next top: within the 10 s
    await crons.c.until(lambda: len(crons.jobs_of()) == 1)


async def test_history_limits_keep_the_newest_finished_jobs(crons: CronHarness) -> None:
    await crons.create(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0)
    for i in range(3):
        await crons.tick(61 if i == 0 else 60)
        await crons.c.until(
            lambda i=i: len(crons.jobs_of()) >= 1 and len(crons.cj().status.active) == 1
        )  # type: ignore[misc]
        [active] = [
            j for j in crons.jobs_of() if j.metadata.name == crons.cj().status.active[0].name
        ]
        await crons.finish(active, "Complete" if i < 2 else "Failed")
        await crons.c.until(lambda: not crons.cj().status.active)
    crons.controller.queue.add(f"{NS}/hello")
    await crons.c.until(lambda: len(crons.jobs_of()) == 1)
    [kept] = crons.jobs_of()
    assert any(c.type == "Complete" for c in kept.status.conditions)


async def test_a_new_cronjob_does_not_start_the_time_before_its_creation(
    crons: CronHarness,
) -> None:
    # The apiserver and the controller share one clock (as every component shares the
    # cluster clock under the time scale): created a second after a start time, the
    # CronJob waits for the next one.
    now = crons.c.api_clock.now()
    crons.c.api_clock.advance(60 - now % 60 + 1)
    await crons.create()
    await crons.tick(0)
    await crons.tick(30)
    assert crons.jobs_of() == [] and not crons.cj().status.last_schedule_time
    await crons.tick(30)
    await crons.c.until(lambda: len(crons.jobs_of()) == 1)


async def test_a_schedule_no_date_matches_starts_nothing(crons: CronHarness) -> None:
    await crons.create(schedule="59 23 31 2 *")
    await crons.tick(400 * 86400)  # the sync returns (InvalidSchedule), it does not fail
    assert crons.jobs_of() == []


def _own_job(cj: batch_pb2.CronJob, scheduled: float, *, owned: bool) -> dict[str, Any]:
    job = codec.encode(job_from_template(cj, scheduled))
    if not owned:
        job["metadata"].pop("ownerReferences")
    return job


@pytest.mark.parametrize("owned", [True, False], ids=["ours: adopted", "not ours: left"])
async def test_a_job_that_already_exists_at_the_scheduled_name(
    crons: CronHarness, owned: bool
) -> None:
    """syncCronJob's IsAlreadyExists: a Job of the scheduled time's name made by an earlier
    sync (its status write lost) goes into active; someone else's is left alone."""
    await crons.create()
    cj = crons.cj()
    created = datetime.fromisoformat(cj.metadata.creation_timestamp).timestamp()
    scheduled = (int(created) // 60 + 1) * 60
    await crons.c.create(_own_job(cj, scheduled, owned=owned))
    await crons.tick(scheduled - crons.c.api_clock.now() + 1)
    if owned:
        await crons.c.until(lambda: len(crons.cj().status.active) == 1)
        assert crons.cj().status.active[0].name == job_name(cj, scheduled)
        assert crons.cj().status.last_schedule_time == rfc3339(scheduled)
    else:
        await crons.tick(0)
        assert not crons.cj().status.active and not crons.cj().status.last_schedule_time
