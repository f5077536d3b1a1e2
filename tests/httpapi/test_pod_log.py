"""GET pods/NAME/log: the hollow container's synthetic log as text/plain, the container
chosen and refused as upstream's LogLocation and kubelet's validateContainerLogStatus do
(pkg/registry/core/pod/strategy.go, pkg/kubelet/kubelet_pods.go)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from services.api.machinery.kinds import BY_KIND
from services.apiserver import ApiServer
from services.httpapi import podlog
from tests.builders import MakePod

PODS = "/api/v1/namespaces/default/pods"
T0, T1, T2 = "2026-12-07T10:00:00Z", "2026-12-07T10:00:05Z", "2026-12-07T10:00:15Z"


async def make(
    api: ApiServer, name: str, *containers: str, init: tuple[str, ...] = (), **status: Any
):
    p = MakePod().typed().name(name).namespace("default").node("n1")
    for c in init:
        p.init_container(c, "busybox:1.36")
    for c in containers:
        p.container(c, "busybox:1.36")
    p.annotation("kubera.io/stages", json.dumps({"runDuration": "5s", "exitCode": 1}))
    created = await api.create(p.obj())
    if status:
        created.status.container_statuses.add(**status["cs"])
        for key in ("state", "last_state"):
            if key in status:
                getattr(created.status.container_statuses[0], key).update(status[key])
        await api.update_status(created)


CRASHED = {
    "cs": {"name": "c", "image": "busybox:1.36", "restart_count": 1},
    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}},
    "last_state": {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "startedAt": T1,
            "finishedAt": T2,
            "containerID": "kubera://x-0-2",
        }
    },
}


async def test_a_crash_looping_containers_log_is_its_last_run(
    http: TestClient, registry: ApiServer
) -> None:
    await make(registry, "crash", "c", **CRASHED)
    r = await http.get(f"{PODS}/crash/log")
    assert r.status == 200 and r.content_type == "text/plain"
    assert (await r.text()).splitlines() == [
        f"{T1} [kubera] hollow container c started (image busybox:1.36, restart 0)",
        f"{T1} [kubera] stages: runDuration 5s, exitCode 1, failureRate 0",
        f"{T2} [kubera] exited with code 1 (Error)",
    ]
    r = await http.get(f"{PODS}/crash/log", params={"previous": "true", "tailLines": "1"})
    assert await r.text() == f"{T2} [kubera] exited with code 1 (Error)\n"


async def test_a_running_containers_log_with_timestamps(
    http: TestClient, registry: ApiServer
) -> None:
    await make(
        registry,
        "run",
        "c",
        cs={"name": "c", "image": "busybox:1.36"},
        state={"running": {"startedAt": T0}},
    )
    r = await http.get(f"{PODS}/run/log", params={"timestamps": "true", "container": "c"})
    lines = (await r.text()).splitlines()
    assert lines[-1] == f"{T0} {T0} [kubera] running"
    r = await http.get(f"{PODS}/run/log", params={"limitBytes": "4"})
    assert await r.text() == T0[:4]


async def _status(r: Any) -> tuple[int, str]:
    doc = await r.json()
    return r.status, doc["message"]


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            {},
            400,
            "a container name must be specified for pod two, choose one of: [a b] "
            "or one of the init containers: [setup]",
        ),
        ({"container": "nope"}, 400, "container nope is not valid for pod two"),
        (
            {"container": "a"},
            400,
            'container "a" in pod "two" is waiting to start - no logs yet',
        ),
        (
            {"container": "a", "previous": "true"},
            400,
            'container "a" in pod "two" is waiting to start - no logs yet',
        ),
        (
            {"container": "setup", "tailLines": "-1"},
            422,
            'PodLogOptions "two" is invalid: tailLines: Invalid value: -1: '
            "must be greater than or equal to 0",
        ),
    ],
    ids=[
        "several-containers-none-named",
        "unknown-container",
        "not-started",
        "no-previous",
        "negative-tail",
    ],
)
async def test_logs_that_cannot_be_served_are_refused_as_upstream(
    http: TestClient, registry: ApiServer, query: dict[str, str], code: int, message: str
) -> None:
    await make(registry, "two", "a", "b", init=("setup",))
    r = await http.get(f"{PODS}/two/log", params=query)
    assert await _status(r) == (code, message)


async def test_a_waiting_container_says_why(http: TestClient, registry: ApiServer) -> None:
    await make(
        registry,
        "w",
        "c",
        cs={"name": "c", "image": "busybox:1.36"},
        state={"waiting": {"reason": "ContainerCreating"}},
    )
    r = await http.get(f"{PODS}/w/log")
    assert await _status(r) == (
        400,
        'container "c" in pod "w" is waiting to start: ContainerCreating',
    )
    r = await http.get(f"{PODS}/w/log", params={"previous": "true"})
    assert await _status(r) == (400, 'previous terminated container "c" in pod "w" not found')


async def test_only_pods_have_logs(http: TestClient) -> None:
    r = await http.get("/apis/apps/v1/namespaces/default/deployments/d/log")
    assert r.status == 404
    assert BY_KIND["Pod"].resource == "pods"


# ------------------------------------------------------------------ follow (kubectl logs -f)

RUNNING = {"cs": {"name": "c", "image": "busybox:1.36"}, "state": {"running": {"startedAt": T0}}}
STARTED = [
    f"{T0} [kubera] hollow container c started (image busybox:1.36, restart 0)",
    f"{T0} [kubera] stages: runDuration 5s, exitCode 1, failureRate 0",
    f"{T0} [kubera] running",
]


async def _lines(r: Any, n: int) -> list[str]:
    async with asyncio.timeout(10):  # a bound on a broken stream, not a timing assertion
        return [(await r.content.readline()).decode().rstrip("\n") for _ in range(n)]


async def _eof(r: Any) -> bytes:
    async with asyncio.timeout(10):
        return await r.content.read()


async def _exit(api: ApiServer, name: str, *, restarted: bool = False) -> None:
    pod: Any = await api.get(BY_KIND["Pod"], "default", name)
    cs = pod.status.container_statuses[0]
    run = {"exitCode": 1, "reason": "Error", "startedAt": T0, "finishedAt": T1}
    if restarted:
        cs.restart_count = 1
        cs.last_state.update({"terminated": {**run, "containerID": "kubera://x-0-1"}})
        cs.state.Clear()
        cs.state.update({"running": {"startedAt": T2}})
    else:
        cs.state.Clear()
        cs.state.update({"terminated": run})
    await api.update_status(pod)


@pytest.mark.parametrize("restarted", [False, True], ids=["exits", "exits-and-restarts"])
async def test_follow_streams_the_exit_and_ends_with_the_instance(
    http: TestClient, registry: ApiServer, restarted: bool
) -> None:
    await make(registry, "f", "c", **RUNNING)
    r = await http.get(f"{PODS}/f/log", params={"follow": "true"})
    assert r.status == 200 and r.content_type == "text/plain"
    assert await _lines(r, 3) == STARTED
    await _exit(registry, "f", restarted=restarted)
    assert await _eof(r) == f"{T1} [kubera] exited with code 1 (Error)\n".encode()


async def test_follow_ends_when_the_pod_goes(http: TestClient, registry: ApiServer) -> None:
    await make(registry, "g", "c", **RUNNING)
    r = await http.get(f"{PODS}/g/log", params={"follow": "true"})
    assert await _lines(r, 3) == STARTED
    await registry.delete(BY_KIND["Pod"], "default", "g", grace_period_seconds=0)
    assert await _eof(r) == b""


async def test_follow_of_a_finished_container_answers_at_once(
    http: TestClient, registry: ApiServer
) -> None:
    await make(registry, "crash", "c", **CRASHED)
    r = await http.get(f"{PODS}/crash/log", params={"follow": "true", "tailLines": "1"})
    assert await _eof(r) == f"{T2} [kubera] exited with code 1 (Error)\n".encode()


async def test_follow_keeps_to_limit_bytes(http: TestClient, registry: ApiServer) -> None:
    await make(registry, "lim", "c", **RUNNING)
    size = len("\n".join(STARTED)) + 1 + 5
    r = await http.get(f"{PODS}/lim/log", params={"follow": "true", "limitBytes": str(size)})
    assert await _lines(r, 3) == STARTED
    await _exit(registry, "lim")
    assert await _eof(r) == T1[:5].encode()


async def test_a_follower_that_leaves_closes_its_watch(
    http: TestClient, registry: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(podlog, "CLIENT_CHECK_SECONDS", 0.05)
    closed = asyncio.Event()
    real = podlog._follow

    async def tracked(*args: Any) -> Any:
        try:
            async for chunk in real(*args):
                yield chunk
        finally:
            closed.set()

    monkeypatch.setattr(podlog, "_follow", tracked)
    await make(registry, "gone", "c", **RUNNING)
    r = await http.get(f"{PODS}/gone/log", params={"follow": "true"})
    assert await _lines(r, 3) == STARTED
    r.close()
    async with asyncio.timeout(10):
        await closed.wait()
