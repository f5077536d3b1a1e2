"""DynamicResources and extended resources backed by DRA (DRAExtendedResource): upstream
dynamicresources_test.go TestPlugin's extended-resource cases (names are upstream's), run
through PreFilter → Filter → PostFilter or Reserve → (Unreserve) → PreBind → (Unreserve),
checking each status, the claim the API ends with and the pod's
status.extendedResourceClaimStatus; and NodeResourcesFit leaving such a resource to DRA."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.extended import DEVICE_CLASS_PREFIX, EXTENDED_RESOURCE_CLAIM_ANNOTATION
from services.api.features import DRA_EXTENDED_RESOURCE
from services.api.machinery.errors import BadRequestError
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.dynamicresources import FINALIZER, Args, DynamicResources
from services.scheduler.plugins.dynamicresources.extended import ERR_STALE
from services.scheduler.plugins.noderesources.fit import Args as FitArgs
from services.scheduler.plugins.noderesources.fit import Fit
from tests.builders import MakeNode, MakePod, device_class
from tests.scheduler.plugins.dynamicresources._fakes import (
    FakeAllocator,
    FakeClaimsAPI,
    FakeHandle,
)
from tests.scheduler.plugins.dynamicresources.test_dynamicresources import (
    CLASS,
    DRIVER,
    NS,
    POD,
    POD_UID,
    WORKER,
    worker_slice,
)

ER = "example.com/gpu"
IMPLICIT = DEVICE_CLASS_PREFIX + CLASS
CLAIM_NAME = f"{POD}-extended-resources-00001"
UNRESOLVABLE, UNSCHEDULABLE, ERROR, SKIP = (
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    Code.UNSCHEDULABLE,
    Code.ERROR,
    Code.SKIP,
)


def pod(*containers: dict[str, str]) -> core_pb2.Pod:
    b = MakePod().name(POD).namespace(NS).uid(POD_UID)
    for i, requests in enumerate(containers or ({ER: "1"},)):
        b = b.container(f"con{i}", requests=requests, limits=requests)
    return b.obj()


def klass(extended: str | None = ER) -> resource_pb2.DeviceClass:
    dc = device_class(CLASS)
    if extended is not None:
        dc.spec.extended_resource_name = extended
    return dc


def stale_claim(node: str = WORKER) -> resource_pb2.ResourceClaim:
    """The claim an earlier attempt made for the pod (allocated on `node`)."""
    c = resource_pb2.ResourceClaim()
    c.metadata.name, c.metadata.namespace, c.metadata.uid = CLAIM_NAME, NS, "uid-stale"
    c.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] = "true"
    c.metadata.finalizers.append(FINALIZER)
    c.metadata.owner_references.add(
        api_version="v1", kind="Pod", name=POD, uid=POD_UID, controller=True
    )
    r = c.spec.devices.requests.add(name="container-0-request-0")
    r.exactly.device_class_name, r.exactly.allocation_mode, r.exactly.count = CLASS, "ExactCount", 1
    c.status.allocation.devices.results.add(
        request="container-0-request-0", driver=DRIVER, pool=WORKER, device="instance-1"
    )
    term = c.status.allocation.node_selector.node_selector_terms.add()
    term.match_fields.add(key="metadata.name", operator="In", values=[node])
    return c


WORKER_NODE = MakeNode().name(WORKER).obj()
ZERO_ALLOCATABLE = MakeNode().name(WORKER).capacity({ER: "1"}).allocatable({ER: "0"}).obj()


@dataclass
class Want:
    prefilter: tuple[Code, str] | None = None
    filter: tuple[Code, str] | None = None
    postfilter: tuple[Code, str] | None = None
    prebind: tuple[Code, str] | None = None
    #: the extended resource claim's requests (name, count) and devices, once written
    requests: list[tuple[str, int]] | None = None
    devices: list[str] = field(default_factory=list)
    #: the pod's status.extendedResourceClaimStatus requestMappings (container, resource,
    #: request); None: no pod patch
    mappings: list[tuple[str, str, str]] | None = None
    #: claims the API holds at the end
    left: list[str] = field(default_factory=list)


@dataclass
class Case:
    pod: core_pb2.Pod
    want: Want
    classes: list[Any] = field(default_factory=lambda: [klass()])
    slices: list[Any] = field(default_factory=lambda: [worker_slice()])
    claims: list[Any] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=lambda: [WORKER_NODE])
    unreserve_before_prebind: bool = False
    unreserve_after_prebind: bool = False
    fail_create: Exception | None = None
    fail_patch: Exception | None = None


ONE = Want(
    requests=[("container-0-request-0", 1)],
    devices=["instance-1"],
    mappings=[("con0", ER, "container-0-request-0")],
    left=[CLAIM_NAME],
)

CASES: dict[str, Case] = {
    "extended-resource-name-with-zero-allocatable": Case(pod(), ONE, nodes=[ZERO_ALLOCATABLE]),
    "non-DRA-extended-resource-name-with-zero-allocatable": Case(
        pod(), Want(prefilter=(SKIP, "")), classes=[klass(None)], nodes=[ZERO_ALLOCATABLE]
    ),
    "extended-resource-name-no-resource": Case(
        pod(),
        Want(
            filter=(UNRESOLVABLE, "cannot allocate all claims"),
            postfilter=(UNSCHEDULABLE, "still not schedulable"),
        ),
        slices=[],
    ),
    "extended-resource-name-with-resources": Case(pod(), ONE),
    "implicit-extended-resource-name-with-resources": Case(
        pod({IMPLICIT: "2"}),
        Want(
            requests=[("container-0-request-0", 2)],
            devices=["instance-1", "instance-2"],
            mappings=[("con0", IMPLICIT, "container-0-request-0")],
            left=[CLAIM_NAME],
        ),
        slices=[worker_slice(4)],
    ),
    "implicit-extended-resource-name-two-containers-with-resources": Case(
        pod({IMPLICIT: "2"}, {IMPLICIT: "1"}),
        Want(
            requests=[("container-0-request-0", 2), ("container-1-request-0", 1)],
            devices=["instance-1", "instance-2", "instance-3"],
            mappings=[
                ("con0", IMPLICIT, "container-0-request-0"),
                ("con1", IMPLICIT, "container-1-request-0"),
            ],
            left=[CLAIM_NAME],
        ),
        slices=[worker_slice(4)],
    ),
    # The claim is written before the pod's status: a failed patch fails the attempt,
    # and Unreserve deletes the claim.
    "extended-resource-name-with-resources-fail-patch": Case(
        pod(),
        Want(prebind=(ERROR, "patch error"), requests=ONE.requests, devices=ONE.devices),
        fail_patch=RuntimeError("patch error"),
    ),
    "extended-resource-name-with-resources-has-claim": Case(
        pod(),
        Want(
            filter=(UNRESOLVABLE, ERR_STALE),
            postfilter=(UNSCHEDULABLE, "deletion of ResourceClaim completed"),
        ),
        claims=[stale_claim()],
    ),
    "extended-resource-name-with-resources-delete-claim": Case(
        pod(),
        Want(
            filter=(UNRESOLVABLE, ERR_STALE),
            postfilter=(UNSCHEDULABLE, "deletion of ResourceClaim completed"),
        ),
        claims=[stale_claim("worker-2")],
    ),
    "extended-resource-name-bind-failure": Case(
        pod(), Want(requests=ONE.requests, devices=ONE.devices), unreserve_after_prebind=True
    ),
    "extended-resource-name-skip-bind": Case(pod(), Want(), unreserve_before_prebind=True),
    "extended-resource-name-claim-creation-failure": Case(
        pod(),
        Want(prebind=(ERROR, "claim creation errors")),
        fail_create=BadRequestError("claim creation errors"),
    ),
}


def _check(step: str, st: Any, want: tuple[Code, str] | None) -> None:
    if want is None:
        assert st.is_success(), f"{step}: {st}"
        return
    assert st.code == want[0], f"{step}: {st}"
    assert want[1] in st.message, f"{step}: {st.message!r}"


def build(
    case: Case, gates: dict[str, bool] | None = None
) -> tuple[DynamicResources, FakeClaimsAPI]:
    api = FakeClaimsAPI(case.claims)
    api.fail_create, api.fail_patch = case.fail_create, case.fail_patch
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={s.metadata.name: s for s in case.slices},
        classes={c.metadata.name: c for c in case.classes},
        client=api,
        handle=FakeHandle(),
        allocator_factory=FakeAllocator,
        gates=gates,
    )
    return plugin, api


@pytest.mark.parametrize("name", list(CASES))
async def test_extended_resource_steps_return_upstreams_statuses(name: str) -> None:
    case = CASES[name]
    want = case.want
    plugin, api = build(case)
    pi = PodInfo(case.pod)
    state = CycleState()
    nodes = [NodeInfo(n) for n in case.nodes]
    _, st = plugin.pre_filter(state, pi, nodes)
    _check("prefilter", st, want.prefilter)
    if not st.is_success():
        return
    feasible = []
    for ni in nodes:
        fst = plugin.filter(state, pi, ni)
        _check(f"filter {ni.name}", fst, want.filter)
        if fst.is_success():
            feasible.append(ni.name)
    if not feasible:
        _, pst = await plugin.post_filter(state, pi, {})
        _check("postfilter", pst, want.postfilter)
        assert sorted(k.split("/")[1] for k in api.objects) == want.left
        return
    node = feasible[0]
    _check("reserve", plugin.reserve(state, pi, node), None)
    assert len(plugin.tracker) == 1  # the allocation is in flight
    if case.unreserve_before_prebind:
        plugin.unreserve(state, pi, node)
        assert len(plugin.tracker) == 0 and not api.objects
        return
    bst = await plugin.pre_bind(state, pi, node)
    _check("prebind", bst, want.prebind)
    if want.requests is not None:
        written = api.objects[f"{NS}/{CLAIM_NAME}"]
        assert [(r.name, r.exactly.count) for r in written.spec.devices.requests] == want.requests
        assert [r.exactly.device_class_name for r in written.spec.devices.requests] == [
            CLASS
        ] * len(want.requests)
        assert written.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] == "true"
        assert [
            (o.kind, o.name, o.uid, o.controller) for o in written.metadata.owner_references
        ] == [("Pod", POD, POD_UID, True)]
        assert FINALIZER in written.metadata.finalizers
        assert [d.device for d in written.status.allocation.devices.results] == want.devices
        assert [(r.name, r.uid) for r in written.status.reserved_for] == [(POD, POD_UID)]
    if want.mappings is not None:
        ((key, patch, status),) = api.patches
        assert (key, status) == (f"{NS}/{POD}", True)
        got = patch["status"]["extendedResourceClaimStatus"]
        assert got["resourceClaimName"] == CLAIM_NAME
        assert [
            (m["containerName"], m["resourceName"], m["requestName"])
            for m in got["requestMappings"]
        ] == want.mappings
    if not bst.is_success() or case.unreserve_after_prebind:
        plugin.unreserve(state, pi, node)
        await plugin.drain()
    assert sorted(k.split("/")[1] for k in api.objects) == want.left


async def test_gate_off_leaves_extended_resources_to_the_node() -> None:
    plugin, _ = build(Case(pod(), Want()), gates={DRA_EXTENDED_RESOURCE: False})
    _, st = plugin.pre_filter(CycleState(), PodInfo(pod()), [NodeInfo(WORKER_NODE)])
    assert st.code == SKIP


async def test_a_node_advertising_the_resource_serves_it_without_a_claim() -> None:
    node = MakeNode().name(WORKER).capacity({ER: "2"}).allocatable({ER: "2"}).obj()
    plugin, api = build(Case(pod(), Want()))
    pi, state = PodInfo(pod()), CycleState()
    _, st = plugin.pre_filter(state, pi, [NodeInfo(node)])
    assert st.is_success()
    assert plugin.filter(state, pi, NodeInfo(node)).is_success()
    assert plugin.reserve(state, pi, WORKER).is_success()
    assert (await plugin.pre_bind(state, pi, WORKER)).is_success()
    assert not api.objects and not api.patches and len(plugin.tracker) == 0


async def test_a_resource_neither_advertised_nor_mapped_does_not_fit() -> None:
    p = pod({ER: "1", "other.com/thing": "1"})
    plugin, _ = build(Case(p, Want()))
    pi, state = PodInfo(p), CycleState()
    plugin.pre_filter(state, pi, [NodeInfo(WORKER_NODE)])
    st = plugin.filter(state, pi, NodeInfo(WORKER_NODE))
    assert (st.code, st.message) == (UNRESOLVABLE, "cannot fit resource other.com/thing")


# ------------------------------------------------------------------ NodeResourcesFit


class _Informers:
    """A handle with the scheduler's informers (only DeviceClass's store is read)."""

    def __init__(self, classes: list[resource_pb2.DeviceClass]) -> None:
        self.store = {c.metadata.name: c for c in classes}

    def informer(self, kind: str) -> Any:
        assert kind == "DeviceClass"
        return self


@pytest.mark.parametrize(
    ("classes", "allocatable", "fits"),
    [
        pytest.param([klass()], {}, True, id="mapped, not advertised: left to DRA"),
        pytest.param([klass()], {ER: "0"}, True, id="mapped, allocatable 0: left to DRA"),
        pytest.param([klass()], {ER: "1"}, True, id="mapped, advertised: checked, fits"),
        pytest.param([klass(None)], {}, False, id="not mapped: Insufficient"),
    ],
)
def test_fit_leaves_a_mapped_resource_the_node_lacks_to_dra(classes, allocatable, fits) -> None:
    p = pod({ER: "1", "cpu": "100m"})
    node = MakeNode().name(WORKER).allocatable({"cpu": "1", "pods": "10", **allocatable}).obj()
    fit = Fit(FitArgs(), _Informers(classes))
    state, pi = CycleState(), PodInfo(p)
    fit.pre_filter(state, pi, [NodeInfo(node)])
    st = fit.filter(state, pi, NodeInfo(node))
    assert st.is_success() == fits, st
    if not fits:
        assert st.reasons == (f"Insufficient {ER}",)


def test_fit_checks_a_mapped_resource_the_node_advertises_against_its_allocatable() -> None:
    p = pod({ER: "2"})
    node = MakeNode().name(WORKER).allocatable({"pods": "10", ER: "1"}).obj()
    fit = Fit(FitArgs(), _Informers([klass()]))
    state, pi = CycleState(), PodInfo(p)
    fit.pre_filter(state, pi, [NodeInfo(node)])
    assert fit.filter(state, pi, NodeInfo(node)).reasons == (f"Insufficient {ER}",)


# ------------------------------------------------------------------ the delete event


def test_deleting_the_pods_stale_claim_requeues_only_that_pod() -> None:
    from services.scheduler.framework.types import QueueingHint
    from services.scheduler.plugins.dynamicresources import extended as ext

    mine, other = pod(), MakePod().name("other").namespace(NS).uid("5678").obj()
    stale = stale_claim()
    plain = resource_pb2.ResourceClaim()
    plain.CopyFrom(stale)
    plain.metadata.annotations.clear()
    keys = ext.deleted_claim_keys(stale, None)
    assert keys == ext.pod_owner_keys(mine) and keys != ext.pod_owner_keys(other)
    assert ext.deleted_claim_keys(plain, None) == []
    assert ext.after_claim_delete(mine, stale, None) == QueueingHint.QUEUE
    assert ext.after_claim_delete(other, stale, None) == QueueingHint.SKIP
    assert ext.after_claim_delete(mine, plain, None) == QueueingHint.SKIP


def test_a_pod_with_extended_resources_does_not_reuse_filter_verdicts() -> None:
    """DynamicResources' verdict for it depends on devices and DeviceClasses, which change no
    NodeInfo generation: the equivalence cache must not serve it."""
    from services.scheduler.cache import equivalence

    assert not equivalence.eligible_pod(PodInfo(pod()), False)
    assert not equivalence.eligible_pod(PodInfo(pod({IMPLICIT: "1"})), False)
    assert equivalence.eligible_pod(PodInfo(pod({"cpu": "1", "hugepages-2Mi": "2Mi"})), False)
