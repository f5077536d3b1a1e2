"""PodGroup vocabulary (scheduler-plugins apis/scheduling/v1alpha1): how a pod names its gang,
and the group phases. Shared by the scheduler's Coscheduling plugin, DefaultPreemption's gang
check and the controller-manager's PodGroup controller, so it sits below all of them.
"""

from __future__ import annotations

from typing import Any

#: The label a pod joins a PodGroup with; its value is the group's name, same namespace.
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

# PodGroup.status.phase values (upstream PodGroupPhase).
PHASE_PENDING = "Pending"
PHASE_SCHEDULING = "Scheduling"
PHASE_SCHEDULED = "Scheduled"
PHASE_RUNNING = "Running"
PHASE_FINISHED = "Finished"
PHASE_FAILED = "Failed"
PHASE_UNKNOWN = "Unknown"


def pod_group_name(pod: Any) -> str:
    """The PodGroup a pod belongs to ("" when none)."""
    return str(pod.metadata.labels.get(POD_GROUP_LABEL, ""))


def pod_group_full_name(pod: Any) -> str:
    """namespace/group of a pod's PodGroup ("" when none): the group's store key."""
    name = pod_group_name(pod)
    return f"{pod.metadata.namespace}/{name}" if name else ""
