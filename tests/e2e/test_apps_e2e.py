"""The Kubernetes docs' DaemonSet and StatefulSet examples on a real `kubera up`, with real
kubectl: applied unchanged, they behave as on a real cluster.

The manifests in tests/e2e/manifests/website are kubernetes/website's
content/en/examples/controllers/daemonset.yaml and content/en/examples/application/web/web.yaml,
byte for byte. web.yaml holds a headless Service and the StatefulSet; only the StatefulSet
document is applied here (the Service kind comes with another part of issue 26), from the
file's own text.

One cluster (3 hollow nodes, time scaled; shared with modules of the same flags, the
StatefulSet in a namespace of its own); each test states what it checks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

MANIFESTS = Path(__file__).resolve().parent / "manifests" / "website"
NODES = ("kubera-node-00000", "kubera-node-00001", "kubera-node-00002")


#: web.yaml's claims need a default StorageClass with a provisioner, as the docs say:
#: `kubera up` makes one (`standard`), as kind does.
UP_ARGS = ("--nodes", "3", "--time-scale", "20")
#: The StatefulSet's namespace (web.yaml names none); the DaemonSet's file names kube-system.
NS = "apps-e2e"


@pytest.fixture(scope="module", autouse=True)
def daemonset_deleted(cluster: Cluster) -> Iterator[None]:
    """The docs' DaemonSet lives in kube-system, which outlives the module on a shared
    cluster: it goes (with its pods) after the module's tests."""
    yield
    kubectl(cluster, "delete", "daemonset", "fluentd-elasticsearch", "-n", "kube-system",
            "--ignore-not-found", "--cascade=foreground", "--timeout=60s", timeout=90, check=False)  # fmt: skip


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def wait_for(what: str, pred: Any, timeout: float = 90.0) -> Any:
    """Poll `pred` (a kubectl read) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def ready_since(pod: dict[str, Any]) -> str:
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "Ready" and c["status"] == "True":
            return str(c["lastTransitionTime"])
    return ""


def test_the_docs_daemonset_runs_one_pod_on_every_schedulable_node(cluster: Cluster) -> None:
    kubectl(cluster, "apply", "-f", str(MANIFESTS / "controllers" / "daemonset.yaml"))
    kubectl(
        cluster,
        "rollout",
        "status",
        "daemonset/fluentd-elasticsearch",
        "-n",
        "kube-system",
        "--timeout=90s",
        timeout=120,
    )
    pods = get_json(cluster, "pods", "-n", "kube-system", "-l", "name=fluentd-elasticsearch")
    nodes = sorted(p["spec"]["nodeName"] for p in pods["items"])
    assert nodes == sorted(NODES), "one pod on each node, bound by the scheduler"
    for p in pods["items"]:
        terms = p["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms == [
            {
                "matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [p["spec"]["nodeName"]]}
                ]
            }
        ]
    out = kubectl(cluster, "get", "ds", "-n", "kube-system").stdout.splitlines()
    assert out[0].split() == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE",
        "SELECTOR",
        "AGE",
    ]
    assert out[1].split()[:6] == ["fluentd-elasticsearch", "3", "3", "3", "3", "3"]


def test_the_docs_daemonset_rolls_out_an_update_and_undoes_it(cluster: Cluster) -> None:
    ns = ("-n", "kube-system")
    ds = "daemonset/fluentd-elasticsearch"
    kubectl(cluster, "set", "image", ds, "fluentd-elasticsearch=quay.io/fluentd:v2.6", *ns)
    kubectl(cluster, "rollout", "status", ds, *ns, "--timeout=90s", timeout=120)
    images = {
        p["spec"]["containers"][0]["image"]
        for p in get_json(cluster, "pods", *ns, "-l", "name=fluentd-elasticsearch")["items"]
        if not p["metadata"].get("deletionTimestamp")
    }
    assert images == {"quay.io/fluentd:v2.6"}
    history = kubectl(cluster, "rollout", "history", ds, *ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    kubectl(cluster, "rollout", "undo", ds, *ns)
    kubectl(cluster, "rollout", "status", ds, *ns, "--timeout=90s", timeout=120)
    got = get_json(cluster, "ds", "fluentd-elasticsearch", *ns)
    assert (
        got["spec"]["template"]["spec"]["containers"][0]["image"]
        == "quay.io/fluentd_elasticsearch/fluentd:v2.5.2"
    )


def watch_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The (type, object) pairs of a raw watch response (one JSON event per line)."""
    out = []
    for line in text.splitlines():
        if line.strip():
            doc = json.loads(line)
            out.append((doc["type"], doc["object"]))
    return out


def test_the_docs_statefulset_creates_its_ordinals_in_order(cluster: Cluster) -> None:
    docs = list(yaml.safe_load_all((MANIFESTS / "application" / "web" / "web.yaml").read_text()))
    (sts,) = [d for d in docs if d and d["kind"] == "StatefulSet"]
    kubectl(cluster, "create", "namespace", NS)
    since = get_json(cluster, "pods", "-n", NS)["metadata"]["resourceVersion"]
    kubectl(cluster, "apply", "-n", NS, "-f", "-", stdin=yaml.safe_dump(sts))
    kubectl(cluster, "rollout", "status", "statefulset/web", "-n", NS, "--timeout=90s", timeout=120)
    # Every change of the set's pods since before the apply, in order (a watch from
    # the resourceVersion read before it, ended by its timeout).
    url = (
        f"/api/v1/namespaces/{NS}/pods?watch=true&labelSelector=app%3Dnginx"
        f"&resourceVersion={since}&timeoutSeconds=2"
    )
    seen = kubectl(cluster, "get", "--raw", url, timeout=60).stdout
    # OrderedReady: web-1 is created only once web-0 is Running and Ready.
    order = []
    for type_, pod in watch_events(seen):
        name = pod["metadata"]["name"]
        if type_ == "ADDED":
            order.append(f"{name} created")
        if ready_since(pod) and f"{name} ready" not in order:
            order.append(f"{name} ready")
    assert order[:3] == ["web-0 created", "web-0 ready", "web-1 created"], order
    pods = {
        p["metadata"]["name"]: p
        for p in get_json(cluster, "pods", "-n", NS, "-l", "app=nginx")["items"]
    }
    assert sorted(pods) == ["web-0", "web-1"]
    for name, p in pods.items():
        assert p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == name
        assert p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == name[-1]
        assert p["spec"]["hostname"] == name and p["spec"]["subdomain"] == "nginx"
    claims = get_json(cluster, "pvc", "-n", NS, "-l", "app=nginx")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["www-web-0", "www-web-1"]
    out = kubectl(cluster, "get", "-n", NS, "sts", "web").stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "AGE"]
    assert out[1].split()[:2] == ["web", "2/2"]
    assert "web-0" in kubectl(cluster, "describe", "statefulset", "web", "-n", NS).stdout
    described = cluster("describe", "statefulset", "web", "-n", NS)
    assert described.returncode == 0 and "Selector:" in described.stdout, described.stderr
    everything = kubectl(cluster, "get", "all", "-A").stdout
    assert "statefulset.apps/web" in everything
    assert "daemonset.apps/fluentd-elasticsearch" in everything


def test_the_statefulset_scales_rolls_out_and_undoes(cluster: Cluster) -> None:
    kubectl(cluster, "scale", "statefulset", "web", "--replicas=3", "-n", NS)
    kubectl(cluster, "rollout", "status", "statefulset/web", "--timeout=90s", "-n", NS, timeout=120)
    wait_for(
        "web-2 ready",
        lambda: get_json(cluster, "sts", "-n", NS, "web")["status"].get("readyReplicas") == 3,
    )
    kubectl(
        cluster, "set", "image", "statefulset/web", "nginx=registry.k8s.io/nginx-slim:0.8", "-n", NS
    )
    kubectl(cluster, "rollout", "status", "statefulset/web", "--timeout=90s", "-n", NS, timeout=120)
    pods = get_json(cluster, "pods", "-n", NS, "-l", "app=nginx")["items"]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"registry.k8s.io/nginx-slim:0.8"}
    st = get_json(cluster, "sts", "-n", NS, "web")["status"]
    assert st["currentRevision"] == st["updateRevision"]
    history = kubectl(cluster, "rollout", "history", "statefulset/web", "-n", NS).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    kubectl(cluster, "rollout", "undo", "statefulset/web", "-n", NS)
    kubectl(cluster, "rollout", "status", "statefulset/web", "--timeout=90s", "-n", NS, timeout=120)
    got = get_json(cluster, "sts", "-n", NS, "web")
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "registry.k8s.io/nginx-slim:0.7"
    )
    revisions = get_json(cluster, "controllerrevisions", "-n", NS, "-l", "app=nginx")["items"]
    assert sorted(r["revision"] for r in revisions) == [2, 3], "the undo re-used revision 1"
