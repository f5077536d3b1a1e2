"""PodGC against a real gRPC apiserver: which pods one pass deletes (terminated beyond the
threshold, orphans after the quarantine, terminating ones nobody will finish), on a
FakeClock where the quarantine matters, and its periodic loop on the real clock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.listoptions import ListOptions
from services.clock import FakeClock
from services.controllers.podgc import PodGCConfig, PodGCController, gc_order
from tests.controllers.conftest import NS, PODS, ControllerCluster

Spec = tuple[str, str, str]  # name, phase, reason


async def make_pods(
    cluster: ControllerCluster, specs: Sequence[Spec], *, spacing: float = 10.0
) -> None:
    """Create the pods oldest first, `spacing` apiserver-seconds apart, then post phases."""
    for name, _, _ in specs:
        await cluster.pod(name, {"app": "gc"})
        cluster.api_clock.advance(spacing)
    for name, phase, reason in specs:
        if phase != "Pending":
            pod = await cluster.client.get(PODS, name, NS)
            await cluster.set_status(pod, phase=phase, reason=reason)  # type: ignore[arg-type]
    want = {name: phase for name, phase, _ in specs}

    def seen() -> bool:
        store = cluster.pods.store
        return all(
            f"{NS}/{n}" in store and store[f"{NS}/{n}"].status.phase == p  # type: ignore[attr-defined]
            for n, p in want.items()
        )

    await cluster.until(seen)


def _pod(cluster: ControllerCluster, name: str) -> core_pb2.Pod | None:
    return cluster.pods.store.get(f"{NS}/{name}")  # type: ignore[return-value]


def node_of(cluster: ControllerCluster, name: str) -> str | None:
    pod = _pod(cluster, name)
    return None if pod is None else pod.spec.node_name


def phase_of(cluster: ControllerCluster, name: str) -> str | None:
    pod = _pod(cluster, name)
    return None if pod is None else pod.status.phase


def terminating(cluster: ControllerCluster, name: str) -> bool:
    pod = _pod(cluster, name)
    return pod is not None and bool(pod.metadata.deletion_timestamp)


async def names(cluster: ControllerCluster) -> set[str]:
    items, _ = await cluster.client.list(PODS, namespace=NS)
    return {p.metadata.name for p in items}  # type: ignore[attr-defined]


AGED: list[Spec] = [
    ("old-failed", "Failed", ""),
    ("mid-succeeded", "Succeeded", ""),
    ("new-failed", "Failed", ""),
    ("newest-evicted", "Failed", "Evicted"),
    ("running", "Running", ""),
]


@pytest.mark.parametrize(
    ("threshold", "deleted"),
    [
        (2, {"newest-evicted", "old-failed"}),  # evicted first, then the oldest
        (3, {"newest-evicted"}),
        (1, {"newest-evicted", "old-failed", "mid-succeeded"}),
        (4, set()),  # four terminated pods are within the threshold
        (0, set()),  # 0 turns this collection off
    ],
)
async def test_terminated_pods_beyond_the_threshold_go_evicted_first_then_oldest(
    cluster: ControllerCluster, threshold: int, deleted: set[str]
) -> None:
    gc = PodGCController(
        cluster.client, cluster.informers, config=PodGCConfig(terminated_pod_gc_threshold=threshold)
    )
    await cluster.start()
    await make_pods(cluster, AGED)
    await gc.gc()
    assert await names(cluster) == {name for name, _, _ in AGED} - deleted


def test_terminated_pods_created_in_the_same_second_go_by_name() -> None:
    pods = []
    for name in ("b", "a", "c"):
        p = core_pb2.Pod()
        p.metadata.name = name
        p.metadata.creation_timestamp = "2027-01-15T08:00:00Z"
        p.status.phase = "Failed"
        pods.append(p)
    assert [p.metadata.name for p in gc_order(pods)] == ["a", "b", "c"]


async def test_an_orphaned_pod_is_failed_and_deleted_only_after_a_40s_quarantine(
    cluster: ControllerCluster,
) -> None:
    clock = FakeClock()
    gc = PodGCController(cluster.client, cluster.informers, clock=clock)
    await cluster.start()
    await cluster.node("alive")
    orphan = await cluster.pod("orphan", {"app": "gc"})
    kept = await cluster.pod("kept", {"app": "gc"})
    await cluster.bind(orphan, "ghost")  # a node that does not exist
    await cluster.bind(kept, "alive")
    await cluster.set_status(orphan, phase="Running", ready=True)
    await cluster.until(
        lambda: (
            "alive" in cluster.nodes.store
            and phase_of(cluster, "orphan") == "Running"
            and node_of(cluster, "kept") == "alive"
        )
    )
    await gc.gc()
    clock.advance(39.0)
    await gc.gc()
    assert await names(cluster) == {"orphan", "kept"}, "still in quarantine"

    _, rv = await cluster.client.list(PODS, namespace=NS)
    clock.advance(1.5)
    await gc.gc()
    assert await names(cluster) == {"kept"}

    async def last_words() -> list[tuple[str, str, list[tuple[str, str, str]]]]:
        seen = []
        async for ev in cluster.client.watch(
            PODS,
            namespace=NS,
            options=ListOptions(field_selector="metadata.name=orphan", resource_version=rv),
        ):
            pod: core_pb2.Pod = ev.object  # type: ignore[assignment]
            conds = [(c.type, c.status, c.reason) for c in pod.status.conditions]
            seen.append((ev.type, pod.status.phase, conds))
            if ev.type == "DELETED":
                return seen
        return seen

    seen = await asyncio.wait_for(last_words(), 5)
    assert seen[0][0:2] == ("MODIFIED", "Failed")
    assert ("DisruptionTarget", "True", "DeletionByPodGC") in seen[0][2]
    assert seen[-1][0] == "DELETED"


async def test_a_node_that_appears_during_quarantine_keeps_its_pods(
    cluster: ControllerCluster,
) -> None:
    clock = FakeClock()
    gc = PodGCController(cluster.client, cluster.informers, clock=clock)
    await cluster.start()
    pod = await cluster.pod("early", {"app": "gc"})
    await cluster.bind(pod, "late")
    await cluster.until(lambda: node_of(cluster, "early") == "late")
    await gc.gc()
    await cluster.node("late")  # whether or not the informer has it yet, it exists
    clock.advance(41.0)
    await gc.gc()
    assert await names(cluster) == {"early"}


@pytest.mark.parametrize(
    ("ready", "taints", "deleted"),
    [
        (False, [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}], True),
        (True, [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}], False),
        (False, [], False),
    ],
)
async def test_terminating_pods_on_an_out_of_service_node_are_force_deleted(
    cluster: ControllerCluster, ready: bool, taints: list[dict[str, str]], deleted: bool
) -> None:
    gc = PodGCController(cluster.client, cluster.informers)
    await cluster.start()
    await cluster.node("down", ready=ready, taints=taints)
    pod = await cluster.pod("stuck", {"app": "gc"})
    await cluster.bind(pod, "down")
    await cluster.set_status(pod, phase="Running", ready=True)
    await cluster.client.delete(PODS, "stuck", NS)  # graceful: waits for a kubelet
    await cluster.until(lambda: "down" in cluster.nodes.store and terminating(cluster, "stuck"))
    await gc.gc()
    assert await names(cluster) == (set() if deleted else {"stuck"})


async def test_an_unscheduled_terminating_pod_is_marked_failed_and_force_deleted(
    cluster: ControllerCluster,
) -> None:
    gc = PodGCController(cluster.client, cluster.informers)
    await cluster.start()
    await cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "held", "namespace": NS, "finalizers": ["example.com/hold"]},
            "spec": {"containers": [{"name": "c", "image": "app:v1"}]},
        }
    )
    await cluster.client.delete(PODS, "held", NS)
    await cluster.until(lambda: terminating(cluster, "held"))
    await gc.gc()
    pod = await cluster.client.get(PODS, "held", NS)  # the finalizer still holds it
    assert pod.status.phase == "Failed"  # type: ignore[attr-defined]


async def test_the_gc_loop_runs_every_period_and_stops_promptly(cluster: ControllerCluster) -> None:
    config = PodGCConfig(terminated_pod_gc_threshold=1, gc_check_period=0.05)
    gc = PodGCController(cluster.client, cluster.informers, config=config)
    await cluster.start(gc)
    # The loop runs meanwhile: it may take "a" before "c" ends; the outcome is the same.
    phases = {"a": "Failed", "b": "Failed", "c": "Succeeded"}
    for name in phases:
        await cluster.pod(name, {"app": "gc"})
        cluster.api_clock.advance(10)
    for name, phase in phases.items():
        pod = await cluster.client.get(PODS, name, NS)
        await cluster.set_status(pod, phase=phase)  # type: ignore[arg-type]
    await cluster.until(lambda: set(cluster.pods.store) == {f"{NS}/c"})
    assert await names(cluster) == {"c"}
    await cluster.stop()


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="gc_check_period"):
        PodGCConfig(gc_check_period=0)
    with pytest.raises(ValueError, match="quarantine_time"):
        PodGCConfig(quarantine_time=-1)
