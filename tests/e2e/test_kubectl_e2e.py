"""Real kubectl against a real `kubera up` (TLS, bearer tokens, hollow nodes), with nothing
but the kubeconfig `up` wrote: what a user of a real cluster types works the same.

One cluster for the module (3 hollow nodes, time scaled); each test states the kubectl
behaviour it checks. kubectl keeps its discovery cache under $HOME, so $HOME is the
cluster's own home."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl, running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[2]
NODES = ("kubera-node-00000", "kubera-node-00001", "kubera-node-00002")


# A cluster of its own (tests/e2e/conftest.py): it cordons, taints and drains nodes.
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    with running(home, "--nodes", "3", "--time-scale", "20", ray_address=shared_ray) as k:
        yield k


def node_token(k: Cluster, node: str) -> str:
    """The token `up` issued to hollow node `node` (its static token file, pki/tokens.csv)."""
    from services.auth.tokens import parse_token_file

    users = parse_token_file((k.home / "pki" / "tokens.csv").read_text())
    return next(t for t, u in users.items() if u.name == f"system:node:{node}")


def header(out: str) -> list[str]:
    return out.splitlines()[0].split()


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:] if line.strip()]


def test_the_kubeconfig_up_wrote_is_kubera_kubeconfig_and_uses_tls_and_a_token(
    cluster: Cluster,
) -> None:
    printed = cluster("kubeconfig")
    assert printed.returncode == 0, printed.stderr
    on_disk = (cluster.home / "kubeconfig").read_text()
    assert printed.stdout.strip() == on_disk.strip()
    cfg = yaml.safe_load(on_disk)
    assert cfg["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
    assert cfg["users"][0]["user"]["token"]


def test_get_nodes_prints_kubectls_table_and_wide_adds_addresses(cluster: Cluster) -> None:
    until(lambda: len(rows(kubectl(cluster, "get", "nodes").stdout)) == 3, timeout=60)
    out = kubectl(cluster, "get", "nodes").stdout
    assert header(out) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert sorted(r[0] for r in rows(out)) == list(NODES)
    assert all(r[1] == "Ready" for r in rows(out))
    wide = kubectl(cluster, "get", "nodes", "-o", "wide").stdout
    assert header(wide)[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]


def test_apply_creates_then_configures_and_rollout_status_waits_for_the_deployment(
    cluster: Cluster,
) -> None:
    r = kubectl(cluster, "apply", "-f", str(ROOT / "examples/deployment.yaml"))
    assert r.stdout.strip() == "deployment.apps/web created"
    r = kubectl(cluster, "apply", "-f", str(ROOT / "examples/deployment.yaml"))
    assert r.stdout.strip() == "deployment.apps/web unchanged"
    doc = yaml.safe_load((ROOT / "examples/deployment.yaml").read_text())
    doc["spec"]["replicas"] = 4
    r = kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert r.stdout.strip() == "deployment.apps/web configured"
    r = kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    assert "successfully rolled out" in r.stdout

    def names() -> list[str]:  # the two scaled away terminate within their grace period
        return kubectl(cluster, "get", "pods", "-l", "app=web", "-o", "name").stdout.split()

    until(lambda: len(names()) == 4, timeout=60)
    assert all(n.startswith("pod/web-") for n in names())


def test_get_selects_by_label_and_field_and_prints_json_yaml_and_all_namespaces(
    cluster: Cluster,
) -> None:
    kubectl(cluster, "rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    listed = json.loads(kubectl(cluster, "get", "pods", "-l", "app=web", "-o", "json").stdout)
    assert listed["kind"] == "List" and len(listed["items"]) >= 1
    running_ = kubectl(
        cluster, "get", "pods", "--field-selector", "status.phase=Running", "-o", "name"
    ).stdout.split()
    assert set(running_) >= {
        f"pod/{p['metadata']['name']}"
        for p in listed["items"]
        if p["status"].get("phase") == "Running"
    }
    none = kubectl(
        cluster,
        "get",
        "pods",
        "--field-selector",
        "status.phase!=Running,status.phase!=Pending",
        "-o",
        "name",
    ).stdout.split()
    assert not set(none) & set(running_)
    one = listed["items"][0]["metadata"]["name"]
    as_yaml = yaml.safe_load(kubectl(cluster, "get", "pod", one, "-o", "yaml").stdout)
    assert as_yaml["metadata"]["name"] == one and as_yaml["kind"] == "Pod"
    every = kubectl(cluster, "get", "pods", "-A").stdout
    assert header(every)[:2] == ["NAMESPACE", "NAME"]
    leases = kubectl(cluster, "get", "leases", "-n", "kube-node-lease", "-o", "name").stdout.split()
    assert {f"lease.coordination.k8s.io/{n}" for n in NODES} <= set(leases)


def test_label_annotate_and_describe_a_pod(cluster: Cluster) -> None:
    pod = kubectl(cluster, "get", "pods", "-l", "app=web", "-o", "name").stdout.split()[0]
    assert "labeled" in kubectl(cluster, "label", pod, "tier=front").stdout
    assert "annotated" in kubectl(cluster, "annotate", pod, "note=hello").stdout
    got = json.loads(kubectl(cluster, "get", pod, "-o", "json").stdout)
    assert got["metadata"]["labels"]["tier"] == "front"
    assert got["metadata"]["annotations"]["note"] == "hello"
    described = kubectl(cluster, "describe", pod).stdout
    for field in (
        "Name:",
        "Namespace:",
        "Node:",
        "Labels:",
        "tier=front",
        "Containers:",
        "Events:",
    ):
        assert field in described, described


def test_describe_node_shows_capacity_allocatable_and_its_pods(cluster: Cluster) -> None:
    described = kubectl(cluster, "describe", "node", NODES[0]).stdout
    for field in ("Name:", "Capacity:", "Allocatable:", "Conditions:", "Non-terminated Pods:"):
        assert field in described, described


def test_cordon_uncordon_and_taint_a_node(cluster: Cluster) -> None:
    assert kubectl(cluster, "cordon", NODES[2]).stdout.strip() == f"node/{NODES[2]} cordoned"
    status = dict((r[0], r[1]) for r in rows(kubectl(cluster, "get", "nodes").stdout))
    assert status[NODES[2]] == "Ready,SchedulingDisabled"
    assert kubectl(cluster, "uncordon", NODES[2]).stdout.strip() == f"node/{NODES[2]} uncordoned"
    r = kubectl(cluster, "taint", "nodes", NODES[2], "dedicated=gpu:NoSchedule")
    assert r.stdout.strip() == f"node/{NODES[2]} tainted"
    node = json.loads(kubectl(cluster, "get", "node", NODES[2], "-o", "json").stdout)
    assert {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"} in node["spec"]["taints"]
    r = kubectl(cluster, "taint", "nodes", NODES[2], "dedicated-")
    assert r.stdout.strip() == f"node/{NODES[2]} untainted"


def test_scale_deployment_changes_its_replicas(cluster: Cluster) -> None:
    r = kubectl(cluster, "scale", "deployment", "web", "--replicas=2")
    assert r.stdout.strip() == "deployment.apps/web scaled"
    until(
        lambda: (
            kubectl(cluster, "get", "deployment", "web", "-o", "jsonpath={.status.replicas}").stdout
            == "2"
        ),
        timeout=60,
    )


def test_drain_is_blocked_by_a_pdb_then_evicts_once_the_budget_allows(cluster: Cluster) -> None:
    node = NODES[1]
    for i in range(2):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"guarded-{i}", "labels": {"app": "guarded"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
        }
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod))
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pdb))
    until(
        lambda: (
            kubectl(
                cluster, "get", "pdb", "guard", "-o", "jsonpath={.status.currentHealthy}"
            ).stdout
            == "2"
        ),
        timeout=60,
    )
    r = kubectl(
        cluster,
        "drain",
        node,
        "--force",
        "--ignore-daemonsets",
        "--timeout=6s",
        check=False,
        timeout=60,
    )
    assert r.returncode != 0
    assert "disruption budget" in (r.stdout + r.stderr)
    left = kubectl(cluster, "get", "pods", "-l", "app=guarded", "-o", "name").stdout.split()
    assert len(left) == 2
    kubectl(cluster, "delete", "pdb", "guard")
    r = kubectl(
        cluster, "drain", node, "--force", "--ignore-daemonsets", "--timeout=60s", timeout=90
    )
    assert f"node/{node} drained" in r.stdout
    kubectl(cluster, "uncordon", node)


def test_server_side_apply_owns_fields_conflicts_and_forces(cluster: Cluster) -> None:
    r = kubectl(
        cluster,
        "apply",
        "--server-side",
        "-f",
        str(ROOT / "examples/seeds/30-priority-high-priority.yaml"),
    )
    assert "serverside-applied" in r.stdout
    cm = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ssa"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "ssa"}},
            "template": {
                "metadata": {"labels": {"app": "ssa"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    kubectl(
        cluster, "apply", "--server-side", "--field-manager=alice", "-f", "-", stdin=json.dumps(cm)
    )
    got = json.loads(
        kubectl(cluster, "get", "deployment", "ssa", "-o", "json", "--show-managed-fields").stdout
    )
    assert any(
        m["manager"] == "alice" and m["operation"] == "Apply"
        for m in got["metadata"]["managedFields"]
    )
    cm["spec"]["replicas"] = 3
    r = kubectl(
        cluster,
        "apply",
        "--server-side",
        "--field-manager=bob",
        "-f",
        "-",
        stdin=json.dumps(cm),
        check=False,
    )
    assert r.returncode != 0 and "conflict" in r.stderr.lower() and ".spec.replicas" in r.stderr
    kubectl(
        cluster,
        "apply",
        "--server-side",
        "--field-manager=bob",
        "--force-conflicts",
        "-f",
        "-",
        stdin=json.dumps(cm),
    )
    assert (
        kubectl(cluster, "get", "deployment", "ssa", "-o", "jsonpath={.spec.replicas}").stdout
        == "3"
    )


def test_apply_the_seeds_examples_creates_each_and_a_strict_unknown_field_is_refused(
    cluster: Cluster,
) -> None:
    for name in (
        "21-taints-toleration-equal.yaml",
        "08-node-name-nginx.yaml",
        "01-node-affinity-with-node-affinity.yaml",
    ):
        r = kubectl(cluster, "apply", "-f", str(ROOT / "examples/seeds" / name), check=False)
        assert r.returncode == 0 and "created" in r.stdout, (name, r.stderr)
    bad = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bad"},
        "spec": {"containers": [{"name": "c", "image": "i", "imagePolicy": 1}]},
    }
    r = kubectl(
        cluster, "apply", "--validate=strict", "-f", "-", stdin=json.dumps(bad), check=False
    )
    assert r.returncode != 0 and 'unknown field "spec.containers[0].imagePolicy"' in r.stderr


def test_explain_describes_fields_from_the_openapi_document(cluster: Cluster) -> None:
    out = kubectl(cluster, "explain", "pod.spec.containers").stdout
    assert "KIND:" in out and "Pod" in out and "FIELD: containers" in out
    assert "image" in kubectl(cluster, "explain", "deployment", "--recursive").stdout


def test_get_watch_prints_a_pod_created_after_it_started(cluster: Cluster) -> None:
    env = {
        "KUBECONFIG": str(cluster.home / "kubeconfig"),
        "HOME": str(cluster.home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    proc = subprocess.Popen(
        ["kubectl", "get", "pods", "-w", "-l", "app=watched"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "watched", "labels": {"app": "watched"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod))
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("watched ") or time.monotonic() > deadline:
                break
        assert any(line.startswith("watched ") for line in seen), seen
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_delete_removes_a_pod(cluster: Cluster) -> None:
    r = kubectl(cluster, "delete", "pod", "watched", "--grace-period=0", "--force")
    assert 'pod "watched"' in (r.stdout + r.stderr)
    until(
        lambda: kubectl(cluster, "get", "pod", "watched", check=False).returncode != 0, timeout=60
    )


def test_a_wrong_token_is_unauthorized_and_a_node_pools_token_is_forbidden_on_another_node(
    cluster: Cluster,
) -> None:
    r = kubectl(cluster, "--token=not-a-token", "get", "nodes", check=False)
    assert r.returncode != 0 and "Unauthorized" in r.stderr
    token = node_token(cluster, NODES[0])
    own = kubectl(cluster, f"--token={token}", "get", "node", NODES[0], check=False)
    assert own.returncode == 0, own.stderr
    r = kubectl(cluster, f"--token={token}", "label", "node", NODES[1], "x=y", check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower()
    assert f'User "system:node:{NODES[0]}"' in r.stderr or "system:node" in r.stderr
