"""What the UI's stream says of a node, a pod, a lease and an event (services/ui/deltas.py),
and how unsent deltas coalesce."""

from __future__ import annotations

import json

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import coordination_pb2, core_pb2
from services.ui.deltas import MAX_EVENTS, Coalescer, delta, frame
from tests.builders import MakeNode, MakePod, resource_claim, resource_slice

ZONE = "topology.kubernetes.io/zone"


def test_a_node_delta_holds_its_zone_allocatable_condition_and_taints() -> None:
    node = (
        MakeNode()
        .name("n1")
        .label(ZONE, "zone-a")
        .allocatable({"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "2"})
        .condition("Ready", "True")
        .condition("MemoryPressure", "True")
        .condition("DiskPressure", "False")
        .taints([{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
        .unschedulable()
        .obj()
    )
    assert delta("nodes", "ADDED", node) == {
        "t": "node",
        "name": "n1",
        "zone": "zone-a",
        "alloc": {"cpu": 4000, "memory": 8 * 2**30, "pods": 110, "example.com/gpu": 2},
        "ready": "True",
        "unsched": True,
        "taints": ["dedicated=ml:NoSchedule"],
        "pressure": ["MemoryPressure"],
    }


def test_a_node_without_a_ready_condition_is_unknown() -> None:
    assert delta("nodes", "ADDED", MakeNode().name("n1").obj())["ready"] == "Unknown"


def test_a_pending_pod_carries_the_schedulers_reason_and_its_requests() -> None:
    pod = (
        MakePod()
        .name("p")
        .namespace("ns")
        .req({"cpu": "250m", "memory": "64Mi"})
        .phase("Pending")
        .obj()
    )
    pod.status.conditions.add(
        type="PodScheduled",
        status="False",
        reason="Unschedulable",
        message="0/3 nodes are available: 3 Insufficient cpu.",
    )
    pod.status.nominated_node_name = "n2"
    assert delta("pods", "ADDED", pod) == {
        "t": "pod",
        "ns": "ns",
        "name": "p",
        "phase": "Pending",
        "node": "",
        "req": {"cpu": 250, "memory": 64 * 2**20, "pods": 1},
        "why": "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.",
        "nominated": "n2",
    }


def test_a_bound_pod_carries_its_node_and_scheduling_latency() -> None:
    pod = (
        MakePod()
        .name("p")
        .namespace("ns")
        .node("n1")
        .phase("Running")
        .creation_timestamp("2026-12-08T01:00:00Z")
        .condition("PodScheduled", "True", "2026-12-08T01:00:03Z")
        .deletion_timestamp("2026-12-08T01:05:00Z")
        .obj()
    )
    d = delta("pods", "MODIFIED", pod)
    assert (d["node"], d["phase"], d["lat"], d["del"]) == ("n1", "Running", 3.0, True)
    assert "why" not in d


def test_a_pod_with_no_phase_yet_is_pending() -> None:
    assert delta("pods", "ADDED", MakePod().name("p").obj())["phase"] == "Pending"


@pytest.mark.parametrize(
    ("resource", "obj", "expected"),
    [
        ("nodes", MakeNode().name("n1").obj(), {"t": "node", "ns": "", "name": "n1"}),
        (
            "pods",
            MakePod().name("p").namespace("ns").phase("Running").obj(),
            {"t": "pod", "ns": "ns", "name": "p"},
        ),
    ],
)
def test_a_deletion_says_only_which_object_is_gone(
    resource: str, obj: Message, expected: dict[str, str]
) -> None:
    assert delta(resource, "DELETED", obj) == {**expected, "gone": True}


def test_a_lease_delta_holds_its_holder_and_transitions() -> None:
    lease = coordination_pb2.Lease()
    lease.metadata.name, lease.metadata.namespace = "kube-scheduler", "kube-system"
    lease.spec.holder_identity = "sched-b"
    lease.spec.lease_transitions = 3
    lease.spec.renew_time = "2026-12-08T01:00:00.000000Z"
    d = delta("leases", "MODIFIED", lease)
    assert (d["ns"], d["name"], d["holder"], d["transitions"]) == (
        "kube-system",
        "kube-scheduler",
        "sched-b",
        3,
    )


def test_an_event_delta_names_its_object_and_cuts_long_messages() -> None:
    ev = core_pb2.Event(type="Warning", reason="Evicted", message="x" * 1000)
    ev.involved_object.kind, ev.involved_object.namespace = "Pod", "ns"
    ev.involved_object.name = "p"
    d = delta("events", "ADDED", ev)
    assert (d["type"], d["reason"], d["obj"]) == ("Warning", "Evicted", "Pod/ns/p")
    assert len(d["msg"]) == 400


def test_unsent_changes_of_one_object_coalesce_into_its_latest() -> None:
    c = Coalescer()
    for phase in ("Pending", "Running", "Succeeded"):
        c.add({"t": "pod", "ns": "ns", "name": "p", "phase": phase})
    c.add({"t": "pod", "ns": "other", "name": "p", "phase": "Pending"})
    c.add({"t": "node", "name": "p"})
    taken = c.take()
    assert [(d["t"], d.get("ns"), d.get("phase")) for d in taken] == [
        ("pod", "ns", "Succeeded"),
        ("pod", "other", "Pending"),
        ("node", None, None),
    ]
    assert c.take() == []


def test_events_are_not_coalesced_but_only_the_newest_are_kept() -> None:
    c = Coalescer()
    for i in range(MAX_EVENTS + 5):
        c.add({"t": "event", "msg": str(i)})
    taken = c.take()
    assert len(taken) == MAX_EVENTS
    assert taken[-1]["msg"] == str(MAX_EVENTS + 4)


def test_a_reset_resource_drops_its_unsent_deltas() -> None:
    c = Coalescer()
    c.add({"t": "pod", "ns": "ns", "name": "p"})
    c.add({"t": "node", "name": "n"})
    c.drop("pod")
    assert [d["t"] for d in c.take()] == ["node"]


def test_a_frame_is_one_server_sent_event_of_one_json_line() -> None:
    data = [{"t": "pod", "msg": "two\nlines"}]
    raw = frame("deltas", data)
    assert raw.endswith(b"\n\n")
    head, body = raw.decode().rstrip("\n").split("\n")
    assert head == "event: deltas"
    assert json.loads(body.removeprefix("data: ")) == data


def test_a_slice_delta_counts_the_devices_it_offers_its_node() -> None:
    rs = resource_slice(
        "n1-gpus", node="n1", devices=[{"name": "gpu-0"}, {"name": "gpu-1"}], pool="n1"
    )
    assert delta("resourceslices", "ADDED", rs) == {
        "t": "slice",
        "ns": "",
        "name": "n1-gpus",
        "node": "n1",
        "driver": "gpu.example.com",
        "pool": "n1",
        "devices": 2,
    }


def test_a_claim_delta_lists_its_allocated_devices() -> None:
    allocated = resource_claim(
        "c",
        "ns",
        status={
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": "gpu.example.com",
                            "pool": "n1",
                            "device": "gpu-1",
                        }
                    ]
                }
            }
        },
    )
    assert delta("resourceclaims", "MODIFIED", allocated)["devices"] == [
        ["gpu.example.com", "n1", "gpu-1"]
    ]
    assert delta("resourceclaims", "ADDED", resource_claim("c", "ns"))["devices"] == []
    assert delta("resourceclaims", "DELETED", allocated) == {
        "t": "claim",
        "ns": "ns",
        "name": "c",
        "gone": True,
    }
