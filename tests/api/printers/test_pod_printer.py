"""kubectl's pod row (printPod, pkg/printers/internalversion/printers.go) for pods that
live and end: init progress, sidecars counted as containers, CrashLoopBackOff, OOMKilled
and RESTARTS with the time of the last restart."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.printers.printers import pod_status_and_last_restart
from tests.builders import MakePod

T1, T2 = "2026-12-07T10:00:05Z", "2026-12-07T10:00:15Z"
RUNNING = {"running": {}}


def _pod(status: dict[str, Any], *, init: int = 0, sidecar: bool = False, apps: int = 1):
    p = MakePod().typed().name("p").namespace("default").node("n1")
    for i in range(init):
        p.init_container(f"init-{i}", "busybox")
    if sidecar:
        p.init_container("proxy", "envoy", restart_policy="Always")
    for i in range(apps):
        p.container(f"app-{i}", "busybox")
    pod = p.obj()
    json_format.ParseDict(status, pod.status)
    return pod


def cs(name: str, state: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"name": name, "state": state, **kw}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            _pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs("init-0", {"waiting": {"reason": "PodInitializing"}}),
                        cs("init-1", {"waiting": {"reason": "PodInitializing"}}),
                    ],
                    "containerStatuses": [cs("app-0", {"waiting": {"reason": "PodInitializing"}})],
                },
                init=2,
            ),
            ("Init:0/2", 0, 1, 0, ""),
            id="init-containers-being-created",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs("init-0", {"terminated": {"exitCode": 0, "reason": "Completed"}}),
                        cs("init-1", RUNNING),
                    ],
                    "containerStatuses": [cs("app-0", {"waiting": {"reason": "PodInitializing"}})],
                },
                init=2,
            ),
            ("Init:1/2", 0, 1, 0, ""),
            id="second-of-two-init-containers-running",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs(
                            "init-0",
                            {"waiting": {"reason": "CrashLoopBackOff"}},
                            restartCount=3,
                            lastState={"terminated": {"exitCode": 1, "finishedAt": T2}},
                        )
                    ],
                },
                init=1,
            ),
            ("Init:CrashLoopBackOff", 0, 1, 3, T2),
            id="init-container-crash-looping",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Running",
                    "conditions": [{"type": "Initialized", "status": "True"}],
                    "initContainerStatuses": [
                        cs(
                            "proxy",
                            RUNNING,
                            started=True,
                            ready=True,
                            restartCount=1,
                            lastState={"terminated": {"exitCode": 1, "finishedAt": T1}},
                        ),
                    ],
                    "containerStatuses": [cs("app-0", RUNNING, ready=True)],
                },
                sidecar=True,
            ),
            ("Running", 2, 2, 1, T1),
            id="started-sidecar-counts-as-a-ready-container",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs("proxy", {"waiting": {"reason": "ContainerCreating"}})
                    ],
                    "containerStatuses": [cs("app-0", {"waiting": {"reason": "PodInitializing"}})],
                },
                sidecar=True,
            ),
            ("Init:ContainerCreating", 0, 2, 0, ""),
            id="sidecar-not-started-yet",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Running",
                    "containerStatuses": [
                        cs(
                            "app-0",
                            {"waiting": {"reason": "CrashLoopBackOff"}},
                            restartCount=4,
                            lastState={"terminated": {"exitCode": 1, "finishedAt": T2}},
                        )
                    ],
                }
            ),
            ("CrashLoopBackOff", 0, 1, 4, T2),
            id="crash-loop-back-off",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Failed",
                    "containerStatuses": [
                        cs("app-0", {"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
                    ],
                }
            ),
            ("OOMKilled", 0, 1, 0, ""),
            id="oom-killed",
        ),
        pytest.param(
            _pod(
                {
                    "phase": "Failed",
                    "containerStatuses": [cs("app-0", {"terminated": {"exitCode": 3}})],
                }
            ),
            ("ExitCode:3", 0, 1, 0, ""),
            id="exit-code-without-reason",
        ),
    ],
)
def test_pod_row_status_ready_and_restarts(pod: core_pb2.Pod, expected: tuple[Any, ...]) -> None:
    assert pod_status_and_last_restart(pod) == expected
