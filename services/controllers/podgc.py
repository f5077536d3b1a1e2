"""PodGC (upstream pkg/controller/podgc): deletes pods nobody else will.

Every gc_check_period (20 s) one pass looks at the informer caches and force-deletes
(grace period 0):

1. terminated pods (phase Succeeded or Failed) beyond terminated_pod_gc_threshold
   (12500; 0 turns this off): evicted pods first, then the oldest by creationTimestamp,
   the name breaking ties;
2. terminating pods on a node that is not Ready and carries the
   `node.kubernetes.io/out-of-service` taint (the node is known to be down);
3. orphaned pods, bound to a node that does not exist: a missing node is quarantined
   for quarantine_time (40 s) in a delaying queue and then looked up in the apiserver
   itself (not the cache), so a node that is merely late in the informer is not
   mistaken for a deleted one; its pods get a DisruptionTarget condition
   (DeletionByPodGC);
4. terminating pods that were never scheduled (no kubelet will ever finish them).

A pod that is not terminal yet is first marked Failed (with the condition, if any), since
no kubelet will ever report its end, then deleted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.wellknown import TAINT_OUT_OF_SERVICE
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.client import Client, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import run_periodically, timestamp, wait_synced
from services.controllers.workqueue import WorkQueue

log = logging.getLogger(__name__)

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]

#: kube-controller-manager's --terminated-pod-gc-threshold default.
TERMINATED_POD_GC_THRESHOLD = 12500
#: Upstream gcCheckPeriod.
GC_CHECK_PERIOD = 20.0
#: Upstream quarantineTime.
QUARANTINE_TIME = 40.0
#: Deletions in flight at once in one pass.
_MAX_CONCURRENT_DELETES = 50


@dataclass
class PodGCConfig:
    """Settings of the pod garbage collector."""

    terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD
    """Terminated pods kept before the oldest are deleted; 0 or less keeps them all
    (--terminated-pod-gc-threshold)."""

    gc_check_period: float = GC_CHECK_PERIOD
    """Seconds between two passes."""

    quarantine_time: float = QUARANTINE_TIME
    """How long a node missing from the cache is given to show up before the apiserver is
    asked whether it really is gone."""

    def __post_init__(self) -> None:
        if self.gc_check_period <= 0:
            raise ValueError(f"gc_check_period must be positive, got {self.gc_check_period}")
        if self.quarantine_time < 0:
            raise ValueError(f"quarantine_time must be >= 0, got {self.quarantine_time}")


def is_pod_terminated(pod: core_pb2.Pod) -> bool:
    return pod.status.phase not in ("Pending", "Running", "Unknown")


def is_pod_evicted(pod: core_pb2.Pod) -> bool:
    return pod.status.phase == "Failed" and pod.status.reason == "Evicted"


def gc_order(pods: Sequence[core_pb2.Pod]) -> list[core_pb2.Pod]:
    """Evicted first, then oldest first, then by name (byEvictionAndCreationTimestamp)."""
    return sorted(
        pods,
        key=lambda p: (
            not is_pod_evicted(p),
            timestamp(p.metadata.creation_timestamp) or 0.0,
            p.metadata.name,
        ),
    )


def _is_node_ready(node: core_pb2.Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


class PodGCController:
    """Deletes terminated, orphaned and stuck terminating pods (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: PodGCConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or PodGCConfig()
        self.clock = clock or RealClock()
        self.pod_informer = informers.get(PODS)
        self.node_informer = informers.get(NODES)
        self.node_queue: WorkQueue[str] = WorkQueue(clock=self.clock, name="orphaned_pods_nodes")
        self._limit = asyncio.Semaphore(_MAX_CONCURRENT_DELETES)

    async def run(self, stop: asyncio.Event) -> None:
        """A pass every gc_check_period until `stop` is set."""
        try:
            if not await wait_synced(stop, self.pod_informer.synced, self.node_informer.synced):
                return
            await run_periodically(
                self.gc,
                clock=self.clock,
                period=self.config.gc_check_period,
                stop=stop,
                what="pod gc pass",
            )
        finally:
            self.node_queue.shutdown()

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """No pod update: each pass reads the store."""
        return False

    async def gc(self) -> None:
        """One pass over the cached pods and nodes."""
        pods: list[core_pb2.Pod] = list(self.pod_informer.store.values())  # type: ignore[arg-type]
        nodes: dict[str, core_pb2.Node] = dict(self.node_informer.store)  # type: ignore[arg-type]
        if self.config.terminated_pod_gc_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods, nodes)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def gc_terminated(self, pods: Sequence[core_pb2.Pod]) -> None:
        terminated = [p for p in pods if is_pod_terminated(p)]
        excess = len(terminated) - self.config.terminated_pod_gc_threshold
        if excess <= 0:
            return
        log.info("garbage collecting %d terminated pods", excess)
        await self._delete_all(gc_order(terminated)[:excess])

    async def gc_terminating(
        self, pods: Sequence[core_pb2.Pod], nodes: dict[str, core_pb2.Node]
    ) -> None:
        doomed = []
        for p in pods:
            node = nodes.get(p.spec.node_name) if p.metadata.deletion_timestamp else None
            if node is None or _is_node_ready(node):
                continue
            if any(t.key == TAINT_OUT_OF_SERVICE for t in node.spec.taints):
                doomed.append(p)
        if doomed:
            await self._delete_all(gc_order(doomed))

    async def gc_orphaned(
        self, pods: Sequence[core_pb2.Pod], nodes: dict[str, core_pb2.Node]
    ) -> None:
        for p in pods:
            if p.spec.node_name and p.spec.node_name not in nodes:
                # A key already waiting keeps its earlier time: quarantine runs from the
                # first sighting.
                self.node_queue.add_after(p.spec.node_name, self.config.quarantine_time)
        deleted = await self._discover_deleted_nodes(nodes)
        if not deleted:
            return
        condition = core_pb2.PodCondition(
            type="DisruptionTarget",
            status="True",
            reason="DeletionByPodGC",
            message="PodGC: node no longer exists",
        )
        orphans = [p for p in pods if p.spec.node_name in deleted]
        for p in orphans:
            log.info(
                "found orphaned pod %s/%s assigned to node %s, deleting",
                p.metadata.namespace,
                p.metadata.name,
                p.spec.node_name,
            )
        await self._delete_all(orphans, condition)

    async def _discover_deleted_nodes(self, nodes: dict[str, core_pb2.Node]) -> set[str]:
        """Nodes out of quarantine that the apiserver confirms are gone."""
        deleted: set[str] = set()
        while len(self.node_queue) > 0:
            name = await self.node_queue.get()
            if name is None:
                break
            try:
                if name not in nodes:
                    await self.client.get(NODES, name)
            except NotFoundError:
                deleted.add(name)
            except ApiError as e:
                # Quarantined again on the next pass if still missing.
                log.warning("could not check node %s: %s", name, e)
            finally:
                self.node_queue.done(name)
        return deleted

    async def gc_unscheduled_terminating(self, pods: Sequence[core_pb2.Pod]) -> None:
        doomed = [p for p in pods if p.metadata.deletion_timestamp and not p.spec.node_name]
        if doomed:
            await self._delete_all(doomed)

    async def _delete_all(
        self, pods: Sequence[core_pb2.Pod], condition: core_pb2.PodCondition | None = None
    ) -> None:
        async def one(pod: core_pb2.Pod) -> None:
            async with self._limit:
                try:
                    await self.mark_failed_and_delete(pod, condition)
                except NotFoundError:
                    pass
                except ApiError as e:
                    log.warning(
                        "could not delete pod %s/%s: %s",
                        pod.metadata.namespace,
                        pod.metadata.name,
                        e,
                    )
                except Exception:  # noqa: BLE001 - one pod's failure costs only that pod
                    log.exception(
                        "could not delete pod %s/%s", pod.metadata.namespace, pod.metadata.name
                    )

        await asyncio.gather(*(one(p) for p in pods))

    async def mark_failed_and_delete(
        self, pod: core_pb2.Pod, condition: core_pb2.PodCondition | None = None
    ) -> None:
        """Force-delete `pod`; one no kubelet will finish is first marked Failed (with
        `condition`), so nothing that reads its last state takes it for still running."""
        if pod.status.phase not in ("Succeeded", "Failed"):
            status = core_pb2.PodStatus()
            status.CopyFrom(pod.status)
            status.phase = "Failed"
            if condition is not None:
                update_pod_condition(
                    status,
                    condition.type,
                    condition.status,
                    self.clock.now(),
                    reason=condition.reason,
                    message=condition.message,
                )
            patch = {
                "metadata": {"uid": pod.metadata.uid},
                "status": {
                    "phase": "Failed",
                    "conditions": [codec.encode(c) for c in status.conditions],
                },
            }
            await self.client.patch(
                PODS,
                pod.metadata.name,
                json.dumps(patch),
                namespace=pod.metadata.namespace,
                status=True,
            )
        await self.client.delete(
            PODS,
            pod.metadata.name,
            pod.metadata.namespace,
            grace_period_seconds=0,
            uid=pod.metadata.uid,
        )


__all__ = [
    "GC_CHECK_PERIOD",
    "QUARANTINE_TIME",
    "TERMINATED_POD_GC_THRESHOLD",
    "PodGCConfig",
    "PodGCController",
    "gc_order",
]
