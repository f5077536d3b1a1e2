"""An out-of-tree Filter plugin that raises for pods named "boom-*" (a plugin bug, on
purpose), for tests/scheduler/test_poison.py."""

from __future__ import annotations

from dataclasses import dataclass

from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo

NAME = "RaisesForBoom"
EXTENSION_POINTS = ("filter",)


@dataclass
class Args:
    pass


class RaisesForBoom:
    name = NAME

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if pod_info.pod.metadata.name.startswith("boom"):
            raise ZeroDivisionError("the plugin divided by zero")
        return Status.success()


def new(args: Args | None, handle: object) -> RaisesForBoom:
    return RaisesForBoom()
