"""What `kubectl logs -f` streams after its first answer: the lines the followed container
instance adds, and when the stream ends (the instance terminated, the pod runs a later one,
or there is no log any more), from the pod's successive versions."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers import containerlog

T0, T1, T2 = "2026-12-07T10:00:00Z", "2026-12-07T10:00:05Z", "2026-12-07T10:00:09Z"
RUN0 = {"running": {"startedAt": T0}}
EXIT0 = {"terminated": {"exitCode": 2, "reason": "Error", "startedAt": T0, "finishedAt": T1}}


def _pod(state: dict[str, Any], last: dict[str, Any] | None = None, restarts: int = 0) -> Any:
    pod = core_pb2.Pod()
    pod.metadata.name = "p"
    pod.spec.node_name = "n1"
    pod.spec.containers.add(name="c", image="busybox:1.36")
    cs = pod.status.container_statuses.add(name="c", image="busybox:1.36")
    cs.restart_count = restarts
    cs.state.update(state)
    if last:
        cs.last_state.update({"terminated": {**last["terminated"], "containerID": "kubera://x"}})
    return pod


SENT = containerlog.container_log(_pod(RUN0), "c")
EXITED = f"{T1} [kubera] exited with code 2 (Error)"


@pytest.mark.parametrize(
    ("pod", "new", "ended"),
    [
        pytest.param(_pod(RUN0), [], False, id="still-running-nothing-new"),
        pytest.param(_pod(EXIT0), [EXITED], True, id="terminated-sends-its-exit-and-ends"),
        pytest.param(
            _pod({"running": {"startedAt": T2}}, EXIT0, restarts=1),
            [EXITED],
            True,
            id="restarted-sends-the-followed-instances-exit-and-ends",
        ),
        pytest.param(
            _pod({"running": {"startedAt": T2}}, EXIT0, restarts=2),
            [],
            True,
            id="restarted-twice-has-nothing-of-it-left",
        ),
        pytest.param(
            _pod({"waiting": {"reason": "ContainerCreating"}}), [], True, id="no-log-ends"
        ),
    ],
)
def test_follow_sends_what_the_instance_adds_and_ends_with_it(
    pod: Any, new: list[str], ended: bool
) -> None:
    assert containerlog.follow_lines(pod, "c", list(SENT)) == (new, ended)


def test_limit_bytes_counts_across_the_stream() -> None:
    options = containerlog.LogOptions(timestamps=True)
    text, left = containerlog.render_more([EXITED], options, 10)
    assert (text, left) == (f"{T1} {EXITED}"[:10], 0)
    assert containerlog.render_more([EXITED], options, None) == (f"{T1} {EXITED}\n", None)
