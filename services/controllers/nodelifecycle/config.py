"""The node lifecycle controller's settings (kube-controller-manager's node lifecycle
flags), in a module of their own: the controller, the health tracker (health.py) and the
zones (zones.py) each read them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeLifecycleConfig:
    """kube-controller-manager's node lifecycle flags; durations in simulated seconds."""

    node_monitor_period: float = 5.0
    """How often node health is checked (--node-monitor-period)."""

    node_monitor_grace_period: float = 50.0
    """How long a node may go without renewing its Lease or its Ready heartbeat before it
    is marked Unknown (--node-monitor-grace-period; 50 s since Kubernetes 1.32, 40 s
    before)."""

    node_startup_grace_period: float = 60.0
    """The same for a node that never posted a Ready condition, counted from its
    creation (--node-startup-grace-period)."""

    node_eviction_rate: float = 0.1
    """Nodes a second that get a NoExecute taint in a healthy zone (--node-eviction-rate)."""

    secondary_node_eviction_rate: float = 0.01
    """The same in a partially disrupted zone larger than large_cluster_size_threshold
    (--secondary-node-eviction-rate)."""

    unhealthy_zone_threshold: float = 0.55
    """The fraction of not-Ready nodes (more than 2 of them) that makes a zone partially
    disrupted (--unhealthy-zone-threshold)."""

    large_cluster_size_threshold: int = 50
    """Above this many nodes a partially disrupted zone keeps tainting at the secondary
    rate; at or below it tainting stops (--large-cluster-size-threshold)."""

    node_update_workers: int = 8
    """Nodes checked at once in a monitor pass, and NoSchedule tainting workers."""

    status_update_retries: int = 5
    """Attempts to write one node's status or taints before waiting for the next pass."""

    retry_delay: float = 0.02
    """Pause between two attempts (upstream: 20 ms)."""

    emit_events: bool = True
    """Write NodeNotReady events when a node's Ready condition leaves True."""

    def __post_init__(self) -> None:
        for name in (
            "node_monitor_period",
            "node_monitor_grace_period",
            "node_startup_grace_period",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.node_monitor_grace_period <= self.node_monitor_period:
            raise ValueError(
                f"node_monitor_grace_period ({self.node_monitor_grace_period}) must be longer "
                f"than node_monitor_period ({self.node_monitor_period})"
            )
        for name in ("node_eviction_rate", "secondary_node_eviction_rate"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if not 0 < self.unhealthy_zone_threshold <= 1:
            raise ValueError(
                f"unhealthy_zone_threshold must be in (0, 1], got {self.unhealthy_zone_threshold}"
            )
        if self.large_cluster_size_threshold < 0:
            raise ValueError(
                "large_cluster_size_threshold must not be negative, got "
                f"{self.large_cluster_size_threshold}"
            )
        if self.node_update_workers < 1:
            raise ValueError(
                f"node_update_workers must be at least 1, got {self.node_update_workers}"
            )
        if self.status_update_retries < 1:
            raise ValueError(
                f"status_update_retries must be at least 1, got {self.status_update_retries}"
            )
        if self.retry_delay < 0:
            raise ValueError(f"retry_delay must not be negative, got {self.retry_delay}")


__all__ = ["NodeLifecycleConfig"]
