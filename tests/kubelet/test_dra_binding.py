"""Hollow DRA drivers with binding conditions: the template's fields (parsing, errors
naming the field), the slices that publish them, and the node side that reports each
allocated device ready (or failed) after the preparation delay."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.helpers.stages import TemplateError
from services.api.machinery.kinds import BY_KIND
from services.kubelet.slices import slice_objects
from services.kubelet.template import Binding, parse_template
from tests.builders import exact_request, resource_claim
from tests.kubelet.test_pool import _template, running
from tests.waiting import eventually

CLAIMS = BY_KIND["ResourceClaim"]
READY, FAILED = "fpga.example.com/is-prepared", "fpga.example.com/preparing-failed"
FPGA: dict[str, Any] = {
    "driver": "fpga.example.com",
    "count": 2,
    "namePrefix": "fpga",
    "bindsToNode": True,
    "bindingConditions": [READY],
    "bindingFailureConditions": [FAILED],
    "preparationDelay": "2s",
}


def kind_with(**fields: Any) -> dict[str, Any]:
    return {"nodes": [{"name": "f", "devices": [{**FPGA, **fields}]}]}


def test_binding_fields_parse() -> None:
    (d,) = parse_template(kind_with(preparationFailureRate=0.25)).kinds[0].devices
    assert d.binding == Binding(True, (READY,), (FAILED,), 2.0, 0.25)
    plain = {k: v for k, v in FPGA.items() if k in ("driver", "count")}
    (p,) = parse_template({"nodes": [{"name": "f", "devices": [plain]}]}).kinds[0].devices
    assert p.binding is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"bindsToNode": "yes"}, "bindsToNode"),
        ({"bindingConditions": []}, "bindingConditions"),
        ({"bindingConditions": ["a", "b", "c", "d", "e"]}, "bindingConditions"),
        ({"bindingConditions": ["-bad"]}, "bindingConditions[0]"),
        ({"bindingConditions": ["a", "a"]}, "bindingConditions"),
        ({"bindingFailureConditions": None}, "bindingFailureConditions"),
        ({"bindingFailureConditions": [READY]}, "bindingFailureConditions"),
        ({"preparationDelay": "soon"}, "preparationDelay"),
        ({"preparationFailureRate": 2}, "preparationFailureRate"),
        ({"preparationFailureRate": True}, "preparationFailureRate"),
    ],
)
def test_binding_errors_name_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(TemplateError) as err:
        parse_template(kind_with(**fields))
    assert str(err.value).startswith(f"nodes[0].devices[0].{field}:"), str(err.value)


def test_failure_conditions_without_conditions_are_refused() -> None:
    doc = kind_with()
    del doc["nodes"][0]["devices"][0]["bindingConditions"]
    with pytest.raises(TemplateError) as err:
        parse_template(doc)
    assert str(err.value).startswith("nodes[0].devices[0].bindingConditions:")


def test_slice_publishes_the_binding_fields() -> None:
    (d,) = parse_template(kind_with()).kinds[0].devices
    (s,) = slice_objects("n-0", d)
    for dev in s.spec.devices:
        assert dev.binds_to_node is True
        assert (list(dev.binding_conditions), list(dev.binding_failure_conditions)) == (
            [READY],
            [FAILED],
        )


def _allocated(name: str, node: str, device: str) -> resource_pb2.ResourceClaim:
    c = resource_claim(name, "default", exact_request("fpga", "fpga.example.com"))
    res = c.status.allocation.devices.results.add(
        request="fpga", driver="fpga.example.com", pool=node, device=device
    )
    res.binding_conditions.append(READY)
    res.binding_failure_conditions.append(FAILED)
    term = c.status.allocation.node_selector.node_selector_terms.add()
    term.match_fields.add(key="metadata.name", operator="In", values=[node])
    return c


async def _conditions(env: Any, name: str) -> dict[str, str]:
    c = await env.client.get(CLAIMS, name, "default")
    return {cond.type: cond.status for st in c.status.devices for cond in st.conditions}


@pytest.mark.parametrize(("rate", "want"), [(0, {READY: "True"}), (1.0, {FAILED: "True"})])
async def test_pool_reports_an_allocated_device_after_the_delay(
    rate: float, want: dict[str, str]
) -> None:
    template = _template(count=1, devices=[{**FPGA, "preparationFailureRate": rate}])
    async with running(template) as env:
        node = env.pool.nodes[0].name
        created = await env.client.create(_allocated("c", node, "fpga-1"))
        allocated_at = env.clock.now()
        await env.client.update_status(_with_rv(_allocated("c", node, "fpga-1"), created))

        async def reported() -> bool:
            return await _conditions(env, "c") == want

        await eventually(reported)
        # Not before the preparation delay (simulated seconds).
        c = await env.client.get(CLAIMS, "c", "default")
        (st,) = c.status.devices
        assert (st.driver, st.pool, st.device) == ("fpga.example.com", node, "fpga-1")
        assert env.clock.now() - allocated_at >= 2.0
        assert st.conditions[0].reason in ("Prepared", "PreparationFailed")
        assert (env.pool.binding.reported, env.pool.binding.failed) == ((0, 1) if rate else (1, 0))


def _with_rv(c: resource_pb2.ResourceClaim, created: Any) -> resource_pb2.ResourceClaim:
    c.metadata.CopyFrom(created.metadata)
    return c
