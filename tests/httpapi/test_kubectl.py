"""Real kubectl (1.32, on PATH) against a real apiserver on real etcd over plain HTTP:
the commands users type, each checked by what the server then holds."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.httpapi.conftest import HostThread
from tests.waiting import until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kubectl(kubeconfig: Path):
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}

    def run(
        *args: str, check: bool = True, timeout: float = 60, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["kubectl", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    run.env = env  # type: ignore[attr-defined]
    return run


def as_json(kubectl, *args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json").stdout)


POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}, labels: {{app: {app}}}}}
spec:
  {node}containers: [{{name: c, image: registry.k8s.io/pause:3.9}}]
"""


def make_namespace(kubectl, name: str) -> None:
    """`kubectl create namespace` sends protobuf, which kubera does not decode (415):
    the same namespace from a manifest."""
    kubectl(
        "create", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"
    )


def make_pod(kubectl, ns: str, name: str, app: str = "x", node: str = "") -> None:
    kubectl(
        "create",
        "-f",
        "-",
        stdin=POD.format(name=name, ns=ns, app=app, node=f"nodeName: {node}\n  " if node else ""),
    )


def test_create_and_apply_the_examples_then_get_them(kubectl) -> None:
    out = kubectl("create", "-f", str(ROOT / "examples/quickstart.yaml")).stdout
    assert "namespace/demo created" in out and "node/node-a created" in out
    out = kubectl("apply", "-f", str(ROOT / "examples/deployment.yaml")).stdout
    assert "deployment.apps/web created" in out
    dep = as_json(kubectl, "get", "deployment", "web")
    assert dep["spec"]["replicas"] == 6
    assert "kubectl.kubernetes.io/last-applied-configuration" in dep["metadata"]["annotations"]
    table = kubectl("get", "pods", "-n", "demo").stdout.splitlines()
    assert table[0].split()[:1] == ["NAME"] and {line.split()[0] for line in table[1:]} == {
        "nginx",
        "accel-job",
        "web",
    }


def test_apply_twice_patches_with_a_strategic_merge_patch(kubectl) -> None:
    kubectl("apply", "-f", str(ROOT / "examples/deployment.yaml"))
    out = kubectl("apply", "-f", str(ROOT / "examples/deployment.yaml")).stdout
    assert "unchanged" in out or "configured" in out


@pytest.mark.parametrize(
    ("args", "check"),
    [
        (("-o", "name"), lambda out: "pod/g1" in out.split() and "pod/g2" in out.split()),
        (("-o", "wide"), lambda out: out.startswith("NAME") and "g1" in out),
        (("-o", "yaml"), lambda out: "kind: List" in out and "name: g1" in out),
        (("-l", "app=one", "-o", "name"), lambda out: out.split() == ["pod/g1"]),
        (
            ("--field-selector", "spec.nodeName=gn", "-o", "name"),
            lambda out: out.split() == ["pod/g2"],
        ),
        (
            ("--field-selector", "metadata.name!=g1", "-o", "name"),
            lambda out: out.split() == ["pod/g2"],
        ),
    ],
    ids=["name", "wide", "yaml", "label-selector", "field-selector", "field-selector-not"],
)
def test_get_output_forms_and_selectors(kubectl, args, check) -> None:
    if "gets" not in kubectl("get", "ns", "-o", "name").stdout:
        make_namespace(kubectl, "gets")
        make_pod(kubectl, "gets", "g1", app="one")
        make_pod(kubectl, "gets", "g2", app="two", node="gn")
    out = kubectl("get", "pods", "-n", "gets", *args).stdout
    assert check(out), out


def test_get_in_chunks_pages_with_limit_and_continue(kubectl) -> None:
    make_namespace(kubectl, "chunks")
    for i in range(5):
        make_pod(kubectl, "chunks", f"c{i}")
    proc = subprocess.run(
        ["kubectl", "get", "pods", "-n", "chunks", "-o", "name", "--chunk-size=2", "-v=6"],
        env=kubectl.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout.split() == [f"pod/c{i}" for i in range(5)]
    assert proc.stderr.count("continue=") == 2  # three pages


def test_apply_server_side(kubectl) -> None:
    make_namespace(kubectl, "ssa")
    manifest = (
        (ROOT / "examples/deployment.yaml")
        .read_text()
        .replace("namespace: default", "namespace: ssa")
    )
    out = kubectl("apply", "--server-side", "-f", "-", stdin=manifest).stdout
    assert "serverside-applied" in out
    fields = as_json(kubectl, "get", "deployment", "web", "-n", "ssa", "--show-managed-fields")[
        "metadata"
    ]["managedFields"]
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in fields)


def test_get_all_namespaces_and_json(kubectl) -> None:
    make_namespace(kubectl, "allns")
    make_pod(kubectl, "allns", "a1")
    out = kubectl("get", "pods", "-A").stdout.splitlines()
    assert out[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert any(line.split()[:2] == ["allns", "a1"] for line in out)
    doc = as_json(kubectl, "get", "pod", "a1", "-n", "allns")
    assert doc["kind"] == "Pod" and doc["metadata"]["namespace"] == "allns"
    missing = kubectl("get", "pod", "nope", "-n", "allns", check=False)
    assert missing.returncode == 1 and 'pods "nope" not found' in missing.stderr


def test_label_annotate_and_delete(kubectl) -> None:
    make_namespace(kubectl, "lad")
    make_pod(kubectl, "lad", "p")
    kubectl("label", "pod", "p", "-n", "lad", "tier=web")
    kubectl("annotate", "pod", "p", "-n", "lad", "note=hi")
    meta = as_json(kubectl, "get", "pod", "p", "-n", "lad")["metadata"]
    assert meta["labels"]["tier"] == "web" and meta["annotations"]["note"] == "hi"
    kubectl("label", "pod", "p", "-n", "lad", "tier-")
    assert "tier" not in as_json(kubectl, "get", "pod", "p", "-n", "lad")["metadata"]["labels"]
    out = kubectl("delete", "pod", "p", "-n", "lad").stdout
    assert 'pod "p" deleted' in out
    assert kubectl("get", "pod", "p", "-n", "lad", check=False).returncode == 1


def test_describe_pod_and_node(kubectl) -> None:
    make_namespace(kubectl, "desc")
    make_pod(kubectl, "desc", "d")
    kubectl(
        "create",
        "-f",
        "-",
        stdin="apiVersion: v1\nkind: Node\nmetadata: {name: desc-node, labels: {zone: z1}}\n",
    )
    out = kubectl("describe", "pod", "d", "-n", "desc").stdout
    assert "Name:" in out and "d" in out and "Namespace:        desc" in out
    # the ServiceAccount admission plugin's default, as kubectl shows it
    assert "Service Account:  default" in out
    out = kubectl("describe", "node", "desc-node").stdout
    assert "Name:               desc-node" in out and "zone=z1" in out


def test_scale_deployment(kubectl) -> None:
    make_namespace(kubectl, "sc")
    kubectl(
        "create",
        "-f",
        "-",
        stdin="apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s, namespace: sc}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: s}}\n"
        "  template:\n    metadata: {labels: {app: s}}\n"
        "    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}\n",
    )
    out = kubectl("scale", "deployment", "s", "-n", "sc", "--replicas=4").stdout
    assert "scaled" in out
    assert as_json(kubectl, "get", "deployment", "s", "-n", "sc")["spec"]["replicas"] == 4


def test_cordon_uncordon_and_taint(kubectl) -> None:
    kubectl("create", "-f", "-", stdin="apiVersion: v1\nkind: Node\nmetadata: {name: cn}\n")
    kubectl("cordon", "cn")
    assert as_json(kubectl, "get", "node", "cn")["spec"]["unschedulable"] is True
    kubectl("uncordon", "cn")
    assert not as_json(kubectl, "get", "node", "cn")["spec"].get("unschedulable")
    kubectl("taint", "node", "cn", "k=v:NoSchedule")
    assert as_json(kubectl, "get", "node", "cn")["spec"]["taints"] == [
        {"key": "k", "value": "v", "effect": "NoSchedule"}
    ]


def _cordon(kubectl, node: str) -> None:
    kubectl("cordon", node)


def test_drain_evicts_and_a_pdb_blocks_it(kubectl) -> None:
    make_namespace(kubectl, "dr")
    kubectl("create", "-f", "-", stdin="apiVersion: v1\nkind: Node\nmetadata: {name: dn}\n")
    for name, app in (("free", "free"), ("kept", "kept")):
        make_pod(kubectl, "dr", name, app=app, node="dn")
        kubectl(
            "patch",
            "pod",
            name,
            "-n",
            "dr",
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}',
        )
    kubectl(
        "create",
        "-f",
        "-",
        stdin="apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep, namespace: dr}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: kept}}}\n",
    )
    kubectl(
        "patch",
        "pdb",
        "keep",
        "-n",
        "dr",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        '{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}',
    )
    _cordon(kubectl, "dn")
    blocked = kubectl("drain", "dn", "--force", "--grace-period=0", "--timeout=4s", check=False)
    assert blocked.returncode != 0
    assert "disruption budget" in blocked.stderr, blocked.stderr
    names = kubectl("get", "pods", "-n", "dr", "-o", "name").stdout.split()
    assert names == ["pod/kept"]
    kubectl("delete", "pdb", "keep", "-n", "dr")
    out = kubectl("drain", "dn", "--force", "--grace-period=0", "--timeout=20s")
    assert "drained" in out.stdout
    assert kubectl("get", "pods", "-n", "dr", "-o", "name").stdout.split() == []


def test_get_watch_prints_events_until_stopped(kubectl, host: HostThread) -> None:
    make_namespace(kubectl, "wt")
    proc = subprocess.Popen(
        ["kubectl", "get", "pods", "-n", "wt", "-w", "-o", "name"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        make_pod(kubectl, "wt", "w1")
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first == "pod/w1"
        kubectl("label", "pod", "w1", "-n", "wt", "x=y")
        assert proc.stdout.readline().strip() == "pod/w1"
        assert proc.poll() is None  # still watching
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_typed_create_commands_send_protobuf_and_are_decoded(kubectl) -> None:
    kubectl("create", "namespace", "pb")
    kubectl(
        "create", "deployment", "d", "-n", "pb", "--image=nginx:1.27", "--replicas=3", "--port=8080"
    )
    kubectl(
        "create",
        "priorityclass",
        "pb-pc",
        "--value=100",
        "--description=from protobuf",
        "--preemption-policy=Never",
    )
    kubectl("create", "pdb", "min", "-n", "pb", "--selector=app=d", "--min-available=50%")
    kubectl("create", "pdb", "max", "-n", "pb", "--selector=app=d", "--max-unavailable=1")
    dep = as_json(kubectl, "get", "deployment", "d", "-n", "pb")
    want = json.loads(
        kubectl(
            "create",
            "deployment",
            "d",
            "-n",
            "pb",
            "--image=nginx:1.27",
            "--replicas=3",
            "--port=8080",
            "--dry-run=client",
            "-o",
            "json",
        ).stdout
    )
    assert dep["metadata"]["labels"] == want["metadata"]["labels"] == {"app": "d"}
    assert dep["spec"]["replicas"] == 3 and dep["spec"]["selector"] == want["spec"]["selector"]
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    (w,) = want["spec"]["template"]["spec"]["containers"]
    assert (c["name"], c["image"], c["ports"][0]["containerPort"]) == (
        w["name"],
        w["image"],
        w["ports"][0]["containerPort"],
    )
    pc = as_json(kubectl, "get", "priorityclass", "pb-pc")
    assert (pc["value"], pc["description"], pc["preemptionPolicy"]) == (
        100,
        "from protobuf",
        "Never",
    )
    assert as_json(kubectl, "get", "pdb", "min", "-n", "pb")["spec"]["minAvailable"] == "50%"
    assert as_json(kubectl, "get", "pdb", "max", "-n", "pb")["spec"]["maxUnavailable"] == 1


def test_kubectl_delete_namespace_then_finalize_it(kubectl) -> None:
    """Without a namespace controller (this host runs none) a deleted namespace stays
    Terminating with its content, as upstream's; `PUT .../finalize` without the
    "kubernetes" finalizer (what the controller does, or an operator by hand) removes it."""
    make_namespace(kubectl, "gone")
    make_pod(kubectl, "gone", "p")
    kubectl("delete", "namespace", "gone", "--wait=false")
    ns = as_json(kubectl, "get", "ns", "gone")
    assert ns["status"]["phase"] == "Terminating" and ns["spec"]["finalizers"] == ["kubernetes"]
    ns["spec"]["finalizers"] = []
    out = json.loads(
        kubectl(
            "replace", "--raw", "/api/v1/namespaces/gone/finalize", "-f", "-", stdin=json.dumps(ns)
        ).stdout
    )
    assert out["metadata"]["name"] == "gone" and not out["spec"].get("finalizers")
    until(lambda: kubectl("get", "ns", "gone", check=False).returncode == 1, timeout=30)


def test_a_service_patched_to_node_port_past_its_quota_is_refused(kubectl) -> None:
    """A strategic merge patch is an update: the quota charges the service's type change
    (upstream's service evaluator handles updates). No controller runs here: the quota's
    status is written as the quota controller would."""
    make_namespace(kubectl, "svcquota")
    quota = (
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: svcquota}\n"
        "spec: {hard: {services.nodeports: '0'}}\n"
    )
    kubectl("create", "-f", "-", stdin=quota)
    status = '{"status":{"hard":{"services.nodeports":"0"},"used":{"services.nodeports":"0"}}}'
    kubectl(
        "patch", "resourcequota", "q", "-n", "svcquota", "--subresource=status",
        "--type=merge", "-p", status,
    )  # fmt: skip
    svc = (
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: svcquota}\n"
        "spec: {ports: [{port: 80}]}\n"
    )
    kubectl("create", "-f", "-", stdin=svc)
    proc = kubectl(
        "patch", "service", "web", "-n", "svcquota", "-p", '{"spec":{"type":"NodePort"}}',
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'Error from server (Forbidden): services "web" is forbidden: exceeded quota: q, '
        "requested: services.nodeports=1, used: services.nodeports=0, "
        "limited: services.nodeports=0"
    )
    typ = kubectl("get", "service", "web", "-n", "svcquota", "-o", "jsonpath={.spec.type}")
    assert typ.stdout == "ClusterIP"
