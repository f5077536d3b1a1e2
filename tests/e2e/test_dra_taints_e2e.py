"""Device taints end to end: a real `kubera up` whose hollow node publishes two GPUs from
its node template, real kubectl for what a user types. A pod gets a GPU through a claim
template; a DeviceTaintRule with effect NoExecute on exactly that device (driver, pool,
device) makes the device-taint eviction controller evict the pod (event "Marking for
deletion", reason DeviceTaintManagerEviction); a new pod of the same template then gets
the other, untainted GPU, never the tainted one."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

DRIVER = "gpu.example.com"
NS = "dra-taints"
TEMPLATE: dict[str, Any] = {
    "apiVersion": "kubera.io/v1alpha1",
    "kind": "NodeTemplate",
    "zones": 1,
    "nodes": [
        {
            "name": "gpu",
            "count": 1,
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "devices": [{"driver": DRIVER, "count": 2, "namePrefix": "gpu"}],
        }
    ],
}
SETUP: list[dict[str, Any]] = [
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "taints.gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    },
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": NS},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "taints.gpu.example.com"}}
                    ]
                }
            }
        },
    },
]


def gpu_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def up_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    """The module's `kubera up` flags: the one-GPU-node template (conftest's `cluster`)."""
    template = tmp_path_factory.mktemp("dra-taints") / "gpu-node.yaml"
    template.write_text(yaml.safe_dump(TEMPLATE))
    return ("--node-template", str(template), "--time-scale", "20")


def apply(k: Cluster, *docs: dict[str, Any]) -> None:
    kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def get(k: Cluster, resource: str, *args: str) -> list[dict[str, Any]]:
    out = kubectl(k, "get", resource, "-o", "json", *args).stdout
    return json.loads(out)["items"]  # type: ignore[no-any-return]


def pod_of(k: Cluster, name: str) -> dict[str, Any] | None:
    return next((p for p in get(k, "pods", "-n", NS) if p["metadata"]["name"] == name), None)


def device_of(k: Cluster, pod: str) -> tuple[str, str, str] | None:
    for c in get(k, "resourceclaims", "-n", NS):
        owners = c["metadata"].get("ownerReferences", [])
        results = c.get("status", {}).get("allocation", {}).get("devices", {}).get("results")
        if owners and owners[0]["name"] == pod and results:
            r = results[0]
            return r["driver"], r["pool"], r["device"]
    return None


def running_pod(k: Cluster, name: str) -> dict[str, Any] | None:
    p = pod_of(k, name)
    return p if p is not None and p["status"].get("phase") == "Running" else None


def test_a_no_execute_rule_on_a_pods_device_evicts_the_pod(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", NS)
    apply(cluster, *SETUP)
    apply(cluster, gpu_pod("victim"))
    until(lambda: running_pod(cluster, "victim"), timeout=120)
    driver, pool, device = until(lambda: device_of(cluster, "victim"), timeout=30)
    # a template pool is named after its node
    assert (driver, pool) == (
        DRIVER,
        until(lambda: running_pod(cluster, "victim"))["spec"]["nodeName"],
    )

    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "broken-gpu"},
        "spec": {
            "deviceSelector": {"driver": driver, "pool": pool, "device": device},
            "taint": {"key": "example.com/broken", "value": "yes", "effect": "NoExecute"},
        },
    }
    apply(cluster, rule)
    stored = get(cluster, "devicetaintrules")
    (got,) = [r for r in stored if r["metadata"]["name"] == "broken-gpu"]
    assert got["spec"]["taint"]["timeAdded"]  # stamped by the apiserver
    table = kubectl(cluster, "get", "devicetaintrules").stdout
    assert table.splitlines()[0].split() == ["NAME", "CREATED", "AT"]

    until(lambda: pod_of(cluster, "victim") is None, timeout=120)
    events = get(cluster, "events", "-n", NS)
    assert any(
        e.get("reason") == "DeviceTaintManagerEviction"
        and e.get("message") == "Marking for deletion"
        and e["involvedObject"]["name"] == "victim"
        for e in events
    ), [(e.get("reason"), e.get("message")) for e in events]

    # The rule's status says what it did (the controller-manager writes devicetaintrules/status).
    def completed() -> dict[str, Any] | None:
        (r,) = [
            x for x in get(cluster, "devicetaintrules") if x["metadata"]["name"] == "broken-gpu"
        ]
        conds = r.get("status", {}).get("conditions", [])
        return next((c for c in conds if c.get("reason") == "Completed"), None)

    cond = until(completed, timeout=60)
    assert (cond["type"], cond["status"]) == ("EvictionInProgress", "False")
    assert cond["message"] == "1 pod evicted since starting the controller."

    # The tainted device is never given again: a new pod gets the other GPU.
    apply(cluster, gpu_pod("next"))
    until(lambda: running_pod(cluster, "next"), timeout=120)
    assert until(lambda: device_of(cluster, "next"), timeout=30) != (driver, pool, device)

    kubectl(cluster, "delete", "devicetaintrule", "broken-gpu")
    kubectl(cluster, "delete", "namespace", NS, "--wait=false")
