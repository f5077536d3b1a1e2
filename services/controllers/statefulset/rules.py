"""The pure rules of the StatefulSet controller (services/controllers/statefulset/
controller.py; upstream's stateful_set_utils.go): ordinals and names, the pod and claims
made for an ordinal, the identity and storage a pod must keep (identityMatches,
storageMatches, updateIdentity, updateStorage), which revision a new pod gets, and the
status. No I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from google.protobuf.struct_pb2 import Struct

from protos.kubera.v1 import apps_pb2, core_pb2, storage_pb2
from services.api.machinery.kinds import BY_KIND
from services.controllers.controller_utils import (
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
)
from services.controllers.deployment.util import scaled_value
from services.controllers.history import CONTROLLER_REVISION_HASH_LABEL

PODS = BY_KIND["Pod"]
STATEFUL_SETS = BY_KIND["StatefulSet"]
CLAIMS = BY_KIND["PersistentVolumeClaim"]

#: apps.StatefulSetPodNameLabel and apps.PodIndexLabel.
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
ORDERED_READY = "OrderedReady"
PARALLEL = "Parallel"
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
RETAIN = "Retain"
DELETE = "Delete"

_MEMBER = re.compile(r"^(.*)-([0-9]+)$")


# ============================================================================ pure rules


def parent_and_ordinal(pod_name: str) -> tuple[str, int]:
    """getParentNameAndOrdinal: ("web", 3) for "web-3"; ("", -1) for a non-member name."""
    m = _MEMBER.match(pod_name)
    if m is None:
        return "", -1
    return m.group(1), int(m.group(2))


def is_member_of(sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> bool:
    return parent_and_ordinal(pod.metadata.name)[0] == sts.metadata.name


def pod_name(sts: apps_pb2.StatefulSet, ordinal: int) -> str:
    return f"{sts.metadata.name}-{ordinal}"


def claim_name(
    sts: apps_pb2.StatefulSet, template: storage_pb2.PersistentVolumeClaim, ordinal: int
) -> str:
    """getPersistentVolumeClaimName: `<template>-<set>-<ordinal>`."""
    return f"{template.metadata.name}-{sts.metadata.name}-{ordinal}"


def start_ordinal(sts: apps_pb2.StatefulSet) -> int:
    return sts.spec.ordinals.start if sts.spec.HasField("ordinals") else 0


def replicas_of(sts: apps_pb2.StatefulSet) -> int:
    return sts.spec.replicas if sts.spec.HasField("replicas") else 1


def allows_burst(sts: apps_pb2.StatefulSet) -> bool:
    return sts.spec.pod_management_policy == PARALLEL


def partition_of(sts: apps_pb2.StatefulSet) -> int:
    st = sts.spec.update_strategy
    if st.type in ("", ROLLING_UPDATE) and st.HasField("rolling_update"):
        return st.rolling_update.partition
    return 0


def pod_revision(pod: core_pb2.Pod) -> str:
    return pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL, "")


def is_created(pod: core_pb2.Pod) -> bool:
    return bool(pod.status.phase)


def is_terminating(pod: core_pb2.Pod) -> bool:
    return bool(pod.metadata.deletion_timestamp)


def is_failed(pod: core_pb2.Pod) -> bool:
    return pod.status.phase == "Failed"


def is_succeeded(pod: core_pb2.Pod) -> bool:
    return pod.status.phase == "Succeeded"


def is_running_and_ready(pod: core_pb2.Pod) -> bool:
    return pod.status.phase == "Running" and is_pod_ready(pod)


def is_healthy(pod: core_pb2.Pod) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)


def is_unavailable(pod: core_pb2.Pod | None, min_ready_seconds: int, now: float) -> bool:
    """isUnavailable: missing, terminating, not Running and Ready, or Ready for less than
    minReadySeconds."""
    return pod is None or not is_healthy(pod) or not is_pod_available(pod, min_ready_seconds, now)


def max_unavailable_of(sts: apps_pb2.StatefulSet, replicas: int) -> int:
    """getStatefulSetMaxUnavailable: rollingUpdate.maxUnavailable scaled to the replicas
    (percentages round down), at least 1; 1 when unset."""
    ru = sts.spec.update_strategy.rolling_update
    if not ru.HasField("max_unavailable"):
        return 1
    return max(1, scaled_value(ru.max_unavailable, replicas, False))


def new_stateful_pod(
    sts: apps_pb2.StatefulSet,
    template: core_pb2.PodTemplateSpec,
    revision: str,
    ordinal: int,
) -> core_pb2.Pod:
    """newVersionedStatefulSetPod: the template's pod with the set's identity (name,
    labels; hostname and subdomain, which only creation sets: initIdentity), storage (a
    volume per claim template) and revision."""
    pod = PODS.new()
    assert isinstance(pod, core_pb2.Pod)
    pod.metadata.name = pod_name(sts, ordinal)
    pod.metadata.labels.update(template.metadata.labels)
    pod.metadata.annotations.update(template.metadata.annotations)
    pod.metadata.finalizers.extend(template.metadata.finalizers)
    pod.metadata.owner_references.append(new_controller_ref(sts, STATEFUL_SETS))
    pod.spec.CopyFrom(template.spec)
    update_identity(sts, pod)
    pod.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] = revision
    pod.spec.hostname = pod.metadata.name
    pod.spec.subdomain = sts.spec.service_name
    update_storage(sts, pod)
    return pod


def identity_matches(sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> bool:
    """identityMatches: a member's name (`<set>-<ordinal>`), the set's namespace and the
    pod-name label. Hostname and subdomain are immutable, so not checked (upstream
    neither, since they became so)."""
    parent, ordinal = parent_and_ordinal(pod.metadata.name)
    return (
        ordinal >= 0
        and parent == sts.metadata.name
        and pod.metadata.name == pod_name(sts, ordinal)
        and pod.metadata.namespace == sts.metadata.namespace
        and pod.metadata.labels.get(POD_NAME_LABEL) == pod.metadata.name
    )


def _claim_of(volume: Any) -> str | None:
    """The claimName of a persistentVolumeClaim volume, None for another kind."""
    if "persistentVolumeClaim" not in volume.fields:
        return None
    source = volume.fields["persistentVolumeClaim"]
    if source.WhichOneof("kind") != "struct_value":
        return None
    return str(source.struct_value.fields["claimName"].string_value)


def storage_matches(sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> bool:
    """storageMatches: for every claim template, a volume of its name using the ordinal's
    claim (`<template>-<set>-<ordinal>`)."""
    ordinal = parent_and_ordinal(pod.metadata.name)[1]
    if ordinal < 0:
        return False
    volumes = {v.fields["name"].string_value: v for v in pod.spec.volumes}
    for t in sts.spec.volume_claim_templates:
        v = volumes.get(t.metadata.name)
        if v is None or _claim_of(v) != claim_name(sts, t, ordinal):
            return False
    return True


def update_identity(sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> None:
    """updateIdentity: the name and namespace of the pod's ordinal, the pod-name and
    pod-index labels."""
    ordinal = parent_and_ordinal(pod.metadata.name)[1]
    pod.metadata.name = pod_name(sts, ordinal)
    pod.metadata.namespace = sts.metadata.namespace
    pod.metadata.labels[POD_NAME_LABEL] = pod.metadata.name
    pod.metadata.labels[POD_INDEX_LABEL] = str(ordinal)


def update_storage(sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> None:
    """updateStorage: a volume per claim template using the ordinal's claim, then the
    pod's other volumes (one of a template's name is replaced)."""
    ordinal = parent_and_ordinal(pod.metadata.name)[1]
    claimed = {t.metadata.name for t in sts.spec.volume_claim_templates}
    kept = [v for v in pod.spec.volumes if v.fields["name"].string_value not in claimed]
    volumes = []
    for t in sts.spec.volume_claim_templates:
        vol = Struct()
        vol.update(
            {
                "name": t.metadata.name,
                "persistentVolumeClaim": {"claimName": claim_name(sts, t, ordinal)},
            }
        )
        volumes.append(vol)
    del pod.spec.volumes[:]
    pod.spec.volumes.extend([*volumes, *kept])


def new_claims(sts: apps_pb2.StatefulSet, ordinal: int) -> list[storage_pb2.PersistentVolumeClaim]:
    """getPersistentVolumeClaims: one claim per template, labelled with the template's
    labels and the selector's matchLabels, owned as the retention policy says."""
    out = []
    for t in sts.spec.volume_claim_templates:
        c = CLAIMS.new()
        assert isinstance(c, storage_pb2.PersistentVolumeClaim)
        c.metadata.name = claim_name(sts, t, ordinal)
        c.metadata.namespace = sts.metadata.namespace
        c.metadata.labels.update(t.metadata.labels)
        c.metadata.labels.update(sts.spec.selector.match_labels)
        c.metadata.annotations.update(t.metadata.annotations)
        c.spec.CopyFrom(t.spec)
        if sts.spec.persistent_volume_claim_retention_policy.when_deleted == DELETE:
            c.metadata.owner_references.append(new_controller_ref(sts, STATEFUL_SETS))
        out.append(c)
    return out


def revision_for_ordinal(sts: apps_pb2.StatefulSet, ordinal: int) -> str:
    """Which revision a new pod of `ordinal` gets (newVersionedStatefulSetPod): under
    RollingUpdate, the current one below the partition (or, with no rollingUpdate at all,
    below status.currentReplicas); the update one otherwise."""
    st = sts.spec.update_strategy
    if st.type != ROLLING_UPDATE:
        return "update"
    index = ordinal - start_ordinal(sts)
    if st.HasField("rolling_update"):
        return "current" if index < st.rolling_update.partition else "update"
    return "current" if index < sts.status.current_replicas else "update"


def stateful_status(
    sts: apps_pb2.StatefulSet,
    pods: Sequence[core_pb2.Pod],
    current: str,
    update: str,
    now: float,
) -> apps_pb2.StatefulSetStatus:
    """The counts of the pods that exist and are not terminating (updateStatefulSet's
    status loop): replicas, ready, available (ready minReadySeconds), current, updated."""
    st = apps_pb2.StatefulSetStatus()
    st.CopyFrom(sts.status)
    st.observed_generation = sts.metadata.generation
    st.current_revision, st.update_revision = current, update
    st.replicas = st.ready_replicas = st.available_replicas = 0
    st.current_replicas = st.updated_replicas = 0
    for p in pods:
        if not is_created(p) or is_terminating(p):
            continue
        st.replicas += 1
        if is_running_and_ready(p):
            st.ready_replicas += 1
            if is_pod_available(p, sts.spec.min_ready_seconds, now):
                st.available_replicas += 1
        rev = pod_revision(p)
        if rev == current:
            st.current_replicas += 1
        if rev == update:
            st.updated_replicas += 1
    return st


def complete_rolling_update(sts: apps_pb2.StatefulSet, st: apps_pb2.StatefulSetStatus) -> None:
    """completeRollingUpdate: every pod updated and ready → the update revision is current."""
    if (
        sts.spec.update_strategy.type == ROLLING_UPDATE
        and st.updated_replicas == st.replicas
        and st.ready_replicas == st.replicas
        and st.replicas == replicas_of(sts)
    ):
        st.current_replicas = st.updated_replicas
        st.current_revision = st.update_revision
