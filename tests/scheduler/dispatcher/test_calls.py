"""The scheduler's API calls (upstream framework/api_calls/pod_status_patch_test.go and
pod_binding's rules, their cases as data): a status patch is a no-op when the pod already
has its conditions and nominated node; a newer patch takes the older one's nomination and
conditions it does not set itself; sync takes the newer pod as the base until the call
runs; execute writes nothing for a no-op; a binding carries the token it was queued with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.dispatcher import PodBindingCall, PodStatusPatchCall

SCHEDULED_FALSE = core_pb2.PodCondition(type="PodScheduled", status="False")
SCHEDULED_TRUE = core_pb2.PodCondition(type="PodScheduled", status="True")


def pod_with_node(nominated: str = "node-a") -> core_pb2.Pod:
    p = core_pb2.Pod(metadata={"uid": "uid", "name": "pod", "namespace": "ns"})
    p.status.nominated_node_name = nominated
    p.status.conditions.append(core_pb2.PodCondition(type="PodScheduled", status="False"))
    return p


#: upstream TestPodStatusPatchCall_IsNoOp: (rule, condition, nominated, no-op)
NOOP_CASES = [
    ("no-op when condition and node name match", SCHEDULED_FALSE, "node-a", True),
    ("not a no-op when the condition differs", SCHEDULED_TRUE, "node-a", False),
    ("not a no-op when the nominated node differs", SCHEDULED_FALSE, "node-b", False),
    ("no-op when there is no condition and the node matches", None, "node-a", True),
    ("not a no-op when there is no condition but the node differs", None, "node-b", False),
    (
        "no-op when nothing is nominated (mode noop) and the condition matches",
        SCHEDULED_FALSE,
        None,
        True,
    ),
    (
        "not a no-op when the condition's message differs",
        core_pb2.PodCondition(type="PodScheduled", status="False", message="0/1 nodes"),
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("condition", "nominated", "noop"),
    [c[1:] for c in NOOP_CASES],
    ids=[c[0] for c in NOOP_CASES],
)
def test_status_patch_is_noop(condition, nominated, noop: bool) -> None:
    call = PodStatusPatchCall(pod_with_node(), [condition] if condition else [], nominated)
    assert call.is_noop() == noop


#: upstream TestPodStatusPatchCall_Merge: (rule, old call, new call, merged nomination,
#: merged condition types)
MERGE_CASES = [
    (
        "merges the nomination and condition of the old call",
        ([SCHEDULED_FALSE], "node-a"),
        ([], None),
        "node-a",
        ["PodScheduled"],
    ),
    (
        "does not overwrite the nomination and condition of the new call",
        ([], None),
        ([SCHEDULED_FALSE], "node-b"),
        "node-b",
        ["PodScheduled"],
    ),
    (
        "a newer clearing of the nomination wins over an older one",
        ([], "node-a"),
        ([], ""),
        "",
        [],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "nominated", "types"),
    [c[1:] for c in MERGE_CASES],
    ids=[c[0] for c in MERGE_CASES],
)
def test_status_patch_merge(old, new, nominated, types) -> None:
    p = core_pb2.Pod(metadata={"uid": "uid"})
    old_call = PodStatusPatchCall(p, *old)
    new_call = PodStatusPatchCall(p, *new)
    new_call.merge(old_call)
    assert new_call.nominated == nominated
    assert [c.type for c in new_call.conditions] == types


def test_status_patch_merge_refuses_another_type() -> None:
    p = core_pb2.Pod(metadata={"uid": "uid"})
    with pytest.raises(TypeError):
        PodStatusPatchCall(p).merge(PodBindingCall(p, "n1"))


@pytest.mark.parametrize(
    ("executed", "base_after"),
    [(False, "node-b"), (True, "node-a")],
    ids=["before execution the newer pod is the base", "during or after execution it is not"],
)
def test_status_patch_sync(executed: bool, base_after: str) -> None:
    call = PodStatusPatchCall(pod_with_node(), [], "node-c")
    call.executed = executed
    updated = pod_with_node("node-b")
    synced = call.sync(updated)
    assert call.status.nominated_node_name == base_after
    assert synced.status.nominated_node_name == "node-c"
    assert updated.status.nominated_node_name == "node-b"  # the informer's copy untouched


class PatchClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, str, dict[str, Any], bool]] = []
        self.binds: list[dict[str, Any]] = []

    async def patch(self, kind, name, merge_patch, *, namespace="", status=False):
        self.patches.append((namespace, name, json.loads(merge_patch), status))
        return core_pb2.Pod()

    async def bind(self, name, node_name, namespace="default", **kwargs):
        self.binds.append({"name": name, "node": node_name, "namespace": namespace, **kwargs})
        return core_pb2.Pod()


async def test_status_patch_execute_writes_the_status_subresource() -> None:
    client = PatchClient()
    cond = core_pb2.PodCondition(
        type="PodScheduled",
        status="False",
        reason="Unschedulable",
        message="0/3 nodes",
        last_transition_time="2026-01-01T00:00:00Z",
    )
    p = pod_with_node()
    p.status.conditions[0].last_transition_time = "2025-06-01T00:00:00Z"
    p.status.conditions.append(core_pb2.PodCondition(type="Ready", status="False"))
    call = PodStatusPatchCall(p, [cond], "")
    await call.execute(client)
    assert call.executed
    [(ns, name, body, status)] = client.patches
    assert (ns, name, status) == ("ns", "pod", True)
    assert body["status"]["nominatedNodeName"] == ""
    conds = {c["type"]: c for c in body["status"]["conditions"]}
    assert set(conds) == {"PodScheduled", "Ready"}  # the list is replaced whole
    assert conds["PodScheduled"]["message"] == "0/3 nodes"
    # the status stayed False: the transition time is the old one's
    assert conds["PodScheduled"]["lastTransitionTime"] == "2025-06-01T00:00:00Z"


async def test_status_patch_execute_skips_the_api_call_when_nothing_changes() -> None:
    client = PatchClient()
    await PodStatusPatchCall(pod_with_node(), [], "node-a").execute(client)
    assert client.patches == []


async def test_binding_carries_the_token_it_was_queued_with() -> None:
    client = PatchClient()
    p = core_pb2.Pod(metadata={"uid": "u1", "name": "p", "namespace": "ns"})
    call = PodBindingCall(p, "n1", fencing=("/election/key", 7))
    await call.execute(client)
    assert client.binds == [
        {
            "name": "p",
            "node": "n1",
            "namespace": "ns",
            "uid": "u1",
            "fencing": ("/election/key", 7),
            "check_allocation": False,
        }
    ]
    assert not call.is_noop() and call.sync(p) is p
