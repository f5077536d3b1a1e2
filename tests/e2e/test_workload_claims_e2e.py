"""PodGroup ResourceClaims (DRAWorkloadResourceClaims) end to end: upstream's
dra/workloadresourceclaims scheduler_perf file (copied unchanged) runs its smallest
integration-test workloads with `kubera experiment run`, and on the shared cluster kubectl
creates a PodGroup whose pods name one ResourceClaimTemplate: one claim is made for the
group (its status records it, each pod's status names it), reserved for the PodGroup, and
all the group's pods run on the one device it holds, while a pod outside the group that
names the same template gets a claim of its own and waits for a device."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import ROOT, kubectl, network_devices, upstream_run
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

CONFIG = (
    ROOT
    / "tests"
    / "experiment"
    / "data"
    / "scheduler_perf"
    / "dra"
    / "workloadresourceclaims"
    / "performance-config.yaml"
)
CLASS = "workload-claims"
#: The shared cluster of 3 hollow nodes (conftest's `cluster`, shared with modules of the
#: same flags).
UP_ARGS = ("--nodes", "3")


@pytest.mark.parametrize(
    "workload", ["SharedPodGroupResourceClaim/fast", "SharedPodGroupResourceClaimTemplate/fast"]
)
def test_upstream_workload_resource_claims_case_binds_every_pod(
    tmp_path: Path, shared_ray: str, workload: str
) -> None:
    run = upstream_run(tmp_path, shared_ray, CONFIG, workload)
    # 10 PodGroups of one pod each, each group's claim one of the 10 slices' devices
    # (reachable from the DRA node through the slices' node selector): every pod bound.
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 10


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = "wlc-" + request.node.name.removeprefix("test_").replace("_", "-")[:40].strip("-")
    kubectl(cluster, "create", "namespace", name)
    yield name
    kubectl(cluster, "delete", "namespace", name, "--wait=false", check=False)


def _get(cluster: Cluster, ns: str, *what: str) -> Any:
    return json.loads(kubectl(cluster, "get", *what, "-n", ns, "-o", "json").stdout)


def _pod(name: str, ns: str, group: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": "one-device"}],
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "dev"}]},
            }
        ],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def test_a_pod_groups_pods_share_one_claim_made_from_its_template(
    cluster: Cluster, ns: str
) -> None:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-device", "namespace": ns},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "dev", "exactly": {"deviceClassName": CLASS}}]
                    }
                }
            },
        },
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "trainers", "namespace": ns},
            "spec": {
                "schedulingPolicy": {"basic": {}},
                "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": "one-device"}],
            },
        },
        *[_pod(f"trainer-{i}", ns, "trainers") for i in range(3)],
    ]
    with network_devices(cluster, CLASS, 1):
        kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

        def group_claim() -> str | None:
            pg = _get(cluster, ns, "podgroups.scheduling.k8s.io", "trainers")
            statuses = pg.get("status", {}).get("resourceClaimStatuses", [])
            return statuses[0].get("resourceClaimName") if statuses else None

        claim = until(group_claim, timeout=60)
        assert claim.startswith("trainers-dev-")

        seen: list[Any] = []

        def all_running() -> bool:
            pods = _get(cluster, ns, "pods")["items"]
            seen[:] = [
                (p["metadata"]["name"], p["spec"].get("nodeName"), p["status"]) for p in pods
            ]
            return len(pods) == 3 and all(p["status"].get("phase") == "Running" for p in pods)

        try:
            until(all_running, timeout=120)
        except AssertionError:
            claims = _get(cluster, ns, "resourceclaims")["items"]
            raise AssertionError(
                f"pods: {seen}\nclaims: {[c.get('status') for c in claims]}"
            ) from None
        for p in _get(cluster, ns, "pods")["items"]:
            assert p["status"]["resourceClaimStatuses"] == [
                {"name": "dev", "resourceClaimName": claim}
            ]
        (c,) = _get(cluster, ns, "resourceclaims")["items"]
        assert c["metadata"]["name"] == claim
        owner = c["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("PodGroup", "trainers", True)
        assert c["status"]["reservedFor"] == [
            {
                "apiGroup": "scheduling.k8s.io",
                "resource": "podgroups",
                "name": "trainers",
                "uid": _get(cluster, ns, "podgroups.scheduling.k8s.io", "trainers")["metadata"][
                    "uid"
                ],
            }
        ]
        # A pod outside the group naming the same template: a claim of its own, and the
        # one device is the group's.
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(_pod("outsider", ns, None)))

        def outsider_waits() -> bool:
            pod = _get(cluster, ns, "pods", "outsider")
            own = pod.get("status", {}).get("resourceClaimStatuses", [])
            cond = [
                c
                for c in pod.get("status", {}).get("conditions", [])
                if c["type"] == "PodScheduled"
            ]
            return (
                bool(own)
                and own[0]["resourceClaimName"] != claim
                and bool(cond)
                and cond[0]["status"] == "False"
            )

        until(outsider_waits, timeout=60)
        # Deleting the group and its pods frees the device: the group's claim goes.
        kubectl(cluster, "delete", "pods", "--all", "-n", ns, "--wait=false")
        kubectl(cluster, "delete", "podgroups.scheduling.k8s.io", "trainers", "-n", ns)

        def group_claim_gone() -> bool:
            names = [x["metadata"]["name"] for x in _get(cluster, ns, "resourceclaims")["items"]]
            return claim not in names

        until(group_claim_gone, timeout=60)
