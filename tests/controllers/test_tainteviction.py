"""The taint eviction controller: which pods a NoExecute taint removes, and when.

Integration tests run the controller against a real apiserver on a ScaledClock (scale 50:
30 simulated seconds take 0.6 real ones) and read times off the objects, in simulated
seconds: a pod's deletion moment is its deletionTimestamp minus its grace period (Time
has second precision, hence the 1 s slack below). The queue and the decision rules are
also tested alone.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.clock import FakeClock, ScaledClock, rfc3339
from services.controllers.tainteviction import (
    EvictionQueue,
    TaintEvictionConfig,
    matching_tolerations,
    min_toleration_seconds,
    set_disruption_target,
)
from tests.controllers._lifecycle_cluster import lifecycle_cluster
from tests.waiting import eventually

SCALE = 50.0
#: How late a deletion may come, in simulated seconds (0.2 s of real time at SCALE).
LATE = 10.0

EVICT = {"key": "example.com/evict", "value": "yes", "effect": "NoExecute"}
OTHER = {"key": "example.com/other", "effect": "NoExecute"}


def tol(key: str = "example.com/evict", seconds: int | None = None, **kw: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute", **kw}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def _cluster(**kw: Any) -> Any:
    return lifecycle_cluster(ScaledClock(SCALE), lifecycle=False, **kw)


# ------------------------------------------------------------------ integration


@pytest.mark.parametrize(
    ("taints", "tolerations", "after"),
    [
        pytest.param([EVICT], [], 0, id="no-toleration-deleted-at-once"),
        pytest.param([EVICT], [tol(seconds=30)], 30, id="toleration-seconds-30"),
        pytest.param([EVICT], [tol(seconds=0)], 0, id="toleration-seconds-0-at-once"),
        pytest.param(
            [EVICT, OTHER],
            [tol(seconds=60), tol("example.com/other", seconds=20)],
            20,
            id="shortest-of-the-matching-tolerations",
        ),
        pytest.param(
            [EVICT, OTHER], [tol(seconds=60)], 0, id="one-untolerated-taint-deletes-at-once"
        ),
        pytest.param(
            [EVICT],
            [tol(operator="Equal", value="yes")],
            None,
            id="toleration-without-seconds-keeps-the-pod",
        ),
        pytest.param(
            [EVICT],
            [{"operator": "Exists"}],
            None,
            id="tolerate-everything-keeps-the-pod",
        ),
    ],
)
async def test_pods_leave_a_no_execute_node_when_their_tolerations_run_out(
    taints: list[dict[str, Any]], tolerations: list[dict[str, Any]], after: float | None
) -> None:
    async with _cluster() as c:
        await c.node("n1", lease=False)
        await c.pod("p", "n1", tolerations=tolerations)
        # The tainted node's event must find the pod in the controller's index.
        assert c.eviction is not None
        await eventually(lambda: c.eviction.pods_by_node.pods_on("n1"))  # type: ignore[union-attr]
        t0 = c.clock.now()
        await c.set_taints("n1", taints)
        if after is None:
            await c.clock.sleep(60)
            pod = await c.get_pod("p")
            assert pod is not None and not pod.metadata.deletion_timestamp
            assert len(c.eviction.queue) == 0
            return
        pod = await c.wait_pod_deleting("p")
        elapsed = c.deleted_at(pod) - t0
        assert after - 1 <= elapsed <= after + LATE, elapsed
        target = next(x for x in pod.status.conditions if x.type == "DisruptionTarget")
        assert (target.status, target.reason, target.message) == (
            "True",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
        )
        # The pod keeps its own grace period (upstream deletes with default options).
        assert pod.metadata.deletion_grace_period_seconds == 30
        assert ("TaintManagerEviction", "Marking for deletion Pod default/p") in await c.events("p")


async def test_a_tolerated_pod_is_not_deleted_before_its_toleration_seconds() -> None:
    async with _cluster() as c:
        await c.node("n1", lease=False)
        await c.pod("p", "n1", tolerations=[tol(seconds=30)])
        await eventually(lambda: c.eviction.pods_by_node.pods_on("n1"))  # type: ignore[union-attr]
        await c.set_taints("n1", [EVICT])
        await c.clock.sleep(25)
        pod = await c.get_pod("p")
        assert pod is not None and not pod.metadata.deletion_timestamp
        await c.wait_pod_deleting("p")


async def test_removing_the_taint_before_expiry_cancels_the_deletion() -> None:
    async with _cluster() as c:
        await c.node("n1", lease=False)
        await c.pod("p", "n1", tolerations=[tol(seconds=30)])
        await eventually(lambda: c.eviction.pods_by_node.pods_on("n1"))  # type: ignore[union-attr]
        await c.set_taints("n1", [EVICT])
        await eventually(lambda: len(c.eviction.queue) == 1)  # type: ignore[union-attr]
        await c.clock.sleep(10)
        await c.set_taints("n1", [])
        await eventually(lambda: len(c.eviction.queue) == 0)  # type: ignore[union-attr]
        await c.clock.sleep(40)
        pod = await c.get_pod("p")
        assert pod is not None and not pod.metadata.deletion_timestamp
        cancelled = ("TaintManagerEviction", "Cancelling deletion of Pod default/p")
        for _ in range(200):
            if cancelled in await c.events("p"):
                break
            await asyncio.sleep(0.01)
        assert cancelled in await c.events("p")


async def test_a_pod_bound_to_an_already_tainted_node_is_deleted() -> None:
    async with _cluster() as c:
        await c.node("n1", lease=False, taints=[EVICT])
        await eventually(lambda: "n1" in c.eviction.tainted)  # type: ignore[union-attr]
        await c.pod("late", "n1")
        await c.wait_pod_deleting("late")


async def test_deleting_the_pod_cancels_its_pending_deletion() -> None:
    async with _cluster() as c:
        await c.node("n1", lease=False)
        pod = await c.pod("p", "n1", tolerations=[tol(seconds=300)])
        await eventually(lambda: c.eviction.pods_by_node.pods_on("n1"))  # type: ignore[union-attr]
        await c.set_taints("n1", [EVICT])
        await eventually(lambda: len(c.eviction.queue) == 1)  # type: ignore[union-attr]
        await c.client.delete(
            BY_KIND["Pod"], "p", "default", grace_period_seconds=0, uid=pod.metadata.uid
        )
        await eventually(lambda: len(c.eviction.queue) == 0)  # type: ignore[union-attr]


async def test_count_from_time_added_counts_from_the_taints_time_added() -> None:
    cfg = TaintEvictionConfig(count_from_time_added=True)
    async with _cluster(eviction=cfg) as c:
        await c.node("n1", lease=False)
        await c.pod("p", "n1", tolerations=[tol(seconds=30)])
        await eventually(lambda: c.eviction.pods_by_node.pods_on("n1"))  # type: ignore[union-attr]
        added = c.clock.now() - 20
        await c.set_taints("n1", [{**EVICT, "timeAdded": rfc3339(added)}])
        pod = await c.wait_pod_deleting("p")
        elapsed = c.deleted_at(pod) - added
        assert 30 - 1 <= elapsed <= 30 + LATE, elapsed


async def test_run_returns_promptly_when_stopped() -> None:
    async with _cluster() as c:
        await c.node("n1", lease=False)
        await c.pod("p", "n1", tolerations=[tol(seconds=3000)])
        await eventually(lambda: c.eviction.pods_by_node.pods_on("n1"))  # type: ignore[union-attr]
        await c.set_taints("n1", [EVICT])
        await eventually(lambda: len(c.eviction.queue) == 1)  # type: ignore[union-attr]
    # lifecycle_cluster asserts run() returned within its stop timeout.


# ------------------------------------------------------------------ the rules alone


def _taint(key: str, effect: str = "NoExecute", value: str = "") -> core_pb2.Taint:
    return core_pb2.Taint(key=key, value=value, effect=effect)


def _tol(key: str = "", seconds: int | None = None, **kw: Any) -> core_pb2.Toleration:
    t = core_pb2.Toleration(key=key, operator=kw.pop("operator", "Exists"), **kw)
    if seconds is not None:
        t.toleration_seconds = seconds
    return t


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], 0.0),
        ([_tol("a")], -1.0),
        ([_tol("a", 30), _tol("b", 10)], 10.0),
        ([_tol("a", 30), _tol("b")], 30.0),
        ([_tol("a", 30), _tol("b", -5)], 0.0),
    ],
    ids=["none-means-now", "forever", "shortest", "forever-ignored", "non-positive-means-now"],
)
def test_min_toleration_seconds_follows_upstream(
    tolerations: list[core_pb2.Toleration], expected: float
) -> None:
    assert min_toleration_seconds(tolerations) == expected


def test_matching_tolerations_takes_the_first_match_per_taint_or_none() -> None:
    first, second = _tol("a", 10), _tol("a", 99)
    taints = [_taint("a"), _taint("b")]
    assert matching_tolerations(taints, [first, second]) is None
    assert matching_tolerations(taints, [first, second, _tol("b")]) == [first, _tol("b")]
    assert matching_tolerations([_taint("a", value="x")], [_tol("a", operator="Equal")]) is None
    # The effect must match: a NoSchedule toleration does not keep a pod off NoExecute.
    assert matching_tolerations([_taint("a")], [_tol("a", effect="NoSchedule")]) is None


def test_eviction_queue_fires_in_time_order_and_forgets_cancelled_work() -> None:
    q = EvictionQueue()
    assert q.add("ns/late", 0, 30) and q.add("ns/soon", 0, 10) and q.add("ns/gone", 0, 5)
    assert not q.add("ns/soon", 0, 1), "a pending key is not scheduled twice"
    assert q.cancel("ns/gone") and not q.cancel("ns/gone")
    assert q.next_fire_at() == 10
    assert q.pop_due(9.9) == []
    assert q.pop_due(30) == ["ns/soon", "ns/late"]
    assert q.is_running("ns/soon") and not q.add("ns/soon", 0, 0), "running work is not redone"
    assert not q.cancel("ns/soon"), "running work cannot be cancelled"
    q.done("ns/soon")
    assert q.add("ns/soon", 40, 40) and len(q) == 1


def test_disruption_target_is_added_once() -> None:
    pod = core_pb2.Pod()
    clock = FakeClock()
    assert set_disruption_target(pod, clock.now())
    assert not set_disruption_target(pod, clock.now() + 5)
    [c] = pod.status.conditions
    assert (c.type, c.status, c.reason) == ("DisruptionTarget", "True", "DeletionByTaintManager")


def test_config_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="deletion_workers"):
        TaintEvictionConfig(deletion_workers=0)
    with pytest.raises(ValueError, match="retry_delay"):
        TaintEvictionConfig(retry_delay=-1)
