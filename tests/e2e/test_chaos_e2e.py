"""End to end, as a user breaking things on purpose: three scheduler replicas and two
controller-managers elect leaders on 2 s leases; their leaders are killed, paused and cut
off while pods keep arriving; `kubera check` then replays etcd's history and must find no
double bind, no overcommitted node, no bind by a deposed leader, no lost pod and no device
given to two claims (pods claiming scarce network devices while their leader is killed)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import (
    bound_pods,
    claimed_pods,
    devices_held,
    kubectl,
    network_devices,
    pods_file,
    settled_pods,
)
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

LEASES = (
    "--leader-elect-lease-duration", "2s",
    "--leader-elect-renew-deadline", "1500ms",
    "--leader-elect-retry-period", "500ms",
)  # fmt: skip


#: A cluster of its own (tests/e2e/conftest.py): it kills, pauses and cuts off leaders
#: and restarts etcd.
EXCLUSIVE = True
UP_ARGS = ("--nodes", "6", "--schedulers", "3", "--controller-managers", "2", *LEASES)


def _lease(k: Cluster, name: str) -> dict:
    """Read with kubectl (a poll through `kubera get` starts a Python each time)."""
    return json.loads(kubectl(k, "get", "lease", name, "-n", "kube-system", "-o", "json").stdout)


def test_both_elections_publish_their_lease(cluster: Cluster) -> None:
    for name in ("kube-scheduler", "kube-controller-manager"):
        lease = until(
            lambda n=name: _lease(cluster, n)["spec"].get("holderIdentity") and _lease(cluster, n)
        )
        spec = lease["spec"]  # type: ignore[index]
        assert spec["leaseDurationSeconds"] == 2
        assert spec["acquireTime"] and spec["renewTime"]


def test_killed_leader_is_replaced_and_the_new_one_binds(cluster: Cluster, tmp_path: Path) -> None:
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
    r = cluster("apply", "-f", str(pods_file(tmp_path, "afterkill", 5)))
    assert r.returncode == 0, r.stderr
    bound = until(lambda: len(b := bound_pods(cluster, "afterkill")) == 5 and b)
    tokens = {p["metadata"]["annotations"]["kubera.io/bound-by"] for p in bound.values()}  # type: ignore[union-attr]
    assert len(tokens) == 1 and tokens.pop().startswith("fenced /kubera/leaderelection/")


def test_paused_leader_is_deposed_and_binds_nothing_after(cluster: Cluster, tmp_path: Path) -> None:
    holder = until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity"))
    result: dict = {}
    pause = threading.Thread(
        target=lambda: result.setdefault("r", cluster("chaos", "pause-leader", "--for", "4s"))
    )
    pause.start()
    until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity") != holder)
    r = cluster("apply", "-f", str(pods_file(tmp_path, "duringpause", 5)))
    assert r.returncode == 0, r.stderr
    pause.join(30)
    assert result["r"].returncode == 0, result["r"].stderr
    until(lambda: len(bound_pods(cluster, "duringpause")) == 5)
    assert _lease(cluster, "kube-scheduler")["spec"]["holderIdentity"] != holder


def test_partitioned_leader_hands_over(cluster: Cluster, tmp_path: Path) -> None:
    holder = until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity"))
    r = cluster("chaos", "partition-leader", "--for", "4s")
    assert r.returncode == 0 and "partitioned leader" in r.stdout, r.stderr
    until(lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity") != holder)
    r = cluster("apply", "-f", str(pods_file(tmp_path, "duringcut", 5)))
    assert r.returncode == 0, r.stderr
    until(lambda: len(bound_pods(cluster, "duringcut")) == 5)


def test_leader_faults_while_devices_are_allocated_give_no_device_twice(cluster: Cluster) -> None:
    ns = "chaos-dra"
    kubectl(cluster, "create", "namespace", ns)
    try:
        with network_devices(cluster, "chaos-net", 4):
            # 10 pods for 4 devices, in two waves, each followed at once by a fault of the
            # leader allocating them: a kill, then a partition (its writes held and
            # delivered late, after its term: refused by their stale token)
            for wave, fault in (
                ("a", ("kill-leader",)),
                ("b", ("partition-leader", "--for", "4s")),
            ):
                holder = until(
                    lambda: _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity")
                )
                manifest = claimed_pods(ns, f"gpu{wave}", 5, "chaos-net")
                kubectl(cluster, "apply", "-f", "-", stdin=manifest)
                r = cluster("chaos", *fault)
                assert r.returncode == 0, r.stderr
                until(
                    lambda h=holder: (
                        _lease(cluster, "kube-scheduler")["spec"].get("holderIdentity")
                        not in (None, h)
                    )
                )
            until(lambda: settled_pods(cluster, ns) == (4, 6), timeout=90)
            held = devices_held(cluster, ns)
            assert len(held) == len(set(held)) == 4, held
        r = cluster("check", "--json", "--settle", "30s", timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        verdict = json.loads(r.stdout)
        assert verdict["ok"] is True, verdict
        assert verdict["counts"]["device_allocations"] >= 4
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)


def test_chaos_run_under_load_then_check_finds_nothing_wrong(
    cluster: Cluster, tmp_path: Path
) -> None:
    files = [pods_file(tmp_path, f"load{i}", 10) for i in range(20)]
    stop = threading.Event()

    def load() -> None:
        for f in files:  # bounded: 200 pods, one file a second at most
            if stop.is_set():
                return
            cluster("apply", "-f", str(f))
            time.sleep(1)

    # Each fault waits for the next leader (a 2 s lease) before the interval, so the
    # interval only spaces the faults: 200 ms keeps the 20 faults inside the load.
    loader = threading.Thread(target=load)
    loader.start()
    try:
        r = cluster(
            "chaos", "run", "--faults", "20", "--interval", "200ms", "--for", "3s",
            "--kinds", "kill,pause,partition", "--seed", "7",
            "--component", "scheduler", timeout=600,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        assert "20 faults" in r.stdout
        r = cluster("chaos", "run", "--faults", "4", "--interval", "200ms", "--for", "3s",
                    "--component", "controller-manager", "--seed", "3", timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        stop.set()
        loader.join(120)
    r = cluster("check", "--settle", "90s", timeout=300)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout


def test_restart_etcd_and_the_cluster_carries_on(cluster: Cluster, tmp_path: Path) -> None:
    r = cluster("chaos", "restart-etcd", timeout=120)
    assert r.returncode == 0 and "etcd restarted" in r.stdout, r.stderr
    r = cluster("apply", "-f", str(pods_file(tmp_path, "afteretcd", 5)))
    assert r.returncode == 0, r.stderr
    until(lambda: len(bound_pods(cluster, "afteretcd")) == 5, timeout=90)
