"""Pods that live and end on hollow nodes of a real `kubera up`, seen with kubectl: a
container that keeps failing crash-loops (CrashLoopBackOff, restartCount growing), a
restartPolicy Never pod that fails is Failed with its exit code, memory usage past the
limit is OOMKilled, init containers run before the app, and `kubectl logs` answers. The
pods live in a namespace of the module's own, on a cluster shared with modules of the same
flags."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


UP_ARGS = ("--nodes", "3", "--time-scale", "20")
#: The module's pods' namespace (the cluster is shared; conftest deletes it after).
NS = "pod-lifecycle-e2e"


def kubectl(k: Cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "KUBECONFIG": str(k.home / "kubeconfig"),
        "HOME": str(k.home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    return subprocess.run(
        ["kubectl", "--namespace", NS, *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=90,
    )


def pod(name: str, policy: str, stages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox:1.36", **extra.pop("container", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "annotations": {"kubera.io/stages": json.dumps(stages), **extra.pop("annotations", {})},
        },
        "spec": {"restartPolicy": policy, "containers": [container], **extra},
    }


def get(k: Cluster, name: str) -> dict[str, Any]:
    r = kubectl(k, "get", "pod", name, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def status_column(k: Cluster, name: str) -> str:
    r = kubectl(k, "get", "pod", name, "--no-headers")
    return r.stdout.split()[2] if r.returncode == 0 and r.stdout else ""


@pytest.fixture(scope="module")
def applied(cluster: Cluster) -> Cluster:
    usage = {"memory": {"start": "100Mi", "ratePerSecond": "20Mi"}}
    docs = [
        pod("crash", "Always", {"runDuration": "2s", "exitCode": 1}),
        pod("fail", "Never", {"runDuration": "2s", "exitCode": 3}),
        pod(
            "oom",
            "Never",
            {},
            annotations={"kubera.io/usage": json.dumps(usage)},
            container={"resources": {"limits": {"memory": "128Mi"}}},
        ),
        pod(
            "init",
            "Always",
            {"containers": {"setup": {"runDuration": "3s"}, "migrate": {"runDuration": "3s"}}},
            initContainers=[
                {"name": "setup", "image": "busybox:1.36"},
                {"name": "migrate", "image": "busybox:1.36"},
            ],
        ),
    ]
    r = kubectl(cluster, "create", "namespace", NS)
    assert r.returncode == 0, r.stderr
    r = kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    assert r.returncode == 0, r.stderr
    return cluster


def test_a_failing_container_crash_loops_with_a_growing_restart_count(applied: Cluster) -> None:
    until(lambda: status_column(applied, "crash") == "CrashLoopBackOff", timeout=60)

    def backing_off() -> dict | None:
        # one reading: at --time-scale 20 a back-off lasts about a second of wall time, so
        # the container may have restarted since the column was read
        cs = get(applied, "crash")["status"]["containerStatuses"][0]
        return cs if "waiting" in cs["state"] else None

    cs = until(backing_off, timeout=60)
    first = cs["restartCount"]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert get(applied, "crash")["status"]["phase"] == "Running"
    until(
        lambda: get(applied, "crash")["status"]["containerStatuses"][0]["restartCount"] > first,
        timeout=60,
    )


def test_a_never_pod_that_fails_is_failed_with_its_exit_code(applied: Cluster) -> None:
    until(lambda: get(applied, "fail")["status"].get("phase") == "Failed", timeout=60)
    cs = get(applied, "fail")["status"]["containerStatuses"][0]
    assert cs["state"]["terminated"]["exitCode"] == 3
    assert cs["state"]["terminated"]["reason"] == "Error"
    assert status_column(applied, "fail") == "Error"


def test_memory_past_the_limit_is_oom_killed(applied: Cluster) -> None:
    until(lambda: get(applied, "oom")["status"].get("phase") == "Failed", timeout=60)
    term = get(applied, "oom")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (137, "OOMKilled")
    assert status_column(applied, "oom") == "OOMKilled"


def test_init_containers_run_in_order_before_the_app(applied: Cluster) -> None:
    until(lambda: get(applied, "init")["status"].get("phase") == "Running", timeout=60)
    s = get(applied, "init")["status"]
    setup, migrate = (c["state"]["terminated"] for c in s["initContainerStatuses"])
    app = s["containerStatuses"][0]["state"]["running"]
    assert setup["finishedAt"] <= migrate["startedAt"] <= migrate["finishedAt"] <= app["startedAt"]
    assert {c["type"]: c["status"] for c in s["conditions"]}["Initialized"] == "True"
    assert status_column(applied, "init") == "Running"


def test_kubectl_logs_answers_with_the_hollow_containers_log(applied: Cluster) -> None:
    until(lambda: get(applied, "fail")["status"].get("phase") == "Failed", timeout=60)
    r = kubectl(applied, "logs", "fail")
    assert r.returncode == 0, r.stderr
    assert "[kubera] hollow container c started (image busybox:1.36" in r.stdout
    assert r.stdout.splitlines()[-1].endswith("[kubera] exited with code 3 (Error)")
    r = kubectl(applied, "logs", "init", "-c", "setup")
    assert r.returncode == 0 and "exited with code 0 (Completed)" in r.stdout, r.stderr
    until(lambda: status_column(applied, "crash") == "CrashLoopBackOff", timeout=60)
    r = kubectl(applied, "logs", "crash", "--previous")
    assert r.returncode == 0 and "exited with code 1 (Error)" in r.stdout, r.stderr
