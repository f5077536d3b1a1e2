"""DynamicResources and device binding conditions: upstream dynamicresources_test.go
TestPlugin's binding-condition cases (names are upstream's), run through the same steps
as test_dynamicresources, and PreBind's wait while a driver reports."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.features import DRA_DEVICE_BINDING_CONDITIONS
from services.clock import FakeClock, rfc3339
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.dynamicresources import Args, DynamicResources
from tests.scheduler.plugins.dynamicresources._fakes import (
    FakeAllocator,
    FakeClaimsAPI,
    FakeHandle,
)
from tests.scheduler.plugins.dynamicresources.test_dynamicresources import (
    CLAIM,
    CLASSES,
    DRIVER,
    NS,
    POD,
    POD_UID,
    WORKER,
    WORKER_NODE,
    Case,
    Want,
    allocated,
    claim,
    pod_with_claim_name,
    reserved_for_pod,
    run_steps,
)

UNRESOLVABLE, UNSCHEDULABLE, ERROR = (
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    Code.UNSCHEDULABLE,
    Code.ERROR,
)
CLOCK_START = 1_800_000_000.0
NOT_AVAILABLE = (UNRESOLVABLE, "resourceclaim not available on the node")
DEALLOCATED = (UNSCHEDULABLE, "deallocation of ResourceClaim completed")


def with_binding_conditions(
    conditions: dict[str, str] | None, *, allocated_at: float | None = None
) -> Any:
    """upstream allocationResultWithBindingConditions (condition "condition", failure
    "failed") with status.devices holding `conditions` (None: no entry)."""
    c = allocated(claim())
    res = c.status.allocation.devices.results[0]
    res.binding_conditions.append("condition")
    res.binding_failure_conditions.append("failed")
    if allocated_at is not None:
        c.status.allocation.allocation_timestamp = rfc3339(allocated_at)
    if conditions is not None:
        st = c.status.devices.add(driver=DRIVER, pool=WORKER, device="instance-1")
        for type_, status in conditions.items():
            st.conditions.add(type=type_, status=status)
    return c


def deallocated(c: Any) -> Any:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    for f in ("allocation", "reserved_for", "devices"):
        out.status.ClearField(f)
    return out


BOUND = {"condition": "True", "failed": "False"}
FAILED = {"condition": "False", "failed": "True"}
TEN_MINUTES_AGO = CLOCK_START - 600

CASES: dict[str, Case] = {
    "bound-claim-with-succeeded-binding-conditions": Case(
        pod_with_claim_name(), [with_binding_conditions(BOUND)], Want(claim=reserved_for_pod)
    ),
    "bound-claim-with-failed-binding": Case(
        pod_with_claim_name(),
        [with_binding_conditions(FAILED)],
        Want(filter=NOT_AVAILABLE, postfilter=DEALLOCATED, claim=deallocated),
    ),
    "bound-claim-with-timed-out-binding": Case(
        pod_with_claim_name(),
        [with_binding_conditions({}, allocated_at=TEN_MINUTES_AGO - 1)],
        Want(filter=NOT_AVAILABLE, postfilter=DEALLOCATED, claim=deallocated),
        clock=FakeClock(CLOCK_START),
    ),
    "bound-claim-with-mixed-binding-conditions": Case(
        pod_with_claim_name(),
        [
            with_binding_conditions(
                {"condition1": "True", "condition2": "False"}, allocated_at=TEN_MINUTES_AGO - 1
            )
        ],
        Want(filter=NOT_AVAILABLE, postfilter=DEALLOCATED, claim=deallocated),
        clock=FakeClock(CLOCK_START),
    ),
    # Allocated 10 s before the 600 s bindingTimeout ends: Filter still takes the claim,
    # PreBind reserves it and waits; the claim times out while it polls. The reservation
    # is undone by Unreserve, so the claim ends as it started.
    "prebind-fail-with-binding-timeout": Case(
        pod_with_claim_name(),
        [with_binding_conditions({}, allocated_at=TEN_MINUTES_AGO + 10)],
        Want(prebind=(ERROR, f"claim {CLAIM} binding timeout")),
        clock=FakeClock(CLOCK_START),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_binding_condition_cases(name: str) -> None:
    await run_steps(CASES[name])


# ------------------------------------------------------------------ PreBind's wait


def _plugin(
    c: Any, clock: Any, timeout: float = 600.0, gates: dict[str, bool] | None = None
) -> tuple[DynamicResources, FakeClaimsAPI]:
    api = FakeClaimsAPI([c])
    plugin = DynamicResources(
        Args(binding_timeout=timeout),
        claims=api.store,
        slices={},
        classes={x.metadata.name: x for x in CLASSES},
        client=api,
        handle=FakeHandle(clock=clock),
        allocator_factory=FakeAllocator,
        gates=gates,
    )
    return plugin, api


class SteppedClock(FakeClock):
    """A FakeClock whose sleep yields to the event loop for real, so a test can act
    between PreBind's polls; counts the polls."""

    def __init__(self) -> None:
        super().__init__(CLOCK_START)
        self.sleeps = 0
        self.polled = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.advance(seconds)
        self.polled.set()
        await asyncio.sleep(0.01)


def _report(api: FakeClaimsAPI, conditions: dict[str, str]) -> None:
    """The driver writes status.devices (as the informer then shows it)."""
    key = f"{NS}/{CLAIM}"
    c = resource_pb2.ResourceClaim()
    c.CopyFrom(api.objects[key])
    del c.status.devices[:]
    st = c.status.devices.add(driver=DRIVER, pool=WORKER, device="instance-1")
    for type_, status in conditions.items():
        st.conditions.add(type=type_, status=status)
    api.store[key] = api._put(c)


async def _start_prebind(plugin: DynamicResources) -> asyncio.Task[Any]:
    state, pi, node = CycleState(), PodInfo(pod_with_claim_name()), NodeInfo(WORKER_NODE)
    plugin.pre_filter(state, pi, [node])
    assert plugin.filter(state, pi, node).is_success()
    assert plugin.reserve(state, pi, WORKER).is_success()
    return asyncio.create_task(plugin.pre_bind(state, pi, WORKER))


@pytest.mark.parametrize(
    ("report", "want"),
    [
        (BOUND, (Code.SUCCESS, "")),
        (FAILED, (ERROR, f'claim {CLAIM} binding failed: reason=, message=""')),
    ],
)
async def test_prebind_waits_until_the_driver_reports(
    report: dict[str, str], want: tuple[Code, str]
) -> None:
    clock = SteppedClock()
    plugin, api = _plugin(with_binding_conditions({}, allocated_at=CLOCK_START), clock)
    task = await _start_prebind(plugin)
    await asyncio.wait_for(clock.polled.wait(), 5)
    assert not task.done()  # waiting: the condition is not True yet
    # The pod is already reserved on the claim while PreBind waits.
    assert [r.uid for r in api.objects[f"{NS}/{CLAIM}"].status.reserved_for] == [POD_UID]
    _report(api, report)
    st = await asyncio.wait_for(task, 5)
    assert (st.code, st.message) == want


async def test_prebind_gives_up_after_binding_timeout_of_waiting() -> None:
    # No allocationTimestamp: only the wait's own deadline ends it (upstream's
    # "device binding timeout"), after polls every 5 s.
    clock = SteppedClock()
    plugin, _ = _plugin(with_binding_conditions({}), clock, timeout=12.0)
    st = await asyncio.wait_for(await _start_prebind(plugin), 5)
    assert (st.code, st.message) == (ERROR, "device binding timeout")
    assert clock.sleeps == 3  # 5 + 5 + 2 seconds


async def test_without_the_gates_prebind_does_not_wait() -> None:
    plugin, _ = _plugin(
        with_binding_conditions({}), SteppedClock(), gates={DRA_DEVICE_BINDING_CONDITIONS: False}
    )
    st = await asyncio.wait_for(await _start_prebind(plugin), 5)
    assert st.is_success()
    assert POD  # the pod is bound without waiting


# ------------------------------------------------------------ with the real allocator


async def test_allocation_carries_the_conditions_and_prebind_writes_its_timestamp() -> None:
    from services.api.dra.allocator import Allocator
    from tests.builders import gpu, resource_slice

    device = gpu("instance-1") | {
        "bindsToNode": True,
        "bindingConditions": ["condition"],
        "bindingFailureConditions": ["failed"],
    }
    bound = resource_slice("bound", driver=DRIVER, node=WORKER, devices=[device])
    c = claim()
    api = FakeClaimsAPI([c])
    clock = SteppedClock()
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={"bound": bound},
        classes={x.metadata.name: x for x in CLASSES},
        client=api,
        handle=FakeHandle(clock=clock),
        allocator_factory=Allocator,
    )
    task = await _start_prebind(plugin)
    await asyncio.wait_for(clock.polled.wait(), 5)
    written = api.objects[f"{NS}/{CLAIM}"]
    alloc = written.status.allocation
    (res,) = alloc.devices.results
    assert (res.driver, res.device) == (DRIVER, "instance-1")
    assert (list(res.binding_conditions), list(res.binding_failure_conditions)) == (
        ["condition"],
        ["failed"],
    )
    assert alloc.allocation_timestamp == rfc3339(CLOCK_START)
    _report(api, BOUND)
    assert (await asyncio.wait_for(task, 5)).is_success()
