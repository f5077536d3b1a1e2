"""Preemption end to end on hollow nodes (`kubera up --nodes 3`), through the CLI: low-priority
pods pinned to the nodes, a PodDisruptionBudget over some of them; a high-priority pod that
fits nowhere lands on the node upstream's rules choose (the one whose victim violates no
budget) and only that victim goes; a preemptionPolicy Never pod stays Pending and evicts
nothing; `kubera get pods -o wide` shows the nomination and `kubera explain pod` the
decision."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import ROOT, kubectl
from tests.rayhead import on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def doc(obj: dict) -> str:
    return json.dumps(obj)


def priority_class(name: str, value: int, policy: str = "PreemptLowerPriority") -> str:
    return doc(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": policy,
        }
    )


def pod(name: str, cls: str, cpu: str, *, node: str = "", labels: dict | None = None) -> str:
    spec: dict = {
        "priorityClassName": cls,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return doc(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
        }
    )


@pytest.fixture
def kubera(tmp_path: Path, shared_ray: str) -> Iterator[Cluster]:
    k = Cluster(tmp_path / "home", cwd=ROOT, timeout=240)
    up = k.start(*on_ray(k.home, shared_ray), "--nodes", "3", "--scheduler-seed", "1")
    assert up.returncode == 0, up.stderr
    try:
        yield k
    finally:
        k.stop()


def get(k: Cluster, *args: str) -> dict:
    """Read with kubectl (a poll through `kubera get` starts a Python each time)."""
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def wait(k: Cluster, pred, what: str, timeout: float = 90.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"not {what} within {timeout}s")


def test_preemption_takes_the_minimal_victims_where_no_budget_is_violated(
    kubera: Cluster,
) -> None:
    k = kubera
    nodes = wait(
        k,
        lambda: sorted(n["metadata"]["name"] for n in get(k, "nodes")["items"]) or None,
        "listing nodes",
    )
    assert len(nodes) == 3
    cpu = get(k, "node", nodes[0])["status"]["allocatable"]["cpu"]
    big = f"{int(cpu) * 1000 - 500}m"  # one per node: nothing else of that size fits
    manifests = [
        priority_class("low", 0),
        priority_class("high", 1000),
        priority_class("high-never", 1000, "Never"),
        doc(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guard"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
            }
        ),
        pod("guarded-0", "low", big, node=nodes[0], labels={"app": "guarded"}),
        pod("guarded-1", "low", big, node=nodes[1], labels={"app": "guarded"}),
        pod("plain", "low", big, node=nodes[2], labels={"app": "plain"}),
    ]
    r = k("apply", "-f", "-", stdin="\n---\n".join(manifests))
    assert r.returncode == 0, r.stderr
    wait(
        k,
        lambda: (
            all(p.get("status", {}).get("phase") == "Running" for p in get(k, "pods")["items"])
            and len(get(k, "pods")["items"]) == 3
        ),
        "all low pods running",
    )

    r = k("apply", "-f", "-", stdin=pod("never", "high-never", big))
    assert r.returncode == 0, r.stderr

    def pending_message(name: str) -> str:
        for c in get(k, "pod", name).get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return c.get("message", "")
        return ""

    msg = wait(k, lambda: pending_message("never"), "reported unschedulable")
    assert msg.endswith("preemption: not eligible due to preemptionPolicy=Never.")

    r = k("apply", "-f", "-", stdin=pod("urgent", "high", big))
    assert r.returncode == 0, r.stderr
    node = wait(k, lambda: get(k, "pod", "urgent")["spec"].get("nodeName"), "bound", 120)
    assert node == nodes[2]
    names = sorted(p["metadata"]["name"] for p in get(k, "pods")["items"])
    assert names == ["guarded-0", "guarded-1", "never", "urgent"]
    assert not get(k, "pod", "never")["spec"].get("nodeName")

    r = k("explain", "pod", "urgent")
    assert r.returncode == 0, r.stderr
    assert f"nominated {nodes[2]}; preempting default/plain" in r.stdout
    r = k("get", "pods", "-o", "wide")
    assert r.returncode == 0 and "NOMINATED NODE" in r.stdout
