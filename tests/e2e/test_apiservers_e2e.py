"""End to end, two active-active apiservers (`kubera up --apiservers 2`): the context and
`kubera components` name both replicas; a Deployment's pods run; SIGKILL of the replica
the scheduler, the node pool and the CLI dial first leaves the cluster working through the
other one (a new pod is bound and runs, a deleted pod of the Deployment is replaced, the
nodes stay Ready), the killed replica comes back on its address, and `kubera check`
finds nothing wrong."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import yaml

from kubera.launch import procs
from kubera.testing import Cluster
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

CONTAINER = {
    "name": "c",
    "image": "registry.k8s.io/pause:3.9",
    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
}


#: A cluster of its own (tests/e2e/conftest.py): it kills an apiserver replica.
EXCLUSIVE = True
UP_ARGS = ("--apiservers", "2", "--nodes", "3")


def _apply(k: Cluster, tmp: Path, name: str, *docs: dict) -> None:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    r = k("apply", "-f", str(path))
    assert r.returncode == 0, r.stderr


def _running(k: Cluster, prefix: str) -> dict[str, dict]:
    r = k("get", "pods", "-o", "json")
    assert r.returncode == 0, r.stderr
    return {
        p["metadata"]["name"]: p
        for p in json.loads(r.stdout)["items"]
        if p["metadata"]["name"].startswith(prefix)
        and not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") == "Running"
    }


def _context(k: Cluster) -> dict:
    return json.loads((k.home / "context.json").read_text())


def _apiserver_rows(k: Cluster) -> dict[str, dict]:
    r = k("components", "-o", "json")
    assert r.returncode == 0, r.stderr
    return {c["name"]: c for c in json.loads(r.stdout)["components"] if c["kind"] == "apiserver"}


def _ready_nodes(k: Cluster) -> int:
    r = k("get", "nodes", "-o", "json")
    assert r.returncode == 0, r.stderr
    return sum(
        any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
        for n in json.loads(r.stdout)["items"]
    )


def test_two_apiservers_one_killed_the_cluster_works_through_the_other(
    cluster: Cluster, tmp_path: Path
) -> None:
    ctx = _context(cluster)
    replicas = ctx["apiservers"]
    assert [a["name"] for a in replicas] == ["apiserver", "apiserver-1"]
    assert ctx["apiserver"] == ",".join(a["address"] for a in replicas)
    assert len({a["address"] for a in replicas}) == 2
    rows = _apiserver_rows(cluster)
    assert {n: r["state"] for n, r in rows.items()} == {
        "apiserver": "alive",
        "apiserver-1": "alive",
    }

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
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
    _apply(cluster, tmp_path, "deployment", deployment)
    until(lambda: len(_running(cluster, "web-")) == 2)

    # replica 0: the first address of the scheduler, the pool and the CLI
    victim = replicas[0]
    pid = int(victim["pid"])
    assert procs.alive(pid, int(ctx["started"].get(str(pid), 0)))
    os.kill(pid, signal.SIGKILL)

    # The scheduler and the node pool: a new pod is bound and runs on a hollow node.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after"}, "spec": {"containers": [CONTAINER]}}  # fmt: skip
    _apply(cluster, tmp_path, "pod", pod)
    got = until(lambda: _running(cluster, "after").get("after"), timeout=30)
    assert got["spec"]["nodeName"].startswith("kubera-node-")

    # The controller-manager: a deleted pod of the Deployment is replaced.
    gone = sorted(_running(cluster, "web-"))[0]
    r = cluster("delete", "pod", gone)
    assert r.returncode == 0, r.stderr
    until(lambda: len(pods := _running(cluster, "web-")) == 2 and gone not in pods, timeout=30)
    assert _ready_nodes(cluster) == 3

    # The killed replica is back, on its address, as a new process.
    def back() -> bool:
        now = _context(cluster)["apiservers"][0]
        return now["pid"] != pid and now["address"] == victim["address"]

    until(back, timeout=30)
    until(lambda: _apiserver_rows(cluster)["apiserver"]["state"] == "alive", timeout=30)

    r = cluster("check", "--settle", "5s", timeout=120)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
