"""The volume filters (VolumeZone, NodeVolumeLimits, VolumeRestrictions) in the whole
scheduler against a real gRPC apiserver (in-memory storage): their listers are the
scheduler's informers, their rejections reach the trace `kubera explain pod` prints, and a
change to a volume object (a PV relabelled, a CSINode's limit raised) requeues the pod
through the plugins' queueing hints.

No PV controller runs here: claims are created already bound (spec.volumeName)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubera.cli.scheduling import render_attempts
from protos.kubera.v1 import storagev1_pb2
from services.api.machinery.kinds import BY_KIND
from services.scheduler.options import SchedulerOptions
from services.scheduler.server import attempt_to_proto
from tests.builders import MakePod, persistent_volume, persistent_volume_claim
from tests.harness import control_plane
from tests.scheduler.test_scheduler_integration import Cluster
from tests.waiting import eventually

NS = "default"
ZONE = "topology.kubernetes.io/zone"
DRIVER = "hollow.kubera.io"
PVS, CSINODES = BY_KIND["PersistentVolume"], BY_KIND["CSINode"]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with control_plane() as cp:
        yield Cluster(cp.api, cp.client, cp.scheduler(SchedulerOptions(seed=7)))


async def _bound_pair(c: Cluster, name: str, *modes: str, **pv_doc: Any) -> None:
    """A PV and a claim bound to it (both sides written, as the PV controller leaves them),
    with access `modes` (default RWO)."""
    ref = {"kind": "PersistentVolumeClaim", "namespace": NS, "name": name}
    pv = persistent_volume(name, "1Gi", *modes, status="Bound", claimRef=ref, **pv_doc)
    if pv.spec.HasField("csi"):
        pv.spec.ClearField("gce_persistent_disk")  # one source per volume
    await c.api.create(pv)
    await c.api.create(
        persistent_volume_claim(
            name,
            "1Gi",
            *modes,
            volumeName=name,
            status={"phase": "Bound"},
            # fully bound, as VolumeBinding (upstream's isPVCFullyBound) requires
            metadata={"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        )
    )


async def _claim_pod(c: Cluster, name: str, *claims: str) -> None:
    vols = [{"name": cl, "persistentVolumeClaim": {"claimName": cl}} for cl in claims]
    pod = MakePod().typed().name(name).namespace(NS).container("c", "i", requests={"cpu": "100m"})
    await c.api.create(pod.spec({"volumes": vols}).obj())


async def _wait_seen(c: Cluster, kind: str, count: int) -> None:
    await eventually(lambda: len(c.sched.kind_informers[kind].store) >= count)


async def test_a_pod_follows_its_volumes_zone_and_waits_when_no_node_is_there(
    cluster: Cluster,
) -> None:
    await cluster.node("n1", zone="z1")
    await cluster.node("n2", zone="z2")
    await _bound_pair(cluster, "in-z2", metadata={"labels": {ZONE: "z2"}})
    await _bound_pair(cluster, "in-z3", metadata={"labels": {ZONE: "z3"}})
    await _wait_seen(cluster, "PersistentVolumeClaim", 2)
    await _claim_pod(cluster, "p", "in-z2")
    assert await cluster.wait_bound("p") == {"p": "n2"}

    await _claim_pod(cluster, "q", "in-z3")
    msg = await cluster.wait_unschedulable("q")
    assert "2 node(s) had no available volume zone" in msg
    attempts = cluster.sched.traces.get(f"{NS}/q")
    shown = render_attempts(f"{NS}/q", [attempt_to_proto(attempts[-1])])
    assert "VolumeZone" in shown and "node(s) had no available volume zone" in shown

    # The volume's zone label changes (a PV update the plugin's hint queues for): q follows.
    pv: Any = await cluster.client.get(PVS, "in-z3")
    pv.metadata.labels[ZONE] = "z1"
    await cluster.client.update(pv)
    assert await cluster.wait_bound("q", timeout=20) == {"q": "n1"}


async def test_a_pod_whose_claim_is_missing_waits_until_it_is_created(cluster: Cluster) -> None:
    await cluster.node("n1")
    await _claim_pod(cluster, "w", "later")
    msg = await cluster.wait_unschedulable("w")
    assert 'persistentvolumeclaim "later" not found' in msg
    await _bound_pair(cluster, "later")
    assert await cluster.wait_bound("w", timeout=20) == {"w": "n1"}


def _csi_node(name: str, count: int) -> storagev1_pb2.CSINode:
    obj = storagev1_pb2.CSINode(api_version="storage.k8s.io/v1", kind="CSINode")
    obj.metadata.name = name
    obj.spec.drivers.add(name=DRIVER, node_id=name).allocatable.count = count
    return obj


async def test_a_nodes_csi_attach_limit_keeps_a_third_volume_off_it(cluster: Cluster) -> None:
    await cluster.node("n1")
    await cluster.api.create(_csi_node("n1", 2))
    for i in range(3):
        await _bound_pair(cluster, f"v{i}", csi={"driver": DRIVER, "volumeHandle": f"h{i}"})
    await _wait_seen(cluster, "PersistentVolumeClaim", 3)
    await _wait_seen(cluster, "CSINode", 1)
    await _claim_pod(cluster, "a", "v0", "v1")
    assert await cluster.wait_bound("a") == {"a": "n1"}
    await _claim_pod(cluster, "b", "v2")
    msg = await cluster.wait_unschedulable("b")
    assert "1 node(s) exceed max volume count" in msg

    # A pod sharing a volume already attached there adds nothing to the count.
    await _claim_pod(cluster, "c", "v1")
    assert await cluster.wait_bound("c") == {"c": "n1"}

    # The driver's limit is raised (a CSINode update): b fits.
    node: Any = await cluster.client.get(CSINODES, "n1")
    node.spec.drivers[0].allocatable.count = 3
    await cluster.client.update(node)
    assert await cluster.wait_bound("b", timeout=20) == {"b": "n1"}


async def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_pending(
    cluster: Cluster,
) -> None:
    await cluster.node("n1")
    await _bound_pair(cluster, "solo", "ReadWriteOncePod")
    await _wait_seen(cluster, "PersistentVolumeClaim", 1)
    await _claim_pod(cluster, "first", "solo")
    assert await cluster.wait_bound("first") == {"first": "n1"}
    await _claim_pod(cluster, "second", "solo")
    msg = await cluster.wait_unschedulable("second")
    assert "ReadWriteOncePod access mode" in msg
