"""The service kinds on a real `kubera up`, with real kubectl and nothing but the
kubeconfig `up` wrote: a Deployment and its Service applied get a cluster IP from the
service CIDR `up` was given and EndpointSlices listing the ready pods' addresses; a NodePort service
(kubectl's protobuf body) gets a node port; ConfigMaps and Secrets made by
`kubectl create` read back as upstream writes them (base64 data), and a secret's value
is in no log; a new namespace gets its `default` ServiceAccount."""

from __future__ import annotations

import base64
import ipaddress
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubera_in, running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

SECRET_VALUE = "s3cr3t-hunter2-value"
#: Not kubeadm's default (10.96.0.0/12, unit-tested), to show `up`'s flags reach the
#: apiserver.
SERVICE_CIDR = "10.200.0.0/16"
NODE_PORTS = "31000-31099"

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - {name: http, containerPort: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    with running(
        home,
        "--nodes",
        "3",
        "--time-scale",
        "20",
        "--service-cluster-ip-range",
        SERVICE_CIDR,
        "--service-node-port-range",
        NODE_PORTS,
        ray_address=shared_ray,
    ) as k:
        yield k


def kubectl(k: Cluster, *args: str, stdin: str | None = None) -> str:
    env = {
        "KUBECONFIG": str(k.home / "kubeconfig"),
        "HOME": str(k.home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    r = subprocess.run(
        ["kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=90
    )
    assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r.stdout


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json"))


def test_a_deployment_and_its_service_get_a_cluster_ip_and_endpoint_slices(
    cluster: Cluster,
) -> None:
    kubectl(cluster, "apply", "-f", "-", stdin=MANIFEST)
    svc = get_json(cluster, "service", "web")
    ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(SERVICE_CIDR)
    assert svc["spec"]["clusterIPs"] == [ip]
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["ipFamilies"] == ["IPv4"]

    def ready_pods() -> dict[str, str]:
        pods = get_json(cluster, "pods", "-l", "app=web")["items"]
        ready = {
            p["metadata"]["name"]: p["status"].get("podIP", "")
            for p in pods
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
        }
        return ready if len(ready) == 3 and all(ready.values()) else {}

    pods = until(ready_pods, timeout=60)

    def sliced() -> list[dict[str, Any]]:
        items = get_json(cluster, "endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
        eps = [e for s in items for e in s.get("endpoints") or []]
        ready = {e["targetRef"]["name"]: e["addresses"] for e in eps if e["conditions"]["ready"]}
        return items if ready == {name: [ip] for name, ip in pods.items()} else []

    [eps] = until(sliced, timeout=60)
    assert eps["addressType"] == "IPv4"
    assert eps["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert eps["metadata"]["ownerReferences"][0]["kind"] == "Service"

    out = kubectl(cluster, "get", "svc,endpointslices")
    lines = out.splitlines()
    svc_line = next(line.split() for line in lines if line.startswith("service/web "))
    assert svc_line[1:5] == ["ClusterIP", ip, "<none>", "80/TCP"]
    header = next(
        line.split() for line in lines if line.startswith("NAME") and "ADDRESSTYPE" in line
    )
    assert header == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    slice_line = next(line.split() for line in lines if line.startswith("endpointslice."))
    assert slice_line[1:3] == ["IPv4", "8080"]
    assert set(slice_line[3].split(",")) == set(pods.values())
    # the Endpoints kubectl 1.32 describes a service from, and `kubectl get endpoints`
    want = {f"{pod_ip}:8080" for pod_ip in pods.values()}
    until(
        lambda: (
            set(kubectl(cluster, "get", "endpoints", "web", "--no-headers").split()[1].split(","))
            == want
        )
    )
    described = kubectl(cluster, "describe", "service", "web")
    assert ip in described and "app=web" in described
    endpoints_line = next(line for line in described.splitlines() if line.startswith("Endpoints:"))
    assert set(endpoints_line.split()[1].split(",")) == want
    # `kubectl get all` lists the service beside the workloads; applying again moves nothing
    listed = kubectl(cluster, "get", "all", "--no-headers")
    assert "service/web " in listed and "deployment.apps/web " in listed
    again = kubectl(cluster, "apply", "-f", "-", stdin=MANIFEST)
    assert "service/web unchanged" in again
    assert get_json(cluster, "service", "web")["spec"]["clusterIP"] == ip


def test_kubectl_expose_makes_a_service_of_the_deployments_selector(cluster: Cluster) -> None:
    kubectl(
        cluster,
        "expose",
        "deployment",
        "web",
        "--name=web-exposed",
        "--port=81",
        "--target-port=8080",
    )
    svc = get_json(cluster, "service", "web-exposed")
    assert svc["spec"]["selector"] == {"app": "web"}
    assert svc["spec"]["ports"] == [{"port": 81, "protocol": "TCP", "targetPort": 8080}]


def test_kubectl_create_service_nodeport_gets_a_node_port(cluster: Cluster) -> None:
    kubectl(cluster, "create", "service", "nodeport", "np", "--tcp=80:8080")
    svc = get_json(cluster, "service", "np")
    [port] = svc["spec"]["ports"]
    assert 31000 <= port["nodePort"] <= 31099
    assert port["targetPort"] == 8080
    row = kubectl(cluster, "get", "service", "np", "--no-headers").split()
    assert row[1] == "NodePort" and row[4] == f"80:{port['nodePort']}/TCP"


def test_config_maps_and_secrets_from_kubectl_create(cluster: Cluster) -> None:
    kubectl(cluster, "create", "configmap", "cfg", "--from-literal=mode=fast", "--from-literal=n=3")
    assert get_json(cluster, "configmap", "cfg")["data"] == {"mode": "fast", "n": "3"}
    kubectl(
        cluster, "create", "secret", "generic", "creds", f"--from-literal=password={SECRET_VALUE}"
    )
    secret = get_json(cluster, "secret", "creds")
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"password": base64.b64encode(SECRET_VALUE.encode()).decode()}
    assert "stringData" not in secret
    as_yaml = kubectl(cluster, "get", "secret", "creds", "-o", "yaml")
    assert f"password: {base64.b64encode(SECRET_VALUE.encode()).decode()}" in as_yaml
    described = kubectl(cluster, "describe", "secret", "creds")
    assert f"password:  {len(SECRET_VALUE)} bytes" in described and SECRET_VALUE not in described
    rows = kubectl(cluster, "get", "secrets,configmaps", "--no-headers").split("\n")
    assert any(r.split()[:3] == ["secret/creds", "Opaque", "1"] for r in rows if r)
    # never in a log of any component: the cluster's (etcd, supervisor) and the actors'
    # (their stdout and stderr in the session Ray's log directory, tests/rayhead.py)
    encoded = base64.b64encode(SECRET_VALUE.encode()).decode()
    ray_logs = Path(tempfile.gettempdir()).glob("krh-*/session_latest/logs/*")
    logs = [*cluster.home.rglob("*.log"), *ray_logs]
    assert any(p.suffix in (".out", ".err") for p in logs)  # the actors' logs were read
    for path in logs:
        if path.is_file() and path.suffix in (".log", ".out", ".err"):
            text = path.read_text(errors="replace")
            assert SECRET_VALUE not in text and encoded not in text, path


def test_a_new_namespace_gets_its_default_service_account(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", "team")
    sa = until(lambda: _service_account(cluster, "team"), timeout=30)
    assert sa["metadata"]["name"] == "default"
    assert (
        get_json(cluster, "serviceaccount", "default", "-n", "default")["kind"] == "ServiceAccount"
    )


def _service_account(k: Cluster, namespace: str) -> Any:
    r = subprocess.run(
        ["kubectl", "get", "sa", "default", "-n", namespace, "-o", "json"],
        env={
            "KUBECONFIG": str(k.home / "kubeconfig"),
            "HOME": str(k.home),
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(r.stdout) if r.returncode == 0 else None


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--service-cluster-ip-range", "10.0.0.0/30", "8 addresses or more"),
        ("--service-cluster-ip-range", "fd00::/64", "IPv4"),
        ("--service-node-port-range", "40000-30000", "not a range of ports"),
        ("--service-node-port-range", "lots", "not a port range"),
    ],
)
def test_up_refuses_a_service_range_it_cannot_use(
    tmp_path: Path, flag: str, value: str, says: str
) -> None:
    r = kubera_in(tmp_path / "home").run("up", "--detach", flag, value)
    assert r.returncode == 1 and says in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "home").exists()  # refused before anything started
