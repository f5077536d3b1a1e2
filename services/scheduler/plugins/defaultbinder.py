"""DefaultBinder: the Bind plugin that asks the apiserver to bind the pod (upstream
framework/plugins/defaultbinder).

The handle makes the call, so the scheduler's fencing token (leader election) travels with
every bind without the plugin knowing about leases. A failed call is an Error status: the
binding cycle unreserves, forgets the assumed pod and requeues it.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.scheduler.framework.interface import Handle
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, PodInfo

NAME = "DefaultBinder"


@dataclass
class Args:
    """DefaultBinder takes no arguments."""


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        try:
            await self._handle.bind(pod_info.pod, node_name)
        except Exception as e:  # noqa: BLE001 - any failure of the call is this bind's Error
            return Status.as_error(e, plugin=NAME)
        return Status.success()


def new(args: Args | None, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
