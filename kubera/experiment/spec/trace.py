"""Alibaba's GPU cluster trace (clusterdata, cluster-trace-gpu-v2023, "openb") as kubera pods
and nodes, and a generator of synthetic samples in the same schema.

    openb_pod_list*.csv   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
                          creation_time,deletion_time,scheduled_time
    openb_node_list*.csv  sn,cpu_milli,memory_mib,gpu,model      (num_gpu accepted for gpu)

Times are seconds on the trace's clock; `deletion_time` and `scheduled_time` may be empty (a
pod never deleted / never scheduled), `gpu_spec` and `model` empty or "nan" (no GPU type).
Required pod columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, qos, creation_time,
deletion_time, scheduled_time; gpu_spec and pod_phase are optional. Errors name `file:line`.

How a row becomes a pod (decided here, documented for the report):

- cpu_milli → `cpu: <n>m`, memory_mib → `memory: <n>Mi` requests.
- GPUs are counted twice, so whole and shared GPUs meet on one node:
  every GPU pod requests `kubera.io/gpu-milli: num_gpu × gpu_milli` (an extended resource;
  a node offers gpu × 1000), and a pod asking for whole GPUs (gpu_milli = 1000) also
  requests `<gpuResourceName>: num_gpu` (default nvidia.com/gpu; a node offers `gpu`).
  A GPU-sharing pod (num_gpu = 1, gpu_milli < 1000) requests only the milli share. This
  is a relaxation of the real cluster: the scheduler sums milli-GPUs over a node's GPUs, it
  does not pack shares onto one device (the FGD paper's fragmentation is not modelled).
- gpu_spec "V100M16|V100M32" → a required node affinity on the node label
  `kubera.io/gpu-model` In [V100M16, V100M32]; nodes carry their `model` in that label.
- qos and pod_phase → labels/annotations only (`kubera.io/qos`); every pod gets requests.
- creation/deletion/scheduled times → offsets from the trace's first creation
  (`TracePod.create_at` etc.); the replay divides them by its time scale.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

GPU_MILLI_RESOURCE = "kubera.io/gpu-milli"
GPU_MODEL_LABEL = "kubera.io/gpu-model"
QOS_LABEL = "kubera.io/qos"
TRACE_LABEL = "kubera.io/trace"
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
POD_REQUIRED = tuple(c for c in POD_COLUMNS if c not in ("gpu_spec", "pod_phase"))
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class TraceError(ValueError):
    """A trace file that cannot be read; the message starts with `file:line:`."""


@dataclass(frozen=True)
class TracePod:
    """One row of openb_pod_list."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    """Per-GPU share in milli-GPUs (1000 = whole GPUs)."""
    gpu_spec: tuple[str, ...]
    """Acceptable GPU models; () = any."""
    qos: str
    pod_phase: str
    creation_time: float
    deletion_time: float | None
    scheduled_time: float | None
    line: int
    """Line in the CSV (header = 1)."""

    @property
    def gpu_milli_total(self) -> int:
        return self.num_gpu * self.gpu_milli if self.num_gpu else 0

    @property
    def whole_gpus(self) -> int:
        """GPUs requested as whole devices (0 for a GPU-sharing pod)."""
        return self.num_gpu if self.num_gpu and self.gpu_milli >= 1000 else 0

    def to_pod(
        self, namespace: str, *, gpu_resource_name: str = DEFAULT_GPU_RESOURCE
    ) -> dict[str, Any]:
        """The pod this row asks for (see the module docstring for the mapping)."""
        requests: dict[str, str] = {"cpu": f"{self.cpu_milli}m", "memory": f"{self.memory_mib}Mi"}
        extended: dict[str, str] = {}
        if self.gpu_milli_total:
            extended[GPU_MILLI_RESOURCE] = str(self.gpu_milli_total)
        if self.whole_gpus:
            extended[gpu_resource_name] = str(self.whole_gpus)
        requests.update(extended)
        annotations = {
            "kubera.io/trace-cpu-milli": str(self.cpu_milli),
            "kubera.io/trace-num-gpu": str(self.num_gpu),
            "kubera.io/trace-gpu-milli": str(self.gpu_milli),
            "kubera.io/trace-pod-phase": self.pod_phase,
        }
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": requests},
                }
            ]
        }
        if extended:  # extended resources must have limits equal to their requests
            spec["containers"][0]["resources"]["limits"] = extended
        if self.gpu_spec:
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": GPU_MODEL_LABEL,
                                        "operator": "In",
                                        "values": list(self.gpu_spec),
                                    }
                                ]
                            }
                        ]
                    }
                }
            }
        labels = {TRACE_LABEL: "openb"}
        if self.qos:
            labels[QOS_LABEL] = self.qos
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name,
                "namespace": namespace,
                "labels": labels,
                "annotations": annotations,
            },
            "spec": spec,
        }


@dataclass(frozen=True)
class TraceNode:
    """One row of openb_node_list."""

    sn: str
    cpu_milli: int
    memory_mib: int
    gpu: int
    model: str
    """GPU model; "" for CPU-only nodes."""
    line: int

    def to_node(self, *, gpu_resource_name: str = DEFAULT_GPU_RESOURCE) -> dict[str, Any]:
        """A Node offering the row's CPU, memory and GPUs (whole and in milli)."""
        capacity = {"cpu": f"{self.cpu_milli}m", "memory": f"{self.memory_mib}Mi", "pods": "110"}
        if self.gpu:
            capacity[gpu_resource_name] = str(self.gpu)
            capacity[GPU_MILLI_RESOURCE] = str(self.gpu * 1000)
        labels = {TRACE_LABEL: "openb", "kubernetes.io/hostname": self.sn}
        if self.model:
            labels[GPU_MODEL_LABEL] = self.model
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.sn, "labels": labels},
            "status": {
                "capacity": dict(capacity),
                "allocatable": dict(capacity),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }


@dataclass(frozen=True)
class ReplayEvent:
    """When (seconds after the replay starts, time scale applied) a pod is created/deleted."""

    create_at: float
    delete_at: float | None
    pod: TracePod


def schedule(
    pods: Sequence[TracePod], *, time_scale: float = 1.0, limit: int | None = None
) -> list[ReplayEvent]:
    """The replay's timeline: offsets from the first creation divided by `time_scale`, for the
    first `limit` pods by creation time."""
    if time_scale <= 0:
        raise ValueError("time_scale must be positive")
    chosen = sorted(pods, key=lambda p: (p.creation_time, p.name))[:limit]
    if not chosen:
        return []
    t0 = chosen[0].creation_time
    return [
        ReplayEvent(
            create_at=(p.creation_time - t0) / time_scale,
            delete_at=None if p.deletion_time is None else (p.deletion_time - t0) / time_scale,
            pod=p,
        )
        for p in chosen
    ]


# ---------------------------------------------------------------------------------------------
# Reading.


def _rows(path: str, required: Sequence[str], aliases: dict[str, str]) -> list[tuple[int, dict]]:
    try:
        f = open(path, newline="", encoding="utf-8")  # noqa: SIM115 (closed by the with below)
    except OSError as e:
        raise TraceError(f"{path}: cannot open: {e.strerror}") from None
    with f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise TraceError(f"{path}:1: empty file (expected a header row)") from None
        except csv.Error as e:
            raise TraceError(f"{path}:1: {e}") from None
        header = [aliases.get(h.strip(), h.strip()) for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(
                f"{path}:1: missing column(s) {', '.join(missing)} "
                f"(header: {','.join(header)}; expected: {','.join(required)})"
            )
        out = []
        try:
            for row in reader:
                line = reader.line_num
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) != len(header):
                    raise TraceError(
                        f"{path}:{line}: expected {len(header)} fields, got {len(row)}"
                    )
                out.append((line, dict(zip(header, (c.strip() for c in row), strict=True))))
        except csv.Error as e:
            raise TraceError(f"{path}:{reader.line_num}: {e}") from None
    return out


def _int(path: str, line: int, row: dict, col: str, *, hi: int | None = None) -> int:
    text = row[col]
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{path}:{line}: {col}: expected a number, got {text!r}") from None
    if not math.isfinite(value) or not value.is_integer() or value < 0:
        raise TraceError(f"{path}:{line}: {col}: expected a non-negative integer, got {text!r}")
    if hi is not None and value > hi:
        raise TraceError(f"{path}:{line}: {col}: must be at most {hi}, got {text!r}")
    return int(value)


def _time(path: str, line: int, row: dict, col: str) -> float | None:
    text = row.get(col, "")
    if text == "" or text.lower() == "nan":
        return None
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{path}:{line}: {col}: expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise TraceError(f"{path}:{line}: {col}: expected non-negative seconds, got {text!r}")
    return value


def _none(text: str) -> str:
    return "" if text.lower() in ("", "nan", "none") else text


def read_pods(path: str) -> list[TracePod]:
    """Every pod row of an openb_pod_list CSV, in file order; TraceError naming file:line."""
    pods: list[TracePod] = []
    seen: dict[str, int] = {}
    for line, row in _rows(path, POD_REQUIRED, {}):
        name = row["name"]
        if not _NAME.match(name):
            raise TraceError(f"{path}:{line}: name: not a valid pod name: {name!r}")
        if name in seen:
            raise TraceError(
                f"{path}:{line}: name: duplicate pod {name!r} (first on line {seen[name]})"
            )
        seen[name] = line
        creation = _time(path, line, row, "creation_time")
        if creation is None:
            raise TraceError(f"{path}:{line}: creation_time: required")
        deletion = _time(path, line, row, "deletion_time")
        if deletion is not None and deletion < creation:
            raise TraceError(
                f"{path}:{line}: deletion_time: {deletion:g} is before creation_time {creation:g}"
            )
        spec = _none(row.get("gpu_spec", ""))
        pods.append(
            TracePod(
                name=name,
                cpu_milli=_int(path, line, row, "cpu_milli"),
                memory_mib=_int(path, line, row, "memory_mib"),
                num_gpu=_int(path, line, row, "num_gpu"),
                gpu_milli=_int(path, line, row, "gpu_milli", hi=1000),
                gpu_spec=tuple(s for s in spec.split("|") if s) if spec else (),
                qos=_none(row["qos"]),
                pod_phase=_none(row.get("pod_phase", "")),
                creation_time=creation,
                deletion_time=deletion,
                scheduled_time=_time(path, line, row, "scheduled_time"),
                line=line,
            )
        )
    return pods


def read_nodes(path: str) -> list[TraceNode]:
    """Every node row of an openb_node_list CSV; TraceError naming file:line."""
    nodes: list[TraceNode] = []
    seen: dict[str, int] = {}
    for line, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu"), {"num_gpu": "gpu"}):
        sn = row["sn"]
        if not _NAME.match(sn):
            raise TraceError(f"{path}:{line}: sn: not a valid node name: {sn!r}")
        if sn in seen:
            raise TraceError(f"{path}:{line}: sn: duplicate node {sn!r} (first on line {seen[sn]})")
        seen[sn] = line
        nodes.append(
            TraceNode(
                sn=sn,
                cpu_milli=_int(path, line, row, "cpu_milli"),
                memory_mib=_int(path, line, row, "memory_mib"),
                gpu=_int(path, line, row, "gpu"),
                model=_none(row.get("model", "")),
                line=line,
            )
        )
    return nodes


# ---------------------------------------------------------------------------------------------
# The synthetic sample.

#: (model, cpu_milli, memory_mib, gpus, weight) — shapes seen in openb_node_list_gpu_node.
_NODE_SHAPES = (
    ("G2", 96000, 393216, 8, 5),
    ("T4", 104000, 524288, 2, 3),
    ("P100", 64000, 262144, 2, 1),
    ("V100M16", 32000, 131072, 4, 1),
    ("", 32000, 262144, 0, 1),
)
_SHARES = (110, 160, 220, 230, 320, 440, 460, 470, 550, 650, 810)


def synthesize(
    pods: int, nodes: int, *, seed: int = 0, duration: float = 60.0
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Rows (pod rows, node rows) of a synthetic trace in the openb schema: `pods` Poisson
    arrivals over `duration` seconds, a GPU-sharing-heavy mix like openb's (about 55% shared
    GPU, 25% whole GPUs, 20% CPU only), lifetimes exponential around duration/3, some never
    deleted. Deterministic for a seed. Not the real trace: names start with "synth-"."""
    rng = random.Random(seed)
    node_rows = []
    weights = [s[4] for s in _NODE_SHAPES]
    for i in range(nodes):
        model, cpu, mem, gpu, _ = rng.choices(_NODE_SHAPES, weights)[0]
        node_rows.append(
            {
                "sn": f"synth-node-{i:04d}",
                "cpu_milli": str(cpu),
                "memory_mib": str(mem),
                "gpu": str(gpu),
                "model": model,
            }
        )
    models = sorted({r["model"] for r in node_rows if r["model"]})
    pod_rows = []
    t = 0.0
    rate = pods / duration if duration > 0 else float(pods)
    for i in range(pods):
        t += rng.expovariate(rate)
        kind = rng.random()
        if kind < 0.55:
            num_gpu, share = 1, rng.choice(_SHARES)
            cpu, mem = rng.choice((4000, 6000, 8000)), rng.choice((15258, 30517, 12288))
        elif kind < 0.80:
            num_gpu, share = rng.choice((1, 1, 1, 2, 4, 8)), 1000
            cpu, mem = 12000 * num_gpu, 16384 * num_gpu
        else:
            num_gpu, share = 0, 0
            cpu, mem = rng.choice((2000, 4000, 8000)), rng.choice((8192, 16384, 30517))
        spec = ""
        if num_gpu and models and rng.random() < 0.2:
            spec = "|".join(sorted(rng.sample(models, min(len(models), rng.choice((1, 2))))))
        qos = rng.choices(("LS", "BE", "Burstable", "Guaranteed"), (5, 4, 1, 1))[0]
        created = round(t, 1)
        lifetime = rng.expovariate(3.0 / duration) if duration > 0 else 0.0
        deleted = "" if rng.random() < 0.15 else f"{round(created + max(lifetime, 1.0), 1):g}"
        delay = round(rng.expovariate(2.0), 1)
        pod_rows.append(
            {
                "name": f"synth-pod-{i:04d}",
                "cpu_milli": str(cpu),
                "memory_mib": str(mem),
                "num_gpu": str(num_gpu),
                "gpu_milli": str(share),
                "gpu_spec": spec,
                "qos": qos,
                "pod_phase": "Running" if deleted == "" else "Succeeded",
                "creation_time": f"{created:g}",
                "deletion_time": deleted,
                "scheduled_time": f"{round(created + delay, 1):g}",
            }
        )
    return pod_rows, node_rows


def write_csv(path: str, columns: Sequence[str], rows: Sequence[dict[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kubera.experiment.spec.trace",
        description="Write a synthetic trace in Alibaba's openb schema (not the real trace).",
    )
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--duration", type=float, default=60.0, help="trace seconds of arrivals")
    parser.add_argument("dir", help="output directory")
    args = parser.parse_args(argv)
    if args.pods < 0 or args.nodes < 0 or args.duration <= 0:
        parser.error("--pods and --nodes must be ≥ 0 and --duration > 0")
    os.makedirs(args.dir, exist_ok=True)
    pod_rows, node_rows = synthesize(args.pods, args.nodes, seed=args.seed, duration=args.duration)
    pod_path = os.path.join(args.dir, "openb_pod_list_sample.csv")
    node_path = os.path.join(args.dir, "openb_node_list_sample.csv")
    write_csv(pod_path, POD_COLUMNS, pod_rows)
    write_csv(node_path, NODE_COLUMNS, node_rows)
    print(f"wrote {pod_path} ({len(pod_rows)} pods) and {node_path} ({len(node_rows)} nodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
