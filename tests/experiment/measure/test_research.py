"""The research measures (kubera/experiment/measure/research.py, endstate.py), on small
clusters computed by hand: fragmentation (stranded and expected), free devices no pending
pod can use (extended resources and DRA), the queue-drain time; then the same from
objects, as the collector lists them when a run ends."""

from __future__ import annotations

import pytest

from kubera.experiment.measure import endstate, research
from kubera.experiment.measure.research import FreeDevice, NodeFree, PendingPod
from tests.builders import (
    MakeNode,
    MakePod,
    device_class,
    exact_request,
    gpu,
    resource_claim,
    resource_slice,
)

GPU = "nvidia.com/gpu"

# Three nodes, two pending pods. p1 fits n1 only (n2 lacks cpu, n3 memory); p2 fits n1 and
# n2 (n3 lacks memory). So no pending pod fits n3: its free amounts are stranded.
NODES = [
    NodeFree("n1", {"cpu": 2.0, "memory": 4.0, "pods": 10.0}),
    NodeFree("n2", {"cpu": 0.5, "memory": 8.0, "pods": 10.0}),
    NodeFree("n3", {"cpu": 3.0, "memory": 1.0, "pods": 10.0}),
]
PENDING = [
    PendingPod({"cpu": 1.0, "memory": 2.0, "pods": 1.0}),
    PendingPod({"cpu": 0.25, "memory": 1.5, "pods": 1.0}),
]


def test_stranded_capacity_is_the_free_capacity_of_nodes_no_pending_pod_fits() -> None:
    f = research.fragmentation(NODES, PENDING)
    assert f["cpu"]["free"] == 5.5
    assert f["cpu"]["stranded"] == 3.0  # n3's
    assert f["cpu"]["strandedShare"] == pytest.approx(3.0 / 5.5, abs=1e-6)
    assert f["memory"]["stranded"] == 1.0
    assert f["memory"]["strandedShare"] == pytest.approx(1.0 / 13.0, abs=1e-6)
    assert f["pods"] == {
        "free": 30.0,
        "stranded": 10.0,
        "strandedShare": pytest.approx(1 / 3, abs=1e-6),
        "expected": 15.0,  # n1: 0 of 2 misfit, n2: 1 of 2, n3: 2 of 2 → 0 + 5 + 10
        "expectedShare": 0.5,
    }


def test_expected_fragmentation_weighs_each_node_by_the_pending_pods_that_miss_it() -> None:
    f = research.fragmentation(NODES, PENDING)
    # cpu: 2·0/2 + 0.5·1/2 + 3·2/2 = 3.25; memory: 4·0 + 8·1/2 + 1·2/2 = 5
    assert f["cpu"]["expected"] == 3.25
    assert f["cpu"]["expectedShare"] == pytest.approx(3.25 / 5.5, abs=1e-6)
    assert f["memory"]["expected"] == 5.0
    assert f["memory"]["expectedShare"] == pytest.approx(5.0 / 13.0, abs=1e-6)


def test_with_nothing_pending_nothing_is_stranded() -> None:
    f = research.fragmentation(NODES, [])
    assert {r: (v["stranded"], v["expected"]) for r, v in f.items()} == {
        "cpu": (0.0, 0.0),
        "memory": (0.0, 0.0),
        "ephemeral-storage": (0.0, 0.0),
        "pods": (0.0, 0.0),
    }
    assert f["cpu"]["free"] == 5.5


def test_free_gpus_count_as_usable_only_for_a_pending_pod_that_asks_for_them() -> None:
    nodes = [
        NodeFree("g1", {"cpu": 4.0, GPU: 2.0, "pods": 10.0}),
        NodeFree("g2", {"cpu": 0.5, GPU: 4.0, "pods": 10.0}),
        NodeFree("g3", {"cpu": 8.0, "pods": 10.0}),
    ]
    pending = [
        PendingPod({"cpu": 1.0, GPU: 1.0, "pods": 1.0}),  # fits g1 only
        PendingPod({"cpu": 0.1, "pods": 1.0}),  # fits everywhere, wants no GPU
    ]
    devices = research.unusable_devices(nodes, pending)
    assert devices == {GPU: {"free": 6.0, "unusable": 4.0, "unusableShare": 0.666667}}
    # Stranded capacity counts any pod: the CPU-only pod fits g2, so g2's GPUs are not
    # stranded, yet no pod that wants a GPU can use them.
    assert research.fragmentation(nodes, pending)[GPU]["stranded"] == 0.0


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("nvidia.com/gpu", True),
        ("example.com/fpga", True),
        ("cpu", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/batch-slot", False),
        ("attachable-volumes.kubernetes.io/csi", False),
    ],
)
def test_device_resources_are_the_extended_ones(name: str, device: bool) -> None:
    assert research.is_device_resource(name) is device


def test_a_free_dra_device_is_usable_when_a_pending_pod_that_fits_its_node_could_take_it() -> None:
    nodes = [NodeFree("g1", {"cpu": 4.0, "pods": 10.0}), NodeFree("g2", {"cpu": 0.5, "pods": 10.0})]
    pod = PendingPod({"cpu": 1.0, "pods": 1.0}, lambda d: d.driver == "x")  # fits g1 only
    devices = [
        FreeDevice("x", "g1", "d1", "g1"),  # usable
        FreeDevice("x", "g2", "d2", "g2"),  # the pod does not fit g2
        FreeDevice("x", "shared", "d3", None),  # any node: the pod fits g1
        FreeDevice("y", "g1", "d4", "g1"),  # the pod's claims take no y device
    ]
    assert research.unusable_dra_devices(devices, nodes, [pod]) == {
        "x": {"free": 3.0, "unusable": 1.0, "unusableShare": 0.333333},
        "y": {"free": 1.0, "unusable": 1.0, "unusableShare": 1.0},
    }


@pytest.mark.parametrize(
    ("created", "bound", "pending", "want"),
    [
        ([0.0, 1.0, 2.5], [1.2, 3.0, 4.25], 0, 1.75),
        ([0.0, 1.0, 2.5], [1.2, 3.0], 1, None),  # a pod never bound: the queue never drained
        ([], [], 0, None),
        ([5.0], [], 0, 0.0),  # the only pod was deleted before it was bound
    ],
)
def test_queue_drain_is_from_the_last_create_to_the_last_bind(
    created: list[float], bound: list[float], pending: int, want: float | None
) -> None:
    assert research.queue_drain(created, bound, pending) == want


def test_measures_carry_every_figure() -> None:
    out = research.measures(NODES, PENDING, drain=2.0)
    assert out["nodes"] == 3
    assert out["pendingPods"] == 2
    assert out["queueDrainSeconds"] == 2.0
    assert out["fragmentation"]["cpu"]["stranded"] == 3.0
    assert out["unusableDevices"] == {}
    assert "unusableDRADevices" not in out


# ------------------------------------------------------------------- from objects


def _node(name: str, cpu: str, memory: str, **extra: str) -> object:
    alloc = {"cpu": cpu, "memory": memory, "pods": "10", **extra}
    return MakeNode().typed().name(name).allocatable(alloc).capacity(alloc).obj()


def test_end_state_records_subtract_the_bound_pods_and_keep_only_the_pending() -> None:
    state = endstate.EndState(
        objects={
            "Node": [_node("n1", "4", "8Gi", **{GPU: "2"}), _node("n2", "2", "4Gi")],
            "Pod": [
                MakePod().typed().name("b1").node("n1").req({"cpu": "1500m", GPU: "1"}).obj(),
                MakePod().typed().name("b2").node("n1").req({"memory": "2Gi"}).obj(),
                # terminal: its requests are free again
                MakePod()
                .typed()
                .name("done")
                .node("n2")
                .req({"cpu": "2"})
                .phase("Succeeded")
                .obj(),
                MakePod().typed().name("wait").req({"cpu": "3"}).obj(),
                MakePod().typed().name("gated").req({"cpu": "1"}).scheduling_gates(["g"]).obj(),
            ],
        }
    )
    nodes, pending, devices = endstate.records(state)
    free = {n.name: n.free for n in nodes}
    assert free["n1"]["cpu"] == 2.5
    assert free["n1"]["memory"] == 6 * 2**30
    assert free["n1"]["pods"] == 8
    assert free["n1"][GPU] == 1
    assert free["n2"]["cpu"] == 2.0
    assert [p.requests for p in pending] == [{"cpu": 3.0, "pods": 1.0}]
    assert devices == []
    f = research.fragmentation(nodes, pending)
    assert f["cpu"]["stranded"] == 4.5  # the 3-core pod fits neither node


def test_end_state_dra_devices_free_and_taken_by_the_pending_pods_claims() -> None:
    n = _node("g1", "8", "8Gi")
    slices = [
        resource_slice("s1", node="g1", devices=[gpu("gpu-0"), gpu("gpu-1", model="H100")]),
        resource_slice("s2", driver="fpga.example.com", node="g1", devices=[{"name": "fpga-0"}]),
    ]
    taken = resource_claim(
        "taken",
        "default",
        exact_request("r", "gpus"),
        status={
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": "gpu.example.com",
                            "pool": "g1",
                            "device": "gpu-0",
                        }
                    ]
                }
            }
        },
    )
    wants_h100 = resource_claim(
        "want",
        "default",
        exact_request("r", "gpus", 'device.attributes["gpu.example.com"].model == "H100"'),
    )
    state = endstate.EndState(
        objects={
            "Node": [n],
            "Pod": [
                MakePod()
                .typed()
                .name("p")
                .namespace("default")
                .req({"cpu": "1"})
                .resource_claim("c", claim="want")
                .obj()
            ],
            "ResourceSlice": slices,
            "ResourceClaim": [taken, wants_h100],
            "DeviceClass": [device_class("gpus", 'device.driver == "gpu.example.com"')],
        }
    )
    nodes, pending, devices = endstate.records(state)
    assert sorted((d.driver, d.name) for d in devices) == [
        ("fpga.example.com", "fpga-0"),
        ("gpu.example.com", "gpu-1"),
    ]
    assert research.unusable_dra_devices(devices, nodes, pending) == {
        "fpga.example.com": {"free": 1.0, "unusable": 1.0, "unusableShare": 1.0},
        "gpu.example.com": {"free": 1.0, "unusable": 0.0, "unusableShare": 0.0},
    }
