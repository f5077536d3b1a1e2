"""Device binding conditions end to end: a real `kubera up` whose node template declares
two hollow DRA drivers with binding conditions, and real kubectl.

    ready   fpga.example.com: bindsToNode, the driver reports is-prepared True 2 s
            (simulated) after the allocation
    broken  bad.example.com: the driver always reports preparing-failed (failure rate 1)

A pod whose claim gets an fpga is bound only once its device is ready (the scheduler's
PreBind waits for the condition); a pod whose claim gets the broken device is never
bound: each attempt fails at PreBind, the next one deallocates the claim and tries again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

READY_NODE, BROKEN_NODE = "kubera-node-ready-00000", "kubera-node-broken-00000"
CAPACITY = {"cpu": "8", "memory": "16Gi", "pods": "110"}


def _driver(driver: str, rate: float) -> dict[str, Any]:
    return {
        "driver": driver,
        "count": 1,
        "namePrefix": "dev",
        "bindsToNode": True,
        "bindingConditions": [f"{driver}/is-prepared"],
        "bindingFailureConditions": [f"{driver}/preparing-failed"],
        "preparationDelay": "2s",
        "preparationFailureRate": rate,
    }


TEMPLATE: dict[str, Any] = {
    "apiVersion": "kubera.io/v1alpha1",
    "kind": "NodeTemplate",
    "zones": 1,
    "nodes": [
        {
            "name": "ready",
            "count": 1,
            "capacity": CAPACITY,
            "devices": [_driver("fpga.example.com", 0)],
        },
        {
            "name": "broken",
            "count": 1,
            "capacity": CAPACITY,
            "devices": [_driver("bad.example.com", 1.0)],
        },
    ],
}


@pytest.fixture(scope="module")
def up_args(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ...]]:
    path = tmp_path_factory.mktemp("binding-template") / "nodes.yaml"
    path.write_text(yaml.safe_dump(TEMPLATE))
    yield ("--node-template", str(path), "--time-scale", "5")


def apply(k: Cluster, *docs: dict[str, Any]) -> None:
    kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def get(k: Cluster, *args: str) -> dict[str, Any]:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def setup(k: Cluster, ns: str, driver: str) -> None:
    kubectl(k, "create", "namespace", ns)
    apply(
        k,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "dev", "namespace": ns},
            "spec": {
                "devices": {"requests": [{"name": "d", "exactly": {"deviceClassName": driver}}]}
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns},
            "spec": {
                "resourceClaims": [{"name": "d", "resourceClaimName": "dev"}],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "d"}]},
                    }
                ],
            },
        },
    )


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("conditions", []) if c["type"] == type_), None)


def test_binding_waits_for_the_device_to_be_ready(cluster: Cluster) -> None:
    ns = "binding-ready"
    setup(cluster, ns, "fpga.example.com")

    def running() -> dict[str, Any] | None:
        pod = get(cluster, "pod", "p", "-n", ns)
        return pod if pod["status"].get("phase") == "Running" else None

    pod = until(running, timeout=120)
    assert pod["spec"]["nodeName"] == READY_NODE
    claim = get(cluster, "resourceclaim", "dev", "-n", ns)
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["bindingConditions"] == ["fpga.example.com/is-prepared"]
    assert result["bindingFailureConditions"] == ["fpga.example.com/preparing-failed"]
    # bindsToNode: the allocation names the node it was made for
    terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [READY_NODE]}]}
    ]
    (status,) = claim["status"]["devices"]
    assert (status["driver"], status["pool"], status["device"]) == (
        "fpga.example.com",
        READY_NODE,
        "dev-0",
    )
    ready = _condition(status, "fpga.example.com/is-prepared")
    assert ready is not None and ready["status"] == "True" and ready["reason"] == "Prepared"
    # Bound no earlier than the device was ready (timestamps in seconds).
    scheduled = _condition(pod["status"], "PodScheduled")
    assert scheduled is not None and scheduled["status"] == "True"
    assert scheduled["lastTransitionTime"] >= ready["lastTransitionTime"]
    events = get(cluster, "events", "-n", ns, "--field-selector", "involvedObject.name=p")
    pending = [e for e in events["items"] if e["reason"] == "BindingConditionsPending"]
    assert pending and pending[0]["message"] == (
        f"waiting for binding conditions for device on node {READY_NODE}"
    )
    kubectl(cluster, "delete", "namespace", ns, "--wait=false")


def test_a_failed_preparation_keeps_the_pod_unbound_and_it_is_retried(cluster: Cluster) -> None:
    ns = "binding-broken"
    setup(cluster, ns, "bad.example.com")

    def failures() -> list[dict[str, Any]]:
        events = get(cluster, "events", "-n", ns, "--field-selector", "involvedObject.name=p")
        return [
            e
            for e in events["items"]
            if e["reason"] == "FailedScheduling" and "binding failed" in e["message"]
        ]

    seen = until(failures, timeout=120)
    assert "preparing dev-0 failed" in seen[0]["message"]

    # Retried: the failed allocation is undone and made again (each time the driver fails
    # it anew), so the scheduler keeps reporting; the pod is never bound.
    def retried() -> bool:
        return sum(e.get("count", 1) for e in failures()) >= 2

    until(retried, timeout=120)
    pod = get(cluster, "pod", "p", "-n", ns)
    assert not pod["spec"].get("nodeName")
    assert pod["status"].get("phase") == "Pending"
    kubectl(cluster, "delete", "namespace", ns, "--wait=false")
