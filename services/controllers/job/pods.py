"""The pods of a Job: how the Job controller makes them from the template and reads
their state (pkg/controller/job: the pod template part of manageJob, isPodFailed,
getCompletionIndex's users, and the scale-down order of ActivePods)."""

from __future__ import annotations

from google.protobuf import struct_pb2

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.helpers.wellknown import (
    JOB_COMPLETION_INDEX,
    JOB_INDEX_FAILURE_COUNT,
    JOB_TRACKING_FINALIZER,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.controllers.controller_utils import is_pod_ready, new_controller_ref, timestamp

PODS = BY_KIND["Pod"]
JOBS = BY_KIND["Job"]

#: The env var an Indexed Job's containers get, from the index annotation.
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"


def is_indexed(job: batch_pb2.Job) -> bool:
    return job.spec.completion_mode == "Indexed"


def pod_from_template(job: batch_pb2.Job, index: int | None, failures: int = 0) -> core_pb2.Pod:
    """A pod for `job` (the template with the tracking finalizer and the controller
    reference), named `<job>-` + 5 random characters; an Indexed Job's pod carries its
    index (annotation, label, JOB_COMPLETION_INDEX env, hostname `<job>-<index>`, name
    `<job>-<index>-…`) and, with backoffLimitPerIndex, its index's failure count."""
    template = job.spec.template
    pod = narrow(PODS.new(), core_pb2.Pod)
    pod.metadata.namespace = job.metadata.namespace
    pod.metadata.generate_name = f"{job.metadata.name}-"
    pod.metadata.labels.update(template.metadata.labels)
    pod.metadata.annotations.update(template.metadata.annotations)
    pod.metadata.finalizers.extend(template.metadata.finalizers)
    pod.metadata.finalizers.append(JOB_TRACKING_FINALIZER)
    pod.metadata.owner_references.append(new_controller_ref(job, JOBS))
    pod.spec.CopyFrom(template.spec)
    if index is not None:
        text = str(index)
        pod.metadata.generate_name = f"{job.metadata.name}-{text}-"
        pod.metadata.annotations[JOB_COMPLETION_INDEX] = text
        pod.metadata.labels[JOB_COMPLETION_INDEX] = text
        if job.spec.HasField("backoff_limit_per_index"):
            pod.metadata.annotations[JOB_INDEX_FAILURE_COUNT] = str(failures)
        if not pod.spec.hostname:
            pod.spec.hostname = f"{job.metadata.name}-{text}"
        value_from = struct_pb2.Struct()
        value_from.update(
            {"fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX}']"}}
        )
        for c in (*pod.spec.init_containers, *pod.spec.containers):
            if not any(e.name == COMPLETION_INDEX_ENV for e in c.env):
                c.env.add(name=COMPLETION_INDEX_ENV).value_from.CopyFrom(value_from)
    return pod


def is_terminal(pod: core_pb2.Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def is_active(pod: core_pb2.Pod) -> bool:
    return not is_terminal(pod) and not pod.metadata.deletion_timestamp


def is_terminating(pod: core_pb2.Pod) -> bool:
    return not is_terminal(pod) and bool(pod.metadata.deletion_timestamp)


def only_replace_failed(job: batch_pb2.Job) -> bool:
    return job.spec.pod_replacement_policy == "Failed" or job.spec.HasField("pod_failure_policy")


def is_pod_failed(pod: core_pb2.Pod, job: batch_pb2.Job, now: float) -> bool:
    """isPodFailed: phase Failed; or, unless only Failed pods are replaced, deleted before
    it succeeded (an orphan may never reach Failed). kubera's kubelet may remove a
    deleted pod without writing Failed: once its deletion time passed it counts too."""
    if pod.status.phase == "Failed":
        return True
    if pod.status.phase == "Succeeded" or not pod.metadata.deletion_timestamp:
        return False
    if not only_replace_failed(job):
        return True
    deleted_at = timestamp(pod.metadata.deletion_timestamp)
    return deleted_at is not None and deleted_at <= now


def restarts(pod: core_pb2.Pod) -> int:
    return sum(
        cs.restart_count
        for cs in (*pod.status.init_container_statuses, *pod.status.container_statuses)
    )


def deletion_rank(pod: core_pb2.Pod) -> tuple[int, int, int, str]:
    """Which active pods go first on scale-down (the gist of ActivePods ranking):
    unscheduled, then pending, then not ready, then the newest."""
    return (
        0 if not pod.spec.node_name else 1,
        0 if pod.status.phase == "Pending" else 1,
        1 if is_pod_ready(pod) else 0,
        "".join(chr(0x10FFFF - ord(c)) for c in pod.metadata.creation_timestamp),
    )
