"""Partitionable devices and consumable capacity end to end: a real `kubera up` whose one
hollow node publishes, from its node template, a MIG-style GPU (a counter set of 80Gi and
7 slices; partitions 3g (40Gi, 3 slices) and 1g (10Gi, 1 slice)) and a NIC that allows
multiple allocations (10G of bandwidth), with real kubectl for everything a user types.

Two 3g pods take the GPU's memory: a 1g pod stays Pending with a reason naming its claim
until one of them is deleted. Two pods asking 4G of the NIC share it (each claim a share
with its shareID and consumedCapacity); a third stays Pending."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import running
from tests.e2e.test_dra_e2e import apply, claims_by_pod, get, kubectl, pods
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

GPU, NIC = "gpu.example.com", "nic.example.com"
NODE = "kubera-node-00000"
TEMPLATE: dict[str, Any] = {
    "apiVersion": "kubera.io/v1alpha1",
    "kind": "NodeTemplate",
    "zones": 1,
    "nodes": [
        {
            "name": "mig",
            "count": 1,
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "devices": [
                {
                    "driver": GPU,
                    "count": 1,
                    "namePrefix": "gpu",
                    "attributes": {"profile": "full"},
                    "capacity": {"memory": "80Gi"},
                    "sharedCounters": {"memory": "80Gi", "slices": "7"},
                    "partitions": [
                        {
                            "name": "3g",
                            "count": 2,
                            "consumes": {"memory": "40Gi", "slices": "3"},
                            "attributes": {"profile": "3g.40gb"},
                        },
                        {
                            "name": "1g",
                            "count": 7,
                            "consumes": {"memory": "10Gi", "slices": "1"},
                            "attributes": {"profile": "1g.10gb"},
                        },
                    ],
                },
                {
                    "driver": NIC,
                    "count": 1,
                    "namePrefix": "nic",
                    "capacity": {"bandwidth": "10G"},
                    "allowMultipleAllocations": True,
                },
            ],
        }
    ],
}


def _class(driver: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def _template(name: str, driver: str, expression: str, bandwidth: str = "") -> dict[str, Any]:
    exactly: dict[str, Any] = {
        "deviceClassName": driver,
        "selectors": [{"cel": {"expression": expression}}],
    }
    if bandwidth:
        exactly["capacity"] = {"requests": {"bandwidth": bandwidth}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": exactly}]}}},
    }


SETUP = [
    _class(GPU),
    _class(NIC),
    _template("mig-3g", GPU, f'device.attributes["{GPU}"].profile == "3g.40gb"'),
    _template("mig-1g", GPU, f'device.attributes["{GPU}"].profile == "1g.10gb"'),
    _template("nic-4g", NIC, "true", bandwidth="4G"),
]


def pod(name: str, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "dev"}]},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    template = home / "mig-nodes.yaml"
    template.write_text(yaml.safe_dump(TEMPLATE))
    with running(
        home, "--node-template", str(template), "--time-scale", "20", ray_address=shared_ray
    ) as k:
        apply(k, *SETUP)
        yield k


def phase(k: Cluster, name: str) -> str:
    return str(pods(k, name).get(name, {}).get("status", {}).get("phase", ""))


def pending_reason(k: Cluster, name: str) -> str:
    for c in pods(k, name).get(name, {}).get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("message"):
            return str(c["message"])
    return ""


def test_the_node_publishes_its_partitionable_gpu_in_two_slices(cluster: Cluster) -> None:
    def slices() -> dict[str, dict[str, Any]]:
        return {s["metadata"]["name"]: s for s in get(cluster, "resourceslices")}

    got = until(lambda: (s := slices()) and len(s) == 3 and s, timeout=90)
    devices = got[f"{NODE}-gpu-example-com"]["spec"]
    counters = got[f"{NODE}-gpu-example-com-counters"]["spec"]
    assert (
        devices["pool"]
        == counters["pool"]
        == {
            "name": NODE,
            "generation": 1,
            "resourceSliceCount": 2,
        }
    )
    assert [c["name"] for c in counters["sharedCounters"]] == ["gpu-0"]
    assert len(devices["devices"]) == 1 + 2 + 7
    assert got[f"{NODE}-nic-example-com"]["spec"]["devices"][0]["allowMultipleAllocations"]


def test_partitions_never_exceed_their_gpus_counters(cluster: Cluster) -> None:
    apply(cluster, pod("mig-3g-0", "mig-3g"), pod("mig-3g-1", "mig-3g"))
    until(lambda: all(phase(cluster, f"mig-3g-{i}") == "Running" for i in range(2)), timeout=120)
    apply(cluster, pod("mig-1g-0", "mig-1g"))
    message = until(lambda: pending_reason(cluster, "mig-1g-0"), timeout=60)
    claim = claims_by_pod(cluster)["mig-1g-0"]["metadata"]["name"]
    assert claim in message, message
    assert phase(cluster, "mig-1g-0") == "Pending"
    kubectl(cluster, "delete", "pod", "mig-3g-0", "--wait=false")
    until(lambda: phase(cluster, "mig-1g-0") == "Running", timeout=120)
    used = {
        c["status"]["allocation"]["devices"]["results"][0]["device"]
        for name, c in claims_by_pod(cluster).items()
        if name in ("mig-3g-1", "mig-1g-0")
    }
    assert len(used) == 2 and any("-1g-" in d for d in used), used


def test_a_shared_nic_serves_requests_while_its_bandwidth_lasts(cluster: Cluster) -> None:
    apply(cluster, pod("nic-0", "nic-4g"), pod("nic-1", "nic-4g"))
    until(lambda: all(phase(cluster, f"nic-{i}") == "Running" for i in range(2)), timeout=120)
    claims = claims_by_pod(cluster)
    results = [
        claims[f"nic-{i}"]["status"]["allocation"]["devices"]["results"][0] for i in range(2)
    ]
    assert {r["device"] for r in results} == {"nic-0"}
    assert all(r["consumedCapacity"] == {"bandwidth": "4G"} for r in results), results
    assert len({r["shareID"] for r in results}) == 2
    apply(cluster, pod("nic-2", "nic-4g"))
    until(lambda: pending_reason(cluster, "nic-2"), timeout=60)
    assert phase(cluster, "nic-2") == "Pending"
