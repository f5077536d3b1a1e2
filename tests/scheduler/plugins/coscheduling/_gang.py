"""A handle for Coscheduling over in-memory stores: the PodGroup store, the scheduler's Pod
informer (its handlers only) and one profile's real WaitingPods."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2, podgroup_pb2
from services.client import Handlers
from services.clock import FakeClock, rfc3339
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import PodInfo
from services.scheduler.framework.waiting_pods import WaitingPod, WaitingPods
from services.scheduler.plugins.coscheduling import Args, Coscheduling, new
from tests.builders import POD_GROUP_LABEL, MakePod, pod_group

NOW = 1_800_000_000.0


@dataclass
class _Store:
    store: dict[str, Any] = field(default_factory=dict)
    handlers: list[Handlers] = field(default_factory=list)

    def add_handlers(self, h: Handlers) -> None:
        self.handlers.append(h)


class _Fwk:
    def __init__(self) -> None:
        self.waiting_pods = WaitingPods()


class GangHandle:
    def __init__(self) -> None:
        self.clock = FakeClock(NOW)
        self.pod_groups = _Store()
        self.pods = _Store()
        self.others: dict[str, _Store] = {}
        self.fwk = _Fwk()
        #: Every Handle.activate call: the names of the pods it was given.
        self.activated: list[list[str]] = []

    def informer(self, kind: str) -> _Store:
        """PodGroups are the test's; other kinds (DynamicResources' in the default profile)
        stay empty."""
        if kind == "PodGroup":
            return self.pod_groups
        return self.others.setdefault(kind, _Store())

    def pod_informer(self) -> _Store:
        return self.pods

    def framework_for(self, scheduler_name: str) -> _Fwk:
        return self.fwk

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        wp = self.fwk.waiting_pods.get(uid)
        if wp is not None:
            wp.allow(plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        wp = self.fwk.waiting_pods.get(uid)
        if wp is not None:
            wp.reject(plugin, reason)

    def activate(self, pods: Sequence[core_pb2.Pod]) -> None:
        self.activated.append(sorted(p.metadata.name for p in pods))

    # ------------------------------------------------------------- test side
    def update_pod(self, old: core_pb2.Pod, new: core_pb2.Pod) -> None:
        for h in self.pods.handlers:
            assert h.on_update is not None
            h.on_update(old, new)

    def add_group(self, pg: podgroup_pb2.PodGroup, created: float = NOW) -> None:
        pg.metadata.creation_timestamp = rfc3339(created)
        self.pod_groups.store[f"{pg.metadata.namespace}/{pg.metadata.name}"] = pg

    def add_pods(self, pods: Sequence[core_pb2.Pod]) -> None:
        for p in pods:
            for h in self.pods.handlers:
                assert h.on_add is not None
                h.on_add(p)

    def wait(self, pod: core_pb2.Pod, node: str = "n1") -> WaitingPod:
        """`pod` waits at Permit for Coscheduling (as the framework's run_permit adds it)."""
        wp = WaitingPod(
            PodInfo(pod), node, timeouts={"Coscheduling": 10.0}, pending={"Coscheduling": 1e18}
        )
        self.fwk.waiting_pods.add(wp)
        return wp


def plugin(handle: GangHandle, args: Args | None = None) -> Coscheduling:
    return new(args or Args(), handle)


def member(name: str, group: str = "pg1", namespace: str = "ns", **kw: Any) -> core_pb2.Pod:
    """A pod of `group` (uid = name); `node=`, `gates=`, `priority=`, `cpu=`."""
    b = MakePod().name(name).namespace(namespace).uid(name)
    if group:
        b.label(POD_GROUP_LABEL, group)
    if "cpu" in kw:
        b.req({"cpu": kw["cpu"]})
    else:
        b.container("c", "pause")
    if "node" in kw:
        b.node(kw["node"])
    if "gates" in kw:
        b.scheduling_gates(kw["gates"])
    if "priority" in kw:
        b.priority(kw["priority"])
    return b.obj()


def group(name: str = "pg1", namespace: str = "ns", **kw: Any) -> podgroup_pb2.PodGroup:
    return pod_group(name, namespace, **{"min_member": 1, **kw})


def ok(st: Status) -> bool:
    return st.is_success()
