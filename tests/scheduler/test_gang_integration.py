"""Gang scheduling end to end: a real apiserver on real etcd, the scheduler (Coscheduling in
its second default profile, scheduler-plugins-scheduler, which the gangs' pods name), Nodes
as objects, and the controller-manager's PodGroup controller.

What users see: a gang that fits binds whole; a gang that fits only partly binds nobody
(every Bind call the scheduler makes is recorded: none is made) and binds whole once a
node is added; a gang whose quorum times out at Permit goes back to the queue together;
a gang short of members waits gated, and goes once the last member is created, or once
the last member's scheduling gates are removed; a gang whose pods share one unallocated
claim binds whole on the node of the devices the first member's Reserve chose; a labelled
pod that names the default scheduler is no gang member.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import core_pb2, scheduling_pb2
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from services.client import Client, SharedInformers
from services.controllers.podgroup import PodGroupController
from services.scheduler.config import SchedulerConfiguration
from services.scheduler.config.load import load_config
from services.scheduler.metrics import QUEUE_GATED
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler
from tests.builders import (
    POD_GROUP_LABEL,
    MakeNode,
    MakePod,
    device_class,
    exact_request,
    gpu,
    pod_group,
    resource_claim,
    resource_slice,
)
from tests.harness import control_plane, etcd_store
from tests.waiting import eventually

pytestmark = pytest.mark.integration
PODS, POD_GROUPS = BY_KIND["Pod"], BY_KIND["PodGroup"]
#: The profile that runs Coscheduling (config/defaults.py); a gang's pods name it.
GANG_SCHEDULER = "scheduler-plugins-scheduler"


class RecordingClient(Client):
    """The scheduler's client, recording every Bind it sends (pod names)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.bind_calls: list[str] = []

    async def bind(self, name: str, *args: Any, **kw: Any) -> Any:
        self.bind_calls.append(name)
        return await super().bind(name, *args, **kw)


class Gang:
    def __init__(self, api: ApiServer, client: Client, sched: Scheduler, rec: RecordingClient):
        self.api, self.client, self.sched, self.rec = api, client, sched, rec

    async def node(self, name: str, cpu: str) -> None:
        size = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
        n = MakeNode().typed().name(name).label("kubernetes.io/hostname", name)
        await self.api.create(n.allocatable(size).capacity(size).obj())
        await eventually(lambda: name in self.sched.nodes.store)

    async def group(self, name: str, min_member: int, timeout: int | None = None) -> None:
        await self.client.create(pod_group(name, "default", min_member=min_member, timeout=timeout))
        await eventually(lambda: f"default/{name}" in self.sched.kind_informers["PodGroup"].store)

    async def member(
        self, name: str, group: str, cpu: str, scheduler: str = GANG_SCHEDULER, **spec: Any
    ) -> None:
        p = MakePod().typed().name(name).namespace("default").label(POD_GROUP_LABEL, group)
        p.scheduler_name(scheduler).container("c", "i", requests={"cpu": cpu})
        await self.api.create(p.spec(spec).obj())

    async def priorities(self) -> None:
        for name, value in (("low", 0), ("high", 1000)):
            pc = scheduling_pb2.PriorityClass(value=value)
            pc.metadata.name = name
            await self.api.create(pc)

    async def victim(self, name: str, node: str, cpu: str) -> None:
        p = MakePod().typed().name(name).namespace("default").node(node)
        p.container("c", "i", requests={"cpu": cpu})
        spec = {"priorityClassName": "low", "terminationGracePeriodSeconds": 0}
        await self.api.create(p.spec(spec).obj())
        await eventually(
            lambda: any(q.metadata.name == name for q in self.sched.pods.store.values())
        )

    async def exists(self, name: str) -> bool:
        try:
            await self.client.get(PODS, name, "default")
        except NotFoundError:
            return False
        return True

    async def bound(self) -> dict[str, str]:
        items, _ = await self.client.list(PODS, namespace="default")
        return {p.metadata.name: p.spec.node_name for p in items if p.spec.node_name}

    async def message(self, name: str) -> str:
        p: core_pb2.Pod = await self.client.get(PODS, name, "default")
        for c in p.status.conditions:
            if c.type == "PodScheduled" and c.status == "False":
                return str(c.message)
        return ""


async def _gang(
    etcd: EtcdProcess, cfg: SchedulerConfiguration | None = None, *, max_binding_tasks: int = 256
) -> AsyncIterator[Gang]:
    async with (
        etcd_store(etcd.endpoint, wipe_prefix="/registry/") as storage,
        control_plane(storage) as cp,
    ):
        rec = cp.new_client(RecordingClient)
        options = SchedulerOptions(
            component_config=cfg, seed=7, max_binding_tasks=max_binding_tasks
        )
        sched = cp.scheduler(options, client=rec, start=False)
        informers = SharedInformers(cp.client)
        controller = PodGroupController(cp.client, informers)  # its handlers, then start
        cp.defer(informers.stop)
        informers.start()
        cp.run(sched, controller)
        await eventually(lambda: sched.pods.synced.is_set())
        yield Gang(cp.api, cp.client, sched, rec)


@pytest.fixture
async def gang(etcd_server: EtcdProcess) -> AsyncIterator[Gang]:
    async for g in _gang(etcd_server):
        yield g


async def test_a_gang_that_fits_binds_whole_and_its_status_says_scheduled(gang: Gang) -> None:
    await gang.node("n1", "4")
    await gang.node("n2", "4")
    await gang.group("pg", 3)
    for i in range(3):
        await gang.member(f"g{i}", "pg", "1")
    assert set(await eventually(lambda: _all(gang, 3), timeout=20)) == {"g0", "g1", "g2"}
    assert sorted(gang.rec.bind_calls) == ["g0", "g1", "g2"]

    async def scheduled() -> Any:
        pg = await gang.client.get(POD_GROUPS, "pg", "default")
        return pg if pg.status.phase == "Scheduled" else None

    pg = await eventually(scheduled, timeout=20)
    assert pg.status.scheduled == 3 and pg.status.schedule_start_time


async def test_a_gang_larger_than_the_binding_slots_binds_whole(etcd_server: EtcdProcess) -> None:
    """Members waiting at Permit hold no binding slot: a gang of 5 under 2 slots would
    otherwise block the scheduling loop on the 3rd member until the Permit timeout."""
    async for gang in _gang(etcd_server, max_binding_tasks=2):
        await gang.node("n1", "8")
        await gang.group("pg", 5, timeout=600)
        for i in range(5):
            await gang.member(f"g{i}", "pg", "1")
        found = await eventually(lambda g=gang: _all(g, 5), timeout=20)  # type: ignore[misc]
        assert set(found) == {f"g{i}" for i in range(5)}
        assert sorted(gang.rec.bind_calls) == [f"g{i}" for i in range(5)]


async def test_a_gang_that_fits_only_partly_binds_nobody_until_a_node_is_added(
    gang: Gang,
) -> None:
    await gang.node("n1", "4")
    await gang.group("pg", 3)
    for i in range(3):
        await gang.member(f"g{i}", "pg", "2")  # two fit on n1, the third nowhere

    async def all_refused() -> bool:
        msgs = [await gang.message(f"g{i}") for i in range(3)]
        return all(msgs)

    await eventually(all_refused, timeout=20)
    # The two that fit were assumed and waited at Permit, then rejected with the third.
    msgs = {await gang.message(f"g{i}") for i in range(3)}
    assert any("optimistic rejection in PostFilter" in m or "Unreserve" in m for m in msgs), msgs
    assert gang.rec.bind_calls == []
    assert await gang.bound() == {}
    await eventually(lambda: len(gang.sched.frameworks[GANG_SCHEDULER].waiting_pods) == 0)

    await gang.node("n2", "4")
    found = await eventually(lambda: _all(gang, 3), timeout=30)
    assert set(found) == {"g0", "g1", "g2"}
    assert sorted(gang.rec.bind_calls) == ["g0", "g1", "g2"]  # each bound once, together


async def test_the_default_profile_ignores_the_pod_group_label(gang: Gang) -> None:
    """Coscheduling runs in scheduler-plugins-scheduler only: a labelled pod that names the
    default scheduler binds alone, though its group needs three."""
    await gang.node("n1", "4")
    await gang.group("pg", 3)
    await gang.member("solo", "pg", "1", scheduler="default-scheduler")
    assert await eventually(lambda: _all(gang, 1), timeout=20) == {"solo": "n1"}
    assert gang.rec.bind_calls == ["solo"]


async def test_a_gang_short_of_members_waits_gated_until_the_last_one_is_created(
    gang: Gang,
) -> None:
    await gang.node("n1", "4")
    await gang.group("pg", 3)
    await gang.member("g0", "pg", "1")
    await gang.member("g1", "pg", "1")

    def gated() -> bool:
        names = {p.metadata.name for p in gang.sched.queue.pending_pods()[QUEUE_GATED]}
        return names == {"g0", "g1"}

    await eventually(gated)
    assert gang.rec.bind_calls == []
    assert await gang.message("g0") == ""  # gated pods are not attempted, so not refused
    await gang.member("g2", "pg", "1")
    assert set(await eventually(lambda: _all(gang, 3), timeout=20)) == {"g0", "g1", "g2"}


async def test_a_gang_whose_scheduling_gates_are_removed_one_at_a_time_binds_whole(
    gang: Gang,
) -> None:
    await gang.node("n1", "4")
    await gang.group("pg", 2)
    for name in ("a", "b"):
        p = MakePod().typed().name(name).namespace("default").label(POD_GROUP_LABEL, "pg")
        p.scheduler_name(GANG_SCHEDULER).container("c", "i", requests={"cpu": "1"})
        p.scheduling_gates(["example.com/hold"])
        await gang.api.create(p.obj())

    async def ungate(name: str) -> None:
        pod: core_pb2.Pod = await gang.client.get(PODS, name, "default")
        del pod.spec.scheduling_gates[:]
        await gang.client.update(pod)

    def gated(names: set[str]) -> Any:
        queued = gang.sched.queue.pending_pods()[QUEUE_GATED]
        return {p.metadata.name for p in queued if not p.spec.scheduling_gates} == names

    await ungate("a")
    await eventually(lambda: gated({"a"}))  # a now waits for its quorum (Coscheduling)
    await ungate("b")  # completes it: a must be woken too, not only b
    assert await eventually(lambda: _all(gang, 2), timeout=20) == {"a": "n1", "b": "n1"}
    assert sorted(gang.rec.bind_calls) == ["a", "b"]


async def test_a_gang_sharing_one_unallocated_claim_binds_whole_on_the_claims_node(
    gang: Gang,
) -> None:
    driver = "gpu.example.com"
    await gang.api.create(device_class("gpu", f'device.driver == "{driver}"'))
    for node, model in (("n1", "T4"), ("n2", "A100")):
        await gang.node(node, "4")
        await gang.api.create(
            resource_slice(
                f"{node}-gpu-example-com",
                driver=driver,
                node=node,
                devices=[gpu("gpu-0", model=model, index=0)],
            )
        )
    sel = f'device.attributes["{driver}"].model == "A100"'
    await gang.api.create(resource_claim("shared", "default", exact_request("gpu", "gpu", sel)))
    await eventually(lambda: len(gang.sched.kind_informers["ResourceSlice"].store) == 2)
    await gang.group("pg", 2, timeout=10)
    for name in ("s1", "s2"):
        p = MakePod().typed().name(name).namespace("default").label(POD_GROUP_LABEL, "pg")
        p.scheduler_name(GANG_SCHEDULER).container("c", "i", requests={"cpu": "1"})
        await gang.api.create(p.resource_claim("gpu", claim="shared").container_claims("gpu").obj())
    assert await eventually(lambda: _all(gang, 2), timeout=20) == {"s1": "n2", "s2": "n2"}
    assert sorted(gang.rec.bind_calls) == ["s1", "s2"]  # each bound once, with its sibling
    claim = await gang.client.get(BY_KIND["ResourceClaim"], "shared", "default")
    assert [r.device for r in claim.status.allocation.devices.results] == ["gpu-0"]
    assert claim.status.allocation.node_selector.node_selector_terms[0].match_fields[0].values == [
        "n2"
    ]
    assert sorted(r.name for r in claim.status.reserved_for) == ["s1", "s2"]


async def test_a_gang_whose_quorum_times_out_goes_back_together(
    etcd_server: EtcdProcess,
) -> None:
    # With podGroupRejectPercentage 100 the failing member does not reject its waiting
    # siblings at PostFilter: they wait at Permit until the group's 1 s timeout.
    cfg = load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "  - schedulerName: scheduler-plugins-scheduler\n"
        "    plugins:\n"
        "      multiPoint: {enabled: [{name: Coscheduling}]}\n"
        "      queueSort: {disabled: [{name: Coscheduling}]}\n"
        "    pluginConfig:\n"
        "      - name: Coscheduling\n"
        "        args:\n"
        "          podGroupRejectPercentage: 100\n"
    )
    async for gang in _gang(etcd_server, cfg):
        await gang.node("n1", "4")
        await gang.group("pg", 3, timeout=1)
        for i in range(3):
            await gang.member(f"g{i}", "pg", "2")
        await _times_out_together(gang)


async def _times_out_together(gang: Gang) -> None:
    fwk = gang.sched.frameworks[GANG_SCHEDULER]
    await eventually(lambda: len(fwk.waiting_pods) == 2, timeout=20)

    async def both_back() -> bool:
        return bool(await gang.message("g0")) and bool(await gang.message("g1"))

    await eventually(both_back, timeout=20)
    msgs = [await gang.message("g0"), await gang.message("g1")]
    timeout = "rejected due to timeout after waiting 1s at plugin Coscheduling"
    assert any(timeout in m for m in msgs), msgs
    assert all(timeout in m or "rejection in Unreserve" in m for m in msgs), msgs
    assert gang.rec.bind_calls == []
    assert await gang.bound() == {}


async def test_a_gang_that_would_fit_only_partly_after_preemption_preempts_nobody(
    gang: Gang,
) -> None:
    await gang.priorities()
    await gang.node("n1", "4")
    await gang.victim("low", "n1", "4")
    await gang.group("pg", 3)
    for i in range(3):  # preempting "low" frees room for two of the three
        await gang.member(f"g{i}", "pg", "2", priorityClassName="high")

    async def refused() -> bool:
        return all([await gang.message(f"g{i}") for i in range(3)])

    await eventually(refused, timeout=20)
    msgs = {await gang.message(f"g{i}") for i in range(3)}
    assert any("would fit after preemption" in m for m in msgs), msgs
    assert await gang.exists("low")
    assert gang.rec.bind_calls == []


async def test_a_gang_that_fits_whole_after_preemption_preempts_and_binds(gang: Gang) -> None:
    await gang.priorities()
    await gang.node("n1", "4")
    await gang.victim("low", "n1", "4")
    await gang.group("pg", 2)
    for i in range(2):
        await gang.member(f"g{i}", "pg", "2", priorityClassName="high")

    async def victim_gone() -> bool:
        return not await gang.exists("low")

    await eventually(victim_gone, timeout=20)
    found = await eventually(lambda: _all(gang, 2), timeout=30)
    assert found == {"g0": "n1", "g1": "n1"}


def _all(gang: Gang, n: int) -> Any:
    """The bound pods, once `n` are bound (eventually() polls a sync callable)."""
    store = gang.sched.pods.store
    bound = {p.metadata.name: p.spec.node_name for p in store.values() if p.spec.node_name}
    return bound if len(bound) == n else None
