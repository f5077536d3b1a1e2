"""Hollow CSI drivers of node templates (services/kubelet/csidriver.py, csinode.py): the
template's `csiDrivers`, the node labels of a driver's own topology keys, and the
CSINode, CSIDriver and CSIStorageCapacity objects a pool publishes."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.helpers.csi import LABEL_HOLLOW_DRIVER
from services.api.helpers.stages import TemplateError
from services.api.machinery.kinds import BY_KIND
from services.kubelet.csinode import CAPACITY_NAMESPACE, published
from services.kubelet.template import load_template, parse_template, plan_nodes
from tests.kubelet.test_pool import _template, running

CSI_NODES, CSI_DRIVERS = BY_KIND["CSINode"], BY_KIND["CSIDriver"]
CAPACITIES = BY_KIND["CSIStorageCapacity"]
ZONE = "topology.kubernetes.io/zone"
NODE_KEY = "topology.local.example.com/node"

ZONAL = {
    "name": "disk.example.com",
    "attachLimit": 16,
    "capacity": [{"storageClassName": "zonal-disk", "per": "zone", "capacity": "1Ti"}],
}
LOCAL = {
    "name": "local.example.com",
    "topologyKeys": [NODE_KEY],
    "attachRequired": False,
    "capacity": [
        {
            "storageClassName": "local",
            "per": "node",
            "capacity": "500Gi",
            "maximumVolumeSize": "100Gi",
        }
    ],
}


def _plans(**kind: Any) -> list[Any]:
    return plan_nodes(parse_template(_template(**kind)))


def test_a_drivers_own_topology_key_labels_the_node_with_its_name() -> None:
    plans = _plans(count=2, csiDrivers=[ZONAL, LOCAL])
    for p in plans:
        assert p.labels[NODE_KEY] == p.name
        assert p.labels[ZONE].startswith("region-1-")  # the template's zone, kept


def test_what_a_pool_publishes() -> None:
    plans = _plans(count=3, csiDrivers=[ZONAL, LOCAL])  # zones a, b, a
    drivers, nodes, capacities = published(plans)
    by_name = {d.metadata.name: d for d in drivers}
    assert set(by_name) == {"disk.example.com", "local.example.com"}
    assert by_name["disk.example.com"].spec.attach_required
    assert not by_name["local.example.com"].spec.attach_required
    assert all(d.spec.storage_capacity for d in drivers)
    assert all(d.metadata.labels[LABEL_HOLLOW_DRIVER] == "true" for d in drivers)

    assert [n.metadata.name for n in nodes] == [p.name for p in plans]
    entry = {d.name: d for d in nodes[0].spec.drivers}
    assert entry["disk.example.com"].node_id == plans[0].name
    assert list(entry["disk.example.com"].topology_keys) == [ZONE]
    assert entry["disk.example.com"].allocatable.count == 16
    assert not entry["local.example.com"].allocatable.HasField("count")

    zonal = sorted(
        (c.node_topology.match_labels[ZONE], c.capacity)
        for c in capacities
        if c.storage_class_name == "zonal-disk"  # type: ignore[attr-defined]
    )
    assert zonal == [("region-1-a", "1Ti"), ("region-1-b", "1Ti")]  # one per zone
    local = [c for c in capacities if c.storage_class_name == "local"]  # type: ignore[attr-defined]
    assert sorted(dict(c.node_topology.match_labels)[NODE_KEY] for c in local) == sorted(  # type: ignore[attr-defined]
        p.name for p in plans
    )
    assert all(c.maximum_volume_size == "100Gi" for c in local)  # type: ignore[attr-defined]
    assert all(c.metadata.namespace == CAPACITY_NAMESPACE for c in capacities)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("drivers", "error"),
    [
        ([{"name": "Bad_Name"}], "expected a driver name"),
        ([ZONAL, ZONAL], "appears twice"),
        ([{"name": "d.example.com", "attachLimit": -1}], "attachLimit"),
        ([{"name": "d.example.com", "capacity": [{"storageClassName": "c", "per": "rack", "capacity": "1Gi"}]}], "per"),
        ([{"name": "d.example.com", "topologyKeys": ["k"], "capacity": [{"storageClassName": "c", "capacity": "1Gi"}]}], "needs topology.kubernetes.io/zone"),
        ([{"name": "d.example.com", "capacity": [{"storageClassName": "c", "capacity": "lots"}]}], "quantity"),
        ([{"name": "d.example.com", "color": "red"}], "color"),
    ],
    ids=["name", "twice", "limit", "per", "zone-key", "quantity", "unknown-field"],
)  # fmt: skip
def test_bad_drivers_are_refused(drivers: list[dict[str, Any]], error: str) -> None:
    with pytest.raises(TemplateError, match=error):
        _plans(csiDrivers=drivers)


async def test_a_pool_publishes_its_drivers_objects() -> None:
    async with running(_template(count=2, csiDrivers=[ZONAL])) as env:
        nodes, _ = await env.client.list(CSI_NODES)
        assert sorted(n.metadata.name for n in nodes) == sorted(n.name for n in env.pool.nodes)  # type: ignore[attr-defined]
        drivers, _ = await env.client.list(CSI_DRIVERS)
        assert [d.metadata.name for d in drivers] == ["disk.example.com"]  # type: ignore[attr-defined]
        caps, _ = await env.client.list(CAPACITIES, namespace=CAPACITY_NAMESPACE)
        assert len(caps) == 2


def test_the_zonal_disk_example_parses() -> None:
    with open("examples/zonal-disk-node-template.yaml") as f:
        plans = plan_nodes(load_template(f.read()))
    drivers, nodes, capacities = published(plans)
    assert len(nodes) == 6 and len(drivers) == 2
    assert len(capacities) == 3 + 6  # zonal-disk per zone, local per node
