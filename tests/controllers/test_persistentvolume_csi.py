"""The PV controller provisions for the hollow CSI drivers of node templates
(services/controllers/volume/persistentvolume.py): a class whose provisioner is a
CSIDriver labelled kubera.io/hollow-csi-driver gets volumes of that driver, reachable
where the driver's topology keys say (the selected node's labels, else the class's
allowedTopologies, else a segment of a node that runs the driver); an unlabelled
driver is still left to its external provisioner."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import storagev1_pb2
from services.api.helpers.csi import LABEL_HOLLOW_DRIVER
from services.api.helpers.volumes import ANN_SELECTED_NODE
from services.api.machinery.kinds import BY_KIND
from services.controllers.volume.persistentvolume import PersistentVolumeController
from services.controllers.volume.rules import pick_segment
from tests.builders import MakeNode, persistent_volume_claim, storage_class
from tests.controllers.conftest import NS, ControllerCluster
from tests.waiting import eventually

PVS, PVCS, EVENTS = BY_KIND["PersistentVolume"], BY_KIND["PersistentVolumeClaim"], BY_KIND["Event"]
ZONE = "topology.kubernetes.io/zone"
DRIVER = "disk.example.com"


async def _driver(cluster: ControllerCluster, *, hollow: bool = True) -> None:
    d = storagev1_pb2.CSIDriver(api_version="storage.k8s.io/v1", kind="CSIDriver")
    d.metadata.name = DRIVER
    if hollow:
        d.metadata.labels[LABEL_HOLLOW_DRIVER] = "true"
    await cluster.client.create(d)
    for name, zone in (("n1", "zone-a"), ("n2", "zone-b")):
        node = MakeNode().typed().name(name).labels({ZONE: zone})
        await cluster.client.create(node.obj())
        csinode = storagev1_pb2.CSINode(api_version="storage.k8s.io/v1", kind="CSINode")
        csinode.metadata.name = name
        csinode.spec.drivers.add(name=DRIVER, node_id=name, topology_keys=[ZONE])
        await cluster.client.create(csinode)


def _affinity(pv: Any) -> list[tuple[str, str, list[str]]]:
    terms = pv.spec.node_affinity.required.node_selector_terms
    return [(r.key, r.operator, list(r.values)) for t in terms for r in t.match_expressions]


async def _provisioned(cluster: ControllerCluster, claim: Any) -> Any:
    name = f"pvc-{claim.metadata.uid}"
    await cluster.until(lambda: cluster.informers.get(PVS).store.get(name) is not None)
    return cluster.informers.get(PVS).store.get(name)


@pytest.mark.parametrize(
    ("binding", "allowed", "selected", "want_zone"),
    [
        ("WaitForFirstConsumer", None, "n2", "zone-b"),
        ("Immediate", [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-a"]}]}], None, "zone-a"),
        ("Immediate", None, None, "any"),
    ],
    ids=["selected-node", "allowed-topologies", "a-node-of-the-driver"],
)  # fmt: skip
async def test_a_hollow_driver_provisions_with_topology(
    cluster: ControllerCluster,
    binding: str,
    allowed: Any,
    selected: str | None,
    want_zone: str,
) -> None:
    await _driver(cluster)
    extra = {"allowedTopologies": allowed} if allowed else {}
    await cluster.client.create(storage_class("zonal", DRIVER, volumeBindingMode=binding, **extra))
    controller = PersistentVolumeController(cluster.client, cluster.informers)
    cluster.bump_on(PVS, PVCS)
    await cluster.start(controller)
    meta = {"annotations": {ANN_SELECTED_NODE: selected}} if selected else {}
    claim = await cluster.client.create(
        persistent_volume_claim("data", "1Gi", storageClassName="zonal", metadata=meta)
    )
    pv = await _provisioned(cluster, claim)
    assert pv.spec.csi.driver == DRIVER
    if want_zone == "any":
        want_zone = pick_segment([{ZONE: "zone-a"}, {ZONE: "zone-b"}], claim.metadata.uid)[ZONE]
    assert _affinity(pv) == [(ZONE, "In", [want_zone])]
    await cluster.until(
        lambda: (
            (c := cluster.informers.get(PVCS).store.get(f"{NS}/data")) is not None
            and c.status.phase == "Bound"
        )  # type: ignore[attr-defined]
    )


async def test_an_unlabelled_driver_is_left_to_its_provisioner(cluster: ControllerCluster) -> None:
    await _driver(cluster, hollow=False)
    await cluster.client.create(storage_class("zonal", DRIVER))
    controller = PersistentVolumeController(cluster.client, cluster.informers)
    await cluster.start(controller)
    await cluster.client.create(persistent_volume_claim("data", "1Gi", storageClassName="zonal"))

    async def waiting() -> bool:
        events, _ = await cluster.client.list(EVENTS, namespace=NS)
        return any(e.reason == "ExternalProvisioning" for e in events)  # type: ignore[attr-defined]

    await eventually(waiting)
    pvs, _ = await cluster.client.list(PVS)
    assert not pvs


def test_pick_segment_spreads_and_is_stable() -> None:
    segments = [{ZONE: z} for z in ("a", "b", "c", "a")]
    picks = {pick_segment(segments, f"uid-{i}")[ZONE] for i in range(30)}
    assert picks == {"a", "b", "c"}
    assert pick_segment(segments, "uid-1") == pick_segment(list(reversed(segments)), "uid-1")
    assert pick_segment([], "uid") == {}
