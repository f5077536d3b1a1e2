"""`kubera whatif`'s request and table, without a cluster: steps keep their command-line
order, -f files become Schedule steps (pods with their gang's PodGroup), and the table
shows POD, NODE/REASONS, SCORE, VICTIMS per step."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubera.cli.main import build_parser
from kubera.cli.whatif import build_request, render
from kubera.errors import CliError
from protos.kubera.v1 import scheduler_pb2 as pb


def _file(tmp_path: Path, name: str, *docs: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"scheduling.x-k8s.io/pod-group": "g"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


GROUP = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"name": "g"},
    "spec": {"minMember": 2},
}


def test_steps_keep_their_command_line_order(tmp_path: Path) -> None:
    a = _file(tmp_path, "a.yaml", GROUP, _pod("a0"), _pod("a1"))
    b = _file(tmp_path, "b.yaml", _pod("b0"))
    node = _file(
        tmp_path, "n.yaml", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"}}
    )
    args = build_parser().parse_args(
        ["whatif", "-n", "ns", "-f", a, "--delete-node", "n1", "-f", b, "--add-node", node]
        + ["--delete-pod", "p", "--preempt", "--keep"]
    )
    req = build_request(args)
    assert [s.WhichOneof("op") for s in req.steps] == [
        "schedule",
        "delete_node",
        "schedule",
        "add_node",
        "delete_pod",
    ]
    first = req.steps[0].schedule
    assert [p.metadata.name for p in first.pods] == ["a0", "a1"]
    assert {p.metadata.namespace for p in first.pods} == {"ns"}
    assert len(first.objects) == 1 and first.preempt and req.keep
    assert (req.steps[4].delete_pod.namespace, req.steps[4].delete_pod.name) == ("ns", "p")


def test_a_request_with_nothing_to_do_is_refused() -> None:
    with pytest.raises(CliError, match="nothing to do"):
        build_request(build_parser().parse_args(["whatif", "--session", "s"]))


def test_the_table_shows_node_or_reasons_score_and_victims() -> None:
    resp = pb.WhatIfResponse(session="s1")
    step = resp.steps.add(step=1, op="schedule", target="2 pod(s)")
    step.pods.add(pod="ns/a", result="scheduled", node="n1", score=187, victims=["ns/low"])
    step.pods.add(pod="ns/b", result="unschedulable", reasons=["0/3 nodes are available"])
    out = render(resp).splitlines()
    assert out[0] == "# step 1: schedule 2 pod(s)"
    assert out[1].split() == ["POD", "NODE/REASONS", "SCORE", "VICTIMS"]
    assert out[2].split() == ["ns/a", "n1", "187", "ns/low"]
    assert out[3].startswith("ns/b") and "(unschedulable) 0/3 nodes are available" in out[3]
    assert out[3].split()[-2:] == ["-", "-"]
    assert out[-1].startswith("session s1")
