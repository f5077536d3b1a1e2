"""Experiment files for the config tests: where the data is, a small pod and node template,
and writing a file with the templates it names beside it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import Experiment, plan

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "scheduler_perf"
EXAMPLES = ROOT / "examples" / "experiments"

POD = """\
apiVersion: v1
kind: Pod
metadata: {generateName: pod-}
spec:
  containers:
  - {name: pause, image: pause, resources: {requests: {cpu: 100m}}}
"""
NODE_TEMPLATE = """\
apiVersion: kubera.io/v1alpha1
kind: NodeTemplate
nodes:
- {name: small, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "20"}}
"""


def write(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> Path:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    path = tmp_path / "exp.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def runs(e: Experiment) -> dict[str, list[o.Op]]:
    return {f"{tc.name}/{w.name}": plan(tc, w) for tc, w in e.runs()}


def summary(ops: list[o.Op]) -> list[tuple]:
    return [(op.phase, getattr(op, "count", None), getattr(op, "namespace", None)) for op in ops]


BASE = """\
- name: E
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes}
  - {opcode: createPods, count: 2, collectMetrics: true}
  workloads:
  - {name: w, params: {nodes: 1}}
"""


def replace(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)
