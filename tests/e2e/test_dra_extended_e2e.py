"""Extended resources backed by DRA end to end (DRAExtendedResource): a real `kubera up`
whose hollow GPU node publishes two devices from its node template and advertises no
extended resource, real kubectl for what a user types. A DeviceClass names
`example.com/gpu` in spec.extendedResourceName; a pod asking for `example.com/gpu: 1` in
its container's requests binds to the GPU node, and the scheduler's claim for it (annotated,
owned by the pod) is allocated one of the node's devices and reserved for the pod, named
in the pod's status.extendedResourceClaimStatus. A pod asking for the class's implicit
`deviceclass.resource.kubernetes.io/<class>` gets the other device; a third stays Pending.

Upstream's scheduler_perf SchedulingWithExtendedResource cases are run in
test_upstream_cases_e2e.py."""

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
NS = "dra-extended"
CLASS = "ext.gpu.example.com"
ER = "example.com/gpu"
IMPLICIT = f"deviceclass.resource.kubernetes.io/{CLASS}"
GPU_NODE = "kubera-node-gpu-00000"
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
        },
        {"name": "plain", "count": 1, "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
    ],
}
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": CLASS},
    "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        "extendedResourceName": ER,
    },
}


@pytest.fixture(scope="module")
def up_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    """The module's `kubera up` flags: a GPU node and a plain one (conftest's `cluster`)."""
    template = tmp_path_factory.mktemp("dra-extended") / "nodes.yaml"
    template.write_text(yaml.safe_dump(TEMPLATE))
    return ("--node-template", str(template), "--time-scale", "20")


def apply(k: Cluster, *docs: dict[str, Any], check: bool = True) -> Any:
    return kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs), check=check)


def get(k: Cluster, resource: str, *args: str) -> list[dict[str, Any]]:
    return json.loads(kubectl(k, "get", resource, "-o", "json", *args).stdout)["items"]  # type: ignore[no-any-return]


def pod(name: str, resource: str) -> dict[str, Any]:
    amount = {resource: "1", "cpu": "100m"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": amount, "limits": {resource: "1"}},
                }
            ]
        },
    }


def pod_of(k: Cluster, name: str) -> dict[str, Any]:
    (p,) = [x for x in get(k, "pods", "-n", NS) if x["metadata"]["name"] == name]
    return p


def claim_of(k: Cluster, name: str) -> dict[str, Any] | None:
    """The pod's extended resource claim, once allocated and reserved for it."""
    for c in get(k, "resourceclaims", "-n", NS):
        owners = c["metadata"].get("ownerReferences", [])
        if owners and owners[0]["name"] == name and c.get("status", {}).get("reservedFor"):
            return c
    return None


def test_an_extended_resource_request_is_served_by_a_dra_device(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", NS)
    apply(cluster, DEVICE_CLASS)
    stored = json.loads(kubectl(cluster, "get", "deviceclass", CLASS, "-o", "json").stdout)
    assert stored["spec"]["extendedResourceName"] == ER
    # Only extended resource names: an implicit name is refused (422, nothing written).
    bad = dict(DEVICE_CLASS, metadata={"name": "bad.gpu.example.com"})
    bad["spec"] = dict(
        DEVICE_CLASS["spec"], extendedResourceName="deviceclass.resource.kubernetes.io/x"
    )
    r = apply(cluster, bad, check=False)
    assert r.returncode != 0 and "spec.extendedResourceName: Invalid value" in r.stderr, r.stderr

    # The node advertises no example.com/gpu: the request goes to DRA.
    apply(cluster, pod("explicit", ER))
    until(lambda: pod_of(cluster, "explicit")["spec"].get("nodeName"), timeout=120)
    assert pod_of(cluster, "explicit")["spec"]["nodeName"] == GPU_NODE
    claim = until(lambda: claim_of(cluster, "explicit"), timeout=60)
    meta = claim["metadata"]
    assert meta["name"].startswith("explicit-extended-resources-")
    assert meta["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
    assert [(o["kind"], o["name"], o["controller"]) for o in meta["ownerReferences"]] == [
        ("Pod", "explicit", True)
    ]
    (req,) = claim["spec"]["devices"]["requests"]
    assert req["name"] == "container-0-request-1"  # cpu sorts first
    assert (req["exactly"]["deviceClassName"], req["exactly"]["count"]) == (CLASS, 1)
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"]) == (DRIVER, GPU_NODE)
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["explicit"]
    status = until(lambda: pod_of(cluster, "explicit")["status"].get("extendedResourceClaimStatus"))
    assert status == {
        "resourceClaimName": meta["name"],
        "requestMappings": [
            {"containerName": "c", "resourceName": ER, "requestName": "container-0-request-1"}
        ],
    }

    # The hollow kubelet admits it (the resource came through DRA) and runs it.
    until(lambda: pod_of(cluster, "explicit")["status"].get("phase") == "Running", timeout=120)

    # The class's implicit name does too, and gets the other device.
    apply(cluster, pod("implicit", IMPLICIT))
    other = until(lambda: claim_of(cluster, "implicit"), timeout=120)
    (result2,) = other["status"]["allocation"]["devices"]["results"]
    assert result2["device"] != result["device"]
    assert pod_of(cluster, "implicit")["spec"]["nodeName"] == GPU_NODE

    # Both devices are taken: a third pod stays Pending, DynamicResources saying why.
    apply(cluster, pod("third", ER))

    def reason() -> str | None:
        for e in get(cluster, "events", "-n", NS):
            if e["involvedObject"]["name"] == "third" and e.get("reason") == "FailedScheduling":
                return str(e.get("message", ""))
        return None

    assert "cannot allocate all claims" in until(reason, timeout=120)
    assert not pod_of(cluster, "third")["spec"].get("nodeName")

    # Deleting the pod deletes its claim (owned by it), freeing the device for the third.
    kubectl(cluster, "delete", "pod", "explicit", "-n", NS, "--wait=false")
    until(lambda: claim_of(cluster, "third"), timeout=120)

    kubectl(cluster, "delete", "namespace", NS, "--wait=false")
    kubectl(cluster, "delete", "deviceclass", CLASS)
