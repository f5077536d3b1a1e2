"""Dynamic Resource Allocation and gangs end to end: a real `kubera up` whose hollow nodes
publish ResourceSlices from their node template, one node whose devices a user applies as a
driver would, and real kubectl for everything a user types.

The cluster: 2 nodes with 2 A100 GPUs each (template), 1 node with 2 T4 GPUs (template) and
1 node without devices in its template, for which the test applies a slice of 1 A100. So
there are 5 A100 devices: claims selecting A100 must land on those, never on the T4s, never
twice; the 6th such pod stays Pending with a reason naming its claim."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

DRIVER = "gpu.example.com"
TEMPLATE: dict[str, Any] = {
    "apiVersion": "kubera.io/v1alpha1",
    "kind": "NodeTemplate",
    "zones": 1,
    "nodes": [
        {
            "name": "a100",
            "count": 2,
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "devices": [
                {
                    "driver": DRIVER,
                    "count": 2,
                    "namePrefix": "gpu",
                    "attributes": {"model": "A100"},
                    "capacity": {"memory": "80Gi"},
                }
            ],
        },
        {
            "name": "t4",
            "count": 1,
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "devices": [
                {
                    "driver": DRIVER,
                    "count": 2,
                    "namePrefix": "gpu",
                    "attributes": {"model": "T4"},
                    "capacity": {"memory": "16Gi"},
                }
            ],
        },
        {"name": "plain", "count": 1, "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
    ],
}
A100_NODES = ("kubera-node-a100-00000", "kubera-node-a100-00001")
T4_NODE = "kubera-node-t4-00000"
PLAIN_NODE = "kubera-node-plain-00000"

SETUP = [
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    },
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "a100"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.example.com",
                                "selectors": [
                                    {
                                        "cel": {
                                            "expression": f'device.attributes["{DRIVER}"].model == "A100" && '
                                            f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
                                        }
                                    }
                                ],
                            },
                        }
                    ]
                }
            }
        },
    },
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t4"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.example.com",
                                "selectors": [
                                    {
                                        "cel": {
                                            "expression": f'device.attributes["{DRIVER}"].model == "T4"'
                                        }
                                    }
                                ],
                            },
                        }
                    ]
                }
            }
        },
    },
]
USER_SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": f"{PLAIN_NODE}-user"},
    "spec": {
        "driver": DRIVER,
        "nodeName": PLAIN_NODE,
        "pool": {"name": f"{PLAIN_NODE}-user", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {"model": {"string": "A100"}, "index": {"int": 0}},
                "capacity": {"memory": {"value": "40Gi"}},
            }
        ],
    },
}


def gpu_pod(
    name: str, template: str, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "dra"}},
        "spec": {
            **spec,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
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
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    template = home / "gpu-nodes.yaml"
    template.write_text(yaml.safe_dump(TEMPLATE))
    with running(
        home, "--node-template", str(template), "--time-scale", "20", ray_address=shared_ray
    ) as k:
        yield k


def kubectl(k: Cluster, *args: str, stdin: str | None = None, check: bool = True) -> str:
    env = {
        "KUBECONFIG": str(k.home / "kubeconfig"),
        "HOME": str(k.home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    r = subprocess.run(
        ["kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=90
    )
    if check:
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r.stdout


def apply(k: Cluster, *docs: dict[str, Any]) -> None:
    kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def get(k: Cluster, resource: str, *args: str) -> list[dict[str, Any]]:
    return json.loads(kubectl(k, "get", resource, "-o", "json", *args))["items"]


def pods(k: Cluster, prefix: str) -> dict[str, dict[str, Any]]:
    return {
        p["metadata"]["name"]: p for p in get(k, "pods") if p["metadata"]["name"].startswith(prefix)
    }


def claims_by_pod(k: Cluster) -> dict[str, dict[str, Any]]:
    """Each claim made from a template, by the pod that owns it."""
    out = {}
    for c in get(k, "resourceclaims"):
        owners = c["metadata"].get("ownerReferences", [])
        if owners:
            out[owners[0]["name"]] = c
    return out


def devices_of(claim: dict[str, Any]) -> list[tuple[str, str, str]]:
    results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
    return [(r["driver"], r["pool"], r["device"]) for r in results]


def test_hollow_nodes_publish_a_resource_slice_per_node_from_their_template(
    cluster: Cluster,
) -> None:
    def slices() -> dict[str, dict[str, Any]]:
        return {s["spec"].get("nodeName", ""): s for s in get(cluster, "resourceslices")}

    got = until(lambda: (s := slices()) and len(s) == 3 and s, timeout=90)
    assert sorted(got) == sorted((*A100_NODES, T4_NODE))
    for node in A100_NODES:
        devices = got[node]["spec"]["devices"]
        assert [d["name"] for d in devices] == ["gpu-0", "gpu-1"]
        assert {d["attributes"]["model"]["string"] for d in devices} == {"A100"}
        assert got[node]["spec"]["driver"] == DRIVER
    table = kubectl(cluster, "get", "resourceslices")
    assert table.splitlines()[0].split()[:4] == ["NAME", "NODE", "DRIVER", "POOL"]


def test_claims_from_templates_get_matching_devices_on_the_right_nodes_never_twice(
    cluster: Cluster,
) -> None:
    apply(cluster, *SETUP, USER_SLICE)
    apply(cluster, *(gpu_pod(f"a100-{i}", "a100") for i in range(5)))

    def all_running() -> dict[str, dict[str, Any]]:
        got = pods(cluster, "a100-")
        return (
            got
            if len(got) == 5 and all(p["status"].get("phase") == "Running" for p in got.values())
            else {}
        )

    running_pods = until(all_running, timeout=120)
    nodes = sorted(p["spec"]["nodeName"] for p in running_pods.values())
    assert T4_NODE not in nodes
    assert set(nodes) <= {*A100_NODES, PLAIN_NODE}
    claims = claims_by_pod(cluster)
    devices = [d for name in running_pods for d in devices_of(claims[name])]
    assert len(devices) == 5 and len(set(devices)) == 5, f"a device given twice: {devices}"
    for name, pod in running_pods.items():
        claim = claims[name]
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
        (driver, pool, device) = devices_of(claim)[0]
        # the device is one of the pod's node's: a template pool is named after its node
        assert pool in (pod["spec"]["nodeName"], f"{PLAIN_NODE}-user")
        statuses = pod["status"]["resourceClaimStatuses"]
        assert statuses == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]


def test_a_pod_without_a_fitting_device_stays_pending_with_a_reason_naming_its_claim(
    cluster: Cluster,
) -> None:
    apply(cluster, gpu_pod("a100-extra", "a100"))

    def unschedulable() -> str:
        pod = pods(cluster, "a100-extra")["a100-extra"]
        for c in pod["status"].get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("message"):
                return str(c["message"])
        return ""

    message = until(unschedulable, timeout=60)
    claim = claims_by_pod(cluster)["a100-extra"]["metadata"]["name"]
    assert "cannot allocate all claims" in message
    assert claim in message, message
    explained = cluster("explain", "pod", "a100-extra")
    assert explained.returncode == 0, explained.stderr
    assert claim in explained.stdout
    described = cluster("describe", "pod", "a100-0")
    assert described.returncode == 0, described.stderr
    assert claims_by_pod(cluster)["a100-0"]["metadata"]["name"] in described.stdout


def test_a_deleted_pods_device_becomes_free_for_a_pending_pod(cluster: Cluster) -> None:
    until(lambda: "a100-extra" in claims_by_pod(cluster), timeout=60)
    victim = pods(cluster, "a100-0")["a100-0"]
    freed = devices_of(claims_by_pod(cluster)["a100-0"])
    kubectl(cluster, "delete", "pod", "a100-0", "--wait=false")

    def extra_running() -> dict[str, Any] | None:
        pod = pods(cluster, "a100-extra")["a100-extra"]
        return pod if pod["status"].get("phase") == "Running" else None

    pod = until(extra_running, timeout=120)
    assert pod["spec"]["nodeName"] == victim["spec"]["nodeName"]
    assert devices_of(claims_by_pod(cluster)["a100-extra"]) == freed
    until(lambda: "a100-0" not in claims_by_pod(cluster), timeout=60)


def test_a_gang_binds_all_or_nothing(cluster: Cluster) -> None:
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "t4-gang"},
        "spec": {"minMember": 3, "scheduleTimeoutSeconds": 5},
    }
    label = {"scheduling.x-k8s.io/pod-group": "t4-gang"}
    # three T4 pods, two T4 devices: the gang must not start; its pods name the profile
    # that runs Coscheduling
    gang = [
        gpu_pod(f"gang-{i}", "t4", label, schedulerName="scheduler-plugins-scheduler")
        for i in range(3)
    ]
    apply(cluster, group, *gang)
    until(
        lambda: len([c for n, c in claims_by_pod(cluster).items() if n.startswith("gang-")]) == 3,
        timeout=60,
    )

    def all_tried_and_unschedulable() -> bool:
        got = pods(cluster, "gang-")
        return len(got) == 3 and all(
            any(
                c["type"] == "PodScheduled" and c["status"] == "False"
                for c in p["status"].get("conditions", [])
            )
            for p in got.values()
        )

    until(all_tried_and_unschedulable, timeout=90)
    assert not any(p["spec"].get("nodeName") for p in pods(cluster, "gang-").values())
    # a third T4 appears: the whole gang binds
    extra = json.loads(json.dumps(USER_SLICE))
    extra["metadata"]["name"] = f"{PLAIN_NODE}-t4"
    extra["spec"]["pool"]["name"] = f"{PLAIN_NODE}-t4"
    extra["spec"]["devices"][0]["attributes"]["model"] = {"string": "T4"}
    apply(cluster, extra)

    def gang_running() -> bool:
        got = pods(cluster, "gang-")
        return len(got) == 3 and all(p["status"].get("phase") == "Running" for p in got.values())

    until(gang_running, timeout=120)
    # none was bound before the third device existed: every PodScheduled=True is not older
    # than the slice (RFC 3339 seconds compare as strings)
    added = next(
        x
        for x in get(cluster, "resourceslices")
        if x["metadata"]["name"] == extra["metadata"]["name"]
    )
    for p in pods(cluster, "gang-").values():
        scheduled = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["status"] == "True"
        assert scheduled["lastTransitionTime"] >= added["metadata"]["creationTimestamp"]
    status = until(
        lambda: (
            (s := get(cluster, "podgroups.scheduling.x-k8s.io")[0].get("status", {})).get("phase")
            == "Running"
            and s
        ),
        timeout=60,
    )
    assert status["running"] == 3
