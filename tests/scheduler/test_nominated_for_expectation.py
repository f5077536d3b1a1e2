"""NominatedNodeNameForExpectation (beta, on in 1.35): the scheduler writes a pod's
status.nominatedNodeName before its binding cycle waits at Permit or in a PreBind with
work to do, the bind clears it, and a failure after the node was chosen clears it.

The rows are upstream's TestNominatedNodeNameIsSetBeforePreBindAndWaitOnPermit
(test/integration/scheduler/nominated_node_name), each with the gate on and off; the
plugins are its RunForeverPreBindPlugin and FakePermitPlugin (expectation_plugins.py).
What the watch shows is what a client sees: every version of the pod is recorded."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.scheduler import config as config_mod
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins.dynamicresources.plugin import DynamicResources
from tests.scheduler import expectation_plugins as plugins
from tests.scheduler.test_scheduler_integration import Cluster, _cluster
from tests.waiting import eventually

PODS = BY_KIND["Pod"]

#: (rule, the plugin at its extension point or None, whether the pod waits, NNN expected)
ROWS = [
    ("NominatedNodeName is put if a PreBind plugin will run", "PRE_BIND", True, True),
    ("NominatedNodeName is put if the pod waits at Permit", "PERMIT_WAIT", True, True),
    ("NominatedNodeName is not put if Permit allows at once", "PERMIT_ALLOW", False, False),
    ("NominatedNodeName is not put if neither Permit nor PreBind works", None, False, False),
]


def _config(spec_attr: str | None) -> config_mod.SchedulerConfiguration:
    if spec_attr is None:
        return config_mod.load_config(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        )
    spec = getattr(plugins, spec_attr)
    point = spec.default_points[0]
    return config_mod.load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"outOfTreePlugins: [tests.scheduler.expectation_plugins:{spec_attr}]\n"
        "profiles:\n"
        "- plugins:\n"
        f"    {point}:\n"
        f"      enabled: [{{name: {spec.name}}}]\n"
    )


@contextlib.asynccontextmanager
async def _started(spec_attr: str | None) -> AsyncIterator[Cluster]:
    plugins.OUTCOMES.clear()
    plugins.ENTERED.clear()
    async for c in _cluster(_config(spec_attr)):
        yield c


class Versions:
    """Every version of one pod the watch delivers, from its creation on."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster, self.name = cluster, name
        self.seen: list[core_pb2.Pod] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        _, rv = await self.cluster.client.list(PODS, namespace="default")

        async def follow() -> None:
            opts = ListOptions(field_selector=f"metadata.name={self.name}", resource_version=rv)
            async for ev in self.cluster.client.watch(PODS, namespace="default", options=opts):
                self.seen.append(ev.object)

        self._task = asyncio.create_task(follow())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def nominations(self) -> list[str]:
        """The pod's nominatedNodeName in each version, changes only."""
        out: list[str] = []
        for p in self.seen:
            n = p.status.nominated_node_name
            if not out or out[-1] != n:
                out.append(n)
        return out

    def bound(self) -> bool:
        return any(p.spec.node_name for p in self.seen)


async def _waiting(cluster: Cluster, name: str, spec_attr: str | None) -> None:
    """Until the pod's binding cycle waits: in its PreBind, or as a waiting pod."""
    fwk = cluster.sched.frameworks["default-scheduler"]

    def waits() -> bool:
        if spec_attr == "PRE_BIND":
            return name in plugins.ENTERED
        return any(wp.pod_info.pod.metadata.name == name for wp in fwk.waiting_pods)

    await eventually(waits, 10)


def _release(cluster: Cluster, name: str, spec_attr: str | None, outcome: str = "ok") -> None:
    if spec_attr == "PRE_BIND":
        plugins.OUTCOMES.setdefault(name, asyncio.Queue()).put_nowait(outcome)
        return
    fwk = cluster.sched.frameworks["default-scheduler"]
    for wp in list(fwk.waiting_pods):
        if wp.pod_info.pod.metadata.name == name:
            fwk.allow_waiting_pod(wp.pod_info.uid, "FakePermitWait")


#: The writes inline, or queued on the API dispatcher (SchedulerAsyncAPICalls, not waited
#: for): what a client sees is the same.
API_CALLS = pytest.mark.parametrize("async_api_calls", [False, True], ids=["sync", "async"])


@API_CALLS
@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
@pytest.mark.parametrize(
    ("rule", "spec_attr", "waits", "nominated"), ROWS, ids=[r[0] for r in ROWS]
)
async def test_nominated_node_name_before_pre_bind_and_wait_on_permit(
    monkeypatch: pytest.MonkeyPatch,
    gate: bool,
    rule: str,
    spec_attr: str | None,
    waits: bool,
    nominated: bool,
    async_api_calls: bool,
) -> None:
    monkeypatch.setitem(features.DEFAULTS, features.NOMINATED_NODE_NAME_FOR_EXPECTATION, gate)
    monkeypatch.setitem(features.DEFAULTS, features.SCHEDULER_ASYNC_API_CALLS, async_api_calls)
    async with _started(spec_attr) as cluster:
        await cluster.node("n1")
        versions = Versions(cluster, "p")
        await versions.start()
        try:
            await cluster.pod("p")
            if waits:
                await _waiting(cluster, "p", spec_attr)
                if nominated and gate:
                    # Written before the wait: a client sees it while the pod waits.
                    await eventually(lambda: versions.nominations()[-1:] == ["n1"], 10)
                _release(cluster, "p", spec_attr)
            await cluster.wait_bound("p")
            await eventually(versions.bound, 10)
        finally:
            versions.stop()
    bound = next(p for p in versions.seen if p.spec.node_name)
    assert bound.status.nominated_node_name == "", rule  # the bind clears it
    expected = ["", "n1", ""] if nominated and gate else [""]
    assert versions.nominations() == expected, rule


@API_CALLS
async def test_a_failed_pre_bind_clears_the_nomination_and_the_retry_puts_it_back(
    monkeypatch: pytest.MonkeyPatch, async_api_calls: bool
) -> None:
    monkeypatch.setitem(features.DEFAULTS, features.SCHEDULER_ASYNC_API_CALLS, async_api_calls)
    async with _started("PRE_BIND") as cluster:
        await cluster.node("n1")
        versions = Versions(cluster, "p")
        await versions.start()
        try:
            await cluster.pod("p")
            await _waiting(cluster, "p", "PRE_BIND")
            await eventually(lambda: versions.nominations()[-1:] == ["n1"], 10)
            _release(cluster, "p", "PRE_BIND", "fail")
            # Cleared by the failure, written again when the retry reaches PreBind.
            await eventually(lambda: versions.nominations()[-3:] == ["n1", "", "n1"], 15)
            assert not versions.bound()
            assert cluster.sched.nominator.node_of(versions.seen[-1].metadata.uid) == ""
            _release(cluster, "p", "PRE_BIND", "ok")
            await cluster.wait_bound("p")
            await eventually(versions.bound, 10)
        finally:
            versions.stop()
    assert versions.nominations() == ["", "n1", "", "n1", ""]


async def test_an_assumed_pods_own_nomination_does_not_count_it_twice() -> None:
    """While "big" waits in PreBind on n1 (assumed there, nominatedNodeName n1), a pod of
    the same priority that fits beside it once goes to n1: counted twice (the cache's
    assumed pod and the nominator's) it would not fit."""
    async with _started("PRE_BIND") as cluster:
        await cluster.node("n1", cpu="1")
        versions = Versions(cluster, "big")
        await versions.start()
        try:
            await cluster.pod("big", cpu="600m")
            await _waiting(cluster, "big", "PRE_BIND")
            await eventually(lambda: versions.nominations()[-1:] == ["n1"], 10)
            uid = versions.seen[-1].metadata.uid
            assert cluster.sched.nominator.node_of(uid) == ""
            await cluster.pod("small", cpu="300m")
            await _waiting(cluster, "small", "PRE_BIND")  # placed on n1, beside "big"
            _release(cluster, "big", "PRE_BIND")
            _release(cluster, "small", "PRE_BIND")
            assert await cluster.wait_bound("big", "small") == {"big": "n1", "small": "n1"}
        finally:
            versions.stop()


@pytest.mark.parametrize(
    ("rule", "claims", "want"),
    [
        ("a pod without claims skips DRA's PreBind", [], "Skip"),
        ("a pod with claims has DRA PreBind work", [object()], "Success"),
    ],
)
def test_dynamic_resources_pre_bind_pre_flight(rule: str, claims: list[object], want: str) -> None:
    from services.scheduler.plugins.dynamicresources import plugin as dra_plugin

    state = CycleState()
    state.write(dra_plugin.STATE_KEY, dra_plugin._State(claims=claims))  # type: ignore[arg-type]
    pi = PodInfo(core_pb2.Pod())
    st: Status = DynamicResources.pre_bind_pre_flight(None, state, pi, "n1")  # type: ignore[arg-type]
    assert st.code_name == want, rule
