"""The Job controller's settings (kube-controller-manager's flags and constants)."""

from __future__ import annotations

from dataclasses import dataclass

from services.controllers.expectations import EXPECTATIONS_TIMEOUT
from services.controllers.job import rules

#: Upstream's MaxPodCreateDeletePerSync.
MAX_POD_CREATE_DELETE_PER_SYNC = 500
#: The spec.managedBy value of the Jobs this controller reconciles (unset means it too).
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"


@dataclass
class JobConfig:
    """Settings of the Job controller (kube-controller-manager flags and constants)."""

    workers: int = 5
    """Jobs synced at once (--concurrent-job-syncs)."""

    burst: int = MAX_POD_CREATE_DELETE_PER_SYNC
    """Most pods one sync creates or deletes."""

    pod_failure_backoff: float = rules.DEFAULT_POD_FAILURE_BACKOFF
    """First delay before a failed pod is replaced (doubles per consecutive failure)."""

    max_pod_failure_backoff: float = rules.MAX_POD_FAILURE_BACKOFF
    """Cap of that delay."""

    expectations_timeout: float = EXPECTATIONS_TIMEOUT
    """How long a sync waits for its own creations and deletions to be observed."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    record_events: bool = True
    """Write SuccessfulCreate / SuccessfulDelete / Completed / BackoffLimitExceeded … Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.burst < 1:
            raise ValueError(f"burst must be at least 1, got {self.burst}")
        if not 0 <= self.pod_failure_backoff <= self.max_pod_failure_backoff:
            raise ValueError(
                "need 0 <= pod_failure_backoff <= max_pod_failure_backoff, got "
                f"{self.pod_failure_backoff} and {self.max_pod_failure_backoff}"
            )
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


__all__ = ["JOB_CONTROLLER_NAME", "MAX_POD_CREATE_DELETE_PER_SYNC", "JobConfig"]
