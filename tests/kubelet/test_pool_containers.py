"""Pods that live and end on a hollow kubelet, played on a fake clock step by step through
the pool's delay queue: exits by the stages, restartPolicy, CrashLoopBackOff's back-off,
OOMKilled from the usage model, init containers in order and sidecars around them."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.helpers.stages import STAGES_ANNOTATION
from services.api.helpers.usage import USAGE_ANNOTATION
from services.client import Client
from services.clock import FakeClock, parse_rfc3339
from services.kubelet.pool import NodePool, PoolConfig
from services.kubelet.template import parse_template, plan_nodes
from tests.builders import MakePod

NODE = "kubera-node-00000"
#: The template's delays: ContainerCreating after 1 s, containers start 1 s later.
STARTED = 2.0


class Sim:
    """One pool on a FakeClock; `run` plays every queued step at its due time."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        template = {
            "nodes": [
                {
                    "name": "n",
                    "count": 1,
                    "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                    "stages": {"creatingDelay": "1s", "startDelay": "1s", "jitter": 0},
                }
            ]
        }
        plans = plan_nodes(parse_template(template))
        # never started: no watch, no batcher; statuses are read from what it would write
        self.pool = NodePool(cast(Client, None), plans, config=PoolConfig(seed=1), clock=self.clock)
        self.t0 = self.clock.now()
        self.steps = 0
        self.writes: list[tuple[float, core_pb2.PodStatus]] = []
        put = self.pool.status_batcher.put

        def record(pod: Any) -> None:
            self.writes.append((self.clock.now() - self.t0, _copy(pod.status)))
            put(pod)

        self.pool.status_batcher.put = record  # type: ignore[method-assign]

    def add(self, pod: MakePod, stages: dict[str, Any] | None = None, **annotations: str) -> str:
        if stages is not None:
            pod.annotation(STAGES_ANNOTATION, json.dumps(stages))
        for k, v in annotations.items():
            pod.annotation(k, v)
        obj = pod.node(NODE).obj()
        obj.metadata.uid = obj.metadata.uid or f"uid-{obj.metadata.name}"
        self.pool.on_pod(obj)
        return obj.metadata.uid

    def run(self, seconds: float) -> None:
        end = self.clock.monotonic() + seconds
        while (due := self.pool.next_due()) is not None and due <= end:
            self.clock.advance(max(0.0, due - self.clock.monotonic()))
            self.steps += self.pool.run_due()
        self.clock.advance(max(0.0, end - self.clock.monotonic()))

    def status(self, uid: str) -> dict[str, Any]:
        st = self.pool.pods[uid]
        assert st.written is not None
        s = core_pb2.PodStatus()
        s.ParseFromString(st.written)
        return json_format.MessageToDict(s, always_print_fields_with_no_presence=True)

    def at(self, t: float) -> None:
        """Run until `t` simulated seconds after the start."""
        self.run(t - (self.clock.now() - self.t0))

    def since_start(self, stamp: str) -> float:
        return parse_rfc3339(stamp) - self.t0


def _copy(status: core_pb2.PodStatus) -> core_pb2.PodStatus:
    out = core_pb2.PodStatus()
    out.CopyFrom(status)
    return out


def pod(name: str, policy: str = "Always", **limits: str) -> MakePod:
    p = MakePod().typed().name(name).namespace("default")
    p.container("c", "busybox:1.36", limits=dict(limits) if limits else None)
    return p.spec({"restartPolicy": policy})


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


@pytest.fixture
def sim() -> Sim:
    return Sim()


# ---------------------------------------------------------------- restartPolicy


def test_a_crash_looping_container_waits_ten_seconds_doubling_to_five_minutes(sim: Sim) -> None:
    sim.add(pod("crash"), {"runDuration": "5s", "exitCode": 1})
    sim.at(3600)
    starts = sorted(
        {
            sim.since_start(s.container_statuses[0].state["running"]["startedAt"])
            for _, s in sim.writes
            if s.container_statuses and "running" in s.container_statuses[0].state
        }
    )
    gaps = [round(b - a) for a, b in zip(starts, starts[1:], strict=False)]
    # 5 s of running each time; the first restart at once, then 10 s, 20 s, … 300 s
    assert gaps[:9] == [5, 15, 25, 45, 85, 165, 305, 305, 305]
    assert starts[0] == STARTED


def test_crash_loop_back_off_is_written_as_upstreams_kubelet_writes_it(sim: Sim) -> None:
    uid = sim.add(pod("crash"), {"runDuration": "5s", "exitCode": 1})
    sim.at(STARTED + 5 + 5 + 1)  # ran, restarted at once, exited again 1 s ago
    s = sim.status(uid)
    cs = s["containerStatuses"][0]
    assert s["phase"] == "Running"
    assert cs["restartCount"] == 1
    assert cs["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 10s restarting failed container=c pod=crash_default({uid})",
    }
    last = cs["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (1, "Error")
    assert sim.since_start(last["finishedAt"]) == STARTED + 10
    assert conditions(s)["Ready"] == "False" and not cs["ready"]
    sim.at(STARTED + 20 + 1)  # the back-off is over: running again
    cs = sim.status(uid)["containerStatuses"][0]
    assert "running" in cs["state"] and cs["restartCount"] == 2
    assert cs["lastState"]["terminated"]["exitCode"] == 1


def test_a_container_that_ran_ten_minutes_restarts_at_once(sim: Sim) -> None:
    """The back-off is forgotten after 2 × MaxContainerBackOff: never CrashLoopBackOff."""
    uid = sim.add(pod("long"), {"runDuration": "700s"})
    sim.at(STARTED + 3 * 700 + 1)
    assert not any("waiting" in cs.state for _, s in sim.writes[2:] for cs in s.container_statuses)
    cs = sim.status(uid)["containerStatuses"][0]
    assert cs["restartCount"] == 3 and "running" in cs["state"]
    assert cs["lastState"]["terminated"]["reason"] == "Completed"


@pytest.mark.parametrize(
    ("policy", "stages", "phase", "code", "reason"),
    [
        ("Never", {"exitCode": 3}, "Failed", 3, "Error"),
        ("Never", {}, "Succeeded", 0, "Completed"),
        ("Never", {"failureRate": 1}, "Failed", 1, "Error"),
        ("OnFailure", {}, "Succeeded", 0, "Completed"),
    ],
    ids=["never-exit-3-fails", "never-exit-0-succeeds", "failure-rate-1-fails", "onfailure-ok"],
)
def test_pods_that_do_not_restart_end_with_their_exit_code(
    sim: Sim, policy: str, stages: dict[str, Any], phase: str, code: int, reason: str
) -> None:
    uid = sim.add(pod("end", policy), {"runDuration": "5s", **stages})
    sim.at(STARTED + 5)
    s = sim.status(uid)
    term = s["containerStatuses"][0]["state"]["terminated"]
    assert (s["phase"], term["exitCode"], term["reason"]) == (phase, code, reason)
    assert s["containerStatuses"][0]["restartCount"] == 0
    assert sim.pool.next_due() is None  # nothing left queued for it
    assert {c["type"]: c.get("reason") for c in s["conditions"]}["Ready"] == (
        "PodFailed" if phase == "Failed" else "PodCompleted"
    )


def test_on_failure_restarts_a_failed_container(sim: Sim) -> None:
    uid = sim.add(pod("retry", "OnFailure"), {"runDuration": "5s", "exitCode": 2})
    sim.at(STARTED + 5 + 5 + 1)
    s = sim.status(uid)
    assert s["phase"] == "Running"
    assert s["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_per_container_stages_end_each_container_on_its_own(sim: Sim) -> None:
    p = pod("two", "Never").container("side", "busybox:1.36")
    uid = sim.add(
        p, {"runDuration": "5s", "containers": {"side": {"runDuration": "9s", "exitCode": 4}}}
    )
    sim.at(STARTED + 6)
    s = sim.status(uid)
    assert s["phase"] == "Running"
    assert [list(c["state"]) for c in s["containerStatuses"]] == [["terminated"], ["running"]]
    sim.at(STARTED + 9)
    s = sim.status(uid)
    assert s["phase"] == "Failed"
    assert [c["state"]["terminated"]["exitCode"] for c in s["containerStatuses"]] == [0, 4]


def test_a_pod_that_never_ends_costs_its_two_steps_only(sim: Sim) -> None:
    for i in range(50):
        sim.add(pod(f"p{i}"))
    sim.at(3600)
    assert sim.steps == 100  # create and start each; no timer per pod after that
    assert sim.pool.next_due() is None


# ------------------------------------------------------------------------- OOM


USAGE = json.dumps({"memory": {"start": "32Mi", "ratePerSecond": "1Mi"}})


@pytest.mark.parametrize(
    ("policy", "phase"), [("Never", "Failed"), ("Always", "Running")], ids=["never", "always"]
)
def test_usage_past_the_memory_limit_is_oom_killed(sim: Sim, policy: str, phase: str) -> None:
    uid = sim.add(pod("oom", policy, memory="64Mi"), None, **{USAGE_ANNOTATION: USAGE})
    sim.at(STARTED + 32)
    assert "running" in sim.status(uid)["containerStatuses"][0]["state"]
    sim.at(STARTED + 33)
    s = sim.status(uid)
    cs = s["containerStatuses"][0]
    term = cs["state"].get("terminated") or cs["lastState"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (137, "OOMKilled")
    assert s["phase"] == phase
    if policy == "Always":
        assert cs["restartCount"] == 1 and "running" in cs["state"]
        assert uid in sim.pool.usage  # its usage curve starts over with the new container


def test_usage_under_the_limit_or_without_one_is_never_killed(sim: Sim) -> None:
    capped = json.dumps({"memory": {"start": "32Mi", "ratePerSecond": "1Mi", "max": "60Mi"}})
    a = sim.add(pod("capped", memory="64Mi"), None, **{USAGE_ANNOTATION: capped})
    b = sim.add(pod("unlimited"), None, **{USAGE_ANNOTATION: USAGE})
    sim.at(3600)
    for uid in (a, b):
        cs = sim.status(uid)["containerStatuses"][0]
        assert "running" in cs["state"] and cs["restartCount"] == 0


def test_a_spike_past_the_limit_is_oom_killed_when_it_starts(sim: Sim) -> None:
    spiky = json.dumps(
        {"memory": {"start": "32Mi", "spikes": [{"at": 40, "for": 5, "amount": "64Mi"}]}}
    )
    uid = sim.add(pod("spike", "Never", memory="64Mi"), None, **{USAGE_ANNOTATION: spiky})
    sim.at(STARTED + 41)
    term = sim.status(uid)["containerStatuses"][0]["state"]["terminated"]
    assert term["reason"] == "OOMKilled"
    assert sim.since_start(term["finishedAt"]) == STARTED + 40


# -------------------------------------------------------------- init containers


def with_init(name: str, policy: str = "Always") -> MakePod:
    p = MakePod().typed().name(name).namespace("default")
    p.init_container("init-1", "busybox:1.36").init_container("init-2", "busybox:1.36")
    return p.container("app", "nginx:1.27").spec({"restartPolicy": policy})


def test_init_containers_run_one_by_one_before_the_app(sim: Sim) -> None:
    uid = sim.add(
        with_init("ordered"),
        {"containers": {"init-1": {"runDuration": "3s"}, "init-2": {"runDuration": "4s"}}},
    )
    sim.at(1)
    s = sim.status(uid)
    assert [c["state"]["waiting"]["reason"] for c in s["initContainerStatuses"]] == [
        "PodInitializing",
        "PodInitializing",
    ]
    assert s["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    sim.at(STARTED + 1)
    s = sim.status(uid)
    assert s["phase"] == "Pending"
    assert [list(c["state"]) for c in s["initContainerStatuses"]] == [["running"], ["waiting"]]
    init = next(c for c in s["conditions"] if c["type"] == "Initialized")
    assert (init["status"], init["reason"]) == ("False", "ContainersNotInitialized")
    assert init["message"] == "containers with incomplete status: [init-1 init-2]"
    sim.at(STARTED + 3 + 1)
    s = sim.status(uid)
    assert [list(c["state"]) for c in s["initContainerStatuses"]] == [["terminated"], ["running"]]
    assert "waiting" in s["containerStatuses"][0]["state"]
    sim.at(STARTED + 7)
    s = sim.status(uid)
    assert s["phase"] == "Running" and conditions(s)["Initialized"] == "True"
    app = s["containerStatuses"][0]["state"]["running"]
    done = s["initContainerStatuses"][1]["state"]["terminated"]
    assert sim.since_start(app["startedAt"]) == sim.since_start(done["finishedAt"]) == 9
    assert conditions(s)["Ready"] == "True"


def test_a_failed_init_container_fails_a_never_pod_and_the_app_never_starts(sim: Sim) -> None:
    uid = sim.add(with_init("bad", "Never"), {"containers": {"init-1": {"exitCode": 1}}})
    sim.at(60)
    s = sim.status(uid)
    assert s["phase"] == "Failed"
    assert s["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert s["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"


def test_a_failed_init_container_crash_loops_under_always(sim: Sim) -> None:
    uid = sim.add(with_init("bad"), {"containers": {"init-1": {"exitCode": 1}}})
    sim.at(60)
    s = sim.status(uid)
    assert s["phase"] == "Pending"
    first = s["initContainerStatuses"][0]
    assert first["state"]["waiting"]["reason"] == "CrashLoopBackOff" and first["restartCount"] >= 2


def test_a_sidecar_starts_first_keeps_running_and_stops_last(sim: Sim) -> None:
    p = MakePod().typed().name("side").namespace("default")
    p.init_container("proxy", "envoy:1.30", restart_policy="Always")
    p.container("job", "busybox:1.36").spec({"restartPolicy": "Never"})
    uid = sim.add(p, {"containers": {"job": {"runDuration": "5s"}}})
    sim.at(STARTED + 1)
    s = sim.status(uid)
    assert s["phase"] == "Running" and conditions(s)["Initialized"] == "True"
    proxy, job = s["initContainerStatuses"][0], s["containerStatuses"][0]
    assert "running" in proxy["state"] and proxy["started"] and "running" in job["state"]
    sim.at(STARTED + 5)
    s = sim.status(uid)
    assert s["phase"] == "Succeeded"
    proxy = s["initContainerStatuses"][0]["state"]["terminated"]
    job = s["containerStatuses"][0]["state"]["terminated"]
    assert proxy["finishedAt"] >= job["finishedAt"]
    assert sim.pool.next_due() is None


# ------------------------------------------------------------------------ Jobs


def job_pod(name: str) -> MakePod:
    p = pod(name, "Never")
    p.owner_references([{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "j-1"}])
    return p


@pytest.mark.parametrize(
    ("stages", "ends_at"),
    [
        (None, STARTED + 10),  # the node's jobRunDuration (kwok's pod-complete)
        ({"runDuration": "3s"}, STARTED + 3),  # the pod's own run duration wins
        ({"exitCode": 2}, STARTED + 10),  # how it ends, from the Job's template
        ({"containers": {"c": {"runDuration": "4s"}}}, STARTED + 4),
    ],
    ids=["default", "own-run-duration", "own-exit-code", "per-container"],
)
def test_a_jobs_pod_ends_without_being_told_how_long_it_runs(
    sim: Sim, stages: dict[str, Any] | None, ends_at: float
) -> None:
    uid = sim.add(job_pod("pi-abc"), stages)
    sim.at(ends_at - 0.5)
    assert sim.status(uid)["phase"] == "Running"
    sim.at(ends_at)
    s = sim.status(uid)
    code = (stages or {}).get("exitCode", 0)
    assert s["phase"] == ("Failed" if code else "Succeeded")
    assert s["containerStatuses"][0]["state"]["terminated"]["exitCode"] == code


def test_a_pod_not_owned_by_a_job_runs_until_stopped(sim: Sim) -> None:
    uid = sim.add(pod("bare", "Never"))
    sim.at(3600)
    assert sim.status(uid)["phase"] == "Running"
