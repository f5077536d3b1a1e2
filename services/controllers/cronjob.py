"""The CronJob controller (upstream pkg/controller/cronjob/cronjob_controllerv2.go and
utils.go): creates a CronJob's Jobs at its schedule's times, in its time zone, all in
the injected clock's (simulated) time, so `*/1 * * * *` fires every 60 / time_scale wall
seconds.

One sync of a CronJob key:

    its Jobs (controller reference) ─► status.active: drop finished Jobs (SawCompletedJob)
      and Jobs gone from the API (MissingJob); lastSuccessfulTime from completed Jobs;
      warn about unfinished Jobs it did not create (UnexpectedJob)
    ─► history: delete the oldest finished Jobs beyond successfulJobsHistoryLimit and
       failedJobsHistoryLimit
    ─► deleted, suspended, bad time zone or schedule? stop (no requeue)
    ─► the most recent schedule time not yet run, since lastScheduleTime (or creation),
       limited by startingDeadlineSeconds (>100 missed: TooManyMissedTimes; a schedule
       no date matches: InvalidSchedule, stop)
       none ─► requeue at the next time
       past startingDeadlineSeconds ─► MissSchedule
       Forbid with an active Job ─► JobAlreadyActive
       Replace ─► delete the active Jobs first
    ─► create Job `<cronjob>-<scheduled unix minutes>` from jobTemplate (annotation
       batch.kubernetes.io/cronjob-scheduled-timestamp), add it to status.active, set
       lastScheduleTime ─► requeue at the next time

Deliberate difference: a Job deleted by Replace or by the history limits is deleted
without a propagation policy; its pods go with it through the Job controller's cascade.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from google.protobuf.message import Message

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.helpers import cron
from services.api.helpers.wellknown import CRONJOB_SCHEDULED_TIMESTAMP
from services.api.machinery import codec
from services.api.machinery.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, rfc3339
from services.controllers.controller_utils import (
    NamespaceIndex,
    controller_of,
    new_controller_ref,
    timestamp,
    wait_synced,
)
from services.controllers.events import EventRecorder
from services.controllers.job.rules import COMPLETE, FAILED, has_true
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

JOBS = BY_KIND["Job"]
CRONJOBS = BY_KIND["CronJob"]

#: More missed start times than this and the controller gives up on catching up.
MAX_MISSED_SCHEDULES = 100
#: Requeue this long after the next schedule time, so the time has surely passed.
NEXT_SCHEDULE_DELTA = 0.1


@dataclass
class CronJobConfig:
    """Settings of the CronJob controller."""

    workers: int = 5
    """CronJobs synced at once (--concurrent-cron-job-syncs)."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    record_events: bool = True
    """Write SuccessfulCreate / SawCompletedJob / MissSchedule … Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


# ============================================================================ schedule times


class Missed(enum.Enum):
    """missedSchedulesType: how many start times passed unmet since the earliest time."""

    NONE = "none"
    FEW = "few"
    MANY = "many"


@dataclass(frozen=True)
class ScheduleTimes:
    """What mostRecentScheduleTime finds."""

    #: The last schedule time, else the creation (moved up to now minus
    #: startingDeadlineSeconds when that is later and the deadline is included).
    earliest: float
    #: The most recent start time at or before now; None when none (or not found).
    most_recent: float | None
    missed: Missed


def _zone(cj: batch_pb2.CronJob) -> tzinfo:
    return cron.zone(cj.spec.time_zone if cj.spec.HasField("time_zone") else None)


def _next(schedule: cron.Schedule, t: datetime) -> datetime:
    """sched.Next(t); a schedule no date matches (`59 23 31 2 *`) is robfig's zero time,
    which mostRecentScheduleTime turns into an error."""
    try:
        return schedule.next_after(t)
    except cron.ScheduleError:
        raise cron.ScheduleError(
            "time difference between two schedules is less than 1 second"
        ) from None


def most_recent_schedule_time(
    cj: batch_pb2.CronJob,
    now: float,
    schedule: cron.Schedule,
    *,
    include_starting_deadline: bool = True,
) -> ScheduleTimes:
    """mostRecentScheduleTime, as upstream computes it: t1 and t2 are the first two start
    times after the earliest time; when now is past t2 the number of missed times is
    estimated from their interval, (now - t1) / (t2 - t1) + 1 (MANY past 100, FEW
    otherwise), and the most recent one is searched from one interval before the
    estimate (so an irregular schedule can come out None, as upstream's does). Raises
    ScheduleError for a schedule whose interval is under a second (no date matches)."""
    tz = _zone(cj)
    earliest = timestamp(cj.status.last_schedule_time) or timestamp(cj.metadata.creation_timestamp)
    if earliest is None:
        earliest = now
    if include_starting_deadline and cj.spec.HasField("starting_deadline_seconds"):
        earliest = max(earliest, now - cj.spec.starting_deadline_seconds)
    t1 = _next(schedule, datetime.fromtimestamp(earliest, tz))
    t2 = _next(schedule, t1)
    if now < t1.timestamp():
        return ScheduleTimes(earliest, None, Missed.NONE)
    if now < t2.timestamp():
        return ScheduleTimes(earliest, t1.timestamp(), Missed.NONE)
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise cron.ScheduleError("time difference between two schedules is less than 1 second")
    missed = int(now - t1.timestamp()) // between + 1
    t = _next(schedule, t1 + timedelta(seconds=(missed - 2) * between))
    most_recent: float | None = None
    while t.timestamp() <= now:
        most_recent = t.timestamp()
        t = _next(schedule, t)
    kind = Missed.MANY if missed > MAX_MISSED_SCHEDULES else Missed.FEW
    return ScheduleTimes(earliest, most_recent, kind)


def next_schedule_time(
    cj: batch_pb2.CronJob, now: float, schedule: cron.Schedule
) -> tuple[float | None, Missed]:
    """nextScheduleTime: the unmet start time to run now (the most recent one, the
    starting deadline included), None when there is none; and how many were missed.
    Raises ScheduleError as most_recent_schedule_time does."""
    times = most_recent_schedule_time(cj, now, schedule)
    if times.most_recent is None or times.most_recent > now:
        return None, times.missed
    return times.most_recent, times.missed


def next_schedule_time_duration(
    cj: batch_pb2.CronJob, now: float, schedule: cron.Schedule
) -> float:
    """nextScheduleTimeDuration: seconds until the start time after the most recent one
    (without the starting deadline), plus NEXT_SCHEDULE_DELTA; from now when times were
    missed but none found, or the schedule is broken; from the earliest time when none
    was missed (a CronJob created "in the future" waits for its first time after it)."""
    tz = _zone(cj)
    try:
        times = most_recent_schedule_time(cj, now, schedule, include_starting_deadline=False)
        base = times.most_recent
        if base is None:
            base = times.earliest if times.missed is Missed.NONE else now
        after = _next(schedule, datetime.fromtimestamp(base, tz))
    except cron.ScheduleError:
        return NEXT_SCHEDULE_DELTA  # upstream's Next of the zero time: a retry soon
    return after.timestamp() + NEXT_SCHEDULE_DELTA - now


def job_name(cj: batch_pb2.CronJob, scheduled: float) -> str:
    """getJobName: the CronJob's name and the scheduled time in Unix minutes."""
    return f"{cj.metadata.name}-{int(scheduled) // 60}"


def job_from_template(cj: batch_pb2.CronJob, scheduled: float) -> batch_pb2.Job:
    """getJobFromTemplate2: the jobTemplate's labels, annotations (plus the scheduled
    timestamp, RFC 3339 in the CronJob's zone) and spec, controlled by the CronJob."""
    jt = cj.spec.job_template
    job = narrow(JOBS.new(), batch_pb2.Job)
    job.metadata.name = job_name(cj, scheduled)
    job.metadata.namespace = cj.metadata.namespace
    job.metadata.labels.update(jt.metadata.labels)
    job.metadata.annotations.update(jt.metadata.annotations)
    tz = cron.zone(cj.spec.time_zone if cj.spec.HasField("time_zone") else None)
    when = datetime.fromtimestamp(scheduled, tz)
    job.metadata.annotations[CRONJOB_SCHEDULED_TIMESTAMP] = when.isoformat().replace("+00:00", "Z")
    job.metadata.owner_references.append(new_controller_ref(cj, CRONJOBS))
    job.spec.CopyFrom(jt.spec)
    return job


def is_finished(job: batch_pb2.Job) -> bool:
    return has_true(job, COMPLETE) or has_true(job, FAILED)


def _start_order(job: batch_pb2.Job) -> tuple[int, float, str]:
    """byJobStartTime: by start time (Jobs without one last), then name."""
    t = timestamp(job.status.start_time)
    return (1, 0.0, job.metadata.name) if t is None else (0, t, job.metadata.name)


def jobs_to_clean(
    jobs: list[batch_pb2.Job], successful_limit: int | None, failed_limit: int | None
) -> list[batch_pb2.Job]:
    """The oldest finished Jobs beyond each history limit (cleanupFinishedJobs)."""
    out: list[batch_pb2.Job] = []
    for limit, cond in ((successful_limit, COMPLETE), (failed_limit, FAILED)):
        if limit is None:
            continue
        done = sorted((j for j in jobs if has_true(j, cond)), key=_start_order)
        out += done[: max(0, len(done) - limit)]
    return out


# ============================================================================ controller


class CronJobController:
    """Creates each CronJob's Jobs on its schedule (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: CronJobConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or CronJobConfig()
        self.clock = clock or RealClock()
        self.cj_informer = informers.get(CRONJOBS)
        self.job_informer = informers.get(JOBS)
        self.queue: WorkQueue[str] = controller_queue(
            "cronjob",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.events = EventRecorder(
            client, "cronjob-controller", self.clock, enabled=self.config.record_events
        )
        self._job_index = NamespaceIndex(self.job_informer, batch_pb2.Job)
        self.cj_informer.add_handlers(Handlers(self._enqueue, lambda o, n: self._enqueue(n), None))
        self.job_informer.add_handlers(
            Handlers(self._job_changed, lambda o, n: self._job_changed(n), self._job_changed)
        )

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, self.cj_informer.synced, self.job_informer.synced):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="cronjob"
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """No pod update: the controller reads Jobs, never pods."""
        return False

    def _enqueue(self, obj: Message) -> None:
        self.queue.add(object_key(obj))

    def _job_changed(self, obj: Message) -> None:
        ref = controller_of(obj)
        if ref is not None and ref.kind == CRONJOBS.kind:
            self.queue.add(f"{object_meta(obj).namespace}/{ref.name}")

    def jobs_of(self, cj: batch_pb2.CronJob) -> list[batch_pb2.Job]:
        out = []
        for job in self._job_index.list(cj.metadata.namespace):
            ref = controller_of(job)
            if ref is not None and ref.uid == cj.metadata.uid:
                out.append(job)
        return out

    async def sync(self, key: str) -> None:
        cj = narrow_optional(self.cj_informer.store.get(key), batch_pb2.CronJob)
        if cj is None:
            return
        jobs = self.jobs_of(cj)
        status = batch_pb2.CronJobStatus()
        status.CopyFrom(cj.status)
        await self._reconcile_active(cj, status, jobs)
        await self._clean_history(cj, jobs)
        requeue = None
        with contextlib.suppress(_Stop):
            requeue = await self._schedule(cj, status)
        await self._write_status(cj, status)
        if requeue is not None:
            self.queue.add_after(key, requeue)

    async def _reconcile_active(
        self, cj: batch_pb2.CronJob, status: batch_pb2.CronJobStatus, jobs: list[batch_pb2.Job]
    ) -> None:
        active_uids = {ref.uid for ref in status.active}
        by_uid = {j.metadata.uid: j for j in jobs}
        keep: list[core_pb2.ObjectReference] = []
        for ref in status.active:
            job = by_uid.get(ref.uid)
            if job is not None:
                if is_finished(job):
                    cond = "Complete" if has_true(job, COMPLETE) else "Failed"
                    self.events.event(
                        cj,
                        "Normal",
                        "SawCompletedJob",
                        f"Saw completed job: {job.metadata.name}, condition: {cond}",
                    )
                    continue
                keep.append(ref)
                continue
            # Not in the cache: ask the API before dropping it (the cache may lag).
            try:
                fresh = await self.client.get(JOBS, ref.name, ref.namespace)
            except NotFoundError:
                self.events.event(
                    cj, "Normal", "MissingJob", f"Active job went missing: {ref.name}"
                )
                continue
            if object_meta(fresh).uid != ref.uid:
                continue
            keep.append(ref)
        del status.active[:]
        status.active.extend(keep)
        for job in jobs:
            if job.metadata.uid not in active_uids and not is_finished(job):
                self.events.event(
                    cj,
                    "Warning",
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {job.metadata.name}",
                )
            if has_true(job, COMPLETE) and job.status.completion_time:
                last = timestamp(status.last_successful_time)
                done = timestamp(job.status.completion_time)
                if done is not None and (last is None or done > last):
                    status.last_successful_time = job.status.completion_time

    async def _clean_history(self, cj: batch_pb2.CronJob, jobs: list[batch_pb2.Job]) -> None:
        spec = cj.spec
        doomed = jobs_to_clean(
            jobs,
            spec.successful_jobs_history_limit
            if spec.HasField("successful_jobs_history_limit")
            else None,
            spec.failed_jobs_history_limit if spec.HasField("failed_jobs_history_limit") else None,
        )
        for job in doomed:
            await self._delete_job(cj, job)

    async def _delete_job(self, cj: batch_pb2.CronJob, job: batch_pb2.Job) -> None:
        try:
            await self.client.delete(
                JOBS, job.metadata.name, job.metadata.namespace, uid=job.metadata.uid
            )
        except (NotFoundError, ConflictError):
            return
        except ApiError as e:
            self.events.event(
                cj, "Warning", "FailedDelete", f"Deleted job: {job.metadata.name}: {e}"
            )
            raise
        self.events.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {job.metadata.name}")

    async def _schedule(self, cj: batch_pb2.CronJob, status: batch_pb2.CronJobStatus) -> float:
        """Start the Job of the most recent missed time if the policies allow; the delay
        until the next look (raises _Stop when there is none to schedule)."""
        spec = cj.spec
        if cj.metadata.deletion_timestamp or spec.suspend:
            raise _Stop
        tz_name = spec.time_zone if spec.HasField("time_zone") else None
        if tz_name is not None and not cron.valid_zone(tz_name):
            self.events.event(
                cj,
                "Warning",
                "UnknownTimeZone",
                f"invalid timeZone: {tz_name!r}: unknown time zone",
            )
            raise _Stop
        try:
            schedule = cron.parse(spec.schedule)
        except cron.ScheduleError as e:
            self.events.event(
                cj,
                "Warning",
                "UnparseableSchedule",
                f"unparseable schedule: {spec.schedule!r} : {e}",
            )
            raise _Stop from None
        now = self.clock.now()
        try:
            scheduled, missed = next_schedule_time(cj, now, schedule)
        except cron.ScheduleError as e:
            # a schedule no date matches: not synced again until its spec changes
            self.events.event(
                cj, "Warning", "InvalidSchedule", f"invalid schedule: {spec.schedule} : {e}"
            )
            raise _Stop from None
        if missed is Missed.MANY:
            self.events.event(
                cj,
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
        if scheduled is None:
            return next_schedule_time_duration(cj, now, schedule)
        if spec.HasField("starting_deadline_seconds") and (
            scheduled + spec.starting_deadline_seconds < now
        ):
            when = datetime.fromtimestamp(scheduled, UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
            self.events.event(
                cj, "Warning", "MissSchedule", f"Missed scheduled time to start a job: {when}"
            )
            return next_schedule_time_duration(cj, now, schedule)
        name = job_name(cj, scheduled)
        if any(ref.name == name for ref in status.active) or (
            timestamp(status.last_schedule_time) == scheduled
        ):
            return next_schedule_time_duration(cj, now, schedule)
        if spec.concurrency_policy == "Forbid" and status.active:
            self.events.event(
                cj,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            return next_schedule_time_duration(cj, now, schedule)
        if spec.concurrency_policy == "Replace":
            for ref in list(status.active):
                job = narrow_optional(
                    self.job_informer.store.get(f"{ref.namespace}/{ref.name}"), batch_pb2.Job
                )
                if job is not None and job.metadata.uid == ref.uid:
                    await self._delete_job(cj, job)
            del status.active[:]
        job_req = job_from_template(cj, scheduled)
        try:
            created = narrow(await self.client.create(job_req), batch_pb2.Job)
        except AlreadyExistsError:
            # Made by an earlier sync whose status write was lost (then it goes into
            # active now), or by someone else (then it is theirs: no requeue).
            created = narrow(
                await self.client.get(JOBS, job_req.metadata.name, job_req.metadata.namespace),
                batch_pb2.Job,
            )
            ref = controller_of(created)
            if ref is None or ref.uid != cj.metadata.uid:
                raise _Stop from None
            if any(a.uid == created.metadata.uid for a in status.active):
                raise _Stop from None
        except ApiError as e:
            self.events.event(cj, "Warning", "FailedCreate", f"Error creating job: {e}")
            raise
        else:
            self.events.event(
                cj, "Normal", "SuccessfulCreate", f"Created job {created.metadata.name}"
            )
        status.active.append(
            core_pb2.ObjectReference(
                kind=JOBS.kind,
                api_version=JOBS.api_version,
                namespace=created.metadata.namespace,
                name=created.metadata.name,
                uid=created.metadata.uid,
                resource_version=created.metadata.resource_version,
            )
        )
        status.last_schedule_time = rfc3339(scheduled)
        # as upstream, the next look is counted from the status just written
        updated = narrow(codec.clone(cj), batch_pb2.CronJob)
        updated.status.CopyFrom(status)
        return next_schedule_time_duration(updated, now, schedule)

    async def _write_status(self, cj: batch_pb2.CronJob, status: batch_pb2.CronJobStatus) -> None:
        if status == cj.status:
            return
        target = narrow(codec.clone(cj), batch_pb2.CronJob)
        target.status.CopyFrom(status)
        try:
            await self.client.update_status(target)
        except ConflictError:
            # Changed meanwhile: its update event brings it back to the queue.
            self.queue.add(object_key(cj))


class _Stop(Exception):
    """Nothing to schedule and nothing to wait for (deleted, suspended, unparseable)."""


__all__ = [
    "CronJobConfig",
    "CronJobController",
    "job_from_template",
    "job_name",
    "jobs_to_clean",
    "Missed",
    "ScheduleTimes",
    "most_recent_schedule_time",
    "next_schedule_time",
    "next_schedule_time_duration",
]
