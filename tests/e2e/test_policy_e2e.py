"""ResourceQuota and LimitRange on a real `kubera up`, with real kubectl and the Kubernetes
docs' own example manifests (kubernetes/website content/en/examples/admin/resource/*.yaml,
their text kept here unchanged): LimitRange defaults appear on a pod, a pod above a
LimitRange's max is refused, a quota refuses the pod that would exceed it with the words the
docs show, and a quota on pods holds a Deployment below its replicas.

One cluster, shared with modules of the same flags; each test works in a namespace of its
own, as the docs' tasks do."""

from __future__ import annotations

import json
import subprocess

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

# content/en/examples/admin/resource/memory-defaults.yaml and memory-defaults-pod.yaml
MEMORY_DEFAULTS = """apiVersion: v1
kind: LimitRange
metadata:
  name: mem-limit-range
spec:
  limits:
  - default:
      memory: 512Mi
    defaultRequest:
      memory: 256Mi
    type: Container
"""
MEMORY_DEFAULTS_POD = """apiVersion: v1
kind: Pod
metadata:
  name: default-mem-demo
spec:
  containers:
  - name: default-mem-demo-ctr
    image: nginx
"""
# cpu-constraints.yaml and cpu-constraints-pod-2.yaml
CPU_CONSTRAINTS = """apiVersion: v1
kind: LimitRange
metadata:
  name: cpu-min-max-demo-lr
spec:
  limits:
  - max:
      cpu: "800m"
    min:
      cpu: "200m"
    type: Container
"""
CPU_CONSTRAINTS_POD_2 = """apiVersion: v1
kind: Pod
metadata:
  name: constraints-cpu-demo-2
spec:
  containers:
  - name: constraints-cpu-demo-2-ctr
    image: nginx
    resources:
      limits:
        cpu: "1.5"
      requests:
        cpu: "500m"
"""
# quota-mem-cpu.yaml, quota-mem-cpu-pod.yaml and quota-mem-cpu-pod-2.yaml
QUOTA_MEM_CPU = """apiVersion: v1
kind: ResourceQuota
metadata:
  name: mem-cpu-demo
spec:
  hard:
    requests.cpu: "1"
    requests.memory: 1Gi
    limits.cpu: "2"
    limits.memory: 2Gi
"""
QUOTA_MEM_CPU_POD = """apiVersion: v1
kind: Pod
metadata:
  name: quota-mem-cpu-demo
spec:
  containers:
  - name: quota-mem-cpu-demo-ctr
    image: nginx
    resources:
      limits:
        memory: "800Mi"
        cpu: "800m"
      requests:
        memory: "600Mi"
        cpu: "400m"
"""
QUOTA_MEM_CPU_POD_2 = """apiVersion: v1
kind: Pod
metadata:
  name: quota-mem-cpu-demo-2
spec:
  containers:
  - name: quota-mem-cpu-demo-2-ctr
    image: redis
    resources:
      limits:
        memory: "1Gi"
        cpu: "800m"
      requests:
        memory: "700Mi"
        cpu: "400m"
"""
# quota-pod.yaml and quota-pod-deployment.yaml
QUOTA_POD = """apiVersion: v1
kind: ResourceQuota
metadata:
  name: pod-demo
spec:
  hard:
    pods: "2"
"""
QUOTA_POD_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: pod-quota-demo
spec:
  selector:
    matchLabels:
      purpose: quota-demo
  replicas: 3
  template:
    metadata:
      labels:
        purpose: quota-demo
    spec:
      containers:
      - name: pod-quota-demo
        image: nginx
"""


UP_ARGS = ("--nodes", "3", "--time-scale", "20")


def apply(
    k: Cluster, manifest: str, ns: str, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return kubectl(k, "apply", "-n", ns, "-f", "-", stdin=manifest, check=check)


def test_limit_range_defaults_appear_on_a_pod_that_names_no_resources(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", "default-mem-example")
    apply(cluster, MEMORY_DEFAULTS, "default-mem-example")
    apply(cluster, MEMORY_DEFAULTS_POD, "default-mem-example")
    pod = json.loads(
        kubectl(
            cluster, "get", "pod", "default-mem-demo", "-n", "default-mem-example", "-o", "json"
        ).stdout
    )
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "512Mi"},
        "requests": {"memory": "256Mi"},
    }
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container default-mem-demo-ctr; "
        "memory limit for container default-mem-demo-ctr"
    )
    shown = kubectl(cluster, "get", "limitranges", "-n", "default-mem-example").stdout
    assert shown.split()[:4] == ["NAME", "CREATED", "AT", "mem-limit-range"]
    described = kubectl(
        cluster, "describe", "limitrange", "mem-limit-range", "-n", "default-mem-example"
    )
    row = next(
        line.split() for line in described.stdout.splitlines() if line.startswith("Container")
    )
    assert row == ["Container", "memory", "-", "-", "256Mi", "512Mi", "-"]


def test_a_pod_above_the_limit_range_max_is_refused(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", "constraints-cpu-example")
    apply(cluster, CPU_CONSTRAINTS, "constraints-cpu-example")
    r = apply(cluster, CPU_CONSTRAINTS_POD_2, "constraints-cpu-example", check=False)
    assert r.returncode != 0
    assert (
        'pods "constraints-cpu-demo-2" is forbidden: maximum cpu usage per Container is 800m, '
        "but limit is 1500m" in r.stderr
    )
    got = kubectl(cluster, "get", "pods", "-n", "constraints-cpu-example", "-o", "name").stdout
    assert got.strip() == ""


def _quota(k: Cluster, name: str, ns: str) -> dict:
    return json.loads(kubectl(k, "get", "resourcequota", name, "-n", ns, "-o", "json").stdout)


def test_a_quota_refuses_the_pod_that_would_exceed_it(cluster: Cluster) -> None:
    ns = "quota-mem-cpu-example"
    kubectl(cluster, "create", "namespace", ns)
    apply(cluster, QUOTA_MEM_CPU, ns)
    until(lambda: _quota(cluster, "mem-cpu-demo", ns).get("status", {}).get("used"), timeout=60)
    apply(cluster, QUOTA_MEM_CPU_POD, ns)
    used = _quota(cluster, "mem-cpu-demo", ns)["status"]["used"]
    assert used == {
        "limits.cpu": "800m",
        "limits.memory": "800Mi",
        "requests.cpu": "400m",
        "requests.memory": "600Mi",
    }
    r = apply(cluster, QUOTA_MEM_CPU_POD_2, ns, check=False)
    assert r.returncode != 0
    assert (
        'pods "quota-mem-cpu-demo-2" is forbidden: exceeded quota: mem-cpu-demo, '
        "requested: requests.memory=700Mi, used: requests.memory=600Mi, limited: requests.memory=1Gi"
        in r.stderr
    )
    table = kubectl(cluster, "get", "quota", "-n", ns).stdout
    assert table.splitlines()[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert "requests.cpu: 400m/1, requests.memory: 600Mi/1Gi" in table
    described = kubectl(cluster, "describe", "quota", "mem-cpu-demo", "-n", ns).stdout
    assert "requests.memory" in described and "600Mi" in described and "1Gi" in described


def test_a_pod_count_quota_holds_a_deployment_below_its_replicas(cluster: Cluster) -> None:
    ns = "quota-pod-example"
    kubectl(cluster, "create", "namespace", ns)
    apply(cluster, QUOTA_POD, ns)
    until(lambda: _quota(cluster, "pod-demo", ns).get("status", {}).get("used"), timeout=60)
    apply(cluster, QUOTA_POD_DEPLOYMENT, ns)

    def replica_failure() -> bool:
        rs = json.loads(kubectl(cluster, "get", "rs", "-n", ns, "-o", "json").stdout)["items"]
        conds = rs[0].get("status", {}).get("conditions", []) if rs else []
        return any(
            c["type"] == "ReplicaFailure" and "exceeded quota" in c["message"] for c in conds
        )

    until(replica_failure, timeout=90)
    pods = kubectl(cluster, "get", "pods", "-n", ns, "-o", "name").stdout.split()
    assert len(pods) == 2
    assert _quota(cluster, "pod-demo", ns)["status"]["used"] == {"pods": "2"}
    # kubectl's generator sends the quota as Kubernetes protobuf
    kubectl(
        cluster, "create", "quota", "best-effort", "-n", ns, "--hard=pods=5", "--scopes=BestEffort"
    )
    got = _quota(cluster, "best-effort", ns)
    assert got["spec"] == {"hard": {"pods": "5"}, "scopes": ["BestEffort"]}


# ------------------------------------------------------------------ cascading deletion

# content/en/examples/controllers/nginx-deployment.yaml
NGINX_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
"""


def _names(k: Cluster, what: str, ns: str) -> list[str]:
    return kubectl(k, "get", what, "-n", ns, "-o", "name").stdout.split()


def _deployment_with_pods(k: Cluster, ns: str) -> None:
    kubectl(k, "create", "namespace", ns)
    apply(k, NGINX_DEPLOYMENT, ns)
    until(lambda: len(_names(k, "pods", ns)) == 3, timeout=90)


def test_delete_cascade_orphan_keeps_the_replicaset_and_its_pods(cluster: Cluster) -> None:
    ns = "cascade-orphan"
    _deployment_with_pods(cluster, ns)
    kubectl(cluster, "delete", "deployment", "nginx-deployment", "-n", ns, "--cascade=orphan")
    assert _names(cluster, "deployments", ns) == []
    (rs,) = _names(cluster, "replicasets", ns)
    got = json.loads(kubectl(cluster, "get", rs, "-n", ns, "-o", "json").stdout)
    assert "ownerReferences" not in got["metadata"]
    assert len(_names(cluster, "pods", ns)) == 3
    kubectl(cluster, "delete", rs, "-n", ns)  # background: the collector takes the pods
    until(lambda: _names(cluster, "pods", ns) == [], timeout=90)


def test_delete_cascade_foreground_returns_once_the_dependents_are_gone(cluster: Cluster) -> None:
    ns = "cascade-foreground"
    _deployment_with_pods(cluster, ns)
    kubectl(cluster, "delete", "deployment", "nginx-deployment", "-n", ns, "--cascade=foreground")
    # Foreground: the Deployment went only after its ReplicaSet, which went after its pods.
    assert _names(cluster, "deployments", ns) == []
    assert _names(cluster, "replicasets", ns) == []
    assert _names(cluster, "pods", ns) == []


def test_delete_cascade_background_removes_the_dependents_after_the_owner(cluster: Cluster) -> None:
    ns = "cascade-background"
    _deployment_with_pods(cluster, ns)
    kubectl(cluster, "delete", "deployment", "nginx-deployment", "-n", ns, "--cascade=background")
    until(
        lambda: _names(cluster, "replicasets", ns) == [] and _names(cluster, "pods", ns) == [],
        timeout=90,
    )


def test_a_deleted_namespace_terminates_refuses_new_content_then_goes(cluster: Cluster) -> None:
    ns = "going-away"
    _deployment_with_pods(cluster, ns)
    kubectl(cluster, "delete", "namespace", ns, "--wait=false")
    r = apply(cluster, MEMORY_DEFAULTS_POD, ns, check=False)
    gone_already = "not found" in r.stderr
    if not gone_already:
        assert r.returncode != 0
        assert (
            f'pods "default-mem-demo" is forbidden: unable to create new content in namespace {ns} '
            "because it is being terminated" in r.stderr
        )
    until(lambda: kubectl(cluster, "get", "namespace", ns, check=False).returncode != 0, timeout=90)
    assert _names(cluster, "pods", ns) == []
    r = apply(cluster, MEMORY_DEFAULTS_POD, ns, check=False)
    assert r.returncode != 0 and f'namespaces "{ns}" not found' in r.stderr


def test_kubectl_delete_namespace_waits_until_the_controller_removed_it(cluster: Cluster) -> None:
    ns = "waited-away"
    _deployment_with_pods(cluster, ns)
    # kubectl waits for the namespace to be gone: the namespace controller emptied it and
    # dropped its "kubernetes" finalizer through namespaces/finalize.
    kubectl(cluster, "delete", "namespace", ns, "--timeout=120s", timeout=150)
    r = kubectl(cluster, "get", "namespace", ns, check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr
