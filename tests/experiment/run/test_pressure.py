"""The memoryPressure op (kubera/experiment/run/pressure.py): which nodes, how much usage,
as `kubera bench nodes --pressure-nodes` injected it. The reaction itself is timed in the
bench e2e smoke test."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kubera.experiment.run import pressure
from kubera.experiment.spec import config
from kubera.experiment.spec import ops as o
from tests.experiment.configfiles import write

MI = 2**20


def node(name: str, memory: str = "32Gi") -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name), status=SimpleNamespace(capacity={"memory": memory})
    )


def pod(node_name: str, usage: str = "", phase: str = "Running") -> Any:
    annotations = {"kubera.io/usage": usage} if usage else {}
    return SimpleNamespace(
        metadata=SimpleNamespace(annotations=annotations),
        spec=SimpleNamespace(node_name=node_name),
        status=SimpleNamespace(phase=phase),
    )


def test_targets_spread_over_the_sorted_names() -> None:
    names = [f"n-{i:02d}" for i in range(10)]
    assert pressure.targets(reversed(names), 5) == ["n-00", "n-02", "n-04", "n-06", "n-08"]
    assert pressure.targets(names, 20) == names
    assert pressure.targets(names, 0) == []


def test_the_injection_leaves_the_given_memory_available() -> None:
    used = '{"memory": {"start": "100Mi"}}'
    pods = [
        pod("a", used),
        pod("a", used),
        pod("a", used, phase="Failed"),  # an evicted pod uses nothing
        pod("b", used),
        pod("c", used),  # not chosen
        pod("a"),  # no annotation: nothing
    ]
    got = pressure.injections(
        [node("a", "2Gi"), node("b", "2Gi"), node("c")], pods, ["a", "b"], 500 * MI, 50 * MI
    )
    assert got == {"a": 2048 * MI - 500 * MI - 200 * MI - 50 * MI, "b": 2048 * MI - 650 * MI}


def test_system_memory_is_the_templates_first_kind() -> None:
    assert pressure.system_memory(None) == 500 * MI
    text = (
        "apiVersion: kubera.io/v1alpha1\nkind: NodeTemplate\nnodes:\n- name: x\n  count: 1\n"
        "  capacity: {cpu: '8', memory: 32Gi, pods: '110'}\n  system: {memory: 1Gi}\n"
    )
    assert pressure.system_memory(text) == 1024 * MI


def test_a_bad_usage_annotation_counts_nothing() -> None:
    assert pressure.pod_memory(pod("a", "{not json")) == 0
    assert pressure.pod_memory(pod("a", '{"memory": {"start": "1Gi"}}')) == 1024 * MI


def _load(tmp_path: Any, op: str) -> config.Experiment:
    path = write(
        tmp_path,
        f"""
- name: T
  cluster: {{hollowNodes: true}}
  workloadTemplate:
  - opcode: createNodes
    count: 4
  - opcode: createPods
    count: 4
    collectMetrics: true
  - {op}
  workloads:
  - name: w
    params: {{k: 3}}
""",
    )
    return config.load(str(path))


def test_the_op_reads_its_nodes_from_a_param_and_checks_its_quantity(tmp_path: Any) -> None:
    e = _load(tmp_path, "{opcode: memoryPressure, nodes: $k, leave: 10Mi, timeout: 1m}")
    tc, w = e.runs()[0]
    op = config.plan(tc, w)[-1]
    assert isinstance(op, o.MemoryPressure)
    assert (op.nodes, op.leave, op.timeout) == (3, "10Mi", 60.0)
    with pytest.raises(config.ConfigError, match="leave"):
        _load(tmp_path, "{opcode: memoryPressure, nodes: 1, leave: lots}")
