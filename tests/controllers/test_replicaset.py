"""The ReplicaSet controller: the pure rules (deletion ranking, slow start, expectations,
status) as tables, and the controller against a real gRPC apiserver."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, ForbiddenError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.client import BatchResult, Client, WatchEvent
from services.client.informer import SharedInformers
from services.clock import FakeClock, rfc3339
from services.controllers.controller_utils import slow_start_batch
from services.controllers.expectations import ControllerExpectations
from services.controllers.ranking import rank_for_deletion
from services.controllers.replicaset import ReplicaSetConfig, ReplicaSetController, calculate_status
from tests.builders import MakePod
from tests.controllers.conftest import NS, PODS, REPLICA_SETS, ControllerCluster

NOW = 1_800_000_000.0
EVENTS = BY_KIND["Event"]

# ============================================================================ pure rules


def make_pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    ready_ago: float | None = 100.0,
    created_ago: float = 1000.0,
    restarts: int = 0,
    cost: int | None = None,
    uid: str | None = None,
) -> core_pb2.Pod:
    p = (
        MakePod()
        .name(name)
        .uid(uid or f"uid-{name}")
        .creation_timestamp(rfc3339(NOW - created_ago))
    )
    if cost is not None:
        p.annotation("controller.kubernetes.io/pod-deletion-cost", str(cost))
    p.node(node).phase(phase)
    if ready_ago is not None or ready:
        p.condition(
            "Ready",
            "True" if ready else "False",
            rfc3339(NOW - ready_ago) if ready_ago is not None else "",
        )
    if restarts:
        p.container_status("c", restart_count=restarts)
    return p.obj()


@pytest.mark.parametrize(
    ("first", "second", "extra_related"),
    [
        pytest.param(make_pod("a", node=""), make_pod("b"), 0, id="unassigned-before-assigned"),
        pytest.param(
            make_pod("a", phase="Pending", ready=False),
            make_pod("b", phase="Unknown", ready=False),
            0,
            id="pending-before-unknown",
        ),
        pytest.param(
            make_pod("a", phase="Unknown", ready=False),
            make_pod("b", ready=False),
            0,
            id="unknown-before-running",
        ),
        pytest.param(make_pod("a", ready=False), make_pod("b"), 0, id="not-ready-before-ready"),
        pytest.param(make_pod("a", cost=-5), make_pod("b"), 0, id="lower-deletion-cost-first"),
        pytest.param(
            make_pod("a", node="crowded"), make_pod("b", node="n2"), 2, id="doubled-up-node-first"
        ),
        pytest.param(
            make_pod("a", ready_ago=10),
            make_pod("b", ready_ago=1000),
            0,
            id="ready-more-recently-first",
        ),
        pytest.param(
            make_pod("a", restarts=3), make_pod("b", restarts=1), 0, id="more-restarts-first"
        ),
        pytest.param(
            make_pod("a", created_ago=10), make_pod("b", created_ago=1000), 0, id="newer-first"
        ),
        pytest.param(
            make_pod("a", created_ago=100, uid="1"),
            make_pod("b", created_ago=110, uid="2"),
            0,
            id="same-log2-age-bucket-falls-to-uid",
        ),
    ],
)
def test_scale_down_ranking_prefers_deleting_as_upstream(
    first: core_pb2.Pod, second: core_pb2.Pod, extra_related: int
) -> None:
    related = [first, second] + [
        make_pod(f"r{i}", node=first.spec.node_name) for i in range(extra_related)
    ]
    for order in ([first, second], [second, first]):
        ranked = rank_for_deletion(order, related, NOW)
        assert [p.metadata.name for p in ranked] == ["a", "b"]


@pytest.mark.parametrize(
    ("count", "fail_at", "batches", "made"),
    [
        (1, None, [1], 1),
        (10, None, [1, 2, 4, 3], 10),
        (16, None, [1, 2, 4, 8, 1], 16),
        (10, 2, [1, 2], 2),  # the second batch has a failure (1 of 2 made): stop there
        (0, None, [], 0),
    ],
)
async def test_slow_start_doubles_batches_and_stops_at_the_first_failing_one(
    count: int, fail_at: int | None, batches: list[int], made: int
) -> None:
    seen: list[int] = []

    async def create(n: int) -> tuple[int, ApiError | None]:
        seen.append(n)
        if fail_at is not None and len(seen) == fail_at:
            return n - 1, ApiError("quota exceeded")
        return n, None

    ok, err = await slow_start_batch(count, 1, create)
    assert seen == batches
    assert ok == made
    assert (err is None) == (fail_at is None)


def test_expectations_hold_a_sync_until_its_own_creations_and_deletions_are_seen() -> None:
    clock = FakeClock()
    exp = ControllerExpectations(clock, timeout=300)
    assert exp.satisfied("ns/rs"), "no expectations recorded: sync"
    exp.expect_creations("ns/rs", 2)
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")

    exp.expect_deletions("ns/rs", ["ns/p1", "ns/p2"])
    exp.deletion_observed("ns/rs", "ns/p1")  # seen terminating
    exp.deletion_observed("ns/rs", "ns/p1")  # and then gone: counted once
    exp.deletion_observed("ns/rs", "ns/other")  # not one we deleted
    assert exp.get("ns/rs") == (0, 1)
    assert not exp.satisfied("ns/rs")
    clock.advance(301)
    assert exp.satisfied("ns/rs"), "a lost event must not stall the ReplicaSet forever"


@pytest.mark.parametrize(
    ("min_ready", "ready_ago", "available"),
    [(0, 0.0, 2), (10, 5.0, 0), (10, 11.0, 2)],
)
def test_status_counts_available_only_after_min_ready_seconds(
    min_ready: int, ready_ago: float, available: int
) -> None:
    rs = REPLICA_SETS.new()
    rs.spec.replicas = 3  # type: ignore[attr-defined]
    rs.spec.min_ready_seconds = min_ready  # type: ignore[attr-defined]
    rs.spec.template.metadata.labels.update({"app": "web", "tier": "fe"})  # type: ignore[attr-defined]
    pods = [make_pod("a", ready_ago=ready_ago), make_pod("b", ready_ago=ready_ago)]
    pods.append(make_pod("c", ready=False, ready_ago=None))
    for p in pods:
        p.metadata.labels.update({"app": "web", "tier": "fe"})
    pods[2].metadata.labels.pop("tier")
    status = calculate_status(rs, pods, None, NOW)  # type: ignore[arg-type]
    assert (status.replicas, status.fully_labeled_replicas, status.ready_replicas) == (3, 2, 2)
    assert status.available_replicas == available
    failed = calculate_status(rs, pods[:1], ApiError("quota"), NOW)  # type: ignore[arg-type]
    assert [(c.type, c.status, c.reason, c.message) for c in failed.conditions] == [
        ("ReplicaFailure", "True", "FailedCreate", "quota")
    ]


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="workers"):
        ReplicaSetConfig(workers=0)
    with pytest.raises(ValueError, match="burst_replicas"):
        ReplicaSetConfig(burst_replicas=0)
    with pytest.raises(ValueError, match="base_backoff"):
        ReplicaSetConfig(base_backoff=2.0, max_backoff=1.0)


# ============================================================================ the controller


class CountingClient(Client):
    """Counts the pods the controller really created."""

    created = 0

    async def batch_create(self, objs: Sequence[Message]) -> list[BatchResult]:
        results = await super().batch_create(objs)
        self.created += sum(1 for r in results if r.error is None)
        return results


@pytest.fixture
async def rsc(cluster: ControllerCluster) -> AsyncIterator[ReplicaSetController]:
    controller = ReplicaSetController(cluster.client, cluster.informers)
    await cluster.start(controller)
    yield controller


def owned(cluster: ControllerCluster, name: str) -> list[core_pb2.Pod]:
    rs = cluster.rs(name)
    return [] if rs is None else cluster.pods_of(rs)


async def test_rs_creates_replicas_named_and_owned_like_upstream(
    cluster: ControllerCluster, rsc: ReplicaSetController
) -> None:
    rs = await cluster.replica_set("web", 3, {"app": "web"})
    await cluster.until(lambda: len(owned(cluster, "web")) == 3)
    for pod in owned(cluster, "web"):
        assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", pod.metadata.name)
        assert [codec.encode(r) for r in pod.metadata.owner_references] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": rs.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert dict(pod.metadata.labels) == {"app": "web"}
        assert pod.spec.containers[0].image == "app:v1"

    def status_caught_up() -> bool:
        cur = cluster.rs("web")
        return (
            cur is not None
            and cur.status.replicas == 3
            and (cur.status.observed_generation == cur.metadata.generation)
        )

    await cluster.until(status_caught_up)

    await wait_events(cluster, "web", "SuccessfulCreate", 3)


async def wait_events(cluster: ControllerCluster, name: str, reason: str, count: int) -> None:
    """Wait (on a watch) until `count` events of `reason` about `name` exist."""
    selector = f"involvedObject.name={name}"
    items, rv = await cluster.client.list(
        EVENTS, namespace=NS, options=ListOptions(field_selector=selector)
    )
    seen = {e.metadata.name for e in items if e.reason == reason}  # type: ignore[attr-defined]
    if len(seen) >= count:
        assert len(seen) == count
        return

    async def follow() -> None:
        async for ev in cluster.client.watch(
            EVENTS, namespace=NS, options=ListOptions(field_selector=selector, resource_version=rv)
        ):
            if ev.type == "ADDED" and ev.object.reason == reason:  # type: ignore[attr-defined]
                seen.add(ev.object.metadata.name)  # type: ignore[attr-defined]
                if len(seen) >= count:
                    return

    await asyncio.wait_for(follow(), 10)
    assert len(seen) == count


async def test_rs_scales_down_in_upstream_deletion_order(
    cluster: ControllerCluster, rsc: ReplicaSetController
) -> None:
    await cluster.replica_set("web", 5, {"app": "web"})
    await cluster.until(lambda: len(owned(cluster, "web")) == 5)
    a, b, c, d, e = owned(cluster, "web")
    # a: unscheduled. b: scheduled, Pending. c: Running, not ready.
    # d and e: Running and ready; d may be deleted at a lower cost.
    for pod in (b, c, d, e):
        await cluster.bind(pod, "n1")
    await cluster.set_status(c, phase="Running", ready=False)
    await cluster.set_status(d, phase="Running", ready=True)
    await cluster.set_status(e, phase="Running", ready=True)
    cost = {"controller.kubernetes.io/pod-deletion-cost": "-1"}
    await cluster.client.patch(
        PODS, d.metadata.name, json.dumps({"metadata": {"annotations": cost}}), namespace=NS
    )

    def arranged() -> bool:
        now = {p.metadata.name: p for p in owned(cluster, "web")}
        return (
            all(now[p.metadata.name].spec.node_name == "n1" for p in (b, c, d, e))
            and now[c.metadata.name].status.phase == "Running"
            and is_ready(cluster, d)
            and is_ready(cluster, e)
            and bool(now[d.metadata.name].metadata.annotations)
        )

    await cluster.until(arranged)
    steps = [(4, a), (3, b), (2, c), (1, d)]
    for replicas, victim in steps:
        await cluster.client.patch(
            REPLICA_SETS, "web", json.dumps({"spec": {"replicas": replicas}}), namespace=NS
        )
        await cluster.until(lambda n=replicas: len(owned(cluster, "web")) == n)
        alive = {p.metadata.name for p in owned(cluster, "web")}
        assert victim.metadata.name not in alive, (
            f"scaling to {replicas} should delete {victim.metadata.name}"
        )
    assert {p.metadata.name for p in owned(cluster, "web")} == {e.metadata.name}


def is_ready(cluster: ControllerCluster, pod: core_pb2.Pod) -> bool:
    cur = cluster.pods.store.get(f"{NS}/{pod.metadata.name}")
    return cur is not None and any(
        c.type == "Ready" and c.status == "True"
        for c in cur.status.conditions  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("how", ["evicted", "deleted", "succeeded"])
async def test_rs_replaces_a_pod_that_no_longer_counts(
    cluster: ControllerCluster, rsc: ReplicaSetController, how: str
) -> None:
    await cluster.replica_set("web", 2, {"app": "web"})
    await cluster.until(lambda: len(owned(cluster, "web")) == 2)
    victim = owned(cluster, "web")[0]
    if how == "evicted":
        await cluster.set_status(victim, phase="Failed", reason="Evicted")
    elif how == "succeeded":
        await cluster.set_status(victim, phase="Succeeded")
    else:
        await cluster.client.delete(PODS, victim.metadata.name, NS)
    await cluster.until(
        lambda: (
            len(owned(cluster, "web")) == 2
            and victim.metadata.name not in {p.metadata.name for p in owned(cluster, "web")}
        )
    )
    if how != "deleted":
        # A terminated pod stays for PodGC; the ReplicaSet only stops counting it.
        kept = cluster.pods.store[f"{NS}/{victim.metadata.name}"]
        assert kept.status.phase in ("Failed", "Succeeded")  # type: ignore[attr-defined]


async def test_rs_adopts_matching_orphans_and_releases_pods_that_stop_matching(
    cluster: ControllerCluster, rsc: ReplicaSetController
) -> None:
    await cluster.pod("orphan-1", {"app": "web"})
    await cluster.pod("orphan-2", {"app": "web"})
    await cluster.pod("stranger", {"app": "other"})
    ghost = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost", "uid": "ghost-uid"}
    await cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "foreign",
                "namespace": NS,
                "labels": {"app": "web"},
                "ownerReferences": [{**ghost, "controller": True}],
            },
            "spec": {"containers": [{"name": "c", "image": "app:v1"}]},
        }
    )
    names = ("orphan-1", "orphan-2", "stranger", "foreign")
    await cluster.until(lambda: all(f"{NS}/{n}" in cluster.pods.store for n in names))

    rs = await cluster.replica_set(
        "web", 3, {"app": "web"}, template_labels={"app": "web", "tier": "fe"}
    )
    await cluster.until(lambda: len(owned(cluster, "web")) == 3)
    names_owned = {p.metadata.name for p in owned(cluster, "web")}
    assert {"orphan-1", "orphan-2"} <= names_owned, "matching orphans are adopted, not duplicated"
    assert "foreign" not in names_owned and "stranger" not in names_owned
    foreign_refs = cluster.pods.store[f"{NS}/foreign"].metadata.owner_references  # type: ignore[attr-defined]
    assert [r.name for r in foreign_refs] == ["ghost"], "a pod controlled by another is left alone"

    def fully_labeled() -> bool:
        cur = cluster.rs("web")
        return cur is not None and (cur.status.replicas, cur.status.fully_labeled_replicas) == (
            3,
            1,
        )

    await cluster.until(fully_labeled)

    await cluster.client.patch(
        PODS, "orphan-1", json.dumps({"metadata": {"labels": {"app": "gone"}}}), namespace=NS
    )

    def released_and_replaced() -> bool:
        pod = cluster.pods.store[f"{NS}/orphan-1"]
        mine = {p.metadata.name for p in cluster.pods_of(rs)}
        return not pod.metadata.owner_references and len(mine) == 3 and "orphan-1" not in mine  # type: ignore[attr-defined]

    await cluster.until(released_and_replaced)


class LaggyClient(Client):
    """Pod watch events arrive `lag` seconds late each: an informer behind the apiserver,
    as under load."""

    lag = 0.01

    async def watch(self, kind: Any, **kw: Any) -> AsyncIterator[WatchEvent]:
        async for ev in super().watch(kind, **kw):
            if kind is PODS:
                await asyncio.sleep(self.lag)
            yield ev


async def test_expectations_prevent_over_creation_under_a_burst_of_events(
    cluster: ControllerCluster,
) -> None:
    counting = CountingClient(cluster.client.address, timeout=10)
    laggy = LaggyClient(cluster.client.address, timeout=10)
    informers = SharedInformers(laggy)
    controller = ReplicaSetController(counting, informers)
    await cluster.start()
    informers.start()
    await informers.wait_synced()
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        rs = await cluster.replica_set("burst", 40, {"app": "burst"})

        async def poke() -> None:
            # Every write is an RS update event that queues the RS again, while its
            # creations are in flight and not yet all seen by its informer.
            for i in range(1000):
                patch = {"metadata": {"annotations": {"poke": str(i)}}}
                await cluster.client.patch(REPLICA_SETS, "burst", json.dumps(patch), namespace=NS)

        poker = asyncio.create_task(poke())
        try:
            await cluster.until(lambda: len(cluster.pods_of(rs)) >= 40)
        finally:
            poker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poker

        def idle() -> bool:
            cur = cluster.rs("burst")
            return (
                cur is not None
                and cur.status.replicas == 40
                and len(controller.queue) == 0
                and not controller.queue.is_processing(f"{NS}/burst")
                and controller.queue.waiting() == 0
            )

        await cluster.until(idle)
        assert counting.created == 40
        assert len(cluster.pods_of(rs, active_only=False)) == 40
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
        await informers.stop()
        await counting.close()
        await laggy.close()


async def test_rs_status_reports_available_replicas_after_min_ready_seconds(
    cluster: ControllerCluster, rsc: ReplicaSetController
) -> None:
    await cluster.replica_set("slow", 2, {"app": "slow"}, min_ready_seconds=2)
    await cluster.until(lambda: len(owned(cluster, "slow")) == 2)
    for pod in owned(cluster, "slow"):
        await cluster.set_status(pod, phase="Running", ready=True)

    def counts() -> tuple[int, int]:
        cur = cluster.rs("slow")
        assert cur is not None
        return cur.status.ready_replicas, cur.status.available_replicas

    await cluster.until(lambda: counts()[0] == 2)
    assert counts() == (2, 0), "ready for less than minReadySeconds is not available"
    await cluster.until(lambda: counts() == (2, 2), timeout=6)


async def test_deleting_a_replica_set_deletes_its_pods(
    cluster: ControllerCluster, rsc: ReplicaSetController
) -> None:
    rs = await cluster.replica_set("doomed", 2, {"app": "doomed"})
    await cluster.until(lambda: len(cluster.pods_of(rs)) == 2)
    await cluster.client.delete(REPLICA_SETS, "doomed", NS)
    await cluster.until(lambda: not cluster.pods_of(rs, active_only=False))


async def test_a_failing_create_sets_replica_failure_and_backs_off(
    cluster: ControllerCluster,
) -> None:
    class RefusingClient(Client):
        refusals = 0

        async def batch_create(self, objs: Sequence[Message]) -> list[BatchResult]:
            self.refusals += 1
            err = ForbiddenError('pods "x" is forbidden: exceeded quota')
            return [BatchResult(None, err) for _ in objs]

    refusing = RefusingClient(cluster.client.address, timeout=10)
    controller = ReplicaSetController(refusing, cluster.informers)
    await cluster.start(controller)
    try:
        await cluster.replica_set("quota", 5, {"app": "quota"})

        def failure() -> Any:
            cur = cluster.rs("quota")
            conds = [] if cur is None else list(cur.status.conditions)
            return [(c.type, c.status, c.reason) for c in conds]

        await cluster.until(lambda: failure() == [("ReplicaFailure", "True", "FailedCreate")])
        await cluster.until(lambda: refusing.refusals >= 3)
        assert controller.queue.num_requeues(f"{NS}/quota") >= 2
        assert not owned(cluster, "quota")
    finally:
        await cluster.stop()
        await refusing.close()


async def test_a_sync_that_raises_for_one_replica_set_costs_only_that_one(
    cluster: ControllerCluster,
) -> None:
    """A bug met while syncing "poison" (here: its sync raises) backs that key off and is
    logged with it; the other replica sets, before and after it, get their pods."""
    controller = ReplicaSetController(
        cluster.client, cluster.informers, config=ReplicaSetConfig(base_backoff=0.01)
    )
    real_sync = controller.sync
    poisoned: list[str] = []

    async def sync(key: str) -> None:
        if key == f"{NS}/poison":
            poisoned.append(key)
            raise OverflowError("int too large to convert")
        await real_sync(key)

    controller.sync = sync  # type: ignore[method-assign]
    await cluster.start(controller)
    await cluster.replica_set("poison", 2, {"app": "poison"})
    await cluster.replica_set("web", 3, {"app": "web"})
    await cluster.until(lambda: len(owned(cluster, "web")) == 3)
    await cluster.until(lambda: len(poisoned) >= 3)  # retried, with backoff
    assert controller.queue.num_requeues(f"{NS}/poison") >= 2
    await cluster.replica_set("later", 1, {"app": "later"})
    await cluster.until(lambda: len(owned(cluster, "later")) == 1)
    assert not owned(cluster, "poison")
