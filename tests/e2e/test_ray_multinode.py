"""End to end on a real Ray cluster of three nodes on this machine (tests/e2e/raycluster.py):
a head marked control-plane (127.0.0.2), worker 1 marked control-plane and node-pool
(127.0.0.3), worker 2 marked node-pool (127.0.0.4). `kubera up --ray-address` places the
apiserver on the head, the two scheduler replicas on distinct control-plane nodes and one
node pool on each worker, each component serving on its own node's address, over TLS
(several Ray nodes: component TLS is on, and a plaintext call is refused). Then worker 1
dies — every process of it SIGKILLed at once — and what ran there comes back on the
surviving nodes: its pool on worker 2 (its nodes stay Ready, its pods Running, new pods
start on them), its scheduler replica on the head; `kubera check` finds the history clean.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from kubera.testing import Cluster
from protos.kubera.v1 import chaos_pb2 as pb
from protos.kubera.v1 import chaos_pb2_grpc as pb_grpc
from tests.e2e.helpers import kubera_in
from tests.e2e.raycluster import RayCluster

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

CP, NP = "kubera/control-plane", "kubera/node-pool"
NODES, PER_POOL = 20, 10


def _deployment(path: Path, replicas: int) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "registry.k8s.io/pause:3.9",
                                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                                }
                            ]
                        },
                    },
                },
            }
        )
    )
    return path


def until(check: Callable[[], Any], what: Callable[[], object], timeout: float) -> Any:
    """Poll `check` until it returns something truthy; on timeout fail with `what()` (the
    state that was not reached, for the log)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"not reached in {timeout:g}s: {what()}"
        time.sleep(0.5)


def _components(k: Cluster) -> dict[str, dict[str, Any]]:
    r = k("components", "-o", "json")
    assert r.returncode == 0, r.stderr
    return {c["name"]: c for c in json.loads(r.stdout)["components"]}


def _elected(components: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """The components once each election has its leader (the other replica a standby)."""
    roles = sorted(c["role"] for n, c in components.items() if n.startswith("scheduler"))
    leading = components["controller-manager"]["role"] == "leader"
    return components if roles == ["leader", "standby"] and leading else None


def _json(k: Cluster, *args: str) -> list[dict[str, Any]]:
    r = k("get", *args, "-o", "json")
    assert r.returncode == 0, r.stderr
    return list(json.loads(r.stdout)["items"])


def _running(k: Cluster) -> dict[str, str]:
    """The Deployment's Running pods: name -> node."""
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in _json(k, "pods", "-l", "app=web")
        if p.get("status", {}).get("phase") == "Running"
    }


def _phases(k: Cluster) -> dict[str, int]:
    """How many of the Deployment's pods are in each phase (unbound: "Unbound")."""
    out: dict[str, int] = {}
    for p in _json(k, "pods", "-l", "app=web"):
        phase = p.get("status", {}).get("phase", "") if p["spec"].get("nodeName") else "Unbound"
        out[phase] = out.get(phase, 0) + 1
    return out


def _all_running(k: Cluster, count: int) -> dict[str, str] | None:
    running = _running(k)
    return running if len(running) == count else None


def _ready(k: Cluster) -> set[str]:
    return {
        n["metadata"]["name"]
        for n in _json(k, "nodes")
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in n.get("status", {}).get("conditions", [])
        )
    }


def test_components_placed_by_resource_and_back_after_a_worker_dies(tmp_path: Path) -> None:
    with RayCluster(tmp_path, head={CP: 1}, workers=[{CP: 1, NP: 1}, {NP: 1}]) as ray:
        head, w1, w2 = ray.nodes
        k = kubera_in(tmp_path / "home")
        try:
            up = k.start(
                *("--ray-address", ray.address),
                *("--nodes", str(NODES), "--nodes-per-pool", str(PER_POOL)),
                *("--schedulers", "2"),
                *("--leader-elect-lease-duration", "2s"),
                *("--leader-elect-renew-deadline", "1500ms"),
                *("--leader-elect-retry-period", "500ms"),
            )
            assert up.returncode == 0, up.stderr + up.stdout
            assert "placement: control plane on kubera/control-plane" in up.stdout
            assert "TLS on every component's server" in up.stdout
            assert k.context["component_tls"] is True

            # Placed on purpose, each serving on its own node's address.
            before = until(lambda: _elected(_components(k)), lambda: _components(k), 30)
            assert set(before) == {
                "apiserver",
                "scheduler",
                "scheduler-0-1",
                "controller-manager",
                "pool-0",
                "pool-1",
            }, before
            for c in before.values():
                assert c["state"] == "alive" and c["answered"], c
                assert c["address"].startswith(c["node_ip"] + ":"), c
                # every component's server (the CLI reached it over TLS) refuses plaintext
                assert _plaintext_refused(c["address"]), c
            assert before["apiserver"]["node_ip"] == head.ip
            pools = {n: c["node_ip"] for n, c in before.items() if c["kind"] == "node-pool"}
            assert sorted(pools.values()) == [w1.ip, w2.ip], pools
            schedulers = [before["scheduler"]["node_ip"], before["scheduler-0-1"]["node_ip"]]
            assert sorted(schedulers) == [head.ip, w1.ip], schedulers
            assert before["controller-manager"]["node_ip"] in (head.ip, w1.ip)

            manifest = _deployment(tmp_path / "web.yaml", 30)
            assert k("apply", "-f", str(manifest)).returncode == 0
            until(lambda: len(_running(k)) == 30, lambda: _phases(k), 60)

            # Worker 1 dies: every process of it at once.
            lost = {n for n, c in before.items() if c["node_id"] == _node_id(before, w1.ip)}
            lost_pool = next(n for n, ip in pools.items() if ip == w1.ip)
            assert lost_pool in lost and len(lost) >= 2, lost  # a pool and a scheduler
            killed = w1.kill()
            assert len(killed) >= 4, killed  # ray start, raylet, its agents, its workers

            def back() -> dict[str, dict[str, Any]] | None:
                now = _components(k)
                ok = all(
                    now[n]["state"] == "alive"
                    and now[n]["answered"]
                    and now[n]["node_ip"] != w1.ip
                    and now[n]["restarts"] >= 1
                    for n in lost
                )
                return now if ok else None

            after = until(back, lambda: _components(k), 120)
            assert after[lost_pool]["node_ip"] == w2.ip
            assert after[lost_pool]["address"].startswith(w2.ip + ":")
            for n, c in after.items():
                if c["kind"] == "node-pool":
                    assert c["node_ip"] == w2.ip, (n, c)
                if n not in lost:  # nothing else moved or restarted
                    assert c["pid"] == before[n]["pid"] and c["restarts"] == 0, (n, c)
            assert after["apiserver"]["pid"] == before["apiserver"]["pid"]

            # Its nodes stay Ready and keep their pods; new pods start on them too.
            all_nodes = {f"kubera-node-{i:05d}" for i in range(NODES)}
            until(lambda: _ready(k) == all_nodes, lambda: all_nodes - _ready(k), 60)
            assert len(_running(k)) == 30
            assert k("apply", "-f", str(_deployment(manifest, 50))).returncode == 0
            running = until(lambda: _all_running(k, 50), lambda: (_phases(k), _components(k)), 90)
            pool_nodes = _pool_nodes(k, lost_pool)
            assert any(node in pool_nodes for node in running.values()), running

            # The moved pool's API answers at its new address (the context follows it).
            victim = sorted(pool_nodes)[0]
            r = k("chaos", "kill-node", victim)
            assert r.returncode == 0, r.stderr
            r = k("chaos", "revive-node", victim)
            assert r.returncode == 0, r.stderr

            r = k("check", "--settle", "30s")
            assert r.returncode == 0, r.stdout + r.stderr
            assert "no pod lost" in r.stdout
        finally:
            k.stop()


def _plaintext_refused(address: str) -> bool:
    """Whether a plaintext gRPC call (chaos Status, open to anyone, on every component's
    server) to `address` fails to connect."""

    async def call() -> bool:
        async with grpc.aio.insecure_channel(address) as ch:
            try:
                await pb_grpc.ChaosStub(ch).Status(pb.StatusRequest(), timeout=5)
            except grpc.aio.AioRpcError as e:
                return e.code() == grpc.StatusCode.UNAVAILABLE
        return False

    return asyncio.run(call())


def _node_id(components: dict[str, dict[str, Any]], ip: str) -> str:
    """The Ray node id of the node at `ip` (from any component running there)."""
    return next(c["node_id"] for c in components.values() if c["node_ip"] == ip)


def _pool_nodes(k: Cluster, pool: str) -> set[str]:
    ctx = json.loads(k.context_file.read_text())
    entry = next(p for p in ctx["node_pools"] if p["name"] == pool)
    return {f"kubera-node-{i:05d}" for i in range(entry["first"], entry["first"] + entry["count"])}
