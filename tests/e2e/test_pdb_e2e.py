"""End to end with hollow nodes: a PodDisruptionBudget kept by the controller-manager's
disruption controller blocks `kubera drain` of the node its pods run on (non-zero exit,
naming the budget, pods kept), while a node without budgeted pods drains. A budget that
matches no pod, and a pod, read through the official client's strict models as upstream
writes them (issue 26: zero values and defaults)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes import config

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl, running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

NODE0, NODE1, NODE2 = "kubera-node-00000", "kubera-node-00001", "kubera-node-00002"


# A cluster of its own (tests/e2e/conftest.py): it drains nodes.
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    with running(
        home, "--nodes", "3", "--time-scale", "20", "--no-scheduler", ray_address=shared_ray
    ) as k:
        yield k


def _pod(name: str, node: str, labels: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
    }


def _get(k: Cluster, *argv: str) -> dict:
    """Read with kubectl (a poll through `kubera get` starts a Python each time)."""
    return json.loads(kubectl(k, "get", *argv, "-o", "json").stdout)


def test_drain_is_blocked_by_a_budget_and_drains_an_unbudgeted_node(cluster: Cluster) -> None:
    docs = [
        _pod("web-0", NODE0, {"app": "web"}),
        _pod("web-1", NODE0, {"app": "web"}),
        _pod("batch-0", NODE1, {"app": "batch"}),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
    ]
    r = cluster("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))
    assert r.returncode == 0, r.stderr

    def budget_kept() -> bool:
        st = _get(cluster, "pdb", "web").get("status", {})
        return st.get("currentHealthy") == 2 and st.get("expectedPods") == 2

    until(budget_kept)
    assert _get(cluster, "pdb", "web")["status"].get("disruptionsAllowed", 0) == 0

    r = cluster("drain", NODE0, "--force", "--timeout", "3s")
    assert r.returncode == 1, r.stdout
    assert "global timeout reached: 3s" in r.stderr
    assert "The disruption budget web needs 2 healthy pods and has 2 currently" in r.stderr
    names = sorted(p["metadata"]["name"] for p in _get(cluster, "pods")["items"])
    assert names == ["batch-0", "web-0", "web-1"]
    assert all(not p["metadata"].get("deletionTimestamp") for p in _get(cluster, "pods")["items"])

    r = cluster("drain", NODE1, "--force", "--timeout", "60s")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"node/{NODE1} drained"
    until(lambda: "batch-0" not in {p["metadata"]["name"] for p in _get(cluster, "pods")["items"]})


def test_a_budget_matching_no_pod_and_a_pod_read_as_upstream_writes_them(
    cluster: Cluster,
) -> None:
    docs = [
        _pod("lone-0", NODE2, {"app": "lone"}),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "nobody", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "nobody"}}},
        },
    ]
    r = cluster("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))
    assert r.returncode == 0, r.stderr
    api = config.new_client_from_config(config_file=str(cluster.home / "kubeconfig"))
    try:
        policy, core = k8s.PolicyV1Api(api), k8s.CoreV1Api(api)
        until(
            lambda: (
                policy.read_namespaced_pod_disruption_budget(
                    "nobody", "default"
                ).status.observed_generation
                == 1
            ),
            timeout=60,
        )
        st = policy.read_namespaced_pod_disruption_budget("nobody", "default").status
        assert (st.expected_pods, st.disruptions_allowed, st.current_healthy) == (0, 0, 0)
        until(
            lambda: core.read_namespaced_pod("lone-0", "default").status.phase == "Running",
            timeout=60,
        )
        pod = core.read_namespaced_pod("lone-0", "default")
        spec, c = pod.spec, pod.spec.containers[0]
        assert (spec.enable_service_links, spec.dns_policy, spec.restart_policy) == (
            True,
            "ClusterFirst",
            "Always",
        )
        assert (spec.scheduler_name, spec.termination_grace_period_seconds) == (
            "default-scheduler",
            30,
        )
        assert (c.image_pull_policy, c.termination_message_path) == (
            "Always",
            "/dev/termination-log",
        )
        assert [h.ip for h in pod.status.host_ips] == [pod.status.host_ip]
        assert pod.status.container_statuses[0].restart_count == 0
    finally:
        api.close()
