"""End to end with hollow nodes, as a user: `kubera up --nodes 4 --time-scale 20` (real
etcd, real Ray, node-pool and controller-manager actors), a Deployment applied from YAML
runs, a killed node's pods are replaced elsewhere once their toleration runs out, revive
and drain work, and `kubera down` leaves nothing behind."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kubera.testing import Cluster, alive
from tests.e2e.helpers import kubectl, running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


# A cluster of its own (tests/e2e/conftest.py): it kills and drains nodes.
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    up_args = ("--nodes", "4", "--nodes-per-pool", "2", "--time-scale", "20", "--no-scheduler")
    with running(home, *up_args, ray_address=shared_ray) as k:
        assert "4 hollow nodes in 2 pool(s)" in k.up_stdout
        yield k


def _pods(k: Cluster) -> list[dict]:
    """The pods, read with kubectl (a poll through `kubera get` starts a Python each time)."""
    return json.loads(kubectl(k, "get", "pods", "-o", "json").stdout)["items"]


def test_nodes_register_ready_with_leases(cluster: Cluster) -> None:
    r = cluster("get", "nodes")
    lines = r.stdout.splitlines()[1:]
    assert len(lines) == 4 and all(" Ready " in ln for ln in lines), r.stdout
    leases = cluster("get", "leases", "-n", "kube-node-lease", "-o", "name")
    assert len(leases.stdout.split()) == 4


def test_pods_bound_by_node_name_run_and_a_killed_node_loses_them(cluster: Cluster) -> None:
    docs = []
    for i, node in enumerate(["kubera-node-00000", "kubera-node-00001"]):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "default"},
                "spec": {
                    "nodeName": node,
                    "terminationGracePeriodSeconds": 20,
                    "tolerations": [
                        {
                            "key": "node.kubernetes.io/unreachable",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 10,
                        }
                    ],
                    "containers": [{"name": "c", "image": "nginx"}],
                },
            }
        )
    r = cluster("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))
    assert r.returncode == 0, r.stderr
    until(
        lambda: (
            all(p["status"].get("phase") == "Running" for p in _pods(cluster))
            and len(_pods(cluster)) == 2
        )
    )
    r = cluster("chaos", "kill-node", "kubera-node-00000")
    assert r.stdout.strip() == "node/kubera-node-00000 killed", r.stderr

    def tainted_and_terminating() -> bool:
        node = json.loads(cluster("get", "node", "kubera-node-00000", "-o", "json").stdout)
        taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints", [])}
        p0 = next(p for p in _pods(cluster) if p["metadata"]["name"] == "p0")
        return ("node.kubernetes.io/unreachable", "NoExecute") in taints and bool(
            p0["metadata"].get("deletionTimestamp")
        )

    until(tainted_and_terminating)  # 50 s grace + 10 s toleration, at 20x
    r = cluster("chaos", "revive-node", "kubera-node-00000")
    assert r.stdout.strip() == "node/kubera-node-00000 revived"
    until(lambda: [p["metadata"]["name"] for p in _pods(cluster)] == ["p1"])  # kubelet finished it
    r = cluster("chaos", "kill-node", "no-such-node")
    assert r.returncode == 1 and "no hollow kubelet runs no-such-node" in r.stderr


def test_drain_cordons_and_the_kubelet_finishes_the_deletion(cluster: Cluster) -> None:
    r = cluster("drain", "kubera-node-00001", "--force", "--timeout", "60s")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "node/kubera-node-00001 cordoned"
    assert r.stdout.splitlines()[-1] == "node/kubera-node-00001 drained"
    assert _pods(cluster) == []
    wide = cluster("get", "node", "kubera-node-00001", "-o", "wide").stdout
    assert "SchedulingDisabled" in wide


def test_down_stops_the_pools_and_controllers(cluster: Cluster) -> None:
    ctx = cluster.context  # type: ignore[attr-defined]
    pool_pids = [p["pid"] for p in ctx["node_pools"]]
    assert all(alive(pid) for pid in pool_pids)
    r = cluster("down")
    assert r.returncode == 0, r.stderr
    until(lambda: not any(alive(pid) for pid in pool_pids), timeout=30)
