"""DynamicResources with PodGroup claims (DRAWorkloadResourceClaims): a claim a pod names
through an entry of its scheduling.k8s.io PodGroup is reserved for the PodGroup, once, so
any number of the group's pods share it; a claim the pod names on its own is still
reserved for the pod. While the first pod's allocation is pending, its siblings take the
pending copy (the scheduler-plugins gang's rule, keyed by spec.schedulingGroup here)."""

from __future__ import annotations

import asyncio
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.dra.claims import RESERVED_FOR_MAX, is_reserved_for_pod
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.dynamicresources import Args, DynamicResources
from tests.builders import MakePod, scheduling_pod_group
from tests.scheduler.plugins.dynamicresources._fakes import (
    FakeAllocator,
    FakeClaimsAPI,
    FakeHandle,
)
from tests.scheduler.plugins.dynamicresources.test_dynamicresources import (
    CLAIM,
    CLASSES,
    NS,
    WORKER,
    WORKER_NODE,
    claim,
    worker_slice,
)

GROUP_UID = "uid-pg"


def group(entry: dict[str, str] | None = None) -> Any:
    pg = scheduling_pod_group(
        "pg", NS, resourceClaims=[entry or {"name": "r", "resourceClaimName": CLAIM}]
    )
    pg.metadata.uid = GROUP_UID
    return pg


def member(uid: str, *, entry: str = "r", in_group: bool = True) -> core_pb2.Pod:
    p = MakePod().name(f"pod-{uid}").namespace(NS).uid(uid).resource_claim(entry, claim=CLAIM)
    return (p.pod_group_name("pg") if in_group else p).obj()


def build(pod_groups: list[Any]) -> tuple[DynamicResources, FakeClaimsAPI]:
    api = FakeClaimsAPI([claim()])
    plugin = DynamicResources(
        Args(),
        claims=api.store,
        slices={s.metadata.name: s for s in [worker_slice(1)]},
        classes={c.metadata.name: c for c in CLASSES},
        client=api,
        handle=FakeHandle(),
        allocator_factory=FakeAllocator,
        pod_groups={f"{NS}/{g.metadata.name}": g for g in pod_groups},
    )
    return plugin, api


async def schedule(plugin: DynamicResources, pod: core_pb2.Pod) -> CycleState:
    """One pod through PreFilter, Filter, Reserve and PreBind on the worker; each succeeds."""
    node, state = NodeInfo(WORKER_NODE), CycleState()
    _, st = plugin.pre_filter(state, PodInfo(pod), [node])
    assert st.is_success(), st.message
    assert plugin.filter(state, PodInfo(pod), node).is_success()
    assert plugin.reserve(state, PodInfo(pod), WORKER).is_success()
    st = await plugin.pre_bind(state, PodInfo(pod), WORKER)
    assert st.is_success(), st.message
    return state


def refs(api: FakeClaimsAPI) -> list[tuple[str, str, str, str]]:
    return [
        (r.api_group, r.resource, r.name, r.uid)
        for r in api.objects[f"{NS}/{CLAIM}"].status.reserved_for
    ]


async def test_the_first_member_allocates_and_reserves_the_claim_for_its_group() -> None:
    plugin, api = build([group()])
    await schedule(plugin, member("a"))
    written = api.objects[f"{NS}/{CLAIM}"]
    assert [r.device for r in written.status.allocation.devices.results] == ["instance-1"]
    assert refs(api) == [("scheduling.k8s.io", "podgroups", "pg", GROUP_UID)]


async def test_more_members_than_reserved_for_holds_share_the_claim_without_writing() -> None:
    plugin, api = build([group()])
    await schedule(plugin, member("a"))
    writes = len(api.calls)
    for i in range(RESERVED_FOR_MAX + 4):
        pod = member(f"m{i}")
        await schedule(plugin, pod)
        assert is_reserved_for_pod(pod, api.objects[f"{NS}/{CLAIM}"])
    assert len(api.calls) == writes, "reserved for the group already: nothing to write"
    assert len(refs(api)) == 1


async def test_an_entry_that_is_not_the_groups_reserves_for_the_pod() -> None:
    # Same claim, but the pod's entry has another name than the group's: not the group's.
    plugin, api = build([group()])
    pod = member("a", entry="mine")
    await schedule(plugin, pod)
    assert refs(api) == [("", "pods", "pod-a", "a")]


async def test_without_its_pod_group_known_a_pod_reserves_for_itself() -> None:
    plugin, api = build([])
    await schedule(plugin, member("a"))
    assert refs(api) == [("", "pods", "pod-a", "a")]


async def test_a_pod_outside_the_group_is_not_a_consumer_of_the_groups_reservation() -> None:
    plugin, api = build([group()])
    await schedule(plugin, member("a"))
    outsider = member("x", in_group=False)
    assert not is_reserved_for_pod(outsider, api.objects[f"{NS}/{CLAIM}"])
    await schedule(plugin, outsider)
    assert [r[1] for r in refs(api)] == ["podgroups", "pods"]


async def test_a_sibling_takes_the_pending_allocation_and_waits_for_its_write() -> None:
    plugin, api = build([group()])
    node = NodeInfo(WORKER_NODE)
    a, b = member("a"), member("b")
    sa, sb = CycleState(), CycleState()
    plugin.pre_filter(sa, PodInfo(a), [node])
    assert plugin.filter(sa, PodInfo(a), node).is_success()
    plugin.reserve(sa, PodInfo(a), WORKER)
    result, st = plugin.pre_filter(sb, PodInfo(b), [node])
    assert st.is_success(), "not 'in the process of being allocated': a sibling"
    assert result is not None and result.node_names == {WORKER}
    assert plugin.filter(sb, PodInfo(b), node).is_success()
    assert plugin.reserve(sb, PodInfo(b), WORKER).is_success()
    b_bind = asyncio.create_task(plugin.pre_bind(sb, PodInfo(b), WORKER))
    await asyncio.sleep(0)
    assert not b_bind.done()
    assert (await plugin.pre_bind(sa, PodInfo(a), WORKER)).is_success()
    assert (await asyncio.wait_for(b_bind, 5)).is_success()
    assert refs(api) == [("scheduling.k8s.io", "podgroups", "pg", GROUP_UID)]


async def test_unreserve_of_a_member_leaves_the_groups_reservation() -> None:
    plugin, api = build([group()])
    state = await schedule(plugin, member("a"))
    plugin.unreserve(state, PodInfo(member("a")), WORKER)
    await plugin.drain()
    assert refs(api) == [("scheduling.k8s.io", "podgroups", "pg", GROUP_UID)]
    assert api.objects[f"{NS}/{CLAIM}"].status.HasField("allocation")
