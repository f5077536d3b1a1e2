"""End to end, `kubera whatif` and POST /apis/kubera.io/v1/whatif (through real kubectl)
against the scheduler leader of a running cluster:

- the what-if's node for a pod is where the scheduler then binds it (or a node of the
  same top score: ties are broken at random on both sides, and the answer shows them);
  pods that only fit one per node are spread by the what-if as by the scheduler;
- a gang (Coscheduling's PodGroup, given beside its pods) that fits is placed whole, one
  that does not fit is not placed at all;
- on a full cluster, --preempt names the victim; nothing is deleted, and watches of the
  namespace's pods and events see nothing of the what-if;
- a session chains steps, rolls back, and ends.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

#: conftest's shared cluster of these flags (3 hollow nodes of 8 cpu)
UP_ARGS = ("--nodes", "3")

GANG_SCHEDULER = "scheduler-plugins-scheduler"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = "wi-" + request.node.name.removeprefix("test_").replace("_", "-")[:40].strip("-")
    kubectl(cluster, "create", "namespace", name)
    yield name
    # waited for: the next test counts on the nodes' room
    kubectl(cluster, "delete", "namespace", name, "--timeout=90s", check=False, timeout=120)


def pod(name: str, ns: str, cpu: str, **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
            **spec,
        },
    }


def whatif(k: Cluster, *args: str, docs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    stdin = yaml.safe_dump_all(docs) if docs is not None else None
    files = ("-f", "-") if docs is not None else ()
    r = k("whatif", *files, *args, "-o", "json", stdin=stdin)
    assert r.returncode == 0, r.stderr + r.stdout
    answer: dict[str, Any] = json.loads(r.stdout)
    return answer


def pods_of(answer: dict[str, Any], step: int = -1) -> dict[str, dict[str, Any]]:
    return {p["pod"].split("/")[1]: p for p in answer["steps"][step].get("pods", [])}


def best_nodes(p: dict[str, Any]) -> set[str]:
    """The nodes the scheduler could equally pick: the chosen one and its score ties."""
    tops = p.get("attempt", {}).get("topScores", [])
    if not tops:
        return {p["node"]}
    best = max(int(s["total"]) for s in tops)
    return {s["node"] for s in tops if int(s["total"]) == best}


def bound_node(k: Cluster, ns: str, name: str) -> str:
    def node() -> str:
        doc = json.loads(kubectl(k, "get", "pod", name, "-n", ns, "-o", "json").stdout)
        return str(doc["spec"].get("nodeName", ""))

    return str(until(node, timeout=60))


def test_what_if_answers_agree_with_the_scheduler(cluster: Cluster, ns: str) -> None:
    for i, cpu in enumerate(("250m", "500m", "100m", "1")):
        answer = pods_of(whatif(cluster, docs=[pod(f"p{i}", ns, cpu)]))[f"p{i}"]
        assert answer["result"] == "scheduled", answer
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod(f"p{i}", ns, cpu)))
        assert bound_node(cluster, ns, f"p{i}") in best_nodes(answer), answer
    # 5 cpu each on 8-cpu nodes: one per node, so the what-if must count its own placements
    big = [pod(f"big{i}", ns, "5") for i in range(3)]
    answer = pods_of(whatif(cluster, docs=big))
    assert len({answer[f"big{i}"]["node"] for i in range(3)}) == 3, answer
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(big))
    assert len({bound_node(cluster, ns, f"big{i}") for i in range(3)}) == 3
    # the cluster is as full as the what-if said: a fourth does not fit
    (fourth,) = pods_of(whatif(cluster, docs=[pod("big3", ns, "5")])).values()
    assert fourth["result"] == "unschedulable" and "Insufficient cpu" in fourth["reasons"][0]


def _gang(name: str, ns: str, members: int, cpu: str) -> list[dict[str, Any]]:
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": members},
    }
    return [group] + [
        pod(
            f"{name}-{i}",
            ns,
            cpu,
            labels={GROUP_LABEL: name},
            schedulerName=GANG_SCHEDULER,
        )
        for i in range(members)
    ]


def test_a_gang_that_fits_is_placed_whole_and_one_that_does_not_is_not_placed(
    cluster: Cluster, ns: str
) -> None:
    fits = pods_of(whatif(cluster, docs=_gang("fits", ns, 3, "2")))
    assert [fits[f"fits-{i}"]["result"] for i in range(3)] == ["scheduled"] * 3
    # 7 cpu each on three 8-cpu nodes: three fit, the fourth does not, so none is placed
    body = {"manifest": yaml.safe_dump_all(_gang("wide", ns, 4, "7"))}
    r = kubectl(
        cluster, "create", "--raw", "/apis/kubera.io/v1/whatif", "-f", "-", stdin=json.dumps(body)
    )
    wide = pods_of(json.loads(r.stdout))
    assert [wide[f"wide-{i}"]["result"] for i in range(4)] == ["unschedulable"] * 4, wide
    assert not any(p.get("node") for p in wide.values())
    # nothing was created
    r = kubectl(cluster, "get", "pods,podgroups.scheduling.x-k8s.io", "-n", ns, "-o", "name")
    assert r.stdout.strip() == ""


class Watch:
    """`kubectl get KIND -n NS --watch-only` in the background, its lines collected."""

    def __init__(self, k: Cluster, kind: str, ns: str) -> None:
        env = {
            "KUBECONFIG": str(k.home / "kubeconfig"),
            "HOME": str(k.home),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        }
        self.proc = subprocess.Popen(
            ["kubectl", "get", kind, "-n", ns, "--watch-only", "--output-watch-events"]
            + ["-o", "name"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def saw(self, word: str) -> bool:
        return any(word in line for line in self.lines)

    def stop(self) -> list[str]:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=10)
        return list(self.lines)


def running(k: Cluster, ns: str, name: str) -> bool:
    doc = json.loads(kubectl(k, "get", "pod", name, "-n", ns, "-o", "json").stdout)
    return bool(doc.get("status", {}).get("phase") == "Running")


def mark(k: Cluster, ns: str, name: str, node: str) -> None:
    """A pod bound by name (no scheduler), a landmark in the watches' output."""
    overrides = json.dumps({"spec": {"nodeName": node}})
    kubectl(k, "run", name, "-n", ns, "--image=pause", "--restart=Never", "--overrides", overrides)


def test_preempt_names_the_victims_and_nothing_is_written(cluster: Cluster, ns: str) -> None:
    low, high = f"{ns}-low", f"{ns}-high"
    for name, value in ((low, 100), (high, 1000)):
        kubectl(cluster, "create", "priorityclass", name, f"--value={value}")
    watches: list[Watch] = []
    try:
        fill = [pod(f"low{i}", ns, "7", priorityClassName=low) for i in range(3)]
        kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(fill))
        nodes = {f"low{i}": bound_node(cluster, ns, f"low{i}") for i in range(3)}
        urgent = pod("urgent", ns, "4", priorityClassName=high)

        (plain,) = pods_of(whatif(cluster, docs=[urgent])).values()
        assert plain["result"] == "unschedulable" and not plain.get("victims")

        for i in range(3):  # no more status updates or events of theirs to come
            until(lambda i=i: running(cluster, ns, f"low{i}"))
        watches = [Watch(cluster, "pods", ns), Watch(cluster, "events", ns)]
        mark(cluster, ns, "mark-1", nodes["low0"])
        until(lambda: watches[0].saw("mark-1"))  # the watches are on
        (pre,) = pods_of(whatif(cluster, "--preempt", docs=[urgent])).values()
        mark(cluster, ns, "mark-2", nodes["low0"])
        until(lambda: watches[0].saw("mark-2"))
        assert pre["result"] == "scheduled", pre
        (victim,) = pre["victims"]
        assert victim.split("/")[1] in nodes and nodes[victim.split("/")[1]] == pre["node"]
        assert pre["attempt"]["preemption"]["victims"] == [victim]
        # nothing was deleted, and the watches saw only the markers
        r = kubectl(cluster, "get", "pods", "-n", ns, "-o", "name")
        assert {f"pod/low{i}" for i in range(3)} <= set(r.stdout.split())
        pods_seen, events_seen = watches[0].stop(), watches[1].stop()
        watches = []
        assert [ln for ln in pods_seen if ln and "mark-" not in ln] == [], pods_seen
        assert [ln for ln in events_seen if ln and "mark-" not in ln] == [], events_seen
    finally:
        for w in watches:
            w.stop()
        kubectl(cluster, "delete", "namespace", ns, "--timeout=90s", check=False, timeout=120)
        kubectl(cluster, "delete", "priorityclass", low, high, check=False)


def test_a_session_chains_steps_and_rolls_back(cluster: Cluster, ns: str) -> None:
    first = whatif(cluster, "--keep", docs=[pod("s1", ns, "6")])
    session = first["session"]
    node = pods_of(first)["s1"]["node"]
    assert session and node
    second = whatif(cluster, "--session", session, "--delete-node", node)
    assert [s["op"] for s in second["steps"]] == ["schedule", "delete-node"]
    assert pods_of(second)["s1"]["result"] == "deleted"
    third = whatif(cluster, "--session", session, docs=[pod("s2", ns, "6")])
    assert pods_of(third)["s2"]["node"] not in ("", node)
    back = whatif(cluster, "--session", session, "--rollback-to", "1")
    assert [s["op"] for s in back["steps"]] == ["schedule"]
    assert pods_of(back)["s1"]["node"] == node
    # after the rollback the node is back, and s1 still holds 6 of its 8 cpu
    again = whatif(cluster, "--session", session, docs=[pod("s3", ns, "6")])
    assert pods_of(again)["s3"]["node"] != node
    r = cluster("whatif", "--session", session, "--close")
    assert r.returncode == 0, r.stderr
    r = cluster("whatif", "--session", session, "--rollback-to", "0")
    assert r.returncode != 0 and "not found" in r.stderr
    assert kubectl(cluster, "get", "pods", "-n", ns, "-o", "name").stdout.strip() == ""
