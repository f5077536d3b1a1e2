"""cordon, uncordon and taint, as kubectl spells them."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import EXAMPLES, kubera


@pytest.fixture
def nodes(apiserver: str, capsys: pytest.CaptureFixture[str]) -> str:
    r = kubera(capsys, apiserver, "apply", "-f", str(EXAMPLES / "quickstart.yaml"))
    assert r.rc == 0, r.err
    return apiserver


def node_spec(capsys, server: str, name: str) -> dict:
    r = kubera(capsys, server, "get", "node", name, "-o", "json")
    return json.loads(r.out).get("spec", {})


def test_cordon_and_uncordon(nodes: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert kubera(capsys, nodes, "cordon", "node-a").out == "node/node-a cordoned\n"
    assert node_spec(capsys, nodes, "node-a")["unschedulable"] is True
    assert "SchedulingDisabled" in kubera(capsys, nodes, "get", "nodes").out
    assert kubera(capsys, nodes, "cordon", "node-a").out == "node/node-a already cordoned\n"
    assert kubera(capsys, nodes, "uncordon", "node-a").out == "node/node-a uncordoned\n"
    assert "unschedulable" not in node_spec(capsys, nodes, "node-a")


@pytest.mark.parametrize(
    ("args", "expect_out", "taints"),
    [
        (
            ["node-a", "gpu=yes:NoSchedule"],
            "node/node-a tainted\n",
            [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        ),
        (
            ["nodes", "node-a", "spot:PreferNoSchedule"],
            "node/node-a tainted\n",
            [{"key": "spot", "effect": "PreferNoSchedule"}],
        ),
        (["node-b", "dedicated-"], "node/node-b untainted\n", []),
        (["node-b", "dedicated:NoSchedule-"], "node/node-b untainted\n", []),
        (
            ["node-b", "dedicated=other:NoSchedule", "--overwrite"],
            "node/node-b tainted\n",
            [{"key": "dedicated", "value": "other", "effect": "NoSchedule"}],
        ),
    ],
    ids=[
        "add-key-value-effect",
        "add-key-effect-with-resource-word",
        "remove-by-key",
        "remove-by-key-and-effect",
        "overwrite-same-key-effect",
    ],
)
def test_taint_forms(
    nodes: str, capsys: pytest.CaptureFixture[str], args, expect_out, taints
) -> None:
    r = kubera(capsys, nodes, "taint", *args)
    assert r.rc == 0, r.err
    assert r.out == expect_out
    name = args[1] if args[0] == "nodes" else args[0]
    assert node_spec(capsys, nodes, name).get("taints", []) == taints


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["node-a", "gpu=yes:Sometimes"], "invalid taint effect: Sometimes"),
        (["node-a", "gpu=yes"], "expected key[=value]:Effect"),
        (
            ["node-b", "dedicated=x:NoSchedule"],
            "already has dedicated taint(s) with same effect(s) and --overwrite is false",
        ),
        (["node-a", "missing-"], 'taint "missing" not found'),
        (["nope", "a=b:NoSchedule"], 'nodes "nope" not found'),
    ],
    ids=[
        "bad-effect",
        "no-effect",
        "duplicate-without-overwrite",
        "remove-missing",
        "unknown-node",
    ],
)
def test_bad_taints_are_one_clear_line(
    nodes: str, capsys: pytest.CaptureFixture[str], args, message
) -> None:
    r = kubera(capsys, nodes, "taint", *args)
    assert r.rc == 1 and message in r.err and "Traceback" not in r.err
