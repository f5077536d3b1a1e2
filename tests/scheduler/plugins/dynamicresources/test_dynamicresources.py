"""DynamicResources step by step over in-memory claims (upstream dynamicresources_test.go
TestPlugin: its cases by name, the steps PreEnqueue → PreFilter → Filter per node →
PostFilter or Reserve → PreBind, with the status each step must return and the claim the
API must end with)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.allocator import DeviceID
from services.api.machinery.errors import ConflictError
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins.dynamicresources import (
    ERR_CANNOT_ALLOCATE,
    FINALIZER,
    Args,
    DynamicResources,
)
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker
from tests.builders import (
    POD_GROUP_LABEL,
    MakeNode,
    MakePod,
    device_class,
    exact_request,
    gpu,
    resource_claim,
    resource_slice,
)
from tests.scheduler.plugins.dynamicresources._fakes import (
    BROKEN,
    FakeAllocator,
    FakeClaimsAPI,
    FakeHandle,
)

POD, POD_UID, NS = "my-pod", "1234", "default"
CLAIM, CLAIM2 = "my-pod-my-resource", "my-pod-my-resource-2"
CLASS = "my-resource-class"
DRIVER = "some-driver"
WORKER = "worker"


def pod_with_claim_name(uid: str = POD_UID, *claims: str) -> core_pb2.Pod:
    p = MakePod().name(POD).namespace(NS).uid(uid)
    for i, c in enumerate(claims or (CLAIM,)):
        p = p.resource_claim(f"my-resource{'-2' if i else ''}", claim=c)
    return p.obj()


def pod_with_template(in_status: bool = True) -> core_pb2.Pod:
    p = MakePod().name(POD).namespace(NS).uid(POD_UID).resource_claim("my-resource", template=CLAIM)
    if in_status:
        p = p.claim_status("my-resource", CLAIM)
    return p.obj()


def claim(name: str = CLAIM, *, owner: str | None = None, count: int = 0) -> Any:
    c = resource_claim(name, NS, exact_request("req-1", CLASS, count=count))
    c.metadata.uid = f"uid-{name}"
    if owner is not None:
        c.metadata.owner_references.add(
            api_version="v1", kind="Pod", name=POD, uid=owner, controller=True
        )
    return c


def allocated(c: Any, *, node: str | None = WORKER, label: bool = False, reserved: int = 0) -> Any:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    out.metadata.finalizers.append(FINALIZER)
    out.status.allocation.devices.results.add(
        request="req-1", driver=DRIVER, pool=WORKER, device="instance-1"
    )
    if node is not None:
        term = out.status.allocation.node_selector.node_selector_terms.add()
        if label:
            term.match_expressions.add(key="nodename", operator="In", values=[node])
        else:
            term.match_fields.add(key="metadata.name", operator="In", values=[node])
    for i in range(reserved):
        out.status.reserved_for.add(resource="pods", name=f"other-{i}", uid=f"other-uid-{i}")
    return out


def reserved_for_pod(c: Any) -> Any:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    out.status.reserved_for.add(resource="pods", name=POD, uid=POD_UID)
    return out


def deleted(c: Any) -> Any:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    out.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    return out


def worker_slice(n: int = 1) -> Any:
    return resource_slice(
        "worker-some-driver",
        driver=DRIVER,
        node=WORKER,
        devices=[gpu(f"instance-{i}", index=i) for i in range(1, n + 1)],
    )


WORKER_NODE = MakeNode().name(WORKER).label("nodename", WORKER).obj()
CLASSES = [device_class(CLASS)]


@dataclass
class Want:
    """Each step's (code, message); a step absent here must succeed (or not be reached)."""

    preenqueue: tuple[Code, str] | None = None
    prefilter: tuple[Code, str] | None = None
    filter: tuple[Code, str] | None = None
    postfilter: tuple[Code, str] | None = None
    prebind: tuple[Code, str] | None = None
    #: The claim CLAIM as the API holds it at the end (None: unchanged).
    claim: Callable[[Any], Any] | None = None


@dataclass
class Case:
    pod: core_pb2.Pod
    claims: list[Any]
    want: Want
    classes: list[Any] = field(default_factory=lambda: list(CLASSES))
    slices: list[Any] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=lambda: [WORKER_NODE])
    #: Called on the API before PreBind (a concurrent writer).
    before_prebind: Callable[[FakeClaimsAPI], None] | None = None
    #: The handle's clock (None: real time).
    clock: Any = None


def _with(c: Any, edit: Callable[[Any], None]) -> Any:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    edit(out)
    return out


def _allocated_by_scheduler(c: Any) -> Any:
    def edit(out: Any) -> None:
        if FINALIZER not in out.metadata.finalizers:
            out.metadata.finalizers.append(FINALIZER)
        out.status.allocation.devices.results.add(
            request="req-1", driver=DRIVER, pool=WORKER, device="instance-1"
        )
        term = out.status.allocation.node_selector.node_selector_terms.add()
        term.match_fields.add(key="metadata.name", operator="In", values=[WORKER])
        out.status.reserved_for.add(resource="pods", name=POD, uid=POD_UID)

    return _with(c, edit)


UNRESOLVABLE, UNSCHEDULABLE, ERROR, SKIP = (
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    Code.UNSCHEDULABLE,
    Code.ERROR,
    Code.SKIP,
)
CANNOT = (
    f'{ERR_CANNOT_ALLOCATE}: resourceclaim "{NS}/{CLAIM}": request req-1: '
    f"no free device on node {WORKER}"
)

CASES: dict[str, Case] = {
    "empty": Case(
        MakePod().name("foo").namespace(NS).obj(),
        [],
        Want(prefilter=(SKIP, ""), postfilter=(UNSCHEDULABLE, "")),
    ),
    "claim-reference": Case(
        pod_with_claim_name(),
        [allocated(claim()), claim("not-my-claim")],
        Want(claim=reserved_for_pod),
    ),
    "claim-template": Case(
        pod_with_template(),
        [allocated(claim(owner=POD_UID))],
        Want(claim=reserved_for_pod),
    ),
    "missing-claim": Case(
        pod_with_template(in_status=False),
        [allocated(claim(owner=POD_UID))],
        Want(preenqueue=(UNRESOLVABLE, f'pod "{NS}/{POD}": ResourceClaim not created yet')),
    ),
    "claim-not-found": Case(
        pod_with_claim_name(),
        [],
        Want(
            preenqueue=(UNRESOLVABLE, f'resourceclaim.resource.k8s.io "{CLAIM}" not found'),
        ),
    ),
    "deleted-claim": Case(
        pod_with_template(),
        [deleted(allocated(claim(owner=POD_UID)))],
        Want(preenqueue=(UNRESOLVABLE, f'resourceclaim "{CLAIM}" is being deleted')),
    ),
    "wrong-claim": Case(
        pod_with_template(),
        [allocated(claim(owner=POD_UID + "123"))],
        Want(
            preenqueue=(
                UNRESOLVABLE,
                f"ResourceClaim {NS}/{CLAIM} was not created for pod {NS}/{POD} (pod is not owner)",
            )
        ),
    ),
    "no-resources": Case(
        pod_with_claim_name(),
        [claim()],
        Want(filter=(UNRESOLVABLE, CANNOT), postfilter=(UNSCHEDULABLE, "still not schedulable")),
    ),
    "with-resources": Case(
        pod_with_claim_name(),
        [claim()],
        Want(claim=_allocated_by_scheduler),
        slices=[worker_slice()],
    ),
    "with-resources-has-finalizer": Case(
        pod_with_claim_name(),
        [_with(claim(), lambda c: c.metadata.finalizers.append(FINALIZER))],
        Want(claim=_allocated_by_scheduler),
        slices=[worker_slice()],
    ),
    "exhausted-resources": Case(
        pod_with_claim_name(),
        [claim(count=2)],
        Want(
            filter=(UNRESOLVABLE, CANNOT),
            postfilter=(UNSCHEDULABLE, "still not schedulable"),
        ),
        slices=[worker_slice(1)],
    ),
    "missing-class": Case(
        pod_with_claim_name(),
        [claim()],
        Want(
            prefilter=(UNRESOLVABLE, f"request req-1: device class {CLASS} does not exist"),
            postfilter=(UNSCHEDULABLE, "no new claims to deallocate"),
        ),
        classes=[],
    ),
    "claim-parameters-CEL-runtime-error": Case(
        pod_with_claim_name(),
        [claim()],
        Want(filter=(ERROR, f"claim {NS}/{CLAIM}, request req-1: selector failed")),
        classes=[device_class(CLASS, f'device.attributes["x"].{BROKEN}')],
        slices=[worker_slice()],
    ),
    "wrong-topology": Case(
        pod_with_claim_name(),
        [allocated(claim(), node="other")],
        Want(
            filter=(UNRESOLVABLE, "resourceclaim not available on the node"),
            postfilter=(UNSCHEDULABLE, "deallocation of ResourceClaim completed"),
            claim=lambda c: _with(
                c,
                lambda o: (o.status.ClearField("allocation"), o.status.ClearField("reserved_for")),
            ),
        ),
    ),
    "wrong-topology-in-use": Case(
        pod_with_claim_name(),
        [allocated(claim(), node="other", reserved=1)],
        Want(
            filter=(UNRESOLVABLE, "resourceclaim not available on the node"),
            postfilter=(UNSCHEDULABLE, "still not schedulable"),
        ),
    ),
    "good-topology": Case(
        pod_with_claim_name(),
        [allocated(claim(), label=True)],
        Want(claim=reserved_for_pod),
    ),
    "reserved-okay": Case(
        pod_with_claim_name(),
        [reserved_for_pod(allocated(claim()))],
        Want(),
    ),
    "in-use-by-other": Case(
        pod_with_claim_name(POD_UID + "-II"),
        [allocated(claim(), reserved=256)],
        Want(
            prefilter=(UNRESOLVABLE, "resourceclaim in use"),
            postfilter=(UNSCHEDULABLE, "no new claims to deallocate"),
        ),
    ),
    "shared-claim-adds-reservation": Case(
        pod_with_claim_name(),
        [allocated(claim(), reserved=3)],
        Want(claim=reserved_for_pod),
    ),
    "bind-failure-claim-allocated-meanwhile": Case(
        pod_with_claim_name(),
        [claim()],
        Want(prebind=(ERROR, f"claim {NS}/{CLAIM} got allocated elsewhere in the meantime")),
        slices=[worker_slice(2)],
        before_prebind=lambda api: _allocate_behind(api),
    ),
    "bind-failure-reserved-for-filled-meanwhile": Case(
        pod_with_claim_name(),
        [allocated(claim(), reserved=255)],
        Want(
            prebind=(
                ERROR,
                f"claim {NS}/{CLAIM}: status.reservedFor: Too many: 257: must have at most 256 items",
            )
        ),
        before_prebind=lambda api: _reserve_behind(api),
    ),
    "duplicate-claim-allocated-once": Case(
        pod_with_claim_name(POD_UID, CLAIM, CLAIM),
        [claim()],
        Want(claim=_allocated_by_scheduler),
        slices=[worker_slice()],
    ),
    "bind-conflict-retried": Case(
        pod_with_claim_name(),
        [claim()],
        Want(claim=lambda c: _with(_allocated_by_scheduler(c), _touched)),
        slices=[worker_slice()],
        before_prebind=lambda api: setattr(api, "conflicts", 2),
    ),
}


def _touched(c: Any) -> None:
    c.metadata.labels["touched"] = "yes"


def _reserve_behind(api: FakeClaimsAPI) -> None:
    key = f"{NS}/{CLAIM}"
    c = api.objects[key]
    c.status.reserved_for.add(resource="pods", name="late", uid="late-uid")
    api.store[key] = api._put(c)


def _allocate_behind(api: FakeClaimsAPI) -> None:
    key = f"{NS}/{CLAIM}"
    c = api.objects[key]
    c.status.allocation.devices.results.add(
        request="req-1", driver=DRIVER, pool=WORKER, device="instance-2"
    )
    api.store[key] = api._put(c)


def _check(step: str, got: Status, want: tuple[Code, str] | None) -> None:
    if want is None:
        assert got.code in (Code.SUCCESS, Code.SKIP), f"{step}: {got}"
        return
    assert (got.code, got.message) == want, step


def build(case: Case) -> tuple[DynamicResources, FakeClaimsAPI]:
    api = FakeClaimsAPI(case.claims)
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={s.metadata.name: s for s in case.slices},
        classes={c.metadata.name: c for c in case.classes},
        client=api,
        handle=FakeHandle(clock=case.clock),
        allocator_factory=FakeAllocator,
    )
    return plugin, api


@pytest.mark.parametrize("name", list(CASES))
async def test_plugin_steps_return_upstreams_statuses_and_write_the_claim(name: str) -> None:
    await run_steps(CASES[name])


async def run_steps(case: Case) -> None:
    """The steps of one case, each status checked, then the claim the API holds."""
    plugin, api = build(case)
    before = {k: _copy(v) for k, v in api.objects.items()}
    pod = case.pod
    pi = PodInfo(pod)
    want = case.want

    st = plugin.pre_enqueue(pod)
    _check("preenqueue", st, want.preenqueue)
    if not st.is_success():
        return
    state = CycleState()
    nodes = [NodeInfo(n) for n in case.nodes]
    _, st = plugin.pre_filter(state, pi, nodes)
    _check("prefilter", st, want.prefilter)
    feasible: list[str] = []
    if st.is_success():
        for ni in nodes:
            fst = plugin.filter(state, pi, ni)
            _check(f"filter {ni.name}", fst, want.filter)
            if fst.code == ERROR:
                return  # the attempt is aborted: no PostFilter
            if fst.is_success():
                feasible.append(ni.name)
    if not feasible:
        _, pst = await plugin.post_filter(state, pi, {})
        _check("postfilter", pst, want.postfilter)
    else:
        assert want.postfilter is None
        node = feasible[0]
        _check("reserve", plugin.reserve(state, pi, node), None)
        if case.before_prebind is not None:
            case.before_prebind(api)
        bst = await plugin.pre_bind(state, pi, node)
        _check("prebind", bst, want.prebind)
        if not bst.is_success():
            plugin.unreserve(state, pi, node)
            await plugin.drain()
            assert len(plugin.tracker) == 0
            return

    key = f"{NS}/{CLAIM}"
    if key in before:
        expected = want.claim(before[key]) if want.claim is not None else before[key]
        got = _copy(api.objects[key])
        got.metadata.resource_version = expected.metadata.resource_version = ""
        assert got == expected


def _copy(c: Any) -> Any:
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(c)
    return out


# ------------------------------------------------------------------- in-flight devices


async def test_a_reserved_allocation_is_not_given_to_another_pods_filter() -> None:
    c1, c2 = claim(CLAIM), claim(CLAIM2)
    case = Case(pod_with_claim_name(), [c1, c2], Want(), slices=[worker_slice(1)])
    plugin, api = build(case)
    node = NodeInfo(WORKER_NODE)
    first = MakePod().name("a").namespace(NS).uid("a").resource_claim("r", claim=CLAIM).obj()
    second = MakePod().name("b").namespace(NS).uid("b").resource_claim("r", claim=CLAIM2).obj()

    s1 = CycleState()
    plugin.pre_filter(s1, PodInfo(first), [node])
    assert plugin.filter(s1, PodInfo(first), node).is_success()
    assert plugin.reserve(s1, PodInfo(first), WORKER).is_success()

    s2 = CycleState()
    plugin.pre_filter(s2, PodInfo(second), [node])
    st = plugin.filter(s2, PodInfo(second), node)
    assert st.code == UNRESOLVABLE and CLAIM2 in st.message

    # Unreserve gives the device back.
    plugin.unreserve(s1, PodInfo(first), WORKER)
    s3 = CycleState()
    plugin.pre_filter(s3, PodInfo(second), [node])
    assert plugin.filter(s3, PodInfo(second), node).is_success()


async def test_written_allocation_stays_taken_until_the_informer_shows_it() -> None:
    c1, c2 = claim(CLAIM), claim(CLAIM2)
    plugin, api = build(Case(pod_with_claim_name(), [c1, c2], Want(), slices=[worker_slice(1)]))
    api.informer_lags = True
    node = NodeInfo(WORKER_NODE)
    first = pod_with_claim_name()
    s1 = CycleState()
    plugin.pre_filter(s1, PodInfo(first), [node])
    assert plugin.filter(s1, PodInfo(first), node).is_success()
    plugin.reserve(s1, PodInfo(first), WORKER)
    assert (await plugin.pre_bind(s1, PodInfo(first), WORKER)).is_success()
    # Not pending any more, but assumed: the informer's copy is still unallocated.
    assert not plugin.tracker.has_pending_allocation(c1.metadata.uid)
    assert DeviceID(DRIVER, WORKER, "instance-1") in plugin.tracker.allocated_devices()
    assert plugin.tracker.claim(NS, CLAIM).status.HasField("allocation")

    # The informer catches up: the assumed copy is dropped, the devices stay taken.
    written = api.objects[f"{NS}/{CLAIM}"]
    api.store[f"{NS}/{CLAIM}"] = written
    plugin.tracker.observed(written)
    assert len(plugin.tracker) == 0
    assert DeviceID(DRIVER, WORKER, "instance-1") in plugin.tracker.allocated_devices()


async def test_a_claim_in_flight_for_one_pod_makes_another_pod_wait() -> None:
    c = claim()
    plugin, _ = build(Case(pod_with_claim_name(), [c], Want(), slices=[worker_slice(1)]))
    node = NodeInfo(WORKER_NODE)
    s1 = CycleState()
    a = pod_with_claim_name("a")
    plugin.pre_filter(s1, PodInfo(a), [node])
    plugin.filter(s1, PodInfo(a), node)
    plugin.reserve(s1, PodInfo(a), WORKER)
    _, st = plugin.pre_filter(CycleState(), PodInfo(pod_with_claim_name("b")), [node])
    assert (st.code, st.message) == (
        UNRESOLVABLE,
        f"resource claim {NS}/{CLAIM} is in the process of being allocated",
    )


def test_allocated_claims_with_node_names_narrow_prefilter_to_those_nodes() -> None:
    plugin, _ = build(Case(pod_with_claim_name(), [allocated(claim())], Want()))
    result, st = plugin.pre_filter(CycleState(), PodInfo(pod_with_claim_name()), [])
    assert st.is_success() and result is not None and result.node_names == {WORKER}


def test_a_claim_with_an_allocation_and_no_reservation_still_holds_its_devices() -> None:
    tracker = ClaimTracker({f"{NS}/{CLAIM}": allocated(claim())})
    assert tracker.allocated_devices() == {DeviceID(DRIVER, WORKER, "instance-1")}


def test_admin_access_results_do_not_take_devices() -> None:
    c = allocated(claim())
    c.status.allocation.devices.results[0].admin_access = True
    assert ClaimTracker({f"{NS}/{CLAIM}": c}).allocated_devices() == set()


def test_admin_namespaces_come_from_the_namespace_label() -> None:
    made: list[FakeAllocator] = []

    def factory(**kw: Any) -> FakeAllocator:
        made.append(FakeAllocator(**kw))
        return made[-1]

    api = FakeClaimsAPI([claim()])
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={},
        classes={CLASS: CLASSES[0]},
        client=api,
        handle=FakeHandle({NS: {"resource.kubernetes.io/admin-access": "true"}}),
        allocator_factory=factory,
    )
    plugin.pre_filter(CycleState(), PodInfo(pod_with_claim_name()), [])
    assert made[0].admin_namespaces == frozenset([NS])


async def test_unreserve_takes_the_pod_out_of_reserved_for_after_prebind() -> None:
    plugin, api = build(Case(pod_with_claim_name(), [allocated(claim(), reserved=1)], Want()))
    pod = pod_with_claim_name()
    node = NodeInfo(WORKER_NODE)
    state = CycleState()
    plugin.pre_filter(state, PodInfo(pod), [node])
    assert plugin.filter(state, PodInfo(pod), node).is_success()
    plugin.reserve(state, PodInfo(pod), WORKER)
    assert (await plugin.pre_bind(state, PodInfo(pod), WORKER)).is_success()
    assert [r.uid for r in api.objects[f"{NS}/{CLAIM}"].status.reserved_for] == [
        "other-uid-0",
        POD_UID,
    ]
    api.touch(f"{NS}/{CLAIM}")  # a conflict on the first try
    plugin.unreserve(state, PodInfo(pod), WORKER)
    await asyncio.wait_for(plugin.drain(), 5)
    got = api.objects[f"{NS}/{CLAIM}"]
    assert [r.uid for r in got.status.reserved_for] == ["other-uid-0"]
    assert got.status.HasField("allocation")  # the controller deallocates, not Unreserve


def test_filter_longer_than_filter_timeout_rejects_the_node() -> None:
    class SlowClock:
        t = 0.0

        def now(self) -> float:
            self.t += 6.0
            return self.t

    handle = FakeHandle()
    handle.clock = SlowClock()  # type: ignore[attr-defined]
    api = FakeClaimsAPI([claim()])
    plugin = DynamicResources(
        Args(filter_timeout=5.0),
        claims=api.store,
        slices={"s": worker_slice()},
        classes={CLASS: CLASSES[0]},
        client=api,
        handle=handle,
        allocator_factory=FakeAllocator,
    )
    state = CycleState()
    node = NodeInfo(WORKER_NODE)
    plugin.pre_filter(state, PodInfo(pod_with_claim_name()), [node])
    st = plugin.filter(state, PodInfo(pod_with_claim_name()), node)
    assert (st.code, st.message) == (UNRESOLVABLE, "timed out trying to allocate devices")


async def test_unreserve_announces_the_dropped_allocation_as_a_claim_update() -> None:
    announced: list[tuple[Any, Any]] = []
    api = FakeClaimsAPI([claim()])
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={"s": worker_slice()},
        classes={CLASS: CLASSES[0]},
        client=api,
        handle=FakeHandle(),
        allocator_factory=FakeAllocator,
        on_restore=lambda old, new: announced.append((old, new)),
    )
    pod, node, state = pod_with_claim_name(), NodeInfo(WORKER_NODE), CycleState()
    plugin.pre_filter(state, PodInfo(pod), [node])
    assert plugin.filter(state, PodInfo(pod), node).is_success()
    plugin.reserve(state, PodInfo(pod), WORKER)
    plugin.unreserve(state, PodInfo(pod), WORKER)
    [(old, new)] = announced
    assert old.status.HasField("allocation") and not new.status.HasField("allocation")
    # What the queue does with it: a deallocation requeues any pod whose claims exist.
    waiting = pod_with_claim_name("b")
    assert plugin.is_schedulable_after_claim_change(waiting, old, new) == QueueingHint.QUEUE


def test_filter_verdicts_are_reused_only_for_pods_without_claims() -> None:
    from services.scheduler.cache import equivalence
    from services.scheduler.config import default_config

    # The default profile (with DynamicResources) keeps the equivalence cache ...
    assert equivalence.node_local(default_config().profiles[0].names("filter"))
    # ... for pods whose DynamicResources verdict is "pass": those without claims.
    assert equivalence.eligible_pod(PodInfo(MakePod().name("plain").obj()), False)
    assert not equivalence.eligible_pod(PodInfo(pod_with_claim_name()), False)


async def test_prebind_retry_finds_its_own_lost_write_and_does_not_reserve_twice() -> None:
    plugin, api = build(Case(pod_with_claim_name(), [allocated(claim())], Want()))
    pod, node, state = pod_with_claim_name(), NodeInfo(WORKER_NODE), CycleState()
    plugin.pre_filter(state, PodInfo(pod), [node])
    assert plugin.filter(state, PodInfo(pod), node).is_success()
    plugin.reserve(state, PodInfo(pod), WORKER)
    real = api.update_status

    async def lost_answer(obj: Any) -> Any:
        await real(obj)  # written, but the caller sees a conflict
        api.update_status = real  # type: ignore[method-assign]
        raise ConflictError("the answer was lost")

    api.update_status = lost_answer  # type: ignore[method-assign]
    assert (await plugin.pre_bind(state, PodInfo(pod), WORKER)).is_success()
    assert [r.uid for r in api.objects[f"{NS}/{CLAIM}"].status.reserved_for] == [POD_UID]


def _gang_pod(uid: str, group: str) -> core_pb2.Pod:
    p = MakePod().name(f"pod-{uid}").namespace(NS).uid(uid).resource_claim("r", claim=CLAIM)
    return (p.label(POD_GROUP_LABEL, group) if group else p).obj()


@pytest.mark.parametrize(
    "group_a,group_b,shares",
    [("pg", "pg", True), ("pg", "other", False), ("", "", False), ("pg", "", False)],
    ids=["same group", "other group", "no groups", "only the allocating pod in a group"],
)
def test_only_a_gang_sibling_takes_a_pending_allocation_as_allocated(
    group_a: str, group_b: str, shares: bool
) -> None:
    plugin, _ = build(Case(pod_with_claim_name(), [claim()], Want(), slices=[worker_slice(1)]))
    node = NodeInfo(WORKER_NODE)
    a, b = _gang_pod("a", group_a), _gang_pod("b", group_b)
    s1 = CycleState()
    plugin.pre_filter(s1, PodInfo(a), [node])
    assert plugin.filter(s1, PodInfo(a), node).is_success()
    plugin.reserve(s1, PodInfo(a), WORKER)
    result, st = plugin.pre_filter(CycleState(), PodInfo(b), [node])
    if shares:
        assert st.is_success() and result is not None and result.node_names == {WORKER}
    else:
        assert (st.code, st.message) == (
            UNRESOLVABLE,
            f"resource claim {NS}/{CLAIM} is in the process of being allocated",
        )


async def test_a_gang_sibling_binds_the_shared_claim_after_the_allocating_pod_wrote_it() -> None:
    plugin, api = build(Case(pod_with_claim_name(), [claim()], Want(), slices=[worker_slice(1)]))
    node = NodeInfo(WORKER_NODE)
    a, b = _gang_pod("a", "pg"), _gang_pod("b", "pg")
    sa, sb = CycleState(), CycleState()
    plugin.pre_filter(sa, PodInfo(a), [node])
    plugin.filter(sa, PodInfo(a), node)
    plugin.reserve(sa, PodInfo(a), WORKER)
    plugin.pre_filter(sb, PodInfo(b), [node])
    assert plugin.filter(sb, PodInfo(b), node).is_success()
    assert plugin.reserve(sb, PodInfo(b), WORKER).is_success()
    # b's PreBind starts first: it waits for a's write instead of writing the copy itself.
    b_bind = asyncio.create_task(plugin.pre_bind(sb, PodInfo(b), WORKER))
    await asyncio.sleep(0)
    assert not b_bind.done()
    assert (await plugin.pre_bind(sa, PodInfo(a), WORKER)).is_success()
    assert (await asyncio.wait_for(b_bind, 5)).is_success()
    written = api.objects[f"{NS}/{CLAIM}"]
    assert [r.device for r in written.status.allocation.devices.results] == ["instance-1"]
    assert sorted(r.uid for r in written.status.reserved_for) == ["a", "b"]


async def test_a_gang_siblings_prebind_fails_when_the_shared_allocation_is_dropped() -> None:
    plugin, api = build(Case(pod_with_claim_name(), [claim()], Want(), slices=[worker_slice(1)]))
    node = NodeInfo(WORKER_NODE)
    a, b = _gang_pod("a", "pg"), _gang_pod("b", "pg")
    sa, sb = CycleState(), CycleState()
    plugin.pre_filter(sa, PodInfo(a), [node])
    plugin.filter(sa, PodInfo(a), node)
    plugin.reserve(sa, PodInfo(a), WORKER)
    plugin.pre_filter(sb, PodInfo(b), [node])
    plugin.unreserve(sa, PodInfo(a), WORKER)
    st = await plugin.pre_bind(sb, PodInfo(b), WORKER)
    assert st.code == Code.ERROR and "the gang's allocation was dropped" in st.message
    plugin.unreserve(sb, PodInfo(b), WORKER)  # leaves nothing pending, writes nothing
    assert not plugin.tracker.has_pending_allocation(f"uid-{CLAIM}")
    assert not api.objects[f"{NS}/{CLAIM}"].status.HasField("allocation")
