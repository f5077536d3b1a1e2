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
    CronJobConfig,
    CronJobController,
    job_from_template,
    job_name,
    jobs_to_clean,
    most_recent_schedule_time,
    next_schedule_time,
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


@pytest.mark.parametrize(
    ("schedule", "created", "last", "now", "deadline", "want"),
    [
        pytest.param("0 * * * *", TOP - 60, None, TOP - 30, None, (None, 0), id="not yet due"),
        pytest.param("0 * * * *", TOP - 60, None, TOP + 30, None, (TOP, 1), id="one due"),
        pytest.param("0 * * * *", TOP - 60, TOP, TOP + 30, None, (None, 0), id="already ran"),
        pytest.param(
            "0 * * * *",
            TOP - 60,
            None,
            TOP + 3 * 3600 + 10,
            None,
            (TOP + 3 * 3600, 4),
            id="four missed",
        ),
        pytest.param(
            "@hourly", TOP - 60, None, TOP + 3600, None, (TOP + 3600, 2), id="a descriptor"
        ),
        pytest.param(
            "*/1 * * * *",
            TOP - 60,
            None,
            TOP + 3 * 3600,
            600,
            (TOP + 3 * 3600, 10),
            id="the starting deadline limits the look back",
        ),
        pytest.param(
            "30 6-16/4 * * 1-5",
            TOP - 86400 * 2,
            TOP - 3600 * 3.5,
            TOP + 60,
            None,
            (None, 0),
            id="weekday hours, none",
        ),
        pytest.param(
            "30 6-16/4 * * 1-5",
            TOP - 86400 * 2,
            TOP - 3600 * 3.5,
            TOP + 3600 * 4.5 + 60,
            None,
            (TOP + 3600 * 4.5, 2),
            id="weekday hours, two",
        ),
    ],
)
def test_most_recent_schedule_time(
    schedule: str,
    created: float,
    last: float | None,
    now: float,
    deadline: int | None,
    want: tuple[float | None, int],
) -> None:
    spec: dict[str, Any] = {"schedule": schedule}
    if deadline is not None:
        spec["startingDeadlineSeconds"] = deadline
    cj = make_cj(created, last=last, **spec)
    assert most_recent_schedule_time(cj, now, cron.parse(schedule)) == want


@pytest.mark.parametrize(
    ("schedule", "now", "want"),
    [
        pytest.param("*/1 * * * *", TOP + 500 * 60 + 30, TOP + 500 * 60, id="every minute"),
        pytest.param("@every 1m", TOP + 500 * 60 + 30, TOP - 60 + 501 * 60, id="@every"),
    ],
)
def test_more_than_100_missed_times_still_give_the_most_recent(
    schedule: str, now: float, want: float
) -> None:
    cj = make_cj(TOP - 60, schedule=schedule)
    assert most_recent_schedule_time(cj, now, cron.parse(schedule)) == (want, 101)


def test_schedule_times_follow_the_time_zone() -> None:
    # 09:00 in New York is 13:00Z in summer time (2016-05-19).
    cj = make_cj(TOP - 60, schedule="0 9 * * *", timeZone="America/New_York")
    nxt = next_schedule_time(cj, TOP, cron.parse("0 9 * * *"))
    assert nxt == datetime(2016, 5, 19, 13, 0, tzinfo=UTC).timestamp()
    job = job_from_template(cj, nxt)
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
