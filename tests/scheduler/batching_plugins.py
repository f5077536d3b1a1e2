"""Out-of-tree plugins for tests/scheduler/test_batching.py, after upstream's
(test/integration/scheduler/batch: testPluginNoSign, testPluginEmptySign;
framework/runtime/batch_test.go: BatchTestPlugin)."""

from __future__ import annotations

from dataclasses import dataclass

from services.scheduler.framework.interface import PluginSpec
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo

#: A pod whose uid starts with this letter blocks the node for every other such pod.
BLOCKING = "b"


@dataclass
class Args:
    pass


class NoSign:
    """A Filter that passes every node and cannot sign a pod (no `sign_pod`)."""

    name = "nosign"

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        return Status.success()


class EmptySign(NoSign):
    """A Filter that passes every node and refuses to sign every pod."""

    name = "emptysign"

    def sign_pod(self, pod_info: PodInfo) -> bytes | None:
        return None


class BatchTest:
    """Each node holds one pod whose uid begins with BLOCKING: such pods block their
    future selves, the others never do (upstream's BatchTestPlugin)."""

    name = "batchTest"

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if pod_info.uid.startswith(BLOCKING) and any(
            p.pod.metadata.uid.startswith(BLOCKING) for p in node_info.pods
        ):
            return Status.unschedulable("unsched")
        return Status.success()

    def sign_pod(self, pod_info: PodInfo) -> bytes | None:
        # The verdict depends on the uid's first letter; upstream's test gives the
        # signature by hand, kubera signs what the plugin reads.
        return pod_info.uid[:1].encode()


NO_SIGN = PluginSpec("nosign", lambda args, handle: NoSign(), Args, ("filter",))
EMPTY_SIGN = PluginSpec("emptysign", lambda args, handle: EmptySign(), Args, ("filter",))
BATCH_TEST = PluginSpec("batchTest", lambda args, handle: BatchTest(), Args, ("filter",))
