"""The queue's index of waiting pods by the keys a narrowing registration declares
(ClusterEventWithHint.affected / pod_keys): an event looks only at the pods filed under the
keys it names, and the outcome is the same as the full scan of every waiting pod."""

from __future__ import annotations

import random
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from services.scheduler.plugins.dynamicresources import Args, DynamicResources
from services.scheduler.plugins.dynamicresources.hints import (
    claim_event_keys,
    pod_claim_keys,
)
from services.scheduler.queue.scheduling_queue import SchedulingQueue
from tests.builders import MakePod
from tests.scheduler.plugins.dynamicresources._fakes import FakeClaimsAPI
from tests.scheduler.plugins.dynamicresources.test_hints import _claim_hint_cases
from tests.scheduler.queue.test_queue import fail, priority_less

PLUGIN = "Claims"
CLAIM_EVENT = ClusterEvent("Claim", ActionType.ADD | ActionType.UPDATE, "ClaimChange")
CLAIM_ADD = ClusterEvent("Claim", ActionType.ADD, "ClaimAdd")
CLAIM_UPDATE = ClusterEvent("Claim", ActionType.UPDATE, "ClaimUpdate")
CLAIMS = [f"c{i}" for i in range(6)]


def claim_of(pod: core_pb2.Pod) -> str:
    return pod.metadata.labels.get("claim", "")


class Counting:
    """A claim plugin: a pod waits (gated) until labelled with a claim that exists; a claim
    event may help exactly the pods naming it, and a "free" event (new is None) any pod."""

    name = PLUGIN

    def __init__(self) -> None:
        self.existing: set[str] = set()
        self.asked: list[str] = []

    def pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        if claim_of(pod) and claim_of(pod) not in self.existing:
            return Status.unresolvable("claim not made", plugin=PLUGIN)
        return Status.success()

    def hint(self, pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
        self.asked.append(pod.metadata.name)
        if new is None or new == claim_of(pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def affected(old: Any, new: Any) -> list[str] | None:
    return None if new is None else [new]


def pod_keys(pod: core_pb2.Pod) -> list[str]:
    return [claim_of(pod)] if claim_of(pod) else []


def make_queue(clock: FakeClock, plugin: Counting, *, narrow: bool) -> SchedulingQueue:
    reg = (
        ClusterEventWithHint(CLAIM_EVENT, plugin.hint, affected=affected, pod_keys=pod_keys)
        if narrow
        else ClusterEventWithHint(CLAIM_EVENT, plugin.hint)
    )
    return SchedulingQueue(
        less=priority_less,
        clock=clock,
        pre_enqueue={"default-scheduler": [plugin]},
        hints={PLUGIN: [reg], "Fit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD))]},
    )


def pod(name: str, claim: str = "", version: int = 0) -> core_pb2.Pod:
    p = MakePod().name(name).namespace("ns").uid(f"uid-{name}").scheduler_name("default-scheduler")
    p.labels({"claim": claim, "v": str(version)} if claim else {"v": str(version)})
    return p.obj()


def places(q: SchedulingQueue) -> dict[str, str]:
    return {p.metadata.name: queue for queue, ps in q.pending_pods().items() for p in ps}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.mark.asyncio
async def test_claim_event_asks_and_moves_exactly_the_pods_naming_the_claim(
    clock: FakeClock,
) -> None:
    plugin = Counting()
    plugin.existing = set(CLAIMS)
    q = make_queue(clock, plugin, narrow=True)
    for i in range(12):
        q.add(pod(f"p{i}", CLAIMS[i % 3]))
    for _ in range(12):
        await fail(q, PLUGIN)
    clock.advance(60)  # past every backoff
    assert set(places(q).values()) == {"unschedulable"}

    q.move_all_to_active_or_backoff(CLAIM_UPDATE, "c1", "c1")
    assert sorted(plugin.asked) == ["p1", "p10", "p4", "p7"]
    assert {n for n, where in places(q).items() if where == "active"} == {"p1", "p4", "p7", "p10"}

    plugin.asked.clear()
    q.move_all_to_active_or_backoff(CLAIM_UPDATE, "c5", "c5")  # named by no pod
    assert plugin.asked == []

    plugin.asked.clear()
    q.move_all_to_active_or_backoff(CLAIM_UPDATE, "c2", None)  # "any pod": the full scan
    assert len(plugin.asked) == 8


@pytest.mark.asyncio
async def test_gated_pod_is_refiled_when_its_object_names_another_claim(clock: FakeClock) -> None:
    plugin = Counting()
    q = make_queue(clock, plugin, narrow=True)
    q.add(pod("p", "c0"))
    assert places(q) == {"p": "gated"}
    q.update(pod("p", "c0"), pod("p", "c1", 1))  # still gated, now waiting for c1
    plugin.existing = {"c0", "c1"}
    q.move_all_to_active_or_backoff(CLAIM_ADD, None, "c0")
    assert places(q) == {"p": "gated"} and plugin.asked == []
    q.move_all_to_active_or_backoff(CLAIM_ADD, None, "c1")
    assert places(q) == {"p": "active"}
    assert q._index == {} and q._filed == {}  # nothing filed once no pod waits


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", range(8))
async def test_index_gives_the_full_scans_result_on_random_sequences(seed: int) -> None:
    rnd = random.Random(seed)
    clocks = [FakeClock(1000.0), FakeClock(1000.0)]
    plugins = [Counting(), Counting()]
    queues = [
        make_queue(clocks[0], plugins[0], narrow=True),
        make_queue(clocks[1], plugins[1], narrow=False),
    ]
    names = [f"p{i}" for i in range(15)]
    versions = dict.fromkeys(names, 0)
    current: dict[str, core_pb2.Pod] = {}
    for _step in range(300):
        op = rnd.choice(["add", "update", "delete", "fail", "claim", "free", "node", "tick"])
        name = rnd.choice(names)
        claim = rnd.choice(["", *CLAIMS])
        rejector = rnd.choice([PLUGIN, "Fit"])
        if op == "claim" and rnd.random() < 0.5:
            for p in plugins:
                p.existing.add(claim or "c0")
        for q, clock in zip(queues, clocks, strict=True):
            clock.advance(0.001)  # distinct timestamps: activeQ's order does not hang on ties
            if op == "add" and name not in current:
                q.add(pod(name, claim, versions[name]))
            elif op == "update" and name in current:
                q.update(current[name], pod(name, claim, versions[name] + 1))
            elif op == "delete" and name in current:
                q.delete(current[name])
            elif op == "fail" and q.pending_pods()["active"]:
                await fail(q, rejector)
            elif op == "claim":
                q.move_all_to_active_or_backoff(CLAIM_UPDATE, claim or "c0", claim or "c0")
            elif op == "free":
                q.move_all_to_active_or_backoff(CLAIM_UPDATE, claim, None)
            elif op == "node":
                q.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.ADD), None, 1)
            elif op == "tick":
                clock.advance(3)
                q.flush_backoff_completed()
        if op == "add" and name not in current:
            current[name] = pod(name, claim, versions[name])
        elif op == "update" and name in current:
            versions[name] += 1
            current[name] = pod(name, claim, versions[name])
        elif op == "delete" and name in current:
            del current[name]
        assert places(queues[0]) == places(queues[1]), (seed, _step, op)
    # The sequences reached every kind of waiting pod, and the narrowed queue asked fewer.
    assert len(plugins[0].asked) < len(plugins[1].asked)


@pytest.mark.parametrize("name", list(_claim_hint_cases()))
def test_dra_claim_keys_keep_the_hints_promise(name: str) -> None:
    """upstream TestIsSchedulableAfterClaimChange's cases: whenever the pod is not filed under
    a key the claim event names, the hint says SKIP (so the queue may leave it out)."""
    pod_obj, claims, old, new, _want = _claim_hint_cases()[name]
    plugin = DynamicResources(Args(), claims=FakeClaimsAPI(claims).store, slices={}, classes={})
    keys = claim_event_keys(old, new)
    if keys is not None and not set(keys) & set(pod_claim_keys(pod_obj)):
        assert plugin.is_schedulable_after_claim_change(pod_obj, old, new) == QueueingHint.SKIP


def test_dra_registers_the_claim_event_narrowed() -> None:
    plugin = DynamicResources(Args(), claims={}, slices={}, classes={})
    (reg, deleted) = [e for e in plugin.events_to_register() if e.event.resource == "ResourceClaim"]
    assert reg.affected is claim_event_keys and reg.pod_keys is pod_claim_keys
    # draext: a delete concerns only the pod owning a deleted extended resource claim.
    assert deleted.event.action == ActionType.DELETE
    assert deleted.affected is not None and deleted.pod_keys is not None
