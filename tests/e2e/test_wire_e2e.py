"""Objects and logs as a real apiserver serves them, seen with kubectl on a real `kubera up`:
the struct fields Go's encoder always writes (`resources: {}`, `lastState: {}`,
`lastProbeTime: null`, a Service's `status.loadBalancer: {}`, no template
`creationTimestamp` since 1.34's omitzero), and `kubectl logs -f` streaming a hollow
container's log until the container exits."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


#: Shared with modules of the same flags (tests/e2e/conftest.py).
UP_ARGS = ("--nodes", "3")


def _apply(k: Cluster, ns: str, *docs: dict[str, Any]) -> None:
    kubectl(k, "create", "namespace", ns)
    kubectl(k, "apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump_all(docs))


def _get(k: Cluster, ns: str, what: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(kubectl(k, "get", "-n", ns, what, "-o", "json").stdout)
    return doc


def _phase(k: Cluster, ns: str, name: str) -> str:
    r = kubectl(k, "get", "-n", ns, "pod", name, "-o", "jsonpath={.status.phase}", check=False)
    return r.stdout


TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
}


AGENT = {**TEMPLATE, "metadata": {"labels": {"app": "agent"}}}


def test_kubectl_logs_follow_streams_until_the_container_exits(cluster: Cluster) -> None:
    stages = json.dumps({"runDuration": "6s", "exitCode": 0})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "short", "annotations": {"kubera.io/stages": stages}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    _apply(cluster, "logs-follow", pod)
    until(lambda: _phase(cluster, "logs-follow", "short") == "Running", timeout=60)
    r = kubectl(cluster, "logs", "-f", "-n", "logs-follow", "short", timeout=60)
    lines = r.stdout.splitlines()
    # "running" is in the log only while the container runs, the exit line once it ended:
    # both in one answer means the answer followed the container across its exit.
    assert lines[-2].endswith("[kubera] running"), r.stdout
    assert lines[-1].endswith("[kubera] exited with code 0 (Completed)"), r.stdout
    assert _phase(cluster, "logs-follow", "short") == "Succeeded"


def test_objects_carry_the_structs_go_writes(cluster: Cluster) -> None:
    ns = "wire-shapes"
    selector = {"matchLabels": {"app": "web"}}
    _apply(
        cluster,
        ns,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": selector, "template": TEMPLATE},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": AGENT},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "web",
                "replicas": 0,
                "selector": {"matchLabels": {"app": "db"}},
                "template": {**TEMPLATE, "metadata": {"labels": {"app": "db"}}},
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once"},
            "spec": {
                "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
            },
        },
    )
    until(lambda: bool(_running_pods(cluster, ns)), timeout=60)
    pod = _running_pods(cluster, ns)[0]
    assert pod["spec"]["containers"][0]["resources"] == {}
    cs = pod["status"]["containerStatuses"][0]
    assert cs["lastState"] == {} and "running" in cs["state"]
    assert all(
        "lastProbeTime" in c and c["lastProbeTime"] is None for c in pod["status"]["conditions"]
    )
    dep = _get(cluster, ns, "deployment/web")
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
    assert "creationTimestamp" not in dep["spec"]["template"]["metadata"]
    assert dep["spec"]["strategy"]["type"] == "RollingUpdate"
    assert _get(cluster, ns, "service/web")["status"] == {"loadBalancer": {}}
    job = _get(cluster, ns, "job/once")
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
    for what in ("daemonset/agent", "statefulset/db"):
        obj = _get(cluster, ns, what)
        assert obj["spec"]["template"]["spec"]["containers"][0]["resources"] == {}, what
        assert "creationTimestamp" not in obj["spec"]["template"]["metadata"], what
        assert "type" in obj["spec"]["updateStrategy"] and "status" in obj, what
    kubectl(cluster, "delete", "namespace", ns, "--wait=false")


def _running_pods(k: Cluster, ns: str) -> list[dict[str, Any]]:
    pods = _get(k, ns, "pods")["items"]
    return [
        p
        for p in pods
        if p["metadata"].get("labels", {}).get("app") == "web"
        and p["metadata"].get("ownerReferences", [{}])[0].get("kind") == "ReplicaSet"
        and any("running" in c.get("state", {}) for c in p["status"].get("containerStatuses", []))
    ]
