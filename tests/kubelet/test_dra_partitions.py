"""Partitionable devices on hollow nodes: a device set's `sharedCounters` and `partitions`
in a node template (parsing, every error naming its field), the two slices a node
publishes for them (valid as the apiserver validates them), and the allocator refusing a
whole device together with its partitions beyond its counters."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.dra.allocator import Allocator, Unfit
from services.api.helpers.stages import TemplateError
from services.api.validation import validate_create
from services.kubelet.slices import slice_objects, slices_for
from services.kubelet.template import load_template, parse_template
from tests.builders import device_class, exact_request, resource_claim

MIG: dict[str, Any] = {
    "driver": "gpu.example.com",
    "count": 2,
    "namePrefix": "gpu",
    "attributes": {"model": "A100", "profile": "full"},
    "capacity": {"memory": "80Gi"},
    "sharedCounters": {"memory": "80Gi", "slices": "7"},
    "partitions": [
        {
            "name": "1g",
            "count": 7,
            "consumes": {"memory": "10Gi", "slices": "1"},
            "attributes": {"profile": "1g.10gb"},
        },
        {
            "name": "3g",
            "count": 2,
            "consumes": {"memory": "40Gi", "slices": "3"},
            "attributes": {"profile": "3g.40gb"},
        },
    ],
}


def kind_with(**devices: Any) -> dict[str, Any]:
    return {"nodes": [{"name": "g", "devices": [{**MIG, **devices}]}]}


def test_partitions_parse_and_publish_devices_and_counter_sets() -> None:
    (d,) = parse_template(kind_with()).kinds[0].devices
    assert d.shared_counters == {"memory": "80Gi", "slices": "7"}
    assert [(p.name, p.count) for p in d.partitions] == [("1g", 7), ("3g", 2)]
    devices, counters = slice_objects("node-1", d)
    assert devices.spec.pool.resource_slice_count == counters.spec.pool.resource_slice_count == 2
    assert [c.name for c in counters.spec.shared_counters] == ["gpu-0", "gpu-1"]
    names = [x.name for x in devices.spec.devices]
    assert len(names) == 2 * (1 + 7 + 2)
    assert names[:3] == ["gpu-0", "gpu-0-1g-0", "gpu-0-1g-1"]
    part = devices.spec.devices[1]
    assert part.consumes_counters[0].counter_set == "gpu-0"
    assert part.consumes_counters[0].counters["slices"].value == "1"
    assert devices.spec.devices[0].consumes_counters[0].counters["memory"].value == "80Gi"
    assert part.capacity["memory"].value == "10Gi"
    assert part.attributes["profile"].string == "1g.10gb"
    assert part.attributes["index"].int == 0
    for s in (devices, counters):
        assert validate_create("ResourceSlice", s) == []


def test_the_example_template_publishes_valid_partitioned_slices() -> None:
    with open("examples/gpu-node-template.yaml") as f:
        template = load_template(f.read())
    kinds = {k.name: k for k in template.kinds}
    (mig,) = [d for d in kinds["mig"].devices if d.shared_counters]
    for s in slice_objects("n", mig):
        assert validate_create("ResourceSlice", s) == []


@pytest.mark.parametrize(
    ("devices", "field"),
    [
        ({"sharedCounters": {"Memory": "1"}}, "nodes[0].devices[0].sharedCounters.Memory"),
        ({"sharedCounters": {"memory": "lots"}}, "nodes[0].devices[0].sharedCounters.memory"),
        ({"count": 9}, "nodes[0].devices[0].count"),
        ({"sharedCounters": None}, "nodes[0].devices[0].partitions"),
        (
            {"partitions": [{"name": "1g", "consumes": {"cores": "1"}}]},
            "nodes[0].devices[0].partitions[0].consumes.cores",
        ),
        ({"partitions": [{"name": "1G"}]}, "nodes[0].devices[0].partitions[0].name"),
        ({"partitions": [{"name": "x", "count": 0}]}, "nodes[0].devices[0].partitions[0].count"),
        ({"partitions": [{"name": "x", "count": 40}]}, "nodes[0].devices[0]"),
        ({"partitions": [{"name": "x", "size": 1}]}, "nodes[0].devices[0].partitions[0]"),
    ],
)
def test_partition_errors_name_the_field(devices: dict[str, Any], field: str) -> None:
    with pytest.raises(TemplateError) as err:
        parse_template(kind_with(**devices))
    assert str(err.value).startswith(field), str(err.value)


def _allocate(*requests: dict[str, Any]) -> list[Any] | Unfit:
    template = parse_template(kind_with(count=1))
    node = core_pb2.Node()
    node.metadata.name = "node-1"
    slices = list(slices_for([_Plan("node-1", template.kinds[0])]).values())
    cls = device_class("gpu", 'device.driver == "gpu.example.com"')
    claim = resource_claim("c", "default", *requests)
    return Allocator([claim], set(), {"gpu": cls}, slices).allocate(node)


class _Plan:
    def __init__(self, name: str, kind: Any) -> None:
        self.name, self.kind = name, kind


WHOLE = 'device.attributes["gpu.example.com"].profile == "full"'
ONE_G = 'device.attributes["gpu.example.com"].profile == "1g.10gb"'


def test_partitions_share_their_device_counters_in_the_allocator() -> None:
    """Seven 1g partitions fit one GPU; an eighth slice, or the whole GPU beside one
    partition, does not."""
    assert not isinstance(_allocate(exact_request("p", "gpu", ONE_G, count=7)), Unfit)
    assert isinstance(
        _allocate(
            exact_request("p", "gpu", ONE_G, count=7),
            exact_request(
                "q",
                "gpu",
                'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0',
            ),
        ),
        Unfit,
    )
    assert isinstance(
        _allocate(exact_request("w", "gpu", WHOLE), exact_request("p", "gpu", ONE_G)), Unfit
    )
    assert not isinstance(_allocate(exact_request("w", "gpu", WHOLE)), Unfit)


def test_shared_devices_are_published_allowing_multiple_allocations() -> None:
    (d,) = (
        parse_template(
            {
                "nodes": [
                    {
                        "name": "n",
                        "devices": [
                            {
                                "driver": "nic.example.com",
                                "count": 1,
                                "capacity": {"bandwidth": "10G"},
                                "allowMultipleAllocations": True,
                            }
                        ],
                    }
                ]
            }
        )
        .kinds[0]
        .devices
    )
    (s,) = slice_objects("node-1", d)
    assert s.spec.devices[0].allow_multiple_allocations
    with pytest.raises(TemplateError, match=r"^nodes\[0\].devices\[0\].allowMultipleAllocations"):
        parse_template(kind_with(allowMultipleAllocations="yes"))
