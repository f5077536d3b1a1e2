"""The API dispatcher's loop (upstream api_dispatcher_test.go TestAPIDispatcherLifecycle,
and kubera's guarantees): calls merged and synced before it runs are sent once; at most
`parallelism` calls run; one object's calls run one after the other; failures reach the
caller; close ends every held call; a binding queued in a term that ended is refused by
the apiserver (fenced), not landed."""

from __future__ import annotations

import asyncio

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import PreconditionError
from services.api.machinery.kinds import BY_KIND
from services.leaderelection.lock import StorageLock
from services.scheduler.dispatcher import (
    APIDispatcher,
    CallOverwritten,
    DispatcherClosed,
    PodBindingCall,
)
from services.scheduler.metrics import SchedulerMetrics
from services.storage.memory import MemoryStorage
from tests.builders import MakeNode, pod
from tests.harness import control_plane
from tests.scheduler.dispatcher.mock_call import HIGH, LOW, RELEVANCES, MockCall
from tests.waiting import eventually


def sample(metrics: SchedulerMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(f"scheduler_{name}", labels)


async def test_lifecycle_merge_and_sync_before_run_then_one_execution() -> None:
    metrics = SchedulerMetrics()
    d = APIDispatcher(None, parallelism=1, relevances=RELEVANCES, metrics=metrics.async_api_calls())
    first, second = MockCall("uid", LOW), MockCall("uid", LOW)
    f1, f2 = d.call(first), d.call(second)
    assert sample(metrics, "pending_async_api_calls", call_type=LOW) == 1
    assert second.merged == 1
    assert isinstance(await f1, CallOverwritten)
    d.sync_object(core_pb2.Pod(metadata={"uid": "uid"}))
    assert second.synced == 1
    d.start()
    try:
        assert await f2 is None
        assert (first.executed, second.executed) == (0, 1)
        assert second.noop_asked == 2  # once when added, once after the sync
        assert d.executed == {(LOW, "success"): 1}
        ok = {"call_type": LOW, "result": "success"}
        assert sample(metrics, "async_api_call_execution_total", **ok) == 1
        assert sample(metrics, "async_api_call_execution_duration_seconds_count", **ok) == 1
        assert sample(metrics, "pending_async_api_calls", call_type=LOW) == 0
    finally:
        await d.close()


async def test_at_most_parallelism_calls_run_at_once() -> None:
    gate = asyncio.Event()
    d = APIDispatcher(None, parallelism=2, relevances=RELEVANCES)
    calls = [MockCall(f"u{i}", gate=gate) for i in range(5)]
    futures = [d.call(c) for c in calls]
    d.start()
    try:
        await eventually(lambda: sum(c.executed for c in calls) == 2)
        for _ in range(5):
            await asyncio.sleep(0)
        assert sum(c.executed for c in calls) == 2 and d.pending == 3
        gate.set()
        assert await asyncio.gather(*futures) == [None] * 5
        assert all(c.executed == 1 for c in calls)
    finally:
        await d.close()


async def test_one_objects_calls_run_in_order_a_later_one_after_the_one_in_flight() -> None:
    gate, log = asyncio.Event(), []
    d = APIDispatcher(None, parallelism=4, relevances=RELEVANCES)
    d.start()
    try:
        low = d.call(MockCall("u1", LOW, name="patch", gate=gate, log=log))
        await eventually(lambda: log == ["start patch"])
        high = d.call(MockCall("u1", HIGH, name="bind", log=log))
        other = d.call(MockCall("u2", LOW, name="other", log=log))
        assert await other is None  # another object is not held up
        assert log == ["start patch", "start other", "end other"]
        gate.set()
        assert await low is None and await high is None
        assert log[2:] == ["end other", "end patch", "start bind", "end bind"]
    finally:
        await d.close()


async def test_a_failed_call_tells_its_caller_and_the_loop_goes_on() -> None:
    d = APIDispatcher(None, parallelism=1, relevances=RELEVANCES)
    d.start()
    try:
        failed = await d.call(MockCall("u1", fail=RuntimeError("apiserver said no")))
        assert isinstance(failed, RuntimeError)
        assert await d.call(MockCall("u2")) is None
        assert d.executed == {(LOW, "error"): 1, (LOW, "success"): 1}
    finally:
        await d.close()


async def test_close_ends_pending_and_in_flight_calls() -> None:
    gate = asyncio.Event()
    d = APIDispatcher(None, parallelism=1, relevances=RELEVANCES)
    running = MockCall("u1", gate=gate)
    f1, f2 = d.call(running), d.call(MockCall("u2"))
    d.start()
    await eventually(lambda: running.executed == 1)
    await d.close()
    assert isinstance(await f1, DispatcherClosed) and isinstance(await f2, DispatcherClosed)
    assert isinstance(await d.call(MockCall("u3")), DispatcherClosed)


def test_parallelism_must_be_positive() -> None:
    with pytest.raises(ValueError, match="parallelism"):
        APIDispatcher(None, parallelism=0)


@pytest.mark.parametrize("successor", [None, "b"], ids=["released", "taken-over"])
async def test_a_binding_queued_in_a_term_that_ended_is_refused_not_landed(
    successor: str | None,
) -> None:
    storage = MemoryStorage()
    async with control_plane(storage) as cp:
        size = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        await cp.api.create(MakeNode().typed().name("n1").allocatable(size).capacity(size).obj())
        created = await cp.client.create(pod("p"))
        lock = StorageLock(
            storage, "/kubera/leaderelection/kube-system/kube-scheduler", lease_duration=15
        )
        held, _ = await lock.create("a")
        assert held is not None
        d = APIDispatcher(cp.client)
        # Queued while "a" leads, with a's token; sent only after a's term ended.
        done = d.call(PodBindingCall(created, "n1", fencing=(held.key, held.create_revision)))
        await lock.release(held)
        if successor is not None:
            await lock.create(successor)
        d.start()
        try:
            err = await done
        finally:
            await d.close()
        assert isinstance(err, PreconditionError)
        got = await cp.client.get(BY_KIND["Pod"], "p", "default")
        assert got.spec.node_name == ""  # type: ignore[attr-defined]
