"""One pod never stops the scheduler: a plugin that raises for a pod, or a pod that reached
storage without validation (requests beyond int64 milli-units, as a user once sent
`cpu: 1e17`), ends that pod's attempt with an Error, a FailedScheduling event and a
backoff, while the pods around it are bound; deleting it leaves the scheduler healthy.

The real loop: a Scheduler on a real in-process gRPC apiserver; the poison pod is written
straight into the apiserver's storage, bypassing admission."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.scheduler import config as config_mod
from services.scheduler.queue.scheduling_queue import QUEUE_BACKOFF
from services.storage import Put
from tests.scheduler.test_scheduler_integration import Cluster, _cluster
from tests.waiting import eventually

PODS, EVENTS = BY_KIND["Pod"], BY_KIND["Event"]
TOO_BIG = "must be at most 9223372036854775807m (kubera holds quantities as int64 milli-units)"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    cfg = config_mod.load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "outOfTreePlugins: [tests.scheduler.poison_plugin]\n"
        "profiles:\n"
        "- plugins:\n"
        "    filter:\n"
        "      enabled: [{name: RaisesForBoom}]\n"
    )
    async for c in _cluster(cfg):
        yield c


async def store_unvalidated(
    cluster: Cluster, name: str, requests: dict[str, str], *, node_name: str = ""
) -> None:
    """A pod put into storage as it is, as an older apiserver or etcdctl could have."""
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name, pod.metadata.namespace, pod.metadata.uid = name, "default", f"uid-{name}"
    pod.spec.scheduler_name = "default-scheduler"
    pod.spec.node_name = node_name
    c = pod.spec.containers.add(name="c", image="i")
    c.resources.requests.update(requests)
    pod.status.phase = "Pending"
    await cluster.api.storage.txn([], [Put(PODS.key("default", name), pod.SerializeToString())])


async def attempts(cluster: Cluster, name: str, n: int) -> list:
    """Wait for `n` attempts of pod `name`; its trace."""
    return await eventually(
        lambda: (a := cluster.sched.traces.get(f"default/{name}")) and len(a) >= n and a, 15
    )


async def failed_scheduling(cluster: Cluster, name: str) -> list[str]:
    async def messages() -> list[str]:
        events, _ = await cluster.client.list(
            EVENTS,
            namespace="default",
            options=ListOptions(field_selector=f"involvedObject.name={name}"),
        )
        return [e.message for e in events if e.reason == "FailedScheduling"]

    return await eventually(messages)


def errors_logged(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "services.scheduler.scheduler" and key in r.getMessage()
    ]


@pytest.mark.parametrize(
    ("requests", "problem"),
    [
        pytest.param(
            {"cpu": "99999999999999999999999999999999"},
            'spec.containers[0].resources.requests[cpu]: Invalid value: "99999999999999999999999999999999"',
            id="cpu-32-digits",
        ),
        pytest.param(
            {"memory": "1e400"},
            'spec.containers[0].resources.requests[memory]: Invalid value: "1e400"',
            id="memory-1e400",
        ),
        pytest.param(
            {"cpu": "1e17"},
            'spec.containers[0].resources.requests[cpu]: Invalid value: "1e17"',
            id="cpu-1e17",
        ),
    ],
)
async def test_an_unvalidated_pod_costs_only_itself(
    cluster: Cluster,
    requests: dict[str, str],
    problem: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await cluster.node("n1")
    await store_unvalidated(cluster, "poison", requests)
    first = (await attempts(cluster, "poison", 1))[0]
    assert (first.result, first.message) == ("error", f"invalid pod: {problem}: {TOO_BIG}")
    assert await failed_scheduling(cluster, "poison") == [first.message]
    qpi = cluster.sched.queue.get("default/poison")
    assert (
        qpi is not None
        and qpi.attempts >= 1
        and cluster.sched.queue.backoff_duration(qpi.attempts)
        >= cluster.sched.config.pod_initial_backoff_seconds
    )

    await cluster.pod("after")
    assert await cluster.wait_bound("after") == {"after": "n1"}
    again = await attempts(cluster, "poison", 2)  # retried, after its backoff
    assert again[1].result == "error"
    assert again[1].time - again[0].time >= cluster.sched.config.pod_initial_backoff_seconds
    assert errors_logged(caplog, "default/poison") == [
        f"scheduling default/poison: {first.message}"
    ]

    await cluster.api.delete(PODS, "default", "poison")
    await eventually(lambda: cluster.sched.queue.get("default/poison") is None)
    await cluster.pod("later")
    assert await cluster.wait_bound("later") == {"later": "n1"}


async def test_a_raising_plugin_costs_only_the_pod_it_raised_for(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.node("n1")
    await cluster.pod("boom")
    await cluster.pod("calm")
    assert await cluster.wait_bound("calm") == {"calm": "n1"}
    first = (await attempts(cluster, "boom", 1))[0]
    assert first.result == "error"
    assert first.message == "running Filter plugin 'RaisesForBoom': the plugin divided by zero"
    assert await failed_scheduling(cluster, "boom") == [first.message]
    pending = cluster.sched.queue.pending_pods()
    assert [p.metadata.name for p in pending[QUEUE_BACKOFF]] in (["boom"], [])
    again = await attempts(cluster, "boom", 2)
    assert again[1].time - again[0].time >= cluster.sched.config.pod_initial_backoff_seconds
    assert errors_logged(caplog, "default/boom") == [f"scheduling default/boom: {first.message}"]
    await cluster.api.delete(PODS, "default", "boom")
    await cluster.pod("later")
    assert await cluster.wait_bound("later") == {"later": "n1"}


async def test_a_bound_unvalidated_pod_fills_its_node_and_nothing_else(cluster: Cluster) -> None:
    """Bound with requests beyond int64 (counted as the most the arrays hold): its node is
    full, the other node takes the pods, and its deletion frees the node again."""
    await cluster.node("a")
    await store_unvalidated(cluster, "hog", {"cpu": "1e17"}, node_name="a")
    await eventually(lambda: "default/hog" in cluster.sched.pods.store)
    await cluster.node("b")
    for i in range(3):
        await cluster.pod(f"p{i}")
    assert set((await cluster.wait_bound("p0", "p1", "p2")).values()) == {"b"}
    assert cluster.sched.pods.handler_errors == 0
    await cluster.api.delete(PODS, "default", "hog", grace_period_seconds=0)
    await eventually(lambda: "default/hog" not in cluster.sched.pods.store)
    await cluster.api.patch(BY_KIND["Node"], "", "b", '{"spec": {"unschedulable": true}}')
    await eventually(lambda: cluster.sched.nodes.store["b"].spec.unschedulable)
    await cluster.pod("back-on-a")
    assert await cluster.wait_bound("back-on-a") == {"back-on-a": "a"}


async def test_an_unparsable_affinity_selector_is_inter_pod_affinitys_answer(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Upstream's InterPodAffinity answers for a term it cannot parse (PreFilter
    UnschedulableAndUnresolvable "parsing pod: ..."): the pod is unschedulable, nothing
    raises and nothing is logged as an error; the pods around it are bound."""
    await cluster.node("n1")
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name, pod.metadata.namespace, pod.metadata.uid = "odd", "default", "uid-odd"
    pod.spec.scheduler_name = "default-scheduler"
    pod.spec.containers.add(name="c", image="i")
    t = pod.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution.add(
        topology_key="zone"
    )
    t.label_selector.match_expressions.add(key="app", operator="Bogus", values=["a"])
    pod.status.phase = "Pending"
    await cluster.api.storage.txn([], [Put(PODS.key("default", "odd"), pod.SerializeToString())])
    first = (await attempts(cluster, "odd", 1))[0]
    assert (first.result, first.message) == (
        "unschedulable",
        "0/1 nodes are available: parsing pod: matchExpressions[0].operator: "
        'Invalid value: "Bogus": not a valid selector operator. '
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    )
    assert errors_logged(caplog, "default/odd") == []
    await cluster.pod("after")
    assert await cluster.wait_bound("after") == {"after": "n1"}
