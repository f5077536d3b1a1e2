"""The kubelet's container rules, pure: upstream's getPhase test tables
(pkg/kubelet/kubelet_pods_test.go: TestPodPhaseWithRestartAlways, …InitContainers,
…RestartableInitContainers, …AndPodHasRun, TestPodPhaseWithRestartNever, …InitContainers,
…RestartableInitContainers, TestPodPhaseWithRestartOnFailure), the CrashLoopBackOff
back-off (client-go util/flowcontrol/backoff_test.go's facts with kubelet's 10 s / 300 s)
and which exits restart."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.stages import ContainerStages
from services.kubelet.containers import (
    BACKOFF_INITIAL,
    BACKOFF_MAX,
    Backoff,
    ContainerRun,
    crash_loop_message,
    get_phase,
    go_duration,
    should_restart,
)

# ----------------------------------------------------------- upstream's status helpers


def _cs(name: str, state: dict[str, Any], last: dict[str, Any] | None = None, **kw: Any):
    cs = core_pb2.ContainerStatus(name=name, **kw)
    cs.state.update(state)
    if last:
        cs.last_state.update(last)
    return cs


def waiting(n: str):
    return _cs(n, {"waiting": {}})


def waiting_last_zero(n: str):
    return _cs(n, {"waiting": {}}, {"terminated": {"exitCode": 0}})


def waiting_last_nonzero(n: str):
    return _cs(n, {"waiting": {}}, {"terminated": {"exitCode": -1}})


def running(n: str):
    return _cs(n, {"running": {}})


def started(n: str):
    return _cs(n, {"running": {}}, started=True)


def stopped(n: str):
    return _cs(n, {"terminated": {}})


def succeeded(n: str):
    return _cs(n, {"terminated": {"exitCode": 0}})


def failed(n: str):
    return _cs(n, {"terminated": {"exitCode": -1}})


def spec(policy: str, init: tuple[str, ...] = (), sidecars: tuple[str, ...] = ()):
    s = core_pb2.PodSpec(restart_policy=policy)
    for name in init:
        s.init_containers.add(name=name)
    for name in sidecars:
        s.init_containers.add(name=name, restart_policy="Always")
    s.containers.add(name="containerA")
    s.containers.add(name="containerB")
    return s


A, B, X = "containerA", "containerB", "containerX"

ALWAYS = [
    ([], False, "Pending", "waiting"),
    ([running(A), running(B)], False, "Running", "all running"),
    ([stopped(A), stopped(B)], False, "Running", "all stopped with restart always"),
    ([succeeded(A), succeeded(B)], True, "Succeeded", "all succeeded, but the pod is terminal"),
    ([succeeded(A), failed(B)], True, "Failed", "all stopped, but the pod is terminal"),
    ([running(A), stopped(B)], False, "Running", "mixed state #1 with restart always"),
    ([running(A)], False, "Pending", "mixed state #2 with restart always"),
    ([running(A), waiting(B)], False, "Pending", "mixed state #3 with restart always"),
    ([running(A), waiting_last_zero(B)], False, "Running", "backoff crashloop container"),
]

ALWAYS_INIT = [
    ([], "Pending", "empty, waiting"),
    ([running(X)], "Pending", "init container running"),
    ([failed(X)], "Pending", "init container terminated non-zero"),
    ([waiting_last_zero(X)], "Pending", "init container waiting, terminated zero"),
    ([waiting_last_nonzero(X)], "Pending", "init container waiting, terminated non-zero"),
    ([waiting(X)], "Pending", "init container waiting, not terminated"),
    ([succeeded(X), running(A), running(B)], "Running", "init container succeeded"),
]

ALWAYS_SIDECAR = [
    ([], False, "Pending", "empty, waiting"),
    ([running(X)], False, "Pending", "restartable init container running"),
    ([stopped(X)], False, "Pending", "restartable init container stopped"),
    ([waiting_last_zero(X)], False, "Pending", "restartable init waiting, terminated zero"),
    ([waiting_last_nonzero(X)], False, "Pending", "restartable init waiting, terminated non-zero"),
    ([waiting(X)], False, "Pending", "restartable init container waiting, not terminated"),
    ([started(X), running(A)], False, "Pending", "sidecar started, 1/2 regular running"),
    ([started(X), running(A), running(B)], False, "Running", "sidecar started, all running"),
    ([running(X), running(A), running(B)], False, "Running", "sidecar running, all running"),
    ([stopped(X), running(A), running(B)], False, "Running", "sidecar stopped, all running"),
    ([waiting_last_zero(X), running(A), running(B)], False, "Running", "backoff sidecar"),
    ([failed(X), succeeded(A), succeeded(B)], True, "Succeeded", "sidecar failed, terminal"),
    ([succeeded(X), succeeded(A), succeeded(B)], True, "Succeeded", "sidecar succeeded, terminal"),
]

NEVER = [
    ([], "Pending", "waiting"),
    ([running(A), running(B)], "Running", "all running with restart never"),
    ([succeeded(A), succeeded(B)], "Succeeded", "all succeeded with restart never"),
    ([failed(A), failed(B)], "Failed", "all failed with restart never"),
    ([running(A), succeeded(B)], "Running", "mixed state #1 with restart never"),
    ([running(A)], "Pending", "mixed state #2 with restart never"),
    ([running(A), waiting(B)], "Pending", "mixed state #3 with restart never"),
]

NEVER_INIT = [
    ([], "Pending", "empty, waiting"),
    ([running(X)], "Pending", "init container running"),
    ([failed(X)], "Failed", "init container terminated non-zero"),
    ([waiting_last_zero(X)], "Pending", "init container waiting, terminated zero"),
    ([waiting_last_nonzero(X)], "Failed", "init container waiting, terminated non-zero"),
    ([waiting(X)], "Pending", "init container waiting, not terminated"),
    ([succeeded(X), running(A), running(B)], "Running", "init container succeeded"),
]

NEVER_SIDECAR = [
    ([], "Pending", "empty, waiting"),
    ([running(X)], "Pending", "restartable init container running"),
    ([stopped(X)], "Pending", "restartable init container stopped"),
    ([waiting_last_zero(X)], "Pending", "restartable init waiting, terminated zero"),
    ([waiting_last_nonzero(X)], "Pending", "restartable init waiting, terminated non-zero"),
    ([waiting(X)], "Pending", "restartable init container waiting, not terminated"),
    ([started(X), running(A)], "Pending", "sidecar started, one main container running"),
    ([started(X), succeeded(A), succeeded(B)], "Running", "sidecar started, mains succeeded"),
    ([running(X), succeeded(A), succeeded(B)], "Running", "sidecar running, mains succeeded"),
    ([succeeded(X), succeeded(A), succeeded(B)], "Succeeded", "all containers succeeded"),
    ([failed(X), succeeded(A), succeeded(B)], "Succeeded", "sidecar non-zero, mains succeeded"),
    ([waiting_last_zero(X), succeeded(A), succeeded(B)], "Succeeded", "backoff sidecar"),
    ([waiting_last_nonzero(X), succeeded(A), succeeded(B)], "Succeeded", "backoff non-zero"),
]

ON_FAILURE = [
    ([], "Pending", "waiting"),
    ([running(A), running(B)], "Running", "all running with restart onfailure"),
    ([succeeded(A), succeeded(B)], "Succeeded", "all succeeded with restart onfailure"),
    ([failed(A), failed(B)], "Running", "all failed with restart onfailure"),
    ([running(A), succeeded(B)], "Running", "mixed state #1 with restart onfailure"),
    ([running(A)], "Pending", "mixed state #2 with restart onfailure"),
    ([running(A), waiting(B)], "Pending", "mixed state #3 with restart onfailure"),
    ([running(A), waiting_last_zero(B)], "Running", "backoff crashloop container"),
]


def _ids(table: list[tuple[Any, ...]]) -> list[str]:
    return [row[-1] for row in table]


def _has_run(statuses: list[core_pb2.ContainerStatus]) -> bool:
    """HasAnyActiveRegularContainerStarted, from the statuses of containerA/B."""
    return any(
        s.name in (A, B) and ("running" in s.state or "terminated" in s.state) for s in statuses
    )


@pytest.mark.parametrize(("statuses", "terminal", "phase", "name"), ALWAYS, ids=_ids(ALWAYS))
def test_phase_with_restart_always(statuses, terminal, phase, name) -> None:
    assert get_phase(spec("Always"), statuses, pod_is_terminal=terminal) == phase


@pytest.mark.parametrize(("statuses", "phase", "name"), ALWAYS_INIT, ids=_ids(ALWAYS_INIT))
def test_phase_with_restart_always_init_containers(statuses, phase, name) -> None:
    assert get_phase(spec("Always", init=(X,)), statuses) == phase


@pytest.mark.parametrize(
    ("statuses", "terminal", "phase", "name"), ALWAYS_SIDECAR, ids=_ids(ALWAYS_SIDECAR)
)
def test_phase_with_restart_always_restartable_init_containers(
    statuses, terminal, phase, name
) -> None:
    got = get_phase(
        spec("Always", sidecars=(X,)),
        statuses,
        pod_is_terminal=terminal,
        pod_has_initialized=_has_run(statuses),
    )
    assert got == phase


@pytest.mark.parametrize(
    ("statuses", "phase"),
    [
        ([running(X), running("containerY"), running(A)], "Pending"),
        ([running(X), running("containerY"), stopped(A)], "Pending"),
        ([succeeded(X), running("containerY"), stopped(A)], "Running"),
        ([succeeded(X), running("containerY"), running(A)], "Running"),
    ],
    ids=[
        "regular init, sidecar and regular container all running",
        "regular container stopped, sidecar and regular init running",
        "regular init succeeded, sidecar running, regular container stopped",
        "regular init succeeded, sidecar and regular containers running",
    ],
)
def test_phase_with_restart_always_and_pod_has_run(statuses, phase) -> None:
    s = core_pb2.PodSpec(restart_policy="Always")
    s.init_containers.add(name=X)
    s.init_containers.add(name="containerY", restart_policy="Always")
    s.containers.add(name=A)
    assert get_phase(s, statuses, pod_has_initialized=_has_run(statuses)) == phase


@pytest.mark.parametrize(("statuses", "phase", "name"), NEVER, ids=_ids(NEVER))
def test_phase_with_restart_never(statuses, phase, name) -> None:
    assert get_phase(spec("Never"), statuses) == phase


@pytest.mark.parametrize(("statuses", "phase", "name"), NEVER_INIT, ids=_ids(NEVER_INIT))
def test_phase_with_restart_never_init_containers(statuses, phase, name) -> None:
    assert get_phase(spec("Never", init=(X,)), statuses) == phase


@pytest.mark.parametrize(("statuses", "phase", "name"), NEVER_SIDECAR, ids=_ids(NEVER_SIDECAR))
def test_phase_with_restart_never_restartable_init_containers(statuses, phase, name) -> None:
    got = get_phase(spec("Never", sidecars=(X,)), statuses, pod_has_initialized=_has_run(statuses))
    assert got == phase


@pytest.mark.parametrize(("statuses", "phase", "name"), ON_FAILURE, ids=_ids(ON_FAILURE))
def test_phase_with_restart_on_failure(statuses, phase, name) -> None:
    assert get_phase(spec("OnFailure"), statuses) == phase


# ------------------------------------------------------------------------ back-off


def test_backoff_doubles_from_ten_seconds_to_five_minutes() -> None:
    """Each back-off restart doubles the next wait, capped at MaxContainerBackOff."""
    b, now, delays = Backoff(), 0.0, []
    for _ in range(8):
        b.next(now)
        delays.append(b.delay)
        now += b.delay  # restarted at once, crashed again at once
    assert delays == [10, 20, 40, 80, 160, 300, 300, 300]


@pytest.mark.parametrize(
    ("ran_for", "in_backoff"),
    [(0.0, True), (9.0, True), (599.0, True), (600.0, True), (601.0, False)],
    ids=["crash-at-once", "crash-after-9s", "599s", "exactly-2x-max", "ran-over-10-min"],
)
def test_backoff_is_forgotten_after_twice_the_max(ran_for: float, in_backoff: bool) -> None:
    """hasExpired: an entry more than 2 × MaxContainerBackOff old counts for nothing, so a
    container that ran 10 minutes restarts at once."""
    b = Backoff()
    b.next(0.0)
    assert b.in_backoff_since(ran_for, ran_for) is in_backoff
    b.next(ran_for)
    assert b.delay == (BACKOFF_INITIAL * 2 if in_backoff else BACKOFF_INITIAL)


def test_backoff_waits_from_the_exit_not_from_the_last_update() -> None:
    b = Backoff()
    b.next(0.0)
    assert b.in_backoff_since(100.0, 105.0)  # exited 5 s ago, delay 10 s
    assert not b.in_backoff_since(100.0, 110.0)


def test_crash_loop_message_is_kuberuntimes() -> None:
    pod = core_pb2.Pod()
    pod.metadata.name, pod.metadata.namespace, pod.metadata.uid = "p", "ns", "u-1"
    assert crash_loop_message(BACKOFF_MAX, "c", pod) == (
        "back-off 5m0s restarting failed container=c pod=p_ns(u-1)"
    )
    assert [go_duration(d) for d in (10, 80, 160, 3725)] == ["10s", "1m20s", "2m40s", "1h2m5s"]


# ------------------------------------------------------------------------ restarts


def _run(*, init: bool = False, sidecar: bool = False) -> ContainerRun:
    return ContainerRun("c", "img", init, sidecar, ContainerStages())


@pytest.mark.parametrize(
    ("run", "policy", "code", "restarts"),
    [
        (_run(), "Always", 0, True),
        (_run(), "", 0, True),  # unset: Always
        (_run(), "OnFailure", 0, False),
        (_run(), "OnFailure", 1, True),
        (_run(), "Never", 1, False),
        (_run(init=True), "Always", 0, False),
        (_run(init=True), "Always", 1, True),
        (_run(init=True), "OnFailure", 1, True),
        (_run(init=True), "Never", 1, False),
        (_run(init=True, sidecar=True), "Never", 0, True),
        (_run(init=True, sidecar=True), "Never", 1, True),
    ],
    ids=[
        "app-always-success",
        "app-unset-policy-is-always",
        "app-onfailure-success-stays-done",
        "app-onfailure-failure-restarts",
        "app-never-failure-stays-done",
        "init-success-never-restarts",
        "init-failure-restarts-under-always",
        "init-failure-restarts-under-onfailure",
        "init-failure-under-never-fails-the-pod",
        "sidecar-always-restarts-success",
        "sidecar-always-restarts-failure",
    ],
)
def test_which_exits_restart(run: ContainerRun, policy: str, code: int, restarts: bool) -> None:
    assert should_restart(run, policy, code) is restarts
