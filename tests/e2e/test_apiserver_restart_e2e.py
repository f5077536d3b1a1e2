"""End to end, as a user killing the apiserver on purpose: `kubera chaos kill-apiserver`
SIGKILLs its process; Ray re-creates the actor and the supervisor starts it on the same
address, and every client finds it again by itself — the CLI, the scheduler (a new pod is
bound and reaches Running on a hollow node), the controller-manager (a ReplicaSet replaces
a deleted pod), the node pool (its watch, its batched status writes) and the Lease
publishing of the leaders. `kubera check` then finds nothing wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kubera.testing import Cluster
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

#: "within a few seconds": generous for a loaded 2-core machine, where it takes ~2 s.
BACK_WITHIN = 15.0

CONTAINER = {
    "name": "c",
    "image": "registry.k8s.io/pause:3.9",
    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
}


#: A cluster of its own (tests/e2e/conftest.py): it restarts the apiserver.
EXCLUSIVE = True
UP_ARGS = ("--nodes", "3")


def _apply(k: Cluster, tmp: Path, name: str, *docs: dict) -> None:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    r = k("apply", "-f", str(path))
    assert r.returncode == 0, r.stderr


def _pods(k: Cluster) -> dict[str, dict]:
    r = k("get", "pods", "-o", "json")
    assert r.returncode == 0, r.stderr
    return {p["metadata"]["name"]: p for p in json.loads(r.stdout)["items"]}


def _running(k: Cluster, prefix: str) -> dict[str, dict]:
    return {
        n: p
        for n, p in _pods(k).items()
        if n.startswith(prefix)
        and not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") == "Running"
    }


def _context(k: Cluster) -> dict:
    return json.loads((k.home / "context.json").read_text())


def _lease_renewed(k: Cluster, name: str) -> str:
    r = k("get", "lease", name, "-n", "kube-system", "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["spec"].get("renewTime", "")


def test_killed_apiserver_comes_back_on_its_address_and_the_cluster_works_again(
    cluster: Cluster, tmp_path: Path
) -> None:
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [CONTAINER]},
            },
        },
    }
    _apply(cluster, tmp_path, "rs", replicaset)
    until(lambda: len(_running(cluster, "web-")) == 2)
    before = _context(cluster)
    renewed = _lease_renewed(cluster, "kube-scheduler")

    r = cluster("chaos", "kill-apiserver", "--wait", "60")
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    m = re.search(r"first successful write after ([\d.]+)s, first bind after ([\d.]+)s", r.stdout)
    assert m, r.stdout
    assert float(m[1]) < BACK_WITHIN and float(m[2]) < BACK_WITHIN, r.stdout

    after = _context(cluster)
    assert after["apiserver"] == before["apiserver"]  # the same address: nobody re-resolves
    assert after["apiserver_pid"] not in (0, before["apiserver_pid"])

    # The scheduler and the node pool: a new pod is bound and runs on a hollow node.
    _apply(
        cluster,
        tmp_path,
        "pod",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after"}, "spec": {"containers": [CONTAINER]}},
    )  # fmt: skip
    pod = until(lambda: _running(cluster, "after").get("after"), timeout=30)
    assert pod["spec"]["nodeName"].startswith("kubera-node-")  # type: ignore[index]

    # The controller-manager: a deleted pod of the ReplicaSet is replaced.
    gone = sorted(_running(cluster, "web-"))[0]
    r = cluster("delete", "pod", gone)
    assert r.returncode == 0, r.stderr
    until(lambda: len(pods := _running(cluster, "web-")) == 2 and gone not in pods, timeout=30)

    # The leader keeps publishing its Lease through the new apiserver.
    until(lambda: _lease_renewed(cluster, "kube-scheduler") != renewed, timeout=30)

    r = cluster("check", "--settle", "30s", timeout=120)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr


def test_chaos_run_kills_the_apiserver_again_and_again(cluster: Cluster) -> None:
    r = cluster(
        "chaos", "run", "--kinds", "kill-apiserver", "--faults", "2", "--interval", "1s",
        timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 faults" in r.stdout and "apiserver kills: 2; kill → first write median" in r.stdout
    r = cluster("get", "nodes")
    assert r.returncode == 0 and r.stdout.count("Ready") == 3, r.stdout + r.stderr
