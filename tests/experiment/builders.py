"""Synthetic experiment results for the report tests: one builder, no cluster."""

from __future__ import annotations

from typing import Any

from kubera.experiment.measure.model import (
    CheckVerdict,
    ExperimentResult,
    Fault,
    LeaderTerm,
    MeasuredPhase,
    MetricsSnapshots,
    Phase,
    ReplicaStats,
    RunResult,
    Window,
)

SCHEDULER_START = """\
# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.001"} 10.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.01"} 10.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.1"} 10.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 10.0
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 10.0
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 0.005
"""

SCHEDULER_END = """\
# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.001"} 10.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.01"} 60.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.1"} 110.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 110.0
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 110.0
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 3.005
"""


def attempt_durations(fast: float, slow: float) -> str:
    """A scheduler's attempt-duration histogram: `fast` observations of 5 ms, `slow` of 50."""
    labels = 'profile="default-scheduler",result="scheduled"'
    name = "scheduler_scheduling_attempt_duration_seconds"
    return (
        f"# TYPE {name} histogram\n"
        f'{name}_bucket{{{labels},le="0.01"}} {fast}\n'
        f'{name}_bucket{{{labels},le="0.1"}} {fast + slow}\n'
        f'{name}_bucket{{{labels},le="+Inf"}} {fast + slow}\n'
        f"{name}_count{{{labels}}} {fast + slow}\n"
        f"{name}_sum{{{labels}}} {fast * 0.005 + slow * 0.05}\n"
    )


#: A run's end state (measure/research.py): two pods still pending, part of the free
#: capacity stranded, half the free GPUs out of their reach.
RESEARCH: dict[str, Any] = {
    "nodes": 500,
    "pendingPods": 2,
    "fragmentation": {
        "cpu": {
            "free": 120.0,
            "stranded": 30.0,
            "strandedShare": 0.25,
            "expected": 45.0,
            "expectedShare": 0.375,
        },
        "memory": {
            "free": 4.0e11,
            "stranded": 1.0e11,
            "strandedShare": 0.25,
            "expected": 1.2e11,
            "expectedShare": 0.3,
        },
        "pods": {
            "free": 54_000.0,
            "stranded": 9_000.0,
            "strandedShare": 0.166667,
            "expected": 12_000.0,
            "expectedShare": 0.222222,
        },
    },
    "unusableDevices": {"nvidia.com/gpu": {"free": 8.0, "unusable": 4.0, "unusableShare": 0.5}},
    "queueDrainSeconds": None,
}


def make_run(run_id: str = "SchedulingBasic/500Nodes", **overrides: Any) -> RunResult:
    """A plausible run: 20 s, 100 pods bound at 10/s in [5, 15), one leader failover."""
    n = 20
    bound = [0.0] * 5 + [10.0] * 10 + [0.0] * 5
    test_case, _, rest = run_id.partition("/")
    workload = rest.split("/")[0] if rest else "w"
    fields: dict[str, Any] = {
        "id": run_id,
        "test_case": test_case,
        "workload": workload,
        "params": {"initNodes": 500, "measurePods": 100},
        "labels": ["performance"],
        "threshold": 5.0,
        "cluster": {"schedulers": 2, "schedulerMode": "leader"},
        "t0": 1_700_000_000.0,
        "duration": float(n),
        "phases": [
            Phase(name="createNodes[0]", opcode="createNodes", start=0.0, end=2.0),
            Phase(name="createPods[1]", opcode="createPods", start=4.0, end=16.0),
        ],
        "collected": [Window(start=4.0, end=16.0, name="namespace-1")],
        "series": {
            "t": [float(i) for i in range(n)],
            "created": [0.0] * 4 + [10.0] * 10 + [0.0] * 6,
            "bound": bound,
            "running": [0.0] * 6 + [10.0] * 10 + [0.0] * 4,
            "queue:active": [0.0] * 4 + [5.0] * 10 + [0.0] * 6,
            "queue:backoff": [0.0] * n,
            "queue:unschedulable": [0.0] * 8 + [2.0] * 4 + [0.0] * 8,
            "etcd_revisions": [30.0] * n,
            "cpu:scheduler-0": [0.5] * n,
            "cpu:apiserver": [0.8] * n,
            "rss_mb:scheduler-0": [120.0] * n,
            "rss_mb:apiserver": [200.0] * n,
        },
        "latency": {
            "scheduling": [0.01 * (i + 1) for i in range(100)],
            "startup": [0.5 + 0.01 * i for i in range(100)],
        },
        "attempts": {1: 90, 2: 10},
        "replicas": [
            ReplicaStats(name="scheduler-0", binds=60, conflicts=0),
            ReplicaStats(name="scheduler-1", binds=40, conflicts=10),
        ],
        "leaders": [
            LeaderTerm(component="scheduler", identity="scheduler-0", start=0.5, end=8.0),
            LeaderTerm(component="scheduler", identity="scheduler-1", start=9.5, end=None),
            LeaderTerm(component="controller-manager", identity="cm-0", start=0.4, end=None),
        ],
        "faults": [
            Fault(t=8.0, kind="kill", target="scheduler-0"),
            Fault(t=12.0, kind="pause", target="scheduler-1", duration=2.0),
        ],
        "scheduler_metrics": [
            MetricsSnapshots(
                window="namespace-1",
                start={"scheduler-0": SCHEDULER_START},
                end={"scheduler-0": SCHEDULER_END},
            )
        ],
        "check": CheckVerdict(ok=True, violations=(), summary="100 pods, 0 violations"),
        "error": None,
        "research": RESEARCH,
    }
    fields.update(overrides)
    return RunResult(**fields)


def make_experiment(*runs: RunResult) -> ExperimentResult:
    return ExperimentResult(
        config="examples/experiments/scheduling-basic.yaml",
        started="2026-11-24T00:00:00Z",
        runs=list(runs) or [make_run()],
    )


def scale_out_run(k: int, s: int, apiserver: float, scheduler: float, rate: float) -> RunResult:
    """A scale-out sweep point: K apiservers, S shared-state schedulers (their CPU split
    over S processes), a measured phase of 100 pods at `rate` pods/s."""
    return RunResult(
        id=f"ScaleOut/w/apiServers={k},schedulers={s}",
        test_case="ScaleOut",
        workload="w",
        sweep={"apiServers": k, "schedulers": s},
        cluster={"apiservers": k, "schedulers": s, "scheduler_mode": "shared-state"},
        measured=[
            MeasuredPhase(
                window="namespace-1",
                pods=100,
                seconds=100 / rate,
                cpu={
                    "apiserver": apiserver * 100,
                    **{f"scheduler-{i}": scheduler * 100 / s for i in range(s)},
                },
            )
        ],
    )
