"""Review findings 4, 5 and 7 of issue 16 on DynamicResources: the device reference counts
kept by the claim informer's handlers answer what a walk over every claim answers; PreBind
refuses a claim whose allocation changed after PreFilter; a reservation Unreserve is
removing in the background is written again by a quick retry's PreBind. And issue 29: in
shared-state mode PreBind's allocation asks the apiserver to check the devices' records,
whose refusal fails the attempt at once."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.dra.allocator import DeviceID
from services.api.machinery.errors import AllocationConflictError
from services.client import Handlers
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.dynamicresources import Args, DynamicResources
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker
from tests.builders import gpu, resource_slice
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
    POD_UID,
    UNRESOLVABLE,
    WORKER,
    WORKER_NODE,
    Case,
    Want,
    allocated,
    build,
    claim,
    pod_with_claim_name,
    worker_slice,
)


class FakeInformer:
    """An Informer's surface the tracker uses: `store`, `add_handlers`, and the handler
    calls an add, update or delete makes."""

    def __init__(self) -> None:
        self.store: dict[str, resource_pb2.ResourceClaim] = {}
        self.handlers: list[Handlers] = []

    def add_handlers(self, h: Handlers) -> None:
        self.handlers.append(h)

    def put(self, c: resource_pb2.ResourceClaim) -> None:
        key = f"{c.metadata.namespace}/{c.metadata.name}"
        prev = self.store.get(key)
        self.store[key] = c
        for h in self.handlers:
            if prev is None and h.on_add is not None:
                h.on_add(c)
            elif prev is not None and h.on_update is not None:
                h.on_update(prev, c)

    def delete(self, key: str) -> None:
        prev = self.store.pop(key)
        for h in self.handlers:
            if h.on_delete is not None:
                h.on_delete(prev)


def _claim(i: int, rv: int, devices: list[int], *, admin: bool = False, gen: int = 0) -> Any:
    c = resource_pb2.ResourceClaim()
    c.metadata.namespace, c.metadata.name = NS, f"c{i}"
    c.metadata.uid = f"uid-c{i}" + (f"-{gen}" if gen else "")
    c.metadata.resource_version = str(rv)
    for d in devices:
        c.status.allocation.devices.results.add(
            request="r", driver="gpu", pool="n", device=f"d{d}", admin_access=admin
        )
    return c


@pytest.mark.parametrize("seed", [16, 17, 18, 19])
def test_device_counts_answer_what_a_walk_over_every_claim_answers(seed: int) -> None:
    """Random adds, updates, deletes (a claim made again under its name gets a new uid),
    pending and assumed allocations, and informer catch-ups over 12 claims and 6 devices
    (two claims may name one device, as after a forced write): after every step the
    counting tracker, its corrections recomputed from scratch, and the walking one agree."""
    rng = random.Random(seed)
    informer = FakeInformer()
    counting = ClaimTracker(informer)
    walking = ClaimTracker(informer.store)  # a plain mapping: the walk
    gens = [0] * 12
    rv = 1
    for _ in range(3000):
        rv += 1
        i = rng.randrange(12)
        key = f"{NS}/c{i}"
        op = rng.randrange(6)
        devices = rng.sample(range(6), rng.randrange(3))
        # an in-flight call may name the claim's current uid or (rarely) an older one
        gen = gens[i] if rng.random() < 0.9 else max(0, gens[i] - 1)
        uid = _claim(i, rv, [], gen=gen).metadata.uid
        if op == 0 and key in informer.store:
            gone = informer.store[key]
            informer.delete(key)
            walking.observed(gone, deleted=True)
            gens[i] += 1
        elif op == 1:
            c = _claim(i, rv, devices, admin=rng.random() < 0.2, gen=gens[i])
            informer.put(c)
            walking.observed(c)
        elif op == 2 and key in informer.store and not informer.store[key].status.allocation:
            for t in (counting, walking):
                t.signal_pending(_claim(i, rv, devices, gen=gens[i]))
        elif op == 3:
            for t in (counting, walking):
                t.remove_pending(uid)
        elif op == 4:
            for t in (counting, walking):
                t.assume(_claim(i, rv, devices, gen=gen))
        elif op == 5:
            for t in (counting, walking):
                t.restore(uid)
        expected = walking.allocated_devices()
        assert counting.allocated_devices() == expected, f"step with op {op}"
        assert counting._allocated_recomputed() == expected, f"step with op {op}"


def test_device_counts_start_from_the_informers_store_and_follow_deletes() -> None:
    informer = FakeInformer()
    informer.store[f"{NS}/c1"] = _claim(1, 5, [1, 2])
    tracker = ClaimTracker(informer)
    assert tracker.allocated_devices() == {DeviceID("gpu", "n", "d1"), DeviceID("gpu", "n", "d2")}
    informer.put(_claim(1, 6, [2]))
    assert tracker.allocated_devices() == {DeviceID("gpu", "n", "d2")}
    informer.delete(f"{NS}/c1")
    assert tracker.allocated_devices() == set()


def _reallocated_elsewhere(c: Any) -> None:
    c.status.allocation.node_selector.node_selector_terms[0].match_fields[0].values[:] = ["w2"]
    c.status.allocation.devices.results[0].pool = "w2"


def _deallocated(c: Any) -> None:
    c.status.ClearField("allocation")


@pytest.mark.parametrize(
    "change", [_reallocated_elsewhere, _deallocated], ids=["allocated-on-w2", "deallocated"]
)
async def test_prebind_refuses_a_claim_whose_allocation_changed_after_prefilter(
    change: Any,
) -> None:
    plugin, api = build(Case(pod_with_claim_name(), [allocated(claim())], Want()))
    pod, node, state = pod_with_claim_name(), NodeInfo(WORKER_NODE), CycleState()
    plugin.pre_filter(state, PodInfo(pod), [node])
    assert plugin.filter(state, PodInfo(pod), node).is_success()
    assert plugin.reserve(state, PodInfo(pod), WORKER).is_success()
    # Meanwhile the controller deallocated the claim (and another pod allocated it anew).
    key = f"{NS}/{CLAIM}"
    changed = resource_pb2.ResourceClaim()
    changed.CopyFrom(api.objects[key])
    change(changed)
    api.objects[key] = changed
    api.touch(key)
    st = await plugin.pre_bind(state, PodInfo(pod), WORKER)
    assert st.code == Code.ERROR and "allocated differently" in st.message
    assert all(r.uid != POD_UID for r in api.objects[key].status.reserved_for)


async def test_a_quick_retry_after_unreserve_writes_the_reservation_again() -> None:
    plugin, api = build(Case(pod_with_claim_name(), [allocated(claim(), reserved=1)], Want()))
    pod, node = pod_with_claim_name(), NodeInfo(WORKER_NODE)
    key = f"{NS}/{CLAIM}"

    async def attempt() -> CycleState:
        state = CycleState()
        plugin.pre_filter(state, PodInfo(pod), [node])
        assert plugin.filter(state, PodInfo(pod), node).is_success()
        assert plugin.reserve(state, PodInfo(pod), WORKER).is_success()
        assert (await plugin.pre_bind(state, PodInfo(pod), WORKER)).is_success()
        return state

    first = await attempt()
    plugin.unreserve(first, PodInfo(pod), WORKER)  # the removal is only spawned
    # The retry comes before the background write: the claim must not look reserved.
    seen = plugin.tracker.claim(NS, CLAIM)
    assert seen is not None and all(r.uid != POD_UID for r in seen.status.reserved_for)
    await attempt()
    await asyncio.wait_for(plugin.drain(), 5)
    assert [r.uid for r in api.objects[key].status.reserved_for] == ["other-uid-0", POD_UID]
    assert not plugin.tracker.is_unreserving(f"uid-{CLAIM}", POD_UID)


async def test_a_removal_the_informer_showed_stops_hiding_the_reservation() -> None:
    plugin, api = build(Case(pod_with_claim_name(), [allocated(claim(), reserved=1)], Want()))
    pod, node, state = pod_with_claim_name(), NodeInfo(WORKER_NODE), CycleState()
    plugin.pre_filter(state, PodInfo(pod), [node])
    plugin.filter(state, PodInfo(pod), node)
    plugin.reserve(state, PodInfo(pod), WORKER)
    assert (await plugin.pre_bind(state, PodInfo(pod), WORKER)).is_success()
    plugin.unreserve(state, PodInfo(pod), WORKER)
    assert plugin.tracker.is_unreserving(f"uid-{CLAIM}", POD_UID)
    await asyncio.wait_for(plugin.drain(), 5)
    plugin.tracker.observed(api.objects[f"{NS}/{CLAIM}"])
    assert not plugin.tracker.is_unreserving(f"uid-{CLAIM}", POD_UID)


def _named(name: str, ns: str = NS) -> Any:
    c = claim(name)
    c.metadata.namespace = ns
    return c


@pytest.mark.parametrize(
    ("new", "pod_in_status", "want"),
    [
        (_named(CLAIM, "elsewhere"), True, "SKIP"),  # another namespace
        (_named("someone-elses"), True, "SKIP"),  # not named by the pod
        (_named(CLAIM), False, "SKIP"),  # the pod's claim is not made yet
        (_named(CLAIM), True, "LOOKUP"),  # its own claim: the full check runs
    ],
    ids=["other-namespace", "other-name", "claim-not-made", "own-claim"],
)
def test_claim_event_hint_skips_unrelated_claims_without_looking_them_up(
    new: Any, pod_in_status: bool, want: str
) -> None:
    """Every claim event asks the hint of every gated and unschedulable pod (the profile of
    the 5,000-pod run: 60% of the scheduler's time): unrelated claims are answered from the
    pod and the event alone."""
    from tests.scheduler.plugins.dynamicresources.test_dynamicresources import (
        pod_with_template,
    )

    plugin, _ = build(Case(pod_with_claim_name(), [claim()], Want()))

    class Lookup(Exception):
        pass

    def refuse(*_: Any) -> Any:
        raise Lookup

    plugin.tracker.claim = refuse  # type: ignore[method-assign]
    pod = pod_with_template(in_status=pod_in_status)
    if want == "LOOKUP":
        with pytest.raises(Lookup):
            plugin.is_schedulable_after_claim_change(pod, None, new)
    else:
        assert plugin.is_schedulable_after_claim_change(pod, None, new).name == want


def test_an_invalid_pool_fails_the_node_not_the_attempt() -> None:
    """dracore: a pool holding a device name twice, and nothing else to allocate from:
    upstream's allocator answers ErrFailedAllocationOnNode, which Filter reports as this
    node unschedulable with the error's text (other nodes may still do), not an error."""

    def half(name: str) -> resource_pb2.ResourceSlice:
        s = resource_slice(
            f"worker-{name}", driver=DRIVER, node=WORKER, devices=[gpu("instance-1", index=1)]
        )
        s.spec.pool.resource_slice_count = 2
        return s

    api = FakeClaimsAPI([claim()])
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={n: half(n) for n in ("a", "b")},
        classes={c.metadata.name: c for c in CLASSES},
        client=api,
        handle=FakeHandle(),
    )
    state, node = CycleState(), NodeInfo(WORKER_NODE)
    pod = PodInfo(pod_with_claim_name())
    plugin.pre_filter(state, pod, [node])
    st = plugin.filter(state, pod, node)
    assert (st.code, st.message) == (UNRESOLVABLE, "invalid resource pools were encountered")


# -- issue 29: shared-state PreBind checks the devices' allocation records ---------------


class _SharedStateHandle(FakeHandle):
    shared_state = True


@pytest.mark.parametrize("shared", [True, False])
async def test_prebind_asks_for_the_device_check_only_in_shared_state_mode(shared: bool) -> None:
    api = FakeClaimsAPI([claim()])
    handle = _SharedStateHandle() if shared else FakeHandle()
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={s.metadata.name: s for s in [worker_slice()]},
        classes={c.metadata.name: c for c in CLASSES},
        client=api,
        handle=handle,
        allocator_factory=FakeAllocator,
    )
    asked: list[bool] = []
    real = api.update_status

    async def update_status(obj: Any, *, check_allocation: bool = False) -> Any:
        asked.append(check_allocation)
        if check_allocation:
            raise AllocationConflictError("another scheduler allocated it first")
        return await real(obj)

    api.update_status = update_status  # type: ignore[method-assign]
    pod, node, state = pod_with_claim_name(), NodeInfo(WORKER_NODE), CycleState()
    plugin.pre_filter(state, PodInfo(pod), [node])
    assert plugin.filter(state, PodInfo(pod), node).is_success()
    plugin.reserve(state, PodInfo(pod), WORKER)
    st = await plugin.pre_bind(state, PodInfo(pod), WORKER)
    if not shared:
        assert st.is_success() and asked == [False]
        return
    # refused once, not retried like a resourceVersion conflict; the attempt fails with
    # the error the scheduling loop counts as a shared-state conflict
    assert asked == [True]
    assert st.code == Code.ERROR and isinstance(st.error, AllocationConflictError)
    assert not api.objects[f"{NS}/{CLAIM}"].status.HasField("allocation")
