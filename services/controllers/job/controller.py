"""The Job controller (upstream pkg/controller/job/job_controller.go), with the
TTL-after-finished controller's deletion folded in. What a sync decides from the pods
(indexes, FailureTarget, SuccessCriteriaMet) is decide.py; pod-level rules are rules.py.

A Job runs pods until enough of them succeed. One sync of a Job key:

    Job gone? ─► delete the pods it controlled (kubera's stand-in for the GC's cascade),
                 dropping their tracking finalizers
    finished (Complete/Failed)? ─► drop finalizers left; ttlSecondsAfterFinished: delete
                 the Job once it passed ─► done
    pods it controls (adopting matching orphans) ─► count the newly finished ones:
        1. their UIDs go to status.uncountedTerminatedPods (with completedIndexes /
           failedIndexes for Indexed Jobs) — status write
        2. their batch.kubernetes.io/job-tracking finalizers are removed
        3. the UIDs move from uncounted to succeeded / failed — status write (step 5)
    finish checks: FailJob rule of the podFailurePolicy, backoffLimit (failures, and
        container restarts under OnFailure), maxFailedIndexes, activeDeadlineSeconds ─►
        FailureTarget; enough successes or a successPolicy rule ─► SuccessCriteriaMet;
        once no pod of the Job is active or terminating the terminal condition (Failed,
        or Complete with completionTime) follows, with the same reason and message
    manage pods: suspended or finishing ─► delete active pods; else create up to
        parallelism (Indexed: the lowest indexes not succeeded, failed or running) after
        the failure backoff (10 s doubling to 10 min), delete the surplus and duplicates
    status (only when it changed) ─► requeue for the deadline, the backoff or the TTL

An Indexed Job is elastic (ElasticIndexedJob): completions may change with parallelism.
Indexes at or past completions are not run (their pods are deleted) and drop out of
completedIndexes and failedIndexes; succeeded counts the completed indexes in range, so
a scale-down can lower it, while failed keeps counting failed pods. An index scaled out
after it completed runs again if it comes back into range.

The finalizer makes counting exact: a finished pod is counted exactly once, while it
still has the finalizer, and the finalizer is removed only after its UID was written to
uncountedTerminatedPods. Expectations (creations, deletions, finalizer removals) keep a
sync from acting twice on what it has not yet seen through the informers.

Deliberate differences from upstream: pods that the controller itself deleted (suspend,
scale-down, a finishing Job) are not counted as failures; the TTL-after-finished
deletion is done here rather than by its own controller; the Job's pods are deleted by
this controller when the Job is (no garbage collector is assumed); podReplacementPolicy
Failed waits for a terminating pod to reach phase Failed or for its deletion time to pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence

from google.protobuf.message import Message

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.helpers.wellknown import (
    JOB_INDEX_FAILURE_COUNT,
    JOB_TRACKING_FINALIZER,
)
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, rfc3339
from services.controllers.controller_utils import (
    NamespaceIndex,
    controller_of,
    is_pod_ready,
    selector_for,
    split_key,
    timestamp,
    wait_synced,
)
from services.controllers.events import EventRecorder
from services.controllers.expectations import ControllerExpectations
from services.controllers.job import decide, rules
from services.controllers.job.config import JOB_CONTROLLER_NAME, JobConfig
from services.controllers.job.decide import Tally
from services.controllers.job.pods import (
    deletion_rank,
    is_active,
    is_indexed,
    is_pod_failed,
    is_terminating,
    only_replace_failed,
    pod_from_template,
    restarts,
)
from services.controllers.job.rules import (
    COMPLETE,
    FAILED,
    BackoffRecord,
)
from services.controllers.ref_manager import claim, recheck_owner
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
JOBS = BY_KIND["Job"]

# ============================================================================ controller


class JobController:
    """Runs each Job's pods to completion (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: JobConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or JobConfig()
        self.clock = clock or RealClock()
        self.job_informer = informers.get(JOBS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = controller_queue(
            "job",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.expectations = ControllerExpectations(self.clock, self.config.expectations_timeout)
        self.events = EventRecorder(
            client, "job-controller", self.clock, enabled=self.config.record_events
        )
        self._job_index = NamespaceIndex(self.job_informer, batch_pb2.Job)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        # Job key -> UIDs of deleted Jobs of that name whose pods are still to go.
        self._dead_owners: dict[str, set[str]] = {}
        # Pod UIDs whose finalizer this controller removed (until the cache shows it).
        self._finalizers_removed: set[str] = set()
        # Pod UIDs this controller deleted (not counted as failures).
        self._deleted_by_us: set[str] = set()
        # Job key -> the Job as last written (the cache may lag behind our own writes).
        self._written: dict[str, batch_pb2.Job] = {}
        self._backoff: dict[str, BackoffRecord] = {}
        self.job_informer.add_handlers(Handlers(self._add_job, self._update_job, self._delete_job))
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, self.job_informer.synced, self.pod_informer.synced):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="job"
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    # ------------------------------------------------------------------ event handlers

    def _add_job(self, job: Message) -> None:
        self.queue.add(object_key(job))

    def _update_job(self, old: Message, cur: Message) -> None:
        if object_meta(old).uid != object_meta(cur).uid:
            self._delete_job(old)
        self.queue.add(object_key(cur))

    def _delete_job(self, job: Message) -> None:
        key = object_key(job)
        self.expectations.delete(key)
        self._written.pop(key, None)
        self._backoff.pop(key, None)
        self._dead_owners.setdefault(key, set()).add(object_meta(job).uid)
        self.queue.add(key)

    def _job_of(self, pod: core_pb2.Pod) -> str | None:
        ref = controller_of(pod)
        if ref is None or ref.kind != JOBS.kind:
            return None
        return f"{pod.metadata.namespace}/{ref.name}"

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """Every update of a pod a Job controls (its Job counts it) or with the tracking
        finalizer; a label change of an orphan (a Job may adopt it)."""
        for obj in (old, new):
            ref = controller_of(obj)
            if ref is not None and ref.kind == JOBS.kind:
                return True
        return bool(
            JOB_TRACKING_FINALIZER in object_meta(new).finalizers
            or object_meta(old).labels != object_meta(new).labels
        )

    def _add_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        key = self._job_of(pod)
        if key is None:
            if controller_of(pod) is None:
                self._orphan_changed(pod)
            return
        if pod.metadata.deletion_timestamp:
            self.expectations.deletion_observed(key, object_key(pod))
        else:
            self.expectations.creation_observed(key)
        self._pod_changed(pod)

    def _delete_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        self._finalizers_removed.discard(pod.metadata.uid)
        self._deleted_by_us.discard(pod.metadata.uid)
        key = self._job_of(pod)
        if key is not None:
            self.expectations.deletion_observed(key, object_key(pod))
            self.queue.add(key)

    def _pod_changed(self, pod: core_pb2.Pod) -> None:
        key = self._job_of(pod)
        if key is None:
            return
        if JOB_TRACKING_FINALIZER not in pod.metadata.finalizers:
            self._finalizers_removed.discard(pod.metadata.uid)
        self.queue.add(key)

    def _orphan_changed(self, pod: core_pb2.Pod) -> None:
        for job in self._job_index.list(pod.metadata.namespace):
            sel = selector_for(job.spec.selector)
            if sel is not None and sel.matches(pod.metadata.labels):
                self.queue.add(object_key(job))

    def _update_pod(self, old_obj: Message, cur_obj: Message) -> None:
        old, pod = narrow(old_obj, core_pb2.Pod), narrow(cur_obj, core_pb2.Pod)
        old_key, key = self._job_of(old), self._job_of(pod)
        if old_key is not None and old_key != key:
            self.queue.add(old_key)
        if key is None:
            if controller_of(pod) is None:
                self._orphan_changed(pod)
            return
        if pod.metadata.deletion_timestamp and not old.metadata.deletion_timestamp:
            self.expectations.deletion_observed(key, object_key(pod))
        self._pod_changed(pod)

    # ------------------------------------------------------------------ sync

    def _current(self, key: str) -> batch_pb2.Job | None:
        cached = narrow_optional(self.job_informer.store.get(key), batch_pb2.Job)
        written = self._written.get(key)
        if cached is None or written is None:
            return cached
        if written.metadata.uid != cached.metadata.uid:
            return cached
        if int(written.metadata.resource_version or 0) > int(cached.metadata.resource_version or 0):
            return written
        self._written.pop(key, None)
        return cached

    async def sync(self, key: str) -> None:
        """Reconcile one Job; raises to be retried with backoff."""
        job = self._current(key)
        await self._cascade(key, job)
        if job is None:
            self.expectations.delete(key)
            return
        if job.spec.HasField("managed_by") and job.spec.managed_by != JOB_CONTROLLER_NAME:
            return  # another controller's Job (spec.managedBy)
        now = self.clock.now()
        pods = await self._pods(job)
        if rules.is_finished(job):
            await self._remove_finalizers(key, [p for p in pods if self._has_finalizer(p)])
            await self._expire(key, job, now)
            return
        if job.metadata.deletion_timestamp:
            await self._remove_finalizers(key, [p for p in pods if self._has_finalizer(p)])
            return
        tally = self._tally(job, pods, now)
        job = await self._track(key, job, tally, now)
        status = batch_pb2.JobStatus()
        status.CopyFrom(job.status)
        if is_indexed(job):
            decide.indexes_in_range(job, status)
        stamp = rfc3339(now)
        finishing = decide.finish(job, status, tally, now, stamp)
        suspended = job.spec.suspend and not finishing
        if not suspended and not status.start_time:
            status.start_time = stamp
        self._emit(job, decide.suspend_condition(job, status, suspended, stamp))
        manage_error: ApiError | None = None
        if self.expectations.satisfied(key):
            try:
                if finishing or suspended:
                    await self._delete_pods(key, job, tally.active)
                    tally.active = []
                else:
                    tally.active = await self._manage(key, job, status, tally, now)
            except ApiError as e:
                manage_error = e
        status.active = len(tally.active)
        status.ready = sum(1 for p in tally.active if is_pod_ready(p))
        status.terminating = tally.terminating
        if finishing and not tally.active and tally.terminating == 0:
            self._emit(job, decide.terminal_condition(status, stamp))
        await self._write_status(key, job, status)
        self._requeue(key, job, status, now)
        if manage_error is not None:
            raise manage_error

    async def _pods(self, job: batch_pb2.Job) -> list[core_pb2.Pod]:
        selector = selector_for(job.spec.selector)
        if selector is None:
            return []
        candidates = [
            p
            for p in self._pod_index.list(job.metadata.namespace)
            if selector.matches(p.metadata.labels) or self._job_of(p) == object_key(job)
        ]
        claimed = await claim(
            self.client,
            PODS,
            job,
            JOBS,
            selector,
            candidates,
            recheck_owner(self.client, JOBS, job),
        )
        return [narrow(p, core_pb2.Pod) for p in claimed]

    def _has_finalizer(self, pod: core_pb2.Pod) -> bool:
        return (
            JOB_TRACKING_FINALIZER in pod.metadata.finalizers
            and pod.metadata.uid not in self._finalizers_removed
        )

    def _tally(self, job: batch_pb2.Job, pods: Sequence[core_pb2.Pod], now: float) -> Tally:
        """Sort the Job's pods: active, terminating, newly finished (to count)."""
        t = Tally()
        uncounted = job.status.uncounted_terminated_pods
        counted = {*uncounted.succeeded, *uncounted.failed}
        completions = job.spec.completions
        indexed = is_indexed(job)
        policy = job.spec.pod_failure_policy if job.spec.HasField("pod_failure_policy") else None
        for pod in pods:
            if is_active(pod):
                t.active.append(pod)
                t.restarts += restarts(pod)
                continue
            if is_terminating(pod):
                t.terminating += 1
            failed = is_pod_failed(pod, job, now)
            if pod.status.phase != "Succeeded" and not failed:
                continue
            if not self._has_finalizer(pod):
                continue
            if pod.metadata.uid in counted:
                # Written to uncounted by an earlier sync that did not get further.
                t.uncounted_free.append(pod)
                continue
            ix = rules.completion_index(pod) if indexed else None
            valid = not indexed or (ix is not None and ix < completions)
            if pod.status.phase == "Succeeded":
                (t.new_succeeded if valid else t.uncounted_free).append(pod)
                continue
            if pod.metadata.uid in self._deleted_by_us or not valid:
                t.uncounted_free.append(pod)
                continue
            match = rules.match_pod_failure_policy(policy, pod)
            if match.action == "FailJob" and not t.fail_job_message:
                t.fail_job_message = match.message
            if match.action == "FailIndex" and ix is not None:
                t.fail_index.add(ix)
            (t.new_failed if match.count_failed else t.uncounted_free).append(pod)
        return t

    async def _track(self, key: str, job: batch_pb2.Job, t: Tally, now: float) -> batch_pb2.Job:
        """Count newly finished pods: UIDs to uncounted (and indexes), finalizers off,
        UIDs to the counters (trackJobStatusAndRemoveFinalizers)."""
        if (
            not t.new_succeeded
            and not t.new_failed
            and not t.uncounted_free
            and not (
                job.status.uncounted_terminated_pods.succeeded
                or job.status.uncounted_terminated_pods.failed
            )
        ):
            return job
        status = batch_pb2.JobStatus()
        status.CopyFrom(job.status)
        unc = status.uncounted_terminated_pods
        unc.succeeded.extend(p.metadata.uid for p in t.new_succeeded)
        unc.failed.extend(p.metadata.uid for p in t.new_failed)
        if is_indexed(job):
            decide.index_status(job, status, t)
        if t.new_succeeded or t.new_failed:
            job = await self._write_status(key, job, status)
            status.CopyFrom(job.status)
            unc = status.uncounted_terminated_pods
        self._backoff[key] = self._backoff.get(key, BackoffRecord()).after(
            [(rules.finish_time(p), True) for p in t.new_succeeded]
            + [(rules.finish_time(p), False) for p in t.new_failed]
        )
        await self._remove_finalizers(key, [*t.new_succeeded, *t.new_failed, *t.uncounted_free])
        status.succeeded += len(unc.succeeded)
        status.failed += len(unc.failed)
        del unc.succeeded[:]
        del unc.failed[:]
        if is_indexed(job):
            decide.indexes_in_range(job, status)
        return await self._write_status(key, job, status)

    def _emit(self, job: batch_pb2.Job, events: Sequence[decide.Event]) -> None:
        for type_, reason, message in events:
            self.events.event(job, type_, reason, message)

    # ------------------------------------------------------------------ pods

    async def _manage(
        self,
        key: str,
        job: batch_pb2.Job,
        status: batch_pb2.JobStatus,
        t: Tally,
        now: float,
    ) -> list[core_pb2.Pod]:
        """manageJob: create or delete pods towards parallelism; the active pods left."""
        spec = job.spec
        active = list(t.active)
        # Terminating pods hold their place until Failed under podReplacementPolicy Failed.
        holding = t.terminating if only_replace_failed(job) else 0
        if is_indexed(job):
            return await self._manage_indexed(key, job, status, active, holding, now)
        if spec.HasField("completions"):
            want = max(0, min(spec.parallelism, spec.completions - status.succeeded))
        elif status.succeeded > 0:
            want = len(active)
        else:
            want = spec.parallelism
        if len(active) > want:
            victims = sorted(active, key=deletion_rank)[
                : min(len(active) - want, self.config.burst)
            ]
            await self._delete_pods(key, job, victims)
            gone = {p.metadata.uid for p in victims}
            return [p for p in active if p.metadata.uid not in gone]
        missing = min(want - len(active) - holding, self.config.burst)
        if missing > 0 and self._wait_backoff(key, now) == 0:
            await self._create_pods(key, job, [None] * missing)
        return active

    async def _manage_indexed(
        self,
        key: str,
        job: batch_pb2.Job,
        status: batch_pb2.JobStatus,
        active: list[core_pb2.Pod],
        holding: int,
        now: float,
    ) -> list[core_pb2.Pod]:
        spec = job.spec
        done = rules.parse_intervals(status.completed_indexes, spec.completions)
        failed = rules.parse_intervals(status.failed_indexes, spec.completions)
        by_index: dict[int, list[core_pb2.Pod]] = {}
        extra: list[core_pb2.Pod] = []
        for p in active:
            ix = rules.completion_index(p)
            if (
                ix is None
                or ix >= spec.completions
                or rules.contains(done, ix)
                or rules.contains(failed, ix)
            ):
                extra.append(p)
            else:
                by_index.setdefault(ix, []).append(p)
        for pods in by_index.values():
            # One pod per index: the oldest stays.
            pods.sort(key=lambda p: (p.metadata.creation_timestamp, p.metadata.name))
            extra.extend(pods[1:])
            del pods[1:]
        if extra:
            await self._delete_pods(key, job, extra[: self.config.burst])
        kept = [ps[0] for ps in by_index.values()]
        pending = [
            i
            for i in range(spec.completions)
            if i not in by_index and not rules.contains(done, i) and not rules.contains(failed, i)
        ]
        room = min(spec.parallelism - len(kept) - holding, self.config.burst)
        if room > 0 and pending and self._wait_backoff(key, now) == 0:
            await self._create_pods(key, job, pending[:room])
        return kept

    def _wait_backoff(self, key: str, now: float) -> float:
        record = self._backoff.get(key, BackoffRecord())
        left = record.remaining(
            now, base=self.config.pod_failure_backoff, cap=self.config.max_pod_failure_backoff
        )
        if left > 0:
            self.queue.add_after(key, left)
        return left

    def _index_failures(self, job: batch_pb2.Job) -> dict[int, int]:
        """Each index's failures so far (its latest failed pod's count + 1)."""
        counts: dict[int, int] = {}
        key = object_key(job)
        for p in self._pod_index.list(job.metadata.namespace):
            if p.status.phase != "Failed" or self._job_of(p) != key:
                continue
            ix = rules.completion_index(p)
            if ix is None:
                continue
            seen = int(p.metadata.annotations.get(JOB_INDEX_FAILURE_COUNT, "0") or 0) + 1
            counts[ix] = max(counts.get(ix, 0), seen)
        return counts

    async def _create_pods(
        self, key: str, job: batch_pb2.Job, indexes: Sequence[int | None]
    ) -> None:
        self.expectations.expect_creations(key, len(indexes))
        per_index = job.spec.HasField("backoff_limit_per_index")
        failures = self._index_failures(job) if per_index else {}
        templates = [
            pod_from_template(job, ix, failures.get(ix, 0) if ix is not None else 0)
            for ix in indexes
        ]
        try:
            results = await self.client.batch_create(templates)
        except ApiError as e:
            for _ in indexes:
                self.expectations.creation_observed(key)
            self.events.event(job, "Warning", "FailedCreate", f"Error creating: {e}")
            raise
        first: ApiError | None = None
        for r in results:
            if r.error is None and r.object is not None:
                self.events.event(
                    job, "Normal", "SuccessfulCreate", f"Created pod: {object_meta(r.object).name}"
                )
            else:
                self.expectations.creation_observed(key)
                if r.error is not None:
                    self.events.event(job, "Warning", "FailedCreate", f"Error creating: {r.error}")
                    first = first or r.error
        if first is not None:
            raise first

    async def _delete_pods(
        self, key: str, job: batch_pb2.Job, pods: Sequence[core_pb2.Pod]
    ) -> None:
        if not pods:
            return
        self.expectations.expect_deletions(key, [object_key(p) for p in pods])

        async def delete(pod: core_pb2.Pod) -> ApiError | None:
            self._deleted_by_us.add(pod.metadata.uid)
            try:
                await self.client.delete(
                    PODS, pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid
                )
            except ApiError as e:
                self.expectations.deletion_observed(key, object_key(pod))
                if isinstance(e, NotFoundError | ConflictError):
                    return None
                self.events.event(job, "Warning", "FailedDelete", f"Error deleting: {e}")
                return e
            self.events.event(
                job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}"
            )
            return None

        errors = [e for e in await asyncio.gather(*(delete(p) for p in pods)) if e is not None]
        if errors:
            raise errors[0]

    async def _remove_finalizers(self, key: str, pods: Sequence[core_pb2.Pod]) -> None:
        async def remove(pod: core_pb2.Pod) -> ApiError | None:
            left = [f for f in pod.metadata.finalizers if f != JOB_TRACKING_FINALIZER]
            patch = {
                "metadata": {"finalizers": left, "resourceVersion": pod.metadata.resource_version}
            }
            try:
                await self.client.patch(
                    PODS, pod.metadata.name, json.dumps(patch), namespace=pod.metadata.namespace
                )
            except NotFoundError:
                pass
            except ConflictError:
                # Changed since the cache saw it: read it again and retry once.
                try:
                    fresh = narrow(
                        await self.client.get(PODS, pod.metadata.name, pod.metadata.namespace),
                        core_pb2.Pod,
                    )
                except NotFoundError:
                    return None
                if fresh.metadata.uid != pod.metadata.uid:
                    return None
                return (
                    await remove(fresh)
                    if JOB_TRACKING_FINALIZER in fresh.metadata.finalizers
                    else None
                )
            except ApiError as e:
                return e
            self._finalizers_removed.add(pod.metadata.uid)
            return None

        errors = [e for e in await asyncio.gather(*(remove(p) for p in pods)) if e is not None]
        if errors:
            raise errors[0]

    # ------------------------------------------------------------------ status

    async def _write_status(
        self, key: str, job: batch_pb2.Job, status: batch_pb2.JobStatus
    ) -> batch_pb2.Job:
        """Write `status` unless nothing changed (the Job as stored after it)."""
        if status == job.status:
            return job
        target = narrow(codec.clone(job), batch_pb2.Job)
        target.status.CopyFrom(status)
        written = narrow(await self.client.update_status(target), batch_pb2.Job)
        self._written[key] = written
        return written

    def _requeue(
        self, key: str, job: batch_pb2.Job, status: batch_pb2.JobStatus, now: float
    ) -> None:
        if job.spec.HasField("active_deadline_seconds") and not job.spec.suspend:
            started = timestamp(status.start_time)
            if started is not None:
                self.queue.add_after(
                    key, max(0.0, started + job.spec.active_deadline_seconds - now)
                )

    async def _expire(self, key: str, job: batch_pb2.Job, now: float) -> None:
        """ttlSecondsAfterFinished (the TTL-after-finished controller): delete the Job
        that long after its Complete or Failed condition."""
        if not job.spec.HasField("ttl_seconds_after_finished") or job.metadata.deletion_timestamp:
            return
        cond = rules.condition(job, COMPLETE) or rules.condition(job, FAILED)
        finished = timestamp(cond.last_transition_time) if cond is not None else None
        if finished is None:
            return
        left = finished + job.spec.ttl_seconds_after_finished - now
        if left > 0:
            self.queue.add_after(key, left)
            return
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.client.delete(
                JOBS, job.metadata.name, job.metadata.namespace, uid=job.metadata.uid
            )

    async def _cascade(self, key: str, current: batch_pb2.Job | None) -> None:
        """Delete the pods that deleted Jobs of this name controlled, finalizers first."""
        dead = self._dead_owners.get(key)
        if not dead:
            return
        if current is not None:
            dead.discard(current.metadata.uid)
        ns = split_key(key)[0]
        doomed = []
        for pod in self._pod_index.list(ns):
            ref = controller_of(pod)
            if ref is not None and ref.uid in dead:
                doomed.append(pod)
        await self._remove_finalizers(key, [p for p in doomed if self._has_finalizer(p)])

        async def delete(pod: core_pb2.Pod) -> None:
            if pod.metadata.deletion_timestamp:
                return
            with contextlib.suppress(NotFoundError, ConflictError):
                await self.client.delete(
                    PODS, pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid
                )

        await asyncio.gather(*(delete(p) for p in doomed))
        self._dead_owners.pop(key, None)


__all__ = ["JobConfig", "JobController"]
