"""The Job controller against a real gRPC apiserver (in-memory storage): the tests play
the kubelet (post phases, exit codes, conditions). Cases follow upstream's
job_controller_test.go (TestControllerSyncJob, TestSyncJobPastDeadline,
TestSyncJobWithJobPodFailurePolicy, TestSyncJobWithJobBackoffLimitPerIndex,
TestSyncJobWithJobSuccessPolicy, TestJobApiBackoffReset) and its integration tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.helpers.wellknown import (
    JOB_COMPLETION_INDEX,
    JOB_TRACKING_FINALIZER,
    LABEL_CONTROLLER_UID,
    LABEL_JOB_NAME,
)
from services.api.machinery import codec
from services.api.machinery.errors import ConflictError, InvalidError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.patch import merge_patch
from services.controllers.job import JobConfig, JobController
from services.controllers.job.pods import COMPLETION_INDEX_ENV
from tests.controllers.conftest import NS, PODS, ControllerCluster

JOBS = BY_KIND["Job"]


def job_doc(name: str = "pi", **spec: Any) -> dict[str, Any]:
    restart = spec.pop("restartPolicy", "Never")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "main", "image": "perl:5.34.0"}],
                    "restartPolicy": restart,
                }
            },
            **spec,
        },
    }


@pytest.fixture
async def jobs(cluster: ControllerCluster) -> AsyncIterator[JobHarness]:
    h = JobHarness(cluster)
    await cluster.start(h.controller)
    yield h


class JobHarness:
    def __init__(self, cluster: ControllerCluster) -> None:
        self.c = cluster
        self.controller = JobController(
            cluster.client,
            cluster.informers,
            config=JobConfig(pod_failure_backoff=0.0, record_events=False),
            clock=cluster.api_clock,
        )
        self.jobs = cluster.informers.get(JOBS)

    async def create(self, name: str = "pi", **spec: Any) -> batch_pb2.Job:
        return await self.c.create(job_doc(name, **spec))  # type: ignore[no-any-return]

    def job(self, name: str = "pi") -> batch_pb2.Job:
        obj = self.jobs.store.get(f"{NS}/{name}")
        assert isinstance(obj, batch_pb2.Job)
        return obj

    def pods(self, job: Message, *, active_only: bool = True) -> list[core_pb2.Pod]:
        return self.c.pods_of(job, active_only=active_only)

    async def until_pods(self, job: Message, n: int) -> list[core_pb2.Pod]:
        await self.c.until(lambda: len(self.pods(job)) == n)
        return self.pods(job)

    async def until_condition(
        self, name: str, type_: str, status: str = "True", timeout: float = 10.0
    ) -> Any:
        def has() -> bool:
            obj = self.jobs.store.get(f"{NS}/{name}")
            return obj is not None and any(
                c.type == type_ and c.status == status
                for c in obj.status.conditions  # type: ignore[attr-defined]
            )

        await self.c.until(has, timeout)
        return next(c for c in self.job(name).status.conditions if c.type == type_)

    async def set_suspend(self, value: bool, name: str = "pi") -> None:
        patch = '{"spec": {"suspend": %s}}' % ("true" if value else "false")
        await self.c.client.patch(JOBS, name, patch, namespace=NS)

    async def finish(
        self, pod: core_pb2.Pod, phase: str, *, exit_code: int | None = None, **cond: str
    ) -> None:
        """Play the kubelet: the pod ends in `phase` (with the main container's exit
        code, and a pod condition when given)."""
        fresh = await self.c.client.get(PODS, pod.metadata.name, NS)
        assert isinstance(fresh, core_pb2.Pod)
        fresh.status.phase = phase
        if exit_code is not None:
            cs = fresh.status.container_statuses.add(name="main")
            cs.state.update({"terminated": {"exitCode": exit_code, "reason": "Error"}})
        if cond:
            fresh.status.conditions.add(type=cond["type"], status=cond.get("status", "True"))
        await self.c.client.update_status(fresh)


async def test_the_docs_pi_job_runs_one_pod_and_completes(jobs: JobHarness) -> None:
    job = await jobs.create()
    assert job.spec.completions == 1 and job.spec.parallelism == 1
    assert job.spec.backoff_limit == 6 and job.spec.completion_mode == "NonIndexed"
    assert job.spec.selector.match_labels[LABEL_CONTROLLER_UID] == job.metadata.uid
    [pod] = await jobs.until_pods(job, 1)
    assert JOB_TRACKING_FINALIZER in pod.metadata.finalizers
    assert pod.metadata.labels[LABEL_JOB_NAME] == "pi"
    assert pod.metadata.labels["job-name"] == "pi"
    assert pod.metadata.labels[LABEL_CONTROLLER_UID] == job.metadata.uid
    assert pod.metadata.generate_name == "pi-"
    await jobs.c.until(lambda: jobs.job().status.active == 1 and bool(jobs.job().status.start_time))
    await jobs.finish(pod, "Succeeded")
    complete = await jobs.until_condition("pi", "Complete")
    assert (complete.reason, complete.message) == (
        "CompletionsReached",
        "Reached expected number of succeeded pods",
    )
    done = jobs.job()
    assert done.status.succeeded == 1 and done.status.active == 0
    assert done.status.completion_time
    assert {c.type for c in done.status.conditions} == {"SuccessCriteriaMet", "Complete"}
    assert not done.status.uncounted_terminated_pods.succeeded
    await jobs.c.until(
        lambda: all(
            JOB_TRACKING_FINALIZER not in p.metadata.finalizers
            for p in jobs.pods(done, active_only=False)
        )
    )


async def test_parallelism_bounds_active_pods_until_completions(jobs: JobHarness) -> None:
    job = await jobs.create(completions=4, parallelism=2)
    first = await jobs.until_pods(job, 2)
    for p in first:
        await jobs.finish(p, "Succeeded")
    await jobs.c.until(lambda: jobs.job().status.succeeded == 2)
    second = await jobs.until_pods(job, 2)
    assert {p.metadata.name for p in second}.isdisjoint(p.metadata.name for p in first)
    await jobs.finish(second[0], "Succeeded")
    await jobs.c.until(lambda: jobs.job().status.succeeded == 3)
    # One completion left: no third pod beside the one still running.
    assert len(jobs.pods(job)) == 1
    await jobs.finish(second[1], "Succeeded")
    await jobs.until_condition("pi", "Complete")
    assert jobs.job().status.succeeded == 4


async def test_failures_past_backoff_limit_fail_the_job(jobs: JobHarness) -> None:
    job = await jobs.create(backoffLimit=1)
    [p1] = await jobs.until_pods(job, 1)
    await jobs.finish(p1, "Failed", exit_code=1)
    await jobs.c.until(lambda: jobs.job().status.failed == 1)
    [p2] = await jobs.until_pods(job, 1)  # replaced: one failure is within the limit
    await jobs.finish(p2, "Failed", exit_code=1)
    failed = await jobs.until_condition("pi", "Failed")
    assert (failed.reason, failed.message) == (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    target = next(c for c in jobs.job().status.conditions if c.type == "FailureTarget")
    assert target.reason == "BackoffLimitExceeded"
    assert jobs.job().status.failed == 2
    assert not jobs.job().status.completion_time


async def test_indexed_job_gives_each_pod_its_index(jobs: JobHarness) -> None:
    job = await jobs.create(completions=3, parallelism=3, completionMode="Indexed")
    pods = await jobs.until_pods(job, 3)
    by_index = {p.metadata.annotations[JOB_COMPLETION_INDEX]: p for p in pods}
    assert sorted(by_index) == ["0", "1", "2"]
    for ix, p in by_index.items():
        assert p.metadata.labels[JOB_COMPLETION_INDEX] == ix
        assert p.spec.hostname == f"pi-{ix}"
        assert p.metadata.generate_name == f"pi-{ix}-"
        [env] = [e for e in p.spec.containers[0].env if e.name == COMPLETION_INDEX_ENV]
        assert env.value_from["fieldRef"]["fieldPath"] == (
            f"metadata.annotations['{JOB_COMPLETION_INDEX}']"
        )
    await jobs.finish(by_index["1"], "Succeeded")
    await jobs.c.until(lambda: jobs.job().status.completed_indexes == "1")
    await jobs.finish(by_index["0"], "Failed", exit_code=3)
    # Index 0 runs again; index 1 is not re-run.
    old = {p.metadata.uid for p in pods}
    await jobs.c.until(
        lambda: (
            sorted(
                p.metadata.annotations[JOB_COMPLETION_INDEX]
                for p in jobs.pods(job)
                if p.metadata.uid not in old
            )
            == ["0"]
        )
    )
    for p in jobs.pods(job):
        await jobs.finish(p, "Succeeded")
    await jobs.until_condition("pi", "Complete")
    assert jobs.job().status.completed_indexes == "0-2"
    assert (jobs.job().status.succeeded, jobs.job().status.failed) == (3, 1)


async def test_pod_failure_policy_fail_job_on_exit_code(jobs: JobHarness) -> None:
    policy = {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]},
            }
        ]
    }
    job = await jobs.create(podFailurePolicy=policy)
    assert job.spec.pod_replacement_policy == "Failed"
    [pod] = await jobs.until_pods(job, 1)
    await jobs.finish(pod, "Failed", exit_code=42)
    failed = await jobs.until_condition("pi", "Failed")
    assert failed.reason == "PodFailurePolicy"
    assert failed.message == (
        f"Container main for pod {NS}/{pod.metadata.name} failed with exit code 42 "
        "matching FailJob rule at index 0"
    )


async def test_pod_failure_policy_ignore_does_not_count(jobs: JobHarness) -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    job = await jobs.create(podFailurePolicy=policy, backoffLimit=0)
    [pod] = await jobs.until_pods(job, 1)
    await jobs.finish(pod, "Failed", type="DisruptionTarget")
    # Replaced without counting: backoffLimit 0 is not exceeded.
    await jobs.c.until(
        lambda: len(jobs.pods(job)) == 1 and jobs.pods(job)[0].metadata.uid != pod.metadata.uid
    )
    assert jobs.job().status.failed == 0
    assert not any(c.type == "Failed" for c in jobs.job().status.conditions)


async def test_suspended_job_runs_nothing_until_resumed(jobs: JobHarness) -> None:
    job = await jobs.create(suspend=True, parallelism=2, completions=2)
    cond = await jobs.until_condition("pi", "Suspended")
    assert (cond.reason, cond.message) == ("JobSuspended", "Job suspended")
    assert not jobs.pods(job) and not jobs.job().status.start_time
    await jobs.set_suspend(False)
    resumed = await jobs.until_condition("pi", "Suspended", "False")
    assert resumed.reason == "JobResumed"
    await jobs.until_pods(job, 2)
    assert jobs.job().status.start_time


async def test_suspending_a_running_job_deletes_its_pods(jobs: JobHarness) -> None:
    job = await jobs.create(parallelism=2, completions=2)
    await jobs.until_pods(job, 2)
    await jobs.set_suspend(True)
    await jobs.until_condition("pi", "Suspended")
    await jobs.c.until(lambda: not jobs.pods(job) and jobs.job().status.active == 0)
    # Pods the controller deleted are not failures.
    await jobs.c.until(
        lambda: all(
            JOB_TRACKING_FINALIZER not in p.metadata.finalizers
            for p in jobs.pods(job, active_only=False)
        )
    )
    assert jobs.job().status.failed == 0


async def test_active_deadline_fails_the_job_and_deletes_its_pods(jobs: JobHarness) -> None:
    job = await jobs.create(activeDeadlineSeconds=30)
    await jobs.until_pods(job, 1)
    await jobs.c.until(lambda: bool(jobs.job().status.start_time))
    jobs.c.api_clock.advance(31)
    jobs.controller.queue.add(f"{NS}/pi")  # the deadline's requeue, without waiting for it
    failed = await jobs.until_condition("pi", "Failed")
    assert (failed.reason, failed.message) == (
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    assert not jobs.pods(job)


async def test_backoff_limit_per_index_fails_only_that_index(jobs: JobHarness) -> None:
    job = await jobs.create(
        completions=2, parallelism=2, completionMode="Indexed", backoffLimitPerIndex=0
    )
    assert job.spec.backoff_limit == 2**31 - 1
    pods = {p.metadata.annotations[JOB_COMPLETION_INDEX]: p for p in await jobs.until_pods(job, 2)}
    assert pods["0"].metadata.annotations["batch.kubernetes.io/job-index-failure-count"] == "0"
    await jobs.finish(pods["0"], "Failed", exit_code=1)
    await jobs.c.until(lambda: jobs.job().status.failed_indexes == "0")
    assert [p.metadata.annotations[JOB_COMPLETION_INDEX] for p in jobs.pods(job)] == ["1"]
    await jobs.finish(pods["1"], "Succeeded")
    failed = await jobs.until_condition("pi", "Failed")
    assert (failed.reason, failed.message) == ("FailedIndexes", "Job has failed indexes")
    assert jobs.job().status.completed_indexes == "1"


async def test_success_policy_completes_early_and_stops_the_rest(jobs: JobHarness) -> None:
    job = await jobs.create(
        completions=3,
        parallelism=3,
        completionMode="Indexed",
        successPolicy={"rules": [{"succeededIndexes": "0"}]},
    )
    pods = {p.metadata.annotations[JOB_COMPLETION_INDEX]: p for p in await jobs.until_pods(job, 3)}
    await jobs.finish(pods["0"], "Succeeded")
    met = await jobs.until_condition("pi", "SuccessCriteriaMet")
    assert (met.reason, met.message) == ("SuccessPolicy", "Matched rules at index 0")
    complete = await jobs.until_condition("pi", "Complete")
    assert complete.reason == "SuccessPolicy"
    assert not jobs.pods(job)


async def test_ttl_after_finished_deletes_the_job_and_its_pods(jobs: JobHarness) -> None:
    job = await jobs.create(ttlSecondsAfterFinished=0)
    [pod] = await jobs.until_pods(job, 1)
    await jobs.finish(pod, "Succeeded")

    async def gone() -> bool:
        try:
            await jobs.c.client.get(JOBS, "pi", NS)
        except NotFoundError:
            return True
        return False

    for _ in range(500):
        if await gone():
            break
        await asyncio.sleep(0.02)
    assert await gone()
    await jobs.c.until(lambda: not jobs.pods(job, active_only=False))


async def test_job_with_restart_policy_always_is_refused(cluster: ControllerCluster) -> None:
    with pytest.raises(InvalidError) as e:
        await cluster.create(job_doc(restartPolicy="Always"))
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always"' in str(e.value)


async def test_lowering_parallelism_deletes_surplus_pods_without_counting_them(
    jobs: JobHarness,
) -> None:
    job = await jobs.create(completions=10, parallelism=3)
    await jobs.until_pods(job, 3)
    await jobs.c.client.patch(JOBS, "pi", '{"spec": {"parallelism": 1}}', namespace=NS)
    await jobs.until_pods(job, 1)
    await jobs.c.until(
        lambda: (
            jobs.job().status.active == 1
            and all(
                JOB_TRACKING_FINALIZER not in p.metadata.finalizers
                for p in jobs.pods(job, active_only=False)
                if p.metadata.deletion_timestamp
            )
        )
    )
    assert jobs.job().status.failed == 0


async def test_a_deleted_pod_is_replaced_at_once_and_counted_failed(jobs: JobHarness) -> None:
    job = await jobs.create()
    [pod] = await jobs.until_pods(job, 1)
    await jobs.c.client.delete(PODS, pod.metadata.name, NS)
    # TerminatingOrFailed: the replacement does not wait for the old pod to be gone.
    await jobs.c.until(
        lambda: [p.metadata.uid for p in jobs.pods(job)] not in ([], [pod.metadata.uid])
    )
    await jobs.c.until(lambda: jobs.job().status.failed == 1)


async def test_replacement_policy_failed_waits_for_the_terminating_pod(jobs: JobHarness) -> None:
    await jobs.c.node("n1")
    job = await jobs.create(podReplacementPolicy="Failed")
    [pod] = await jobs.until_pods(job, 1)
    await jobs.c.bind(pod, "n1")  # a bound pod terminates gracefully (30 s)
    await jobs.c.client.delete(PODS, pod.metadata.name, NS)
    await jobs.c.until(lambda: jobs.job().status.terminating == 1)
    assert jobs.pods(job) == []
    await jobs.finish(pod, "Failed", exit_code=137)
    await jobs.until_pods(job, 1)
    await jobs.c.until(lambda: jobs.job().status.failed == 1)


async def test_container_restarts_count_against_the_backoff_limit_under_on_failure(
    jobs: JobHarness,
) -> None:
    job = await jobs.create(backoffLimit=2, restartPolicy="OnFailure")
    [pod] = await jobs.until_pods(job, 1)
    await jobs.c.set_status(pod, phase="Running", restarts=2)
    failed = await jobs.until_condition("pi", "Failed")
    assert failed.reason == "BackoffLimitExceeded"
    assert not jobs.pods(job)


async def test_an_orphan_matching_a_manual_selector_is_adopted(jobs: JobHarness) -> None:
    orphan = await jobs.c.pod("stray", {"app": "batch"}, restartPolicy="Never")
    job = await jobs.create(
        manualSelector=True,
        selector={"matchLabels": {"app": "batch"}},
        template={
            "metadata": {"labels": {"app": "batch"}},
            "spec": {"containers": [{"name": "main", "image": "x"}], "restartPolicy": "Never"},
        },
    )
    await jobs.c.until(lambda: [p.metadata.uid for p in jobs.pods(job)] == [orphan.metadata.uid])
    await jobs.c.until(lambda: jobs.job().status.active == 1)


async def test_reapplying_the_same_job_is_accepted(jobs: JobHarness) -> None:
    job = await jobs.create()
    await jobs.until_pods(job, 1)
    await jobs.c.until(lambda: bool(jobs.job().status.start_time))
    # as kubectl apply sends it: the manifest merged onto the live Job, whose generated
    # selector and labels the manifest does not name (a PUT of the bare manifest is
    # refused, as upstream: spec.selector is required and immutable)
    # (retried on a conflict with the controller's own status writes, as kubectl's patch
    # is retried by the apiserver)
    for _ in range(5):
        live = codec.encode(await jobs.c.client.get(JOBS, "pi", NS))
        again = codec.decode(merge_patch(live, job_doc()), validate="strict").obj
        try:
            updated = await jobs.c.client.update(again)
            break
        except ConflictError:
            continue
    else:
        pytest.fail("the update conflicted five times")
    assert updated.spec == jobs.job().spec  # type: ignore[attr-defined]


async def test_a_retried_index_carries_its_failure_count(jobs: JobHarness) -> None:
    job = await jobs.create(
        completions=1, parallelism=1, completionMode="Indexed", backoffLimitPerIndex=1
    )
    [first] = await jobs.until_pods(job, 1)
    await jobs.finish(first, "Failed", exit_code=1)
    await jobs.c.until(
        lambda: [p.metadata.uid for p in jobs.pods(job)] not in ([], [first.metadata.uid])
    )
    [second] = jobs.pods(job)
    assert second.metadata.annotations["batch.kubernetes.io/job-index-failure-count"] == "1"
    assert not jobs.job().status.failed_indexes  # 1 failure is within the limit
    await jobs.finish(second, "Failed", exit_code=1)
    failed = await jobs.until_condition("pi", "Failed")
    assert failed.reason == "FailedIndexes"
    assert jobs.job().status.failed_indexes == "0"


# ElasticIndexedJob: test/integration/job/job_test.go TestElasticIndexedJob, step by step:
# (completions and parallelism set to, indexes to succeed, indexes to fail,
#  then: completedIndexes, failed, active indexes).
ELASTIC_CASES = {
    "scale-up": [(4, [0, 1, 2, 3], [], "0-3", 0, set())],
    "scale-down": [
        (None, [1], [2], "1", 1, {0, 2}),
        # a failure out of range still counts; a success out of range does not
        (1, [0], [], "0", 1, set()),
    ],
    "index-finishes-scale-down-scale-up": [
        (None, [2], [], "2", 0, {0, 1}),
        (2, [], [], "", 0, {0, 1}),
        # index 2, out of range for a while, runs again
        (3, [0, 1, 2], [], "0-2", 0, set()),
    ],
    "scale-down-to-0-the-job-succeeds": [(0, [], [], "", 0, set())],
}


@pytest.mark.parametrize("steps", list(ELASTIC_CASES.values()), ids=list(ELASTIC_CASES))
async def test_elastic_indexed_job(jobs: JobHarness, steps: list[Any]) -> None:
    job = await jobs.create(completions=3, parallelism=3, completionMode="Indexed")
    await jobs.until_pods(job, 3)

    def active_at(ix: int) -> core_pb2.Pod | None:
        return next(
            (
                p
                for p in jobs.pods(job)
                if p.metadata.annotations[JOB_COMPLETION_INDEX] == str(ix)
                and not p.metadata.deletion_timestamp
            ),
            None,
        )

    for completions, succeed, fail, want_done, want_failed, want_active in steps:
        if completions is not None:
            patch = json.dumps({"spec": {"completions": completions, "parallelism": completions}})
            await jobs.c.client.patch(JOBS, "pi", patch, namespace=NS)
        for ix, phase in [*((i, "Succeeded") for i in succeed), *((i, "Failed") for i in fail)]:
            await jobs.c.until(lambda ix=ix: active_at(ix) is not None)
            await jobs.finish(active_at(ix), phase, exit_code=None if phase == "Succeeded" else 3)  # type: ignore[arg-type]

        def settled(
            want_done: str = want_done,
            want_failed: int = want_failed,
            want_active: set[int] = want_active,
            n: int = len(succeed),
        ) -> bool:
            st = jobs.job().status
            live = {int(p.metadata.annotations[JOB_COMPLETION_INDEX]) for p in jobs.pods(job)}
            return (
                st.completed_indexes == want_done
                and st.succeeded == n
                and st.failed == want_failed
                and st.active == len(want_active)
                and live == want_active
            )

        await jobs.c.until(settled)
    await jobs.until_condition("pi", "Complete")
