"""The website rows' checks of storage: the docs' pods/storage examples (an emptyDir pod, a
claim of the default class and its pod) and "Run a Single-Instance Stateful Application"
(application/mysql: a hostPath PersistentVolume, its claim and a Deployment using it)."""

from __future__ import annotations

from typing import Any

from tests.e2e.website.run import Run

SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"


def _events(r: Run, name: str) -> list[str]:
    items = r.json("events", "--field-selector", f"involvedObject.name={name}")["items"]
    return [e["reason"] for e in items]


def redis_with_empty_dir(r: Run) -> None:
    r.apply("pods/storage/redis.yaml")
    r.until(lambda: r.json("pod", "redis")["status"].get("phase") == "Running")
    (volume,) = r.json("pod", "redis")["spec"]["volumes"]
    assert volume == {"name": "redis-storage", "emptyDir": {}}
    assert "EmptyDir (a temporary directory that shares a pod's lifetime)" in r.described(
        "pod", "redis"
    )


def claim_of_the_default_class(r: Run) -> None:
    """The claim names no class: it gets `kubera up`'s default `standard` (as kind's),
    which binds WaitForFirstConsumer: Pending until its pod is scheduled, then provisioned
    on the node the pod landed on, the volume pinned there."""
    r.apply("pods/storage/expandable-pvc.yaml")
    claim = r.json("pvc", "expandable-pvc")
    assert claim["spec"]["storageClassName"] == "standard"
    r.until(lambda: "WaitForFirstConsumer" in _events(r, "expandable-pvc"))
    assert r.json("pvc", "expandable-pvc")["status"]["phase"] == "Pending"
    r.apply("pods/storage/expandable-pvc-pod.yaml")

    def running() -> dict[str, Any] | None:
        pod = r.json("pod", "expandable-pvc-pod")
        return pod if pod["status"].get("phase") == "Running" else None

    node = r.until(running)["spec"]["nodeName"]
    claim = r.json("pvc", "expandable-pvc")
    assert claim["status"]["phase"] == "Bound"
    assert claim["status"]["capacity"] == {"storage": "1Gi"}
    assert claim["metadata"]["annotations"][SELECTED_NODE] == node
    pv = r.json("pv", claim["spec"]["volumeName"])
    assert pv["spec"]["claimRef"]["name"] == "expandable-pvc"
    (term,) = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": HOSTNAME, "operator": "In", "values": [node]}]
    row = r.kubectl("get", "pvc", "expandable-pvc", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:2] == ["expandable-pvc", "Bound"] and row[3:6] == ["1Gi", "RWO", "standard"]


def single_instance_mysql(r: Run) -> None:
    """The tutorial's steps: the volume and claim bind (class `manual`, 20Gi, RWO), the
    Deployment's one pod runs with the claim, `kubectl describe pvc` names the pod."""
    try:
        r.apply("application/mysql/mysql-pv.yaml")
        r.apply("application/mysql/mysql-deployment.yaml")
        r.until(lambda: r.json("pvc", "mysql-pv-claim")["status"].get("phase") == "Bound")
        claim = r.json("pvc", "mysql-pv-claim")
        assert claim["spec"]["volumeName"] == "mysql-pv-volume"
        pv = r.json("pv", "mysql-pv-volume")
        assert (pv["status"]["phase"], pv["spec"]["claimRef"]["namespace"]) == ("Bound", r.ns)
        (pod,) = r.running("app=mysql", 1)
        (volume,) = pod["spec"]["volumes"]
        assert volume["persistentVolumeClaim"] == {"claimName": "mysql-pv-claim"}
        assert r.json("service", "mysql")["spec"]["clusterIP"] == "None"
        assert "StrategyType:       Recreate" in r.described("deployment", "mysql")
        described = r.described("pvc", "mysql-pv-claim")
        assert "Status:        Bound" in described and pod["metadata"]["name"] in described
    finally:
        # the volume is cluster-wide: it must not outlive the row (the cluster may be shared)
        r.kubectl("delete", "pv", "mysql-pv-volume", "--wait=false", check=False)
