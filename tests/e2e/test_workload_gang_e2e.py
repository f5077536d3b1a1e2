"""End to end with hollow nodes and real kubectl: a scheduling.k8s.io/v1alpha1 Workload whose
pod group is a gang of three, with GangScheduling enabled in the scheduler's profile (the
feature is off by default, as upstream's GangScheduling gate). Two of its pods stay Pending,
unbound; the third pod's arrival lets all three bind. A Workload that breaks upstream's rules
is refused with 422 and its field; its pod groups cannot change."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

NS = "gang-e2e"
GANG_PROFILE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: GangScheduling
"""


@pytest.fixture(scope="module")
def up_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    cfg = tmp_path_factory.mktemp("gang") / "scheduler.yaml"
    cfg.write_text(GANG_PROFILE)
    return ("--nodes", "2", "--scheduler-config", str(cfg))


@pytest.fixture(scope="module")
def ns(cluster: Cluster) -> Iterator[str]:
    kubectl(cluster, "create", "namespace", NS)
    yield NS
    kubectl(cluster, "delete", "namespace", NS, "--wait=false", check=False)


def _workload(name: str, min_count: int) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": min_count}}}]},
    }


def _pod(name: str, workload: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "workloadRef": {"name": workload, "podGroup": "workers"},
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
        },
    }


def _apply(k: Cluster, *docs: dict) -> None:
    kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def _pods(k: Cluster) -> dict[str, dict]:
    r = kubectl(k, "get", "pods", "-n", NS, "-o", "json")
    return {p["metadata"]["name"]: p for p in json.loads(r.stdout)["items"]}


def test_a_gang_of_three_waits_with_two_pods_and_binds_whole_with_the_third(
    cluster: Cluster, ns: str
) -> None:
    _apply(cluster, _workload("trainer", 3), _pod("w-0", "trainer"), _pod("w-1", "trainer"))
    got = kubectl(cluster, "get", "workloads.scheduling.k8s.io", "trainer", "-n", ns, "-o", "json")
    assert json.loads(got.stdout)["spec"]["podGroups"][0]["policy"] == {"gang": {"minCount": 3}}

    # Both stay Pending and unbound: the scheduler holds them at PreEnqueue. Wait until the
    # scheduler has seen them (their workloadRef is echoed back) and a later pod, with no
    # workloadRef, binds: the gang's two were considered before it and left alone.
    _apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "solo", "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
        },
    )
    until(lambda: _pods(cluster)["solo"]["spec"].get("nodeName"), timeout=60)
    pods = _pods(cluster)
    for name in ("w-0", "w-1"):
        assert pods[name]["spec"]["workloadRef"] == {"name": "trainer", "podGroup": "workers"}
        assert not pods[name]["spec"].get("nodeName"), name
        assert pods[name]["status"]["phase"] == "Pending"

    _apply(cluster, _pod("w-2", "trainer"))

    def all_bound() -> bool:
        pods = _pods(cluster)
        return all(pods[n]["spec"].get("nodeName") for n in ("w-0", "w-1", "w-2"))

    until(all_bound, timeout=60)


def test_a_bad_workload_is_refused_with_its_field_and_its_groups_do_not_change(
    cluster: Cluster, ns: str
) -> None:
    bad = _workload("bad", 0)
    r = kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert r.returncode != 0
    assert "spec.podGroups[0].policy.gang.minCount" in r.stderr
    assert "must be greater than zero" in r.stderr

    _apply(cluster, _workload("fixed", 2))
    changed = _workload("fixed", 5)
    r = kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(changed), check=False)
    assert r.returncode != 0
    assert "spec.podGroups" in r.stderr and "field is immutable" in r.stderr
