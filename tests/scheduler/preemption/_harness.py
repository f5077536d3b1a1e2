"""A DefaultPreemption plugin on a real Framework (PrioritySort, the chosen PreFilter/Filter
plugins, DefaultPreemption, DefaultBinder) over NodeInfos a test builds, with a client that
records what preemption writes (upstream's fake clientset and informers)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from protos.kubera.v1 import core_pb2, policy_pb2
from services.api.machinery.errors import NotFoundError
from services.clock import FakeClock
from services.scheduler.config import EnabledPlugin, Profile
from services.scheduler.framework.interface import PluginSpec
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins import defaultpreemption
from services.scheduler.registry import in_tree_registry
from tests.builders import MakeNode, MakePod
from tests.scheduler.plugins._fakes import FakeSnapshot

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}


def node(name: str, alloc: dict[str, str], **labels: str) -> core_pb2.Node:
    size = {"pods": "110", **alloc}
    return (
        MakeNode()
        .name(name)
        .labels({"kubernetes.io/hostname": name, **labels})
        .allocatable(size)
        .capacity(size)
        .obj()
    )


def pod(
    name: str,
    priority: int | None = None,
    *,
    node_name: str = "",
    req: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    start: str = "",
    **spec: Any,
) -> core_pb2.Pod:
    b = MakePod().name(name).uid(name).namespace("default").labels(labels or {})
    if priority is not None:
        b.priority(priority)
    if node_name:
        b.node(node_name)
    b.req(req or {})
    if spec:
        b.spec(spec)
    p = b.obj()
    p.spec.scheduler_name = "default-scheduler"
    if start:
        p.status.start_time = start
    return p


def pdb(
    name: str,
    match: dict[str, str],
    allowed: int = 0,
    disrupted: Sequence[str] = (),
) -> policy_pb2.PodDisruptionBudget:
    b = policy_pb2.PodDisruptionBudget()
    b.metadata.name, b.metadata.namespace = name, "default"
    b.spec.selector.match_labels.update(match)
    b.status.disruptions_allowed = allowed
    for d in disrupted:
        b.status.disrupted_pods[d] = "2026-01-01T00:00:00Z"
    return b


class FakeClient:
    """Records patches, deletes and created objects (events)."""

    def __init__(self, missing: Sequence[str] = ()) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.deleted: list[str] = []
        self.created: list[Any] = []
        self.missing = set(missing)

    async def create(self, obj: Any) -> Any:
        self.created.append(obj)
        return obj

    async def patch(
        self, kind: Any, name: str, merge_patch: str, *, namespace: str = "", status: bool = False
    ) -> Any:
        if name in self.missing:
            raise NotFoundError(f'pods "{name}" not found')
        self.patches.append((name, json.loads(merge_patch)))
        return None

    async def delete(self, kind: Any, name: str, namespace: str = "", *, uid: str = "") -> Any:
        if name in self.missing:
            raise NotFoundError(f'pods "{name}" not found')
        self.deleted.append(name)
        return None


class ErrorOnLabel:
    """upstream's TestPlugin: a PreFilter whose RemovePod fails on nodes labelled error."""

    name = "TestPlugin"

    def pre_filter(self, state: CycleState, pi: PodInfo, nodes: Any) -> tuple[None, Status]:
        return None, Status.success()

    def add_pod(self, state: CycleState, pi: PodInfo, other: PodInfo, ni: NodeInfo) -> Status:
        return Status.success()

    def remove_pod(self, state: CycleState, pi: PodInfo, other: PodInfo, ni: NodeInfo) -> Status:
        if ni.node is not None and "error" in ni.node.metadata.labels:
            return Status.as_error(RuntimeError(f"failed to remove pod: {pi.pod.metadata.name}"))
        return Status.success()


class Harness:
    """handle + framework + plugin; `rand` is the dry runs' offset source."""

    def __init__(
        self,
        nodes: Sequence[core_pb2.Node],
        pods: Sequence[core_pb2.Pod] = (),
        pdbs: Sequence[policy_pb2.PodDisruptionBudget] = (),
        *,
        filters: Sequence[str] = ("NodeResourcesFit",),
        test_plugin: bool = False,
        args: defaultpreemption.Args | None = None,
        offset: int = 0,
        client: FakeClient | None = None,
    ) -> None:
        infos = []
        for n in nodes:
            ni = NodeInfo(n)
            for p in pods:
                if p.spec.node_name == n.metadata.name:
                    ni.add_pod(PodInfo(p))
            infos.append(ni)
        self._snapshot = FakeSnapshot(infos)
        self.clock = FakeClock()
        self.cluster_clock = self.clock
        self.client = client or FakeClient()
        self.nominator = Nominator()
        self._pdbs = list(pdbs)
        self.offset = offset
        self.rand_calls: list[int] = []
        registry = dict(in_tree_registry())
        pre = list(filters)
        if test_plugin:
            registry["TestPlugin"] = PluginSpec("TestPlugin", lambda a, h: ErrorOnLabel())
            pre.append("TestPlugin")
        plugins = {
            "queueSort": [EnabledPlugin("PrioritySort")],
            "preFilter": [EnabledPlugin(n) for n in pre if n != "NodeUnschedulable"],
            "filter": [EnabledPlugin(n) for n in filters],
            "postFilter": [EnabledPlugin("DefaultPreemption")],
            "bind": [EnabledPlugin("DefaultBinder")],
        }
        pre_capable = {"NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "TestPlugin"}
        plugins["preFilter"] = [e for e in plugins["preFilter"] if e.name in pre_capable]
        config = {"DefaultPreemption": args} if args is not None else {}
        profile = Profile("default-scheduler", plugins, config)
        self.fwk = Framework(profile, registry, handle=self)  # type: ignore[arg-type]
        self.plugin: defaultpreemption.DefaultPreemption = self.fwk.plugins["DefaultPreemption"]

    # ---- the handle
    def snapshot(self) -> FakeSnapshot:
        return self._snapshot

    def framework_for(self, name: str) -> Framework | None:
        return self.fwk

    def pdbs(self) -> list[Any]:
        return self._pdbs

    def rand_int(self, n: int) -> int:
        self.rand_calls.append(n)
        return self.offset % n

    def reject_preempted_waiting_pod(self, uid: str) -> bool:
        return False

    async def bind(self, pod: core_pb2.Pod, node_name: str) -> None: ...

    def allow_waiting_pod(self, uid: str, plugin: str) -> None: ...

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None: ...

    # ---- running it
    def state_for(self, p: core_pb2.Pod) -> tuple[CycleState, PodInfo]:
        state, pi = CycleState(), PodInfo(p)
        self.fwk.run_pre_filter(state, pi, list(self._snapshot.list()))
        return state, pi
