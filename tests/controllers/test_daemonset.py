"""The DaemonSet controller: the pure rules as tables (cases from upstream's
pkg/controller/daemon/daemon_controller_test.go, update_test.go and util/daemonset_util_test.go),
and the controller against a real gRPC apiserver (one pod per eligible node, the node
affinity and tolerations it writes, rolling updates within maxUnavailable and maxSurge)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.clock import rfc3339
from services.controllers.daemonrules import (
    FailedPodsBackoff,
    add_daemon_tolerations,
    daemon_status,
    failed_pods_backoff_key,
    manage_plan,
    node_name_affinity,
    rolling_update_plan,
    should_run,
    surge_and_unavailable,
    target_node,
)
from services.controllers.daemonset import DaemonSetController
from services.controllers.history import CONTROLLER_REVISION_HASH_LABEL
from tests.builders import MakeNode
from tests.controllers.conftest import NS, PODS, ControllerCluster, ReadinessDriver, template

DAEMON_SETS = BY_KIND["DaemonSet"]
REVISIONS = BY_KIND["ControllerRevision"]
LABELS = {"app": "agent"}
NOW = 1_800_000_000.0


def ds_doc(
    name: str = "agent", strategy: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": template(LABELS, **spec),
            "updateStrategy": strategy
            or {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        },
    }


def make_ds(strategy: dict[str, Any] | None = None, **spec: Any) -> apps_pb2.DaemonSet:
    obj = codec.decode(ds_doc(strategy=strategy, **spec)).obj
    assert isinstance(obj, apps_pb2.DaemonSet)
    return obj


def node(
    name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> core_pb2.Node:
    return MakeNode().name(name).labels(labels or {}).taints(taints or []).obj()


def pod(
    name: str,
    node_name: str,
    hash_: str,
    *,
    ready: bool = True,
    phase: str = "Running",
    created: float = 0.0,
) -> core_pb2.Pod:
    p = core_pb2.Pod()
    p.metadata.name = name
    p.metadata.creation_timestamp = rfc3339(NOW - 1000 + created)
    p.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    node_name_affinity(p.spec, node_name)
    p.status.phase = phase
    if ready:
        p.status.conditions.add(
            type="Ready", status="True", last_transition_time=rfc3339(NOW - 500)
        )
    return p


# ============================================================================ pure rules


@pytest.mark.parametrize(
    ("spec", "node_kw", "want"),
    [
        pytest.param({}, {}, (True, True), id="plain-node"),
        pytest.param(
            {"nodeSelector": {"disk": "ssd"}}, {}, (False, False), id="nodeSelector-mismatch"
        ),
        pytest.param(
            {"nodeSelector": {"disk": "ssd"}},
            {"labels": {"disk": "ssd"}},
            (True, True),
            id="nodeSelector-match",
        ),
        pytest.param({"nodeName": "other"}, {}, (False, False), id="nodeName-elsewhere"),
        pytest.param(
            {},
            {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
            (False, True),
            id="untolerated-NoSchedule-keeps-running",
        ),
        pytest.param(
            {},
            {"taints": [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]},
            (False, False),
            id="untolerated-NoExecute-evicts",
        ),
        pytest.param(
            {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
            {"taints": [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]},
            (True, True),
            id="tolerated-taint",
        ),
        pytest.param(
            {},
            {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]},
            (True, True),
            id="not-ready-NoExecute-tolerated-by-default",
        ),
        pytest.param(
            {},
            {"taints": [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]},
            (True, True),
            id="memory-pressure-tolerated-by-default",
        ),
        pytest.param(
            {},
            {"taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]},
            (True, True),
            id="unschedulable-node-still-runs-daemon",
        ),
        pytest.param(
            {},
            {"taints": [{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]},
            (False, True),
            id="network-unavailable-not-tolerated-without-hostNetwork",
        ),
        pytest.param(
            {"hostNetwork": True},
            {"taints": [{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]},
            (True, True),
            id="network-unavailable-tolerated-with-hostNetwork",
        ),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["a"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            {"labels": {"zone": "b"}},
            (False, False),
            id="node-affinity-mismatch",
        ),
    ],
)
def test_node_should_run_daemon_pod(
    spec: dict[str, Any], node_kw: dict[str, Any], want: tuple[bool, bool]
) -> None:
    assert should_run(make_ds(**spec), node("n1", **node_kw)) == want


def test_daemon_tolerations_are_added_once_and_replace_a_matching_one() -> None:
    spec = core_pb2.PodSpec()
    spec.tolerations.add(
        key="node.kubernetes.io/not-ready",
        operator="Exists",
        effect="NoExecute",
        toleration_seconds=5,
    )
    add_daemon_tolerations(spec)
    add_daemon_tolerations(spec)
    keys = [(t.key, t.effect) for t in spec.tolerations]
    assert keys == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    assert not spec.tolerations[0].HasField("toleration_seconds"), "forever, as upstream"


def test_the_node_affinity_is_replaced_by_one_matchfields_term() -> None:
    spec = core_pb2.PodSpec()
    json_format.ParseDict(
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {
                                "matchExpressions": [{"key": "b", "operator": "Exists"}]
                            },
                        }
                    ],
                }
            }
        },
        spec,
    )
    node_name_affinity(spec, "n7")
    na = json_format.MessageToDict(spec.affinity.node_affinity)
    assert na["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
        ]
    }
    assert len(na["preferredDuringSchedulingIgnoredDuringExecution"]) == 1
    p = core_pb2.Pod(spec=spec)
    assert target_node(p) == "n7"
    p.spec.node_name = "bound"
    assert target_node(p) == "bound"


@pytest.mark.parametrize(
    ("rolling", "desired", "want"),
    [
        ({"maxUnavailable": 1, "maxSurge": 0}, 10, (0, 1)),
        ({"maxUnavailable": "50%", "maxSurge": 0}, 5, (0, 3)),
        ({"maxUnavailable": 0, "maxSurge": "25%"}, 5, (2, 0)),
        ({"maxUnavailable": 0, "maxSurge": 0}, 3, (0, 1)),
        ({"maxUnavailable": "10%", "maxSurge": 0}, 0, (0, 0)),
    ],
    ids=["int", "percent-rounds-up", "surge-percent-rounds-up", "both-zero-means-one", "no-nodes"],
)
def test_surge_and_unavailable_counts(
    rolling: dict[str, Any], desired: int, want: tuple[int, int]
) -> None:
    ds = make_ds(strategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    assert surge_and_unavailable(ds, desired) == want


def test_manage_creates_where_missing_and_prunes_extras_and_terminated_pods() -> None:
    ds = make_ds()
    nodes = [
        node("n1"),
        node("n2"),
        node("n3"),
        node("n4", taints=[{"key": "x", "effect": "NoExecute"}]),
    ]
    by_node = {
        "n1": [pod("a", "n1", "h", created=1), pod("b", "n1", "h", created=2)],
        "n3": [pod("c", "n3", "h", phase="Failed", ready=False)],
        "n4": [pod("d", "n4", "h")],
        "gone": [pod("e", "gone", "h")],
    }
    plan = manage_plan(ds, nodes, by_node, "h", NOW)
    assert plan.create_on == ("n2",)
    assert sorted(plan.delete) == ["b", "c", "d", "e"], "newer duplicate, failed, evicted, no node"


#: upstream's updateStrategies() (OnDelete, RollingUpdate maxUnavailable 1), and a surge
#: one of kubera's: the failed-pod cases run under each.
STRATEGIES = [
    pytest.param({"type": "OnDelete"}, id="OnDelete"),
    pytest.param(
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        id="RollingUpdate",
    ),
    pytest.param(
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        id="RollingUpdate-surge",
    ),
]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(
    ("failed", "normal", "creates", "deletes", "events"),
    [
        pytest.param(0, 1, 0, 0, 0, id="normal-do-nothing"),
        pytest.param(0, 0, 1, 0, 0, id="no-pods-create-1"),
        pytest.param(1, 0, 0, 1, 1, id="1-failed-kill-1-create-in-the-next-sync"),
        pytest.param(1, 3, 0, 3, 1, id="1-failed-kill-1-3-normal-kill-2"),
        # an older upstream row (2 failed: kill 2), before the back-off: the second failed
        # pod on the node now waits out the back-off the first one started
        pytest.param(2, 1, 0, 1, 1, id="2-failed-kill-1-the-other-waits-its-backoff"),
    ],
)
def test_daemon_kill_failed_pods(
    strategy: dict[str, Any], failed: int, normal: int, creates: int, deletes: int, events: int
) -> None:
    """TestDaemonKillFailedPods. Under surge, a node left with only a failed pod gets its
    new pod in the same sync (podsShouldBeOnNode's "at least one non-deleted pod")."""
    ds = make_ds(strategy=strategy)
    pods = [pod(f"f{i}", "n0", "h", phase="Failed", ready=False) for i in range(failed)]
    pods += [pod(f"p{i}", "n0", "h", created=i) for i in range(normal)]
    plan = manage_plan(
        ds, [node("n0")], {"n0": pods} if pods else {}, "h", NOW, FailedPodsBackoff()
    )
    surge_refill = strategy.get("rollingUpdate", {}).get("maxSurge") == 1 and failed and not normal
    assert len(plan.create_on) == creates + (1 if surge_refill else 0)
    assert len(plan.delete) == deletes
    assert [e[1] for e in plan.events] == ["FailedDaemonPod"] * events


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_daemon_kill_failed_pods_backoff(strategy: dict[str, Any]) -> None:
    """TestDaemonKillFailedPodsBackoff: the first sync deletes the failed pod and starts
    the node's back-off; syncs within it delete nothing and do not raise it; one just
    after it deletes again."""
    ds = make_ds(strategy=strategy)
    backoff = FailedPodsBackoff()
    key = failed_pods_backoff_key(ds, "n0")
    by_node = {"n0": [pod("failed", "n0", "h", phase="Failed", ready=False)]}
    now = NOW
    first = manage_plan(ds, [node("n0")], by_node, "h", now, backoff)
    assert first.delete == ("failed",) and len(first.events) == 1
    initial = backoff.get(key)
    assert initial > 0, "the initial delay is set"
    again = manage_plan(ds, [node("n0")], by_node, "h", now, backoff)
    assert again.delete == () and again.events == () and again.requeue_after == initial
    assert backoff.get(key) == initial, "waiting does not raise the delay"
    now += initial - 1e-6  # just before the back-off ends
    assert backoff.in_backoff_since_update(key, now)
    assert manage_plan(ds, [node("n0")], by_node, "h", now, backoff).delete == ()
    now += 2e-6  # just after it
    assert not backoff.in_backoff_since_update(key, now)
    assert manage_plan(ds, [node("n0")], by_node, "h", now, backoff).delete == ("failed",)
    assert backoff.get(key) == 2 * initial


def test_failed_pods_backoff_doubles_to_fifteen_minutes_and_expires() -> None:
    """flowcontrol.Backoff: 1 s doubling, capped at 15 min; an entry not renewed for twice
    the cap starts over, and gc forgets it."""
    b = FailedPodsBackoff()
    delays = []
    for i in range(12):
        b.next("k", NOW + i)
        delays.append(b.get("k"))
    assert delays[:4] == [1.0, 2.0, 4.0, 8.0] and delays[-1] == 900.0
    later = NOW + 11 + 2 * 900 + 1
    assert not b.in_backoff_since_update("k", later)
    b.next("k", later)
    assert b.get("k") == 1.0
    b.gc(later + 2 * 900 + 1)
    assert b.entries == {}


def test_a_succeeded_daemon_pod_is_deleted_without_backoff() -> None:
    ds = make_ds()
    backoff = FailedPodsBackoff()
    by_node = {"n0": [pod("done", "n0", "h", phase="Succeeded", ready=False)]}
    for _ in range(2):
        plan = manage_plan(ds, [node("n0")], by_node, "h", NOW, backoff)
        assert plan.delete == ("done",)
        assert plan.events == (
            (
                "Normal",
                "SucceededDaemonPod",
                "Found succeeded daemon pod /done on node n0, will try to delete it",
            ),
        )
    assert backoff.entries == {}


def test_rolling_update_without_surge_deletes_within_max_unavailable() -> None:
    ds = make_ds(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": 0}}
    )
    nodes = [node(f"n{i}") for i in range(5)]
    by_node = {
        "n0": [pod("p0", "n0", "old")],
        "n1": [pod("p1", "n1", "old")],
        "n2": [pod("p2", "n2", "old")],
        "n3": [pod("p3", "n3", "old", ready=False)],
        "n4": [pod("p4", "n4", "new", ready=False)],
    }
    plan = rolling_update_plan(ds, nodes, by_node, "new", NOW)
    # n4's new pod is unavailable (1 of 2); p3 is unavailable anyway and always replaced;
    # one more old available pod may go.
    assert plan.delete == ("p3", "p0")
    assert plan.create_on == ()


def test_rolling_update_with_surge_creates_beside_old_pods_then_deletes_them() -> None:
    ds = make_ds(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    )
    nodes = [node(f"n{i}") for i in range(3)]
    by_node = {
        "n0": [pod("o0", "n0", "old"), pod("x0", "n0", "new")],
        "n1": [pod("o1", "n1", "old")],
        "n2": [pod("o2", "n2", "old", ready=False)],
    }
    plan = rolling_update_plan(ds, nodes, by_node, "new", NOW)
    assert plan.delete == ("o0",), "n0's new pod is available: its old one goes"
    assert plan.create_on == ("n2", "n1"), "unavailable old first, then up to maxSurge"


def test_status_counts_the_oldest_pod_of_each_node() -> None:
    ds = make_ds()
    ds.metadata.generation = 4
    nodes = [
        node("n1"),
        node("n2"),
        node("n3"),
        node("n4", taints=[{"key": "x", "effect": "NoSchedule"}]),
    ]
    by_node = {
        "n1": [pod("a", "n1", "new")],
        "n2": [pod("b", "n2", "old", ready=False)],
        "n4": [pod("d", "n4", "new")],
    }
    st = daemon_status(ds, nodes, by_node, "new", NOW)
    assert (st.desired_number_scheduled, st.current_number_scheduled, st.number_misscheduled) == (
        3,
        2,
        1,
    )
    assert (st.number_ready, st.number_available, st.updated_number_scheduled) == (1, 1, 1)
    assert st.number_unavailable == 2
    assert st.observed_generation == 4


# ============================================================================ the controller


@pytest.fixture
async def ds_cluster(cluster: ControllerCluster) -> AsyncIterator[ControllerCluster]:
    for i in range(3):
        await cluster.node(f"n{i}")
    await cluster.node(
        "tainted", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    )
    controller = DaemonSetController(cluster.client, cluster.informers)
    cluster.bump_on(DAEMON_SETS, REVISIONS)
    await cluster.start(controller)
    yield cluster


def ds_of(c: ControllerCluster) -> apps_pb2.DaemonSet:
    cached = c.informers.get(DAEMON_SETS).store.get(f"{NS}/agent")
    return cached if isinstance(cached, apps_pb2.DaemonSet) else apps_pb2.DaemonSet()


def pods_by_node(c: ControllerCluster) -> dict[str, list[core_pb2.Pod]]:
    out: dict[str, list[core_pb2.Pod]] = {}
    for p in c.selected(LABELS):
        out.setdefault(target_node(p), []).append(p)
    return out


async def test_one_pod_per_eligible_node_with_matchfields_affinity_and_tolerations(
    ds_cluster: ControllerCluster,
) -> None:
    c = ds_cluster
    async with ReadinessDriver(c, LABELS):
        await c.create(ds_doc())
        await c.until(lambda: ds_of(c).status.number_available == 3)
    by_node = pods_by_node(c)
    assert sorted(by_node) == ["n0", "n1", "n2"], "not on the tainted node"
    assert all(len(v) == 1 for v in by_node.values())
    p = by_node["n1"][0]
    assert not p.spec.node_name, "the default scheduler binds it"
    assert p.metadata.generate_name == "agent-"
    assert {t.key for t in p.spec.tolerations} >= {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unschedulable",
    }
    st = ds_of(c).status
    assert (
        st.desired_number_scheduled,
        st.current_number_scheduled,
        st.updated_number_scheduled,
    ) == (3, 3, 3)
    revisions = list(c.informers.get(REVISIONS).store.values())
    assert len(revisions) == 1
    assert (
        p.metadata.labels[CONTROLLER_REVISION_HASH_LABEL]
        == revisions[0].metadata.labels[CONTROLLER_REVISION_HASH_LABEL]
    )  # type: ignore[attr-defined]


async def test_a_new_node_gets_a_pod_and_a_tainted_one_loses_it(
    ds_cluster: ControllerCluster,
) -> None:
    c = ds_cluster
    await c.create(ds_doc())
    await c.until(lambda: sorted(pods_by_node(c)) == ["n0", "n1", "n2"])
    await c.node("n3")
    await c.until(lambda: sorted(pods_by_node(c)) == ["n0", "n1", "n2", "n3"])
    fresh: core_pb2.Node = await c.client.get(BY_KIND["Node"], "n0")  # type: ignore[assignment]
    fresh.spec.taints.add(key="evict", value="now", effect="NoExecute")
    await c.client.update(fresh)
    await c.until(lambda: sorted(pods_by_node(c)) == ["n1", "n2", "n3"])


async def test_rolling_update_never_exceeds_max_unavailable(ds_cluster: ControllerCluster) -> None:
    c = ds_cluster
    too_many: list[int] = []

    def check(live: dict[str, core_pb2.Pod]) -> None:
        nodes_ready = {
            target_node(p)
            for p in live.values()
            if any(x.type == "Ready" and x.status == "True" for x in p.status.conditions)
        }
        missing = 3 - len(nodes_ready & {"n0", "n1", "n2"})
        if ds_of(c).status.number_available == 3 and missing > 1:
            too_many.append(missing)

    async with ReadinessDriver(c, LABELS, check) as driver:
        await c.create(ds_doc())
        await c.until(lambda: ds_of(c).status.number_available == 3)
        patch = '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}}}'
        await c.client.patch(DAEMON_SETS, "agent", patch, namespace=NS)
        await c.until(
            lambda: (
                ds_of(c).status.updated_number_scheduled == 3
                and ds_of(c).status.number_available == 3
                and {p.spec.containers[0].image for p in c.selected(LABELS)} == {"app:v2"}
            )
        )
    assert len(driver.created) == 6
    assert too_many == []
    assert ds_of(c).metadata.annotations["deprecated.daemonset.template.generation"] == "2"
    assert {p.metadata.labels["pod-template-generation"] for p in c.selected(LABELS)} == {"2"}
    assert len(c.informers.get(REVISIONS).store) == 2


async def test_rolling_update_with_surge_runs_new_beside_old(ds_cluster: ControllerCluster) -> None:
    c = ds_cluster
    surge_seen: list[int] = []

    def check(live: dict[str, core_pb2.Pod]) -> None:
        per_node: dict[str, int] = {}
        for p in live.values():
            per_node[target_node(p)] = per_node.get(target_node(p), 0) + 1
        surge_seen.append(sum(1 for n in per_node.values() if n > 1))

    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    async with ReadinessDriver(c, LABELS, check):
        await c.create(ds_doc(strategy=strategy))
        await c.until(lambda: ds_of(c).status.number_available == 3)
        patch = '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}}}'
        await c.client.patch(DAEMON_SETS, "agent", patch, namespace=NS)
        await c.until(
            lambda: (
                {p.spec.containers[0].image for p in c.selected(LABELS)} == {"app:v2"}
                and len(c.selected(LABELS)) == 3
            )
        )
    assert max(surge_seen) == 1, "at most maxSurge nodes run two pods"


async def test_on_delete_updates_only_deleted_pods(ds_cluster: ControllerCluster) -> None:
    c = ds_cluster
    await c.create(ds_doc(strategy={"type": "OnDelete"}))
    await c.until(lambda: len(c.selected(LABELS)) == 3)
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}}}'
    await c.client.patch(DAEMON_SETS, "agent", patch, namespace=NS)
    await c.until(lambda: len(c.informers.get(REVISIONS).store) == 2)
    victim = pods_by_node(c)["n1"][0]
    await c.client.delete(PODS, victim.metadata.name, NS)
    await c.until(
        lambda: (
            {n: ps[0].spec.containers[0].image for n, ps in pods_by_node(c).items()}
            == {"n0": "app:v1", "n1": "app:v2", "n2": "app:v1"}
        )
    )


async def test_a_deleted_daemonset_takes_its_pods_and_revisions_along(
    ds_cluster: ControllerCluster,
) -> None:
    c = ds_cluster
    await c.create(ds_doc())
    await c.until(lambda: len(c.selected(LABELS)) == 3)
    await c.client.delete(DAEMON_SETS, "agent", NS)
    await c.until(lambda: c.selected(LABELS) == [] and len(c.informers.get(REVISIONS).store) == 0)


async def test_a_failed_daemon_pod_is_replaced_and_the_next_failure_waits_its_backoff(
    cluster: ControllerCluster,
) -> None:
    """daemon_controller.go's failed-pod back-off on the controller's clock: the first
    Failed pod on a node is deleted (and replaced) at once; the replacement failing too
    is deleted only once the node's 1 s back-off has passed, which doubles it."""
    await cluster.node("n0")
    controller = DaemonSetController(cluster.client, cluster.informers)
    cluster.bump_on(DAEMON_SETS, REVISIONS)
    await cluster.start(controller)
    await cluster.create(ds_doc())

    def live() -> list[str]:
        return sorted(
            p.metadata.name
            for p in cluster.pods.store.values()
            if p.metadata.labels.get("app") == "agent" and not p.metadata.deletion_timestamp
        )

    def entry() -> tuple[float, float]:
        (got,) = [v for k, v in controller.failed_pods_backoff.entries.items() if k.endswith("/n0")]
        return got

    await cluster.until(lambda: len(live()) == 1)
    (first,) = live()
    await cluster.set_status(cluster.pods.store.get(f"{NS}/{first}"), phase="Failed")  # type: ignore[arg-type]
    await cluster.until(lambda: len(live()) == 1 and live() != [first])
    delay, started = entry()
    assert delay == 1.0
    (second,) = live()
    await cluster.set_status(cluster.pods.store.get(f"{NS}/{second}"), phase="Failed")  # type: ignore[arg-type]
    await cluster.until(lambda: len(live()) == 1 and live() != [second], timeout=15)
    delay, again = entry()
    assert delay == 2.0 and again - started >= 1.0
