"""docker-compose.yml's services run as local processes (tests/compose/project.py says how
a container is stood in for): etcd until its healthcheck passes, a Ray head, ray-worker
scaled to 2, the kubera service's `kubera up` against them until its hollow nodes are
Ready, a Deployment through it, then the experiment service's run and its report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubera.launch.etcd import free_port
from tests.compose.project import (
    HAS_EXPERIMENT_CLI,
    ROOT,
    LocalProject,
    Replica,
    loopback_net,
    resolve,
)

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

NODES = 4
WORKERS = 2

#: A small scheduler_perf test case in upstream's format, templates beside it.
EXPERIMENT = """\
- name: ComposeSmoke
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
    nodeTemplatePath: node-default.yaml
  - opcode: createPods
    countParam: $measurePods
    podTemplatePath: pod-default.yaml
    collectMetrics: true
  workloads:
  - name: small
    labels: [performance]
    params:
      initNodes: 4
      measurePods: 10
"""
NODE_TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"generateName": "scheduler-perf-"},
    "spec": {},
    "status": {
        "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
        "conditions": [{"status": "True", "type": "Ready"}],
        "phase": "Running",
    },
}
POD_TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {
        "containers": [
            {
                "image": "registry.k8s.io/pause:3.10",
                "name": "pause",
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    },
}


def experiment_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "compose-smoke.yaml").write_text(EXPERIMENT)
    (path / "node-default.yaml").write_text(yaml.safe_dump(NODE_TEMPLATE))
    (path / "pod-default.yaml").write_text(yaml.safe_dump(POD_TEMPLATE))
    return path


@pytest.fixture
def project() -> Iterator[LocalProject]:
    # Short: Ray's unix sockets live under a replica's directory (107 bytes at most).
    work = Path(tempfile.mkdtemp(prefix="kc", dir="/tmp"))
    net = loopback_net()
    store = "--num-cpus=2 --object-store-memory=100000000"
    env = {
        "ETCD_HOST": f"{net}.2",
        "ETCD_PORT": str(free_port()),
        "ETCD_PEER_PORT": str(free_port()),
        "RAY_HEAD_HOST": f"{net}.3",
        "RAY_PORT": str(free_port()),
        "RAY_HEAD_ARGS": f"{store} --ray-client-server-port={free_port()}",
        "RAY_WORKER_ARGS": store,
        "EXPERIMENT_ETCD_HOST": f"{net}.4",
        "EXPERIMENT_ETCD_PORT": str(free_port()),
        "EXPERIMENT_ETCD_PEER_PORT": str(free_port()),
        "EXPERIMENT_DIR": str(experiment_dir(work / "examples")),
        "EXPERIMENT_FILE": "/examples/compose-smoke.yaml",
        "EXPERIMENT_RESULTS": str(work / "results"),
        "KUBERA_NODES": str(NODES),
        "KUBERA_NODES_PER_POOL": "2",
        "KUBERA_SCHEDULERS": "2",
        "KUBERA_UP_ARGS": "--leader-elect-lease-duration=2s --leader-elect-renew-deadline=1500ms "
        "--leader-elect-retry-period=500ms",
    }
    resolved = resolve(ROOT / "docker-compose.yml", env=env, profile="experiment")
    addresses = {"etcd": env["ETCD_HOST"], "ray-head": env["RAY_HEAD_HOST"]}
    addresses["experiment-etcd"] = env["EXPERIMENT_ETCD_HOST"]
    p = LocalProject(resolved, work, net, scale={"ray-worker": WORKERS}, addresses=addresses)
    try:
        yield p
    finally:
        p.down()
        if not os.environ.get("KC_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


def run_in(p: LocalProject, replica: Replica, *argv: str, timeout: float = 120):
    """A command in the replica's "container" (its environment and directory), as
    `docker compose exec SERVICE ARGV` runs one."""
    return subprocess.run(
        list(argv),
        env=replica.env,
        cwd=replica.root,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_for(p: LocalProject, what: str, check, timeout: float, *watch: Replica):
    """Poll `check()` until it returns something truthy; fail early when a replica in
    `watch` exits, with every replica's output."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        for r in watch:
            assert r.proc is not None and r.proc.poll() is None, (
                f"{r.name} exited ({r.proc and r.proc.returncode}) waiting for {what}\n" + p.tails()
            )
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n" + p.tails()
        time.sleep(1)


def ready_nodes(p: LocalProject, kubera: Replica) -> list[str]:
    r = run_in(p, kubera, "kubera", "get", "nodes", "-o", "json")
    if r.returncode != 0:
        return []
    return [
        n["metadata"]["name"]
        for n in json.loads(r.stdout)["items"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    ]


def host_of(address: str) -> str:
    return address.rpartition(":")[0]


def node_ip_of(pid: int) -> str:
    """The KUBERA_NODE_IP a process inherited: the "container" (Ray node) it runs in."""
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    found = [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"KUBERA_NODE_IP=")]
    return found[0] if found else ""


def test_compose_services_as_processes_run_kubera_and_an_experiment(project: LocalProject):
    p = project
    (etcd,) = p.up("etcd")
    (head,) = p.up("ray-head")
    workers = p.up("ray-worker")
    (kubera,) = p.up("kubera")
    assert len(workers) == WORKERS
    assert len({r.address for r in p.replicas}) == len(p.replicas)

    def all_ready() -> list[str]:
        names = ready_nodes(p, kubera)
        return names if len(names) == NODES else []

    nodes = wait_for(p, f"{NODES} Ready nodes", all_ready, 240, kubera)

    # One Ray cluster of the head, both workers and the kubera container's CPU-less raylet.
    script = (
        "import json, os, ray; ray.init(address=os.environ['RAY_HEAD_HOST'] + ':' + "
        "os.environ['RAY_PORT'], log_to_driver=False); "
        "print(json.dumps(sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive'])))"
    )
    r = run_in(p, kubera, "python", "-c", script)
    assert r.returncode == 0, r.stderr
    ray_nodes = {head.address, kubera.address, *(w.address for w in workers)}
    assert set(json.loads(r.stdout.strip().splitlines()[-1])) == ray_nodes

    # Placement as the file asks: the control plane on the head, the pools on the workers;
    # each component listens on its own Ray node's address, which the others dial.
    ctx = json.loads((Path(kubera.env["KUBERA_HOME"]) / "context.json").read_text())
    assert host_of(ctx["apiserver"]) == head.address
    assert host_of(ctx["scheduler"]) == head.address
    worker_addresses = {w.address for w in workers}
    assert len(ctx["node_pools"]) == NODES // 2
    for pool in ctx["node_pools"]:
        assert host_of(pool["address"]) in worker_addresses, pool
        assert node_ip_of(pool["pid"]) in worker_addresses, pool  # the process, not its word

    # The kubera service serves: a Deployment's pods are bound to its hollow nodes and run.
    r = run_in(p, kubera, "kubera", "apply", "-f", str(ROOT / "examples" / "deployment.yaml"))
    assert r.returncode == 0, r.stderr

    def running_pods() -> list[dict]:
        r = run_in(p, kubera, "kubera", "get", "pods", "-o", "json")
        items = json.loads(r.stdout)["items"] if r.returncode == 0 else []
        ok = [x for x in items if x["spec"].get("nodeName") in nodes]
        ok = [x for x in ok if x["status"].get("phase") == "Running"]
        return ok if ok and len(ok) == len(items) else []

    assert wait_for(p, "the Deployment's pods Running", running_pods, 120, kubera)
    assert etcd.proc is not None and etcd.proc.poll() is None

    if HAS_EXPERIMENT_CLI:
        run_experiment(p)
        assert kubera.proc is not None and kubera.proc.poll() is None  # undisturbed beside it

    # `docker compose stop`: SIGTERM, and kubera up stops what it started and exits 0.
    assert kubera.proc is not None
    kubera.proc.terminate()
    assert p.wait_exit(kubera, 60) == 0, kubera.tail()
    if not HAS_EXPERIMENT_CLI:
        pytest.skip("`kubera experiment` is not on this branch: the experiment step did not run")


def run_experiment(p: LocalProject) -> None:
    """The experiment service's command, to completion, and the report it wrote."""
    p.up("experiment-etcd")
    (experiment,) = p.up("experiment")
    assert p.wait_exit(experiment, 240) == 0, p.tails()
    mounts = p.project["services"]["experiment"]["volumes"]
    results = Path(next(v["source"] for v in mounts if v["target"] == "/results"))
    assert {"results.json", "DataItems.json", "report.html"} <= {f.name for f in results.iterdir()}
    data = json.loads((results / "results.json").read_text())
    (run,) = data["runs"]
    assert run["id"] == "ComposeSmoke/small"
    assert run["error"] is None
    assert sum(run["series"]["bound"]) == 10
    assert len(run["latency"]["scheduling"]) == 10
