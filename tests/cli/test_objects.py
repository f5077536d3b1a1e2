"""apply / get / delete / describe against a real apiserver, as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.helpers import EXAMPLES, kubera, pod, write

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    kubernetes.io/hostname: {name}
    node-role.kubernetes.io/worker: ""
spec:
  taints:
  - key: dedicated
    value: accel
    effect: NoSchedule
status:
  capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
  conditions:
  - type: Ready
    status: "True"
"""


def test_apply_creates_then_reports_unchanged_then_configured(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "web.yaml", pod("web", labels="app: web"))
    first = kubera(capsys, apiserver, "apply", "-f", path)
    assert (first.rc, first.out, first.err) == (0, "pod/web created\n", "")
    again = kubera(capsys, apiserver, "apply", "-f", path)
    assert (again.rc, again.out) == (0, "pod/web unchanged\n")
    write(tmp_path, "web.yaml", pod("web", labels="app: web\ntier: front"))
    changed = kubera(capsys, apiserver, "apply", "-f", path)
    assert (changed.rc, changed.out) == (0, "pod/web configured\n")
    got = json.loads(kubera(capsys, apiserver, "get", "pod", "web", "-o", "json").out)
    assert got["metadata"]["labels"] == {"app": "web", "tier": "front"}
    # Server-set fields survive the update: status, defaults, admission's tolerations.
    assert got["status"]["phase"] == "Pending"
    assert got["spec"]["schedulerName"] == "default-scheduler"
    assert len(got["spec"]["tolerations"]) == 2


def test_apply_removes_a_label_dropped_from_the_manifest(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "web.yaml", pod("web", labels="app: web\ntier: front"))
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    write(tmp_path, "web.yaml", pod("web", labels="app: web"))
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "pod/web configured\n"
    got = json.loads(kubera(capsys, apiserver, "get", "pod", "web", "-o", "json").out)
    assert got["metadata"]["labels"] == {"app": "web"}


def test_apply_dry_run_writes_nothing(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "a.yaml", pod("a"))
    for mode, suffix in (("client", "(dry run)"), ("server", "(server dry run)")):
        r = kubera(capsys, apiserver, "apply", "-f", path, f"--dry-run={mode}")
        assert (r.rc, r.out) == (0, f"pod/a created {suffix}\n")
    r = kubera(capsys, apiserver, "get", "pods")
    assert r.err == "No resources found in default namespace.\n"


def test_apply_from_stdin_a_directory_and_a_list(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(pod("from-stdin")))
    assert kubera(capsys, apiserver, "apply", "-f", "-").out == "pod/from-stdin created\n"
    write(tmp_path / "d", "b.yaml", pod("b"))
    write(tmp_path / "d", "a.yml", pod("a"))
    write(tmp_path / "d", "notes.txt", "not a manifest")
    write(tmp_path / "d" / "sub", "c.yaml", pod("c"))
    r = kubera(capsys, apiserver, "apply", "-f", str(tmp_path / "d"))
    assert r.out == "pod/a created\npod/b created\n"
    r = kubera(capsys, apiserver, "apply", "-f", str(tmp_path / "d"), "-R")
    assert r.out == "pod/a unchanged\npod/b unchanged\npod/c created\n"
    items = [yaml.safe_load(pod("l1")), yaml.safe_load(pod("l2"))]
    lst = write(
        tmp_path, "list.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    )
    assert kubera(capsys, apiserver, "apply", "-f", lst).out == "pod/l1 created\npod/l2 created\n"


def test_unknown_fields_warn_with_validate_warn_and_are_silent_when_validation_is_off(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "p.yaml", pod("p", extra="  foo: 1\n"))
    r = kubera(capsys, apiserver, "apply", "-f", path, "--validate=warn")
    assert r.rc == 0
    assert 'Warning: unknown field "spec.foo"' in r.err and "p.yaml" in r.err
    r = kubera(capsys, apiserver, "apply", "-f", path, "--validate=false")
    assert (r.rc, r.err, r.out) == (0, "", "pod/p unchanged\n")


def test_manifest_namespace_wins_over_the_default(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ns = write(tmp_path, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n")
    p = write(tmp_path, "p.yaml", pod("p", namespace="team"))
    r = kubera(capsys, apiserver, "apply", "-f", ns, "-f", p)
    assert r.out == "namespace/team created\npod/p created\n"
    assert "p" in kubera(capsys, apiserver, "get", "pods", "-n", "team").out
    assert kubera(capsys, apiserver, "apply", "-f", p, "-n", "team").rc == 0


def test_get_json_is_a_list_and_get_name_is_the_object(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "two.yaml", pod("a") + "---\n" + pod("b"))
    kubera(capsys, apiserver, "apply", "-f", path)
    doc = json.loads(kubera(capsys, apiserver, "get", "pods", "-o", "json").out)
    assert list(doc) == ["apiVersion", "kind", "items", "metadata"]
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]) == (
        "v1",
        "List",
        {"resourceVersion": ""},
    )
    assert [i["metadata"]["name"] for i in doc["items"]] == ["a", "b"]
    for item in doc["items"]:
        assert list(item)[:2] == ["apiVersion", "kind"]
        assert {"apiVersion", "kind", "metadata", "spec", "status"} <= set(item)
        assert item["spec"]["terminationGracePeriodSeconds"] == 30  # int64 as a number
    one = json.loads(kubera(capsys, apiserver, "get", "pod", "a", "-o", "json").out)
    assert (one["kind"], one["metadata"]["name"]) == ("Pod", "a")
    same = json.loads(kubera(capsys, apiserver, "get", "pod/a", "-o", "json").out)
    assert same["metadata"]["uid"] == one["metadata"]["uid"]
    as_yaml = yaml.safe_load(kubera(capsys, apiserver, "get", "pods", "-o", "yaml").out)
    assert as_yaml["kind"] == "List" and len(as_yaml["items"]) == 2
    names = kubera(capsys, apiserver, "get", "pods", "-o", "name").out
    assert names == "pod/a\npod/b\n"
    empty = json.loads(
        kubera(capsys, apiserver, "get", "pods", "-n", "kube-system", "-o", "json").out
    )
    assert empty["items"] == []


def test_get_tables_have_kubectls_columns(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "x.yaml",
        NODE.format(name="node-a")
        + "---\n"
        + pod("bound", extra="  nodeName: node-a\n")
        + "---\n"
        + pod("gated", extra="  schedulingGates:\n  - name: example.com/wait\n"),
    )
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    out = kubera(capsys, apiserver, "get", "pods").out.splitlines()
    assert out[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert out[0].startswith("NAME    READY   STATUS")  # kubectl's tabwriter spacing
    assert out[1].split()[:4] == ["bound", "0/1", "Pending", "0"]
    assert out[2].split()[:3] == ["gated", "0/1", "SchedulingGated"]
    wide = kubera(capsys, apiserver, "get", "pods", "-o", "wide").out.splitlines()
    assert "NODE" in wide[0] and "NOMINATED NODE" in wide[0] and "READINESS GATES" in wide[0]
    assert wide[1].split()[5:7] == ["<none>", "node-a"]
    nodes = kubera(capsys, apiserver, "get", "nodes").out.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes[1].split()[:3] == ["node-a", "Ready", "worker"]
    every = kubera(capsys, apiserver, "get", "pods", "-A").out.splitlines()
    assert every[0].split()[:2] == ["NAMESPACE", "NAME"] and every[1].startswith("default")
    both = kubera(capsys, apiserver, "get", "pods,nodes").out
    assert "pod/bound" in both and "node/node-a" in both
    pcs = kubera(capsys, apiserver, "get", "pc").out.splitlines()
    assert pcs[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    ns = kubera(capsys, apiserver, "get", "ns").out.splitlines()
    assert ns[0].split() == ["NAME", "STATUS", "AGE"] and "Active" in ns[1]


def test_label_and_field_selectors_filter(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "x.yaml",
        pod("web-1", labels="app: web", extra="  nodeName: n1\n")
        + "---\n"
        + pod("web-2", labels="app: web")
        + "---\n"
        + pod("db", labels="app: db"),
    )
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    r = kubera(capsys, apiserver, "get", "pods", "-l", "app=web", "-o", "name")
    assert r.out == "pod/web-1\npod/web-2\n"
    r = kubera(capsys, apiserver, "get", "pods", "-l", "app in (db)", "-o", "name")
    assert r.out == "pod/db\n"
    r = kubera(
        capsys, apiserver, "get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name"
    )
    assert r.out == "pod/web-1\n"
    r = kubera(
        capsys,
        apiserver,
        "get",
        "pods",
        "-l",
        "app=web",
        "--field-selector",
        "spec.nodeName!=n1",
        "-o",
        "name",
    )
    assert r.out == "pod/web-2\n"
    r = kubera(capsys, apiserver, "get", "pods", "-l", "app=none")
    assert (r.rc, r.out, r.err) == (0, "", "No resources found in default namespace.\n")


def test_delete_by_name_by_file_and_all(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "x.yaml", pod("a") + "---\n" + pod("b") + "---\n" + pod("c"))
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    r = kubera(capsys, apiserver, "delete", "pod", "a")
    assert (r.rc, r.out) == (0, 'pod "a" deleted\n')
    r = kubera(capsys, apiserver, "delete", "pod", "a")
    assert r.rc == 1 and r.err == 'Error from server (NotFound): pods "a" not found\n'
    assert kubera(capsys, apiserver, "delete", "pod", "a", "--ignore-not-found").rc == 0
    r = kubera(capsys, apiserver, "delete", "pods", "--all", "--now")
    assert (r.rc, r.out) == (0, 'pod "b" deleted\npod "c" deleted\n')
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    r = kubera(capsys, apiserver, "delete", "-f", path)
    assert r.out == 'pod "a" deleted\npod "b" deleted\npod "c" deleted\n'
    assert kubera(capsys, apiserver, "get", "pods").err.startswith("No resources found")


def test_delete_of_a_bound_pod_is_graceful(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "p.yaml", pod("p", extra="  nodeName: n1\n"))
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    assert kubera(capsys, apiserver, "delete", "pod", "p", "--grace-period", "60").rc == 0
    row = kubera(capsys, apiserver, "get", "pods").out.splitlines()[1]
    assert row.split()[2] == "Terminating"


def test_describe_pod_shows_its_sections(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = pod(
        "web",
        labels="app: web",
        extra=(
            "  nodeSelector:\n    disk: ssd\n"
            "  tolerations:\n  - key: dedicated\n    operator: Equal\n    value: accel\n"
            "    effect: NoSchedule\n"
        ),
    ).replace(
        "image: registry.k8s.io/pause:3.8\n",
        "image: registry.k8s.io/pause:3.8\n    resources:\n      requests: {cpu: 250m}\n"
        "      limits: {cpu: 500m, memory: 128Mi}\n",
    )
    assert kubera(capsys, apiserver, "apply", "-f", write(tmp_path, "p.yaml", manifest)).rc == 0
    r = kubera(capsys, apiserver, "describe", "pod", "web")
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split() == ["Name:", "web"] and lines[1].split() == ["Namespace:", "default"]
    for expected in (
        "Priority:",
        "Node:             <none>",
        "Labels:           app=web",
        "Status:           Pending",
        "QoS Class:",
        "Burstable",
        "Node-Selectors:   disk=ssd",
        "dedicated=accel:NoSchedule",
        "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
        "Events:           <none>",
    ):
        assert expected in r.out, expected
    assert "Limits:" in r.out and "Requests:" in r.out and "memory:  128Mi" in r.out
    assert "last-applied-configuration" not in r.out


def test_describe_node_sums_its_pods_requests(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    requests = "    resources:\n      requests: {cpu: 500m, memory: 1Gi}\n"
    manifest = (
        NODE.format(name="node-a")
        + "---\n"
        + pod("p1", extra="  nodeName: node-a\n").replace("pause:3.8\n", "pause:3.8\n" + requests)
        + "---\n"
        + pod("p2", extra="  nodeName: node-a\n").replace("pause:3.8\n", "pause:3.8\n" + requests)
        + "---\n"
        + pod("elsewhere", extra="  nodeName: node-b\n")
    )
    assert kubera(capsys, apiserver, "apply", "-f", write(tmp_path, "n.yaml", manifest)).rc == 0
    r = kubera(capsys, apiserver, "describe", "node", "node-a")
    assert r.rc == 0, r.err
    for expected in (
        "Roles:",
        "worker",
        "Taints:             dedicated=accel:NoSchedule",
        "Unschedulable:      false",
        "Capacity:",
        "Allocatable:",
        "Non-terminated Pods:",
        "(2 in total)",
        "500m (12%)",
        "1Gi (12%)",
        "Allocated resources:",
    ):
        assert expected in r.out, expected
    assert "elsewhere" not in r.out
    alloc = r.out.split("Allocated resources:")[1]
    assert "cpu                1 (25%)" in alloc and "memory             2Gi (25%)" in alloc


def test_describe_other_kinds_and_missing_objects(
    apiserver: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = kubera(capsys, apiserver, "describe", "priorityclass", "system-node-critical")
    assert r.rc == 0 and "Value:" in r.out and "2000001000" in r.out
    r = kubera(capsys, apiserver, "describe", "pod", "nope")
    assert r.rc == 1 and r.err == 'Error from server (NotFound): pods "nope" not found\n'


def test_quickstart_applies_cleanly(apiserver: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = kubera(capsys, apiserver, "apply", "-f", str(EXAMPLES / "quickstart.yaml"))
    assert r.rc == 0, r.err
    assert r.err == ""
    assert "namespace/demo created" in r.out and "pod/web created" in r.out
    again = kubera(capsys, apiserver, "apply", "-f", str(EXAMPLES / "quickstart.yaml"))
    assert again.rc == 0 and "created" not in again.out and "configured" not in again.out


SEEDS = sorted((EXAMPLES / "seeds").glob("*.yaml"))


def test_the_seeds_are_there() -> None:
    assert len(SEEDS) >= 30


@pytest.mark.parametrize("seed", [pytest.param(s, id=s.name) for s in SEEDS])
def test_every_seed_applies_cleanly_in_order(
    shared_apiserver: str, capsys: pytest.CaptureFixture[str], seed: Path
) -> None:
    """The seeds build on each other (a RuntimeClass then a pod using it, priority classes
    then a pod naming one), so they share one apiserver and run in file order."""
    r = kubera(capsys, shared_apiserver, "apply", "-f", str(seed))
    assert (r.rc, r.err) == (0, ""), f"{seed.name}: {r.err}"
    assert "Warning" not in r.err
    assert r.out.strip().endswith("created"), f"{seed.name}: {r.out}"


def test_reapplying_the_seeds_changes_nothing(
    shared_apiserver: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs after the seeds were applied above: every object is reported unchanged."""
    for seed in SEEDS:
        r = kubera(capsys, shared_apiserver, "apply", "-f", str(seed))
        assert r.rc == 0, f"{seed.name}: {r.err}"
        assert all(line.endswith(" unchanged") for line in r.out.splitlines()), r.out


def test_get_json_and_yaml_print_map_keys_sorted(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """kubectl (Go's encoding/json) sorts the keys of maps such as resources.requests."""
    container = (
        "    resources:\n      requests: {memory: 64Mi, cpu: 250m}\n"
        "      limits: {memory: 128Mi, cpu: 500m}\n"
    )
    manifest = pod("r", labels="zone: a\napp: web").replace(
        "image: registry.k8s.io/pause:3.8\n", "image: registry.k8s.io/pause:3.8\n" + container
    )
    path = write(tmp_path, "r.yaml", manifest)
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    r = kubera(capsys, apiserver, "get", "pod", "r", "-o", "json")
    got = json.loads(r.out)
    resources = got["spec"]["containers"][0]["resources"]
    assert list(resources["requests"]) == ["cpu", "memory"]
    assert list(resources["limits"]) == ["cpu", "memory"]
    assert list(got["metadata"]["labels"]) == ["app", "zone"]
    assert r.out.index('"cpu": "250m"') < r.out.index('"memory": "64Mi"')
    y = kubera(capsys, apiserver, "get", "pods", "-o", "yaml").out
    assert y.index("cpu: 250m") < y.index("memory: 64Mi")
    assert y.index("cpu: 500m") < y.index("memory: 128Mi")
