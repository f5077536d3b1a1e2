"""Scheduling end to end through the CLI, as a user would: `kubera up` with a
KubeSchedulerConfiguration, `kubera apply` of ordinary YAML, `kubera get` to see where
pods landed, and the FailedScheduling words when they cannot."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
import yaml

from kubera.testing import Cluster
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from tests.e2e.helpers import ROOT, kubectl
from tests.rayhead import on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]
PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]

TWO_PROFILES = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packing
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
"""


class Kubera(Cluster):
    """The CLI (kubera.testing.Cluster) with the queries these tests make."""

    def apply(self, yaml_text: str) -> None:
        r = self("apply", "-f", "-", stdin=yaml_text)
        assert r.returncode == 0, r.stderr

    def pod(self, name: str) -> dict:
        """The pod, read with kubectl (a poll through `kubera get` starts a Python each
        time)."""
        return json.loads(kubectl(self, "get", "pod", name, "-o", "json").stdout)

    def wait(self, name: str, pred, what: str, timeout: float = 60.0) -> dict:
        """Poll the pod (bounded) until `pred(pod)` holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.pod(name)
            if pred(p):
                return p
            time.sleep(0.2)
        raise AssertionError(f"pod {name}: not {what} within {timeout}s: {p.get('status')}")

    def node_of(self, name: str) -> str:
        return self.wait(name, lambda p: p["spec"].get("nodeName"), "bound")["spec"]["nodeName"]

    def pending_message(self, name: str) -> str:
        def msg(p: dict) -> str:
            for c in p.get("status", {}).get("conditions", []):
                if c["type"] == "PodScheduled" and c["status"] == "False":
                    return c.get("message", "")
            return ""

        return msg(self.wait(name, msg, "reported unschedulable"))

    def clear(self, timeout: float = 60.0) -> None:
        """Delete every pod (at once) and every node, through the apiserver's client with
        the cluster's admin token (not the CLI: a process each call); return once none is
        listed."""
        asyncio.run(asyncio.wait_for(_clear(self.context["apiserver"]), timeout))


async def _clear(address: str) -> None:
    async with Client(address, timeout=30) as c:
        for kind in (PODS, NODES):
            items, _ = await c.list(kind)
            for o in items:
                m = o.metadata  # type: ignore[attr-defined]
                with contextlib.suppress(NotFoundError):
                    await c.delete(kind, m.name, m.namespace, grace_period_seconds=0)
        while (await c.list(PODS))[0] or (await c.list(NODES))[0]:
            await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
def running_kubera(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Kubera]:
    """One cluster for the module: `kubera up` with no nodes and the two profiles."""
    tmp = tmp_path_factory.mktemp("scheduling")
    cfg = tmp / "scheduler.yaml"
    cfg.write_text(TWO_PROFILES)
    k = Kubera(tmp / "home", cwd=ROOT, timeout=240)
    up = k.start(
        *on_ray(k.home, shared_ray),
        *("--nodes", "0", "--scheduler-config", str(cfg), "--scheduler-seed", "1"),
    )
    assert up.returncode == 0, up.stderr
    try:
        yield k
    finally:
        k.stop()


@pytest.fixture
def kubera(running_kubera: Kubera) -> Iterator[Kubera]:
    """The module's cluster, left as the test found it: with no pod and no node (each test
    makes its own nodes, and the FailedScheduling words count them)."""
    yield running_kubera
    running_kubera.clear()


def nodes(*specs: tuple[str, str, dict, list]) -> str:
    """Node manifests: (name, zone, extra labels, taints)."""
    docs = []
    for name, zone, labels, taints in specs:
        docs.append(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "topology.kubernetes.io/zone": zone,
                            **labels,
                        },
                    },
                    "spec": {"taints": taints},
                    "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                }
            )
        )
    return "\n---\n".join(docs)


def pod(name: str, *, labels: dict | None = None, cpu: str = "100m", **spec) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": cpu}},
                    }
                ],
                **spec,
            },
        }
    )


def test_preferred_node_affinity_weights_and_taints(kubera: Kubera) -> None:
    kubera.apply(
        nodes(
            ("a", "z1", {"label-1": "key-1"}, []),
            ("b", "z1", {"label-2": "key-2"}, []),
            ("gpu", "z1", {}, [{"key": "dedicated", "value": "accel", "effect": "NoSchedule"}]),
        )
    )
    kubera.apply(
        (ROOT / "examples/seeds/02-node-affinity-with-affinity-preferred-weight.yaml")
        .read_text()
        .replace("kubernetes.io/os", "topology.kubernetes.io/zone")
        .replace("- linux", "- z1")
    )
    assert kubera.node_of("with-affinity-preferred-weight") == "b"  # weight 50 beats weight 1
    kubera.apply(pod("picky", nodeSelector={"kubernetes.io/hostname": "gpu"}))
    assert kubera.pending_message("picky") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    kubera.apply(
        pod(
            "tolerant",
            nodeSelector={"kubernetes.io/hostname": "gpu"},
            tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "accel", "effect": "NoSchedule"}
            ],
        )
    )
    assert kubera.node_of("tolerant") == "gpu"
    explained = kubera("explain", "pod", "picky")
    assert "TaintToleration" in explained.stdout and "NodeAffinity" in explained.stdout


def test_pod_anti_affinity_spreads_and_affinity_colocates(kubera: Kubera) -> None:
    kubera.apply(nodes(("n1", "z1", {}, []), ("n2", "z1", {}, []), ("n3", "z2", {}, [])))
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "store"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    kubera.apply(
        "\n---\n".join(pod(f"cache-{i}", labels={"app": "store"}, affinity=anti) for i in range(3))
    )
    assert sorted(kubera.node_of(f"cache-{i}") for i in range(3)) == ["n1", "n2", "n3"]
    kubera.apply(pod("cache-3", labels={"app": "store"}, affinity=anti))
    assert (
        kubera.pending_message("cache-3")
        == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    kubera.apply(pod("db", labels={"app": "db"}))
    db_node = kubera.node_of("db")
    co = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    kubera.apply(pod("web", affinity=co))
    assert kubera.node_of("web") == db_node


def test_topology_spread_by_zone_and_node_with_a_conflict_left_pending(kubera: Kubera) -> None:
    kubera.apply(nodes(("a1", "za", {}, []), ("a2", "za", {}, []), ("b1", "zb", {}, [])))
    zone = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    host = {**zone, "topologyKey": "kubernetes.io/hostname"}
    for i in range(4):
        kubera.apply(pod(f"w{i}", labels={"app": "web"}, topologySpreadConstraints=[zone, host]))
        kubera.node_of(f"w{i}")
    placed = [kubera.node_of(f"w{i}") for i in range(4)]
    assert sorted(p[0] for p in placed) == ["a", "a", "b", "b"]  # 2 per zone
    # pinned to zone zb while spreading over both zones: the skew would become 2
    pinned = {**zone, "nodeAffinityPolicy": "Ignore"}
    kubera.apply(
        pod(
            "fits",
            labels={"app": "web"},
            topologySpreadConstraints=[pinned],
            nodeSelector={"topology.kubernetes.io/zone": "zb"},
        )
    )
    assert kubera.node_of("fits") == "b1"
    kubera.apply(
        pod(
            "stuck",
            labels={"app": "web"},
            topologySpreadConstraints=[pinned],
            nodeSelector={"topology.kubernetes.io/zone": "zb"},
        )
    )
    assert kubera.pending_message("stuck") == (
        "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


def _pod_scheduled(p: dict) -> tuple[str, str, str]:
    (c,) = [c for c in p["status"].get("conditions", []) if c["type"] == "PodScheduled"]
    return c["status"], c.get("reason", ""), c.get("message", "")


GATED = ("False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")


def test_a_gated_pod_schedules_once_ungated(kubera: Kubera) -> None:
    """The seed's pod-scheduling-readiness example: the apiserver writes PodScheduled=False
    SchedulingGated at create (upstream's pod strategy), kubectl shows STATUS
    SchedulingGated, and once ungated the binding turns the condition True."""
    kubera.apply(nodes(("n1", "z1", {}, [])))
    gated = (ROOT / "examples/seeds/12-scheduling-gates-test-pod-2.yaml").read_text()
    kubera.apply(gated)
    name = yaml.safe_load(gated)["metadata"]["name"]
    assert _pod_scheduled(kubera.pod(name)) == GATED
    kubera.apply(pod("canary"))
    kubera.node_of("canary")
    assert _pod_scheduled(kubera.pod(name)) == GATED  # the scheduler leaves a gated pod alone
    assert "SchedulingGated" in kubera("get", "pod", name).stdout
    env = {"KUBECONFIG": str(kubera.home / "kubeconfig"), "HOME": str(kubera.home)}
    r = subprocess.run(
        ["kubectl", "get", "pod", name, "--no-headers"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:3] == [name, "0/1", "SchedulingGated"]
    ungated = yaml.safe_load(gated)
    ungated["spec"].pop("schedulingGates")
    kubera.apply(json.dumps(ungated))  # apply without the gates removes them
    assert kubera.node_of(name) == "n1"
    assert _pod_scheduled(kubera.pod(name)) == ("True", "", "")


def test_an_ungated_pod_that_fits_nowhere_turns_unschedulable(kubera: Kubera) -> None:
    """Upstream: the scheduler's failure handler replaces SchedulingGated with Unschedulable
    (the status stays False) once the gates are gone and no node fits."""
    kubera.apply(nodes(("n1", "z1", {}, [])))
    kubera.apply(pod("gated-nowhere", nodeSelector={"no": "such"}, schedulingGates=[{"name": "g"}]))
    assert _pod_scheduled(kubera.pod("gated-nowhere")) == GATED
    kubera.apply(pod("gated-nowhere", nodeSelector={"no": "such"}))
    p = kubera.wait(
        "gated-nowhere", lambda p: _pod_scheduled(p)[1] == "Unschedulable", "unschedulable"
    )
    assert _pod_scheduled(p)[0] == "False"
    assert "STATUS" in kubera("get", "pod", "gated-nowhere").stdout
    assert "SchedulingGated" not in kubera("get", "pod", "gated-nowhere").stdout


def test_two_profiles_with_different_scoring_strategies(kubera: Kubera) -> None:
    kubera.apply(nodes(("busy", "z1", {}, []), ("idle", "z1", {}, [])))
    kubera.apply(pod("filler", cpu="2", nodeName="busy"))
    kubera.apply(pod("spread", cpu="500m"))
    kubera.apply(pod("packed", cpu="500m", schedulerName="bin-packing"))
    assert kubera.node_of("spread") == "idle"  # LeastAllocated (default profile)
    assert kubera.node_of("packed") == "busy"  # MostAllocated
    kubera.apply(pod("nobody", schedulerName="not-a-profile"))
    r = kubera("explain", "pod", "nobody")
    assert "No scheduling attempts recorded" in r.stdout  # left alone
