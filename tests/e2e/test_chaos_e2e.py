"""End to end, as a user breaking things on purpose: three scheduler replicas and two
controller-managers elect leaders on 2 s leases; their leaders are killed, paused and cut
off while pods keep arriving; `kubera check` then replays etcd's history and must find no
double bind, no overcommitted node, no bind by a deposed leader and no lost pod."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_cli_e2e import Kubera, running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

LEASES = (
    "--leader-elect-lease-duration", "2s",
    "--leader-elect-renew-deadline", "1500ms",
    "--leader-elect-retry-period", "500ms",
)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubera]:
    home = tmp_path_factory.mktemp("kubera-home")
    up = ("--nodes", "6", "--schedulers", "3", "--controller-managers", "2", *LEASES)
    with running(home, *up) as k:
        yield k


def _lease(k: Kubera, name: str) -> dict:
    r = k("get", "lease", name, "-n", "kube-system", "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _pods_file(tmp: Path, prefix: str, n: int) -> Path:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{prefix}-{i}", "labels": {"app": "chaos"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ]
            },
        }
        for i in range(n)
    ]
    path = tmp / f"{prefix}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _bound(k: Kubera, prefix: str) -> dict[str, dict]:
    r = k("get", "pods", "-o", "json")
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)["items"]
    return {
        p["metadata"]["name"]: p
        for p in items
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    }


def test_both_elections_publish_their_lease(cluster: Kubera) -> None:
    for name in ("kube-scheduler", "kube-controller-manager"):
        lease = until(
            lambda n=name: _lease(cluster, n)["spec"].get("holderIdentity") and _lease(cluster, n)
        )
        spec = lease["spec"]  # type: ignore[index]
        assert spec["leaseDurationSeconds"] == 2
        assert spec["acquireTime"] and spec["renewTime"]


def test_killed_leader_is_replaced_and_the_new_one_binds(cluster: Kubera, tmp_path: Path) -> None:
    before = _lease(cluster, "kube-scheduler")["spec"]
    r = cluster("chaos", "kill-leader")
    assert r.returncode == 0 and "killed leader" in r.stdout, r.stderr
    after = until(
        lambda: (
            (s := _lease(cluster, "kube-scheduler")["spec"]).get("holderIdentity")
            not in (None, before["holderIdentity"])
            and s
        )
    )
    assert after["leaseTransitions"] > before.get("leaseTransitions", 0)  # type: ignore[index]
    r = cluster("apply", "-f", str(_pods_file(tmp_path, "afterkill", 5)))
    assert r.returncode == 0, r.stderr
    bound = until(lambda: len(b := _bound(cluster, "afterkill")) == 5 and b)
    tokens = {p["metadata"]["annotations"]["kubera.io/bound-by"] for p in bound.values()}  # type: ignore[union-attr]
    assert len(tokens) == 1 and tokens.pop().startswith("fenced /kubera/leaderelection/")


def test_paused_leader_is_deposed_and_binds_nothing_after(cluster: Kubera, tmp_path: Path) -> None:
    holder = until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity"))
    result: dict = {}
    pause = threading.Thread(
        target=lambda: result.setdefault("r", cluster("chaos", "pause-leader", "--for", "4s"))
    )
    pause.start()
    until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity") != holder)
    r = cluster("apply", "-f", str(_pods_file(tmp_path, "duringpause", 5)))
    assert r.returncode == 0, r.stderr
    pause.join(30)
    assert result["r"].returncode == 0, result["r"].stderr
    until(lambda: len(_bound(cluster, "duringpause")) == 5)
    assert _lease(cluster, "kube-scheduler")["spec"]["holderIdentity"] != holder


def test_partitioned_leader_hands_over(cluster: Kubera, tmp_path: Path) -> None:
    holder = until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity"))
    r = cluster("chaos", "partition-leader", "--for", "4s")
    assert r.returncode == 0 and "partitioned leader" in r.stdout, r.stderr
    until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity") != holder)
    r = cluster("apply", "-f", str(_pods_file(tmp_path, "duringcut", 5)))
    assert r.returncode == 0, r.stderr
    until(lambda: len(_bound(cluster, "duringcut")) == 5)


def test_chaos_run_under_load_then_check_finds_nothing_wrong(
    cluster: Kubera, tmp_path: Path
) -> None:
    files = [_pods_file(tmp_path, f"load{i}", 10) for i in range(20)]
    stop = threading.Event()

    def load() -> None:
        for f in files:  # bounded: 200 pods, one file a second at most
            if stop.is_set():
                return
            cluster("apply", "-f", str(f))
            time.sleep(1)

    loader = threading.Thread(target=load)
    loader.start()
    try:
        r = cluster(
            "chaos", "run", "--faults", "20", "--interval", "1s", "--for", "3s",
            "--kinds", "kill,pause,partition", "--seed", "7",
            "--component", "scheduler", timeout=600,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        assert "20 faults" in r.stdout
        r = cluster("chaos", "run", "--faults", "4", "--interval", "1s", "--for", "3s",
                    "--component", "controller-manager", "--seed", "3", timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        stop.set()
        loader.join(120)
    r = cluster("check", "--settle", "90s", timeout=300)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout


def test_restart_etcd_and_the_cluster_carries_on(cluster: Kubera, tmp_path: Path) -> None:
    r = cluster("chaos", "restart-etcd", timeout=120)
    assert r.returncode == 0 and "etcd restarted" in r.stdout, r.stderr
    r = cluster("apply", "-f", str(_pods_file(tmp_path, "afteretcd", 5)))
    assert r.returncode == 0, r.stderr
    until(lambda: len(_bound(cluster, "afteretcd")) == 5, timeout=90)
