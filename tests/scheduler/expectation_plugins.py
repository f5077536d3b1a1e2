"""Out-of-tree plugins for tests/scheduler/test_nominated_for_expectation.py, after
upstream's RunForeverPreBindPlugin and FakePermitPlugin
(test/integration/scheduler/nominated_node_name): a PreBind that has work for every pod
and runs until the test tells it how to end, and Permit plugins that Wait or allow."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from services.scheduler.framework.interface import PluginSpec
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, PodInfo

#: Pod name -> how its PreBind ends, one outcome per attempt ("ok" or "fail").
OUTCOMES: dict[str, asyncio.Queue[str]] = {}
#: Pod names whose PreBind started, in order.
ENTERED: list[str] = []
PERMIT_TIMEOUT = 600.0


@dataclass
class Args:
    pass


class RunForeverPreBind:
    name = "RunForeverPreBind"

    def pre_bind_pre_flight(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        return Status.success()

    async def pre_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        name = pod_info.pod.metadata.name
        ENTERED.append(name)
        outcome = await OUTCOMES.setdefault(name, asyncio.Queue()).get()
        return (
            Status.success()
            if outcome == "ok"
            else Status.as_error(RuntimeError("pre-bind failed"))
        )


class FakePermit:
    def __init__(self, name: str, wait: bool) -> None:
        self.name, self._wait = name, wait

    def permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> tuple[Status, float]:
        return (Status.wait(), PERMIT_TIMEOUT) if self._wait else (Status.success(), 0.0)


PRE_BIND = PluginSpec(
    "RunForeverPreBind", lambda args, handle: RunForeverPreBind(), Args, ("preBind",)
)
PERMIT_WAIT = PluginSpec(
    "FakePermitWait", lambda args, handle: FakePermit("FakePermitWait", True), Args, ("permit",)
)
PERMIT_ALLOW = PluginSpec(
    "FakePermitAllow", lambda args, handle: FakePermit("FakePermitAllow", False), Args, ("permit",)
)
