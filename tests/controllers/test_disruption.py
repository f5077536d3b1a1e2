"""The disruption controller, ported from upstream's pkg/controller/disruption/
disruption_test.go: the status rules on a simulated cluster (pods, ReplicaSets and
Deployments as the informers would hold them, one sync at a time, as upstream's fake
controller does), then the controller running against a real gRPC apiserver with
evictions spending the budget it keeps.

Upstream's ReplicationController and StatefulSet cases run here with ReplicaSets (kubera has
neither): the counting rules under test are the same."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from protos.kubera.v1 import apps_pb2, core_pb2, policy_pb2
from services.api.machinery.errors import TooManyRequestsError
from services.api.machinery.kinds import BY_KIND
from services.clock import rfc3339
from services.controllers.disruption import (
    DELETION_TIMEOUT,
    DisruptionController,
    SyncError,
    compute_status,
    fail_safe_status,
    find_scale,
    pods_for,
)
from tests.controllers.conftest import NS, ControllerCluster

FOO_BAR = {"foo": "bar"}
_uids = itertools.count(1)
NOW = 1_800_000_000.0


def new_pdb(
    *, min_available: str | None = None, max_unavailable: str | None = None
) -> policy_pb2.PodDisruptionBudget:
    pdb = policy_pb2.PodDisruptionBudget()
    pdb.metadata.name, pdb.metadata.namespace, pdb.metadata.generation = "foobar", NS, 1
    pdb.spec.selector.match_labels.update(FOO_BAR)
    if min_available is not None:
        pdb.spec.min_available = min_available
    if max_unavailable is not None:
        pdb.spec.max_unavailable = max_unavailable
    return pdb


def new_pod(name: str, *, ready: bool = True, labels: dict[str, str] | None = None) -> core_pb2.Pod:
    pod = core_pb2.Pod()
    pod.metadata.name, pod.metadata.namespace = name, NS
    pod.metadata.uid = f"pod-{next(_uids)}"
    pod.metadata.labels.update(labels or FOO_BAR)
    pod.status.phase = "Running"
    if ready:
        pod.status.conditions.add(type="Ready", status="True")
    return pod


def owned_by(obj: Any, owner: Any, kind: str, api_version: str = "apps/v1") -> None:
    del obj.metadata.owner_references[:]
    obj.metadata.owner_references.add(
        api_version=api_version,
        kind=kind,
        name=owner.metadata.name,
        uid=owner.metadata.uid,
        controller=True,
    )


def new_rs(name: str, replicas: int) -> apps_pb2.ReplicaSet:
    rs = apps_pb2.ReplicaSet()
    rs.metadata.name, rs.metadata.namespace, rs.metadata.uid = name, NS, f"rs-{next(_uids)}"
    rs.spec.replicas = replicas
    return rs


def new_deployment(name: str, replicas: int) -> apps_pb2.Deployment:
    d = apps_pb2.Deployment()
    d.metadata.name, d.metadata.namespace, d.metadata.uid = name, NS, f"d-{next(_uids)}"
    d.spec.replicas = replicas
    return d


class Sim:
    """Upstream's newFakeDisruptionController: stores, one `sync`, the status written."""

    def __init__(self, pdb: policy_pb2.PodDisruptionBudget) -> None:
        self.pdb = pdb
        self.pods: dict[str, core_pb2.Pod] = {}
        self.replica_sets: dict[str, apps_pb2.ReplicaSet] = {}
        self.deployments: dict[str, apps_pb2.Deployment] = {}
        self.stateful_sets: dict[str, apps_pb2.StatefulSet] = {}
        self.now = NOW
        self.recheck: float | None = None

    def add(self, *objs: Any) -> None:
        for o in objs:
            store = {
                core_pb2.Pod: self.pods,
                apps_pb2.ReplicaSet: self.replica_sets,
                apps_pb2.StatefulSet: self.stateful_sets,
            }.get(type(o), self.deployments)
            store[f"{NS}/{o.metadata.name}"] = o  # type: ignore[index]

    def sync(self) -> None:
        def find(pod, ref):  # type: ignore[no-untyped-def]
            return find_scale(pod, ref, self.replica_sets, self.deployments, self.stateful_sets)

        try:
            status, self.recheck = compute_status(
                self.pdb, pods_for(self.pdb, list(self.pods.values())), find, self.now
            )
        except SyncError as e:
            status = fail_safe_status(self.pdb, e, self.now)
        if status is not None:
            self.pdb.status.CopyFrom(status)

    def verify(
        self,
        allowed: int,
        healthy: int,
        desired: int,
        expected: int,
        disrupted: dict[str, str] | None = None,
    ) -> None:
        """VerifyPdbStatus(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods, disruptedPods)."""
        st = self.pdb.status
        got = (
            st.disruptions_allowed,
            st.current_healthy,
            st.desired_healthy,
            st.expected_pods,
            dict(st.disrupted_pods),
        )
        assert got == (allowed, healthy, desired, expected, disrupted or {})

    def condition(self) -> tuple[str, str]:
        c = next(c for c in self.pdb.status.conditions if c.type == "DisruptionAllowed")
        return c.status, c.reason


def test_empty_selector_selects_no_pods() -> None:
    """TestNoSelector."""
    pdb = new_pdb(min_available="3")
    pdb.spec.selector.Clear()
    pdb.spec.selector.SetInParent()
    sim = Sim(pdb)
    sim.sync()
    sim.verify(0, 0, 3, 0)
    sim.add(new_pod("yo-yo-yo"))
    sim.sync()
    sim.verify(0, 0, 3, 0)


def test_integer_min_available_counts_ready_pods_and_unready_pod_blocks() -> None:
    """TestUnavailable."""
    sim = Sim(new_pdb(min_available="3"))
    sim.sync()
    pods = []
    for i in range(4):
        sim.verify(0, i, 3, i)
        pods.append(new_pod(f"yo-yo-yo {i}"))
        sim.add(pods[-1])
        sim.sync()
    sim.verify(1, 4, 3, 4)
    assert sim.condition() == ("True", "SufficientPods")
    del pods[0].status.conditions[:]
    sim.sync()
    sim.verify(0, 3, 3, 4)
    assert sim.condition() == ("False", "InsufficientPods")


@pytest.mark.parametrize(
    "spec",
    [{"max_unavailable": "1"}, {"min_available": "28%"}],
    ids=["TestIntegerMaxUnavailable", "TestNakedPod"],
)
def test_scale_based_budget_allows_nothing_for_pods_without_controller(
    spec: dict[str, str],
) -> None:
    sim = Sim(new_pdb(**spec))
    sim.sync()
    assert sim.pdb.status.disruptions_allowed == 0  # no pods
    sim.add(new_pod("naked"))
    sim.sync()
    assert sim.pdb.status.disruptions_allowed == 0
    assert sim.condition() != (
        "False",
        "SyncFailed",
    )  # unmanaged pods are no error (TestStatusForUnmanagedPod)


@pytest.mark.parametrize(
    ("max_unavailable", "before", "after"),
    [("2", (0, 1, 5, 7), (0, 1, 3, 5)), ("30%", (0, 1, 4, 7), (0, 1, 2, 3))],
    ids=["TestIntegerMaxUnavailableWithScaling", "TestPercentageMaxUnavailableWithScaling"],
)
def test_max_unavailable_follows_the_controller_scale(
    max_unavailable: str, before: tuple[int, ...], after: tuple[int, ...]
) -> None:
    sim = Sim(new_pdb(max_unavailable=max_unavailable))
    rs = new_rs("rs", 7)
    pod = new_pod("pod")
    owned_by(pod, rs, "ReplicaSet")
    sim.add(rs, pod)
    sim.sync()
    sim.verify(*before)
    rs.spec.replicas = 5 if max_unavailable == "2" else 3
    sim.sync()
    sim.verify(*after)


def test_pod_of_an_unsupported_controller_fails_safe() -> None:
    """TestUnsupportedControllerPod: the scale cannot be found: SyncFailed, nothing allowed."""
    sim = Sim(new_pdb(min_available="28%"))
    sim.sync()
    pod = new_pod("naked")
    pod.metadata.owner_references.add(
        api_version="apps.test.io/v1",
        kind="TestWorkload",
        name="fake-controller",
        uid="b7329742",
        controller=True,
    )
    sim.add(pod)
    sim.sync()
    assert sim.pdb.status.disruptions_allowed == 0
    assert sim.condition() == ("False", "SyncFailed")
    assert "found no controllers for pod" in sim.pdb.status.conditions[0].message


def test_percentage_min_available_uses_the_replica_set_scale() -> None:
    """TestReplicaSet."""
    sim = Sim(new_pdb(min_available="20%"))
    rs = new_rs("rs", 10)
    pod = new_pod("pod")
    owned_by(pod, rs, "ReplicaSet")
    sim.add(rs, pod)
    sim.sync()
    sim.verify(0, 1, 2, 10)


def test_pods_gaining_a_controller_allow_disruption() -> None:
    """TestMultipleControllers (with ReplicaSets)."""
    sim = Sim(new_pdb(min_available="1%"))
    pods = [new_pod(f"pod {i}") for i in range(2)]
    sim.add(*pods)
    sim.sync()
    assert sim.pdb.status.disruptions_allowed == 0
    rs = new_rs("rs 1", 1)
    for p in pods:
        owned_by(p, rs, "ReplicaSet")
    sim.add(rs)
    sim.sync()
    assert sim.pdb.status.disruptions_allowed == 1


def test_percentage_rounds_up_and_a_rogue_pod_counts_as_healthy() -> None:
    """TestReplicationController / TestStatefulSetController (with a ReplicaSet)."""
    labels = {"foo": "bar", "baz": "quux"}
    sim = Sim(new_pdb(min_available="34%"))
    rs = new_rs("rs", 3)
    sim.add(rs)
    sim.sync()
    sim.verify(0, 0, 0, 0)
    for i in range(3):
        pod = new_pod(f"foobar {i}", labels=labels)
        owned_by(pod, rs, "ReplicaSet")
        sim.add(pod)
        sim.sync()
        sim.verify(*((0, i + 1, 2, 3) if i < 2 else (1, 3, 2, 3)))
    sim.add(new_pod("rogue"))
    sim.sync()
    assert sim.pdb.status.disruptions_allowed == 2


@pytest.mark.parametrize(
    ("budget", "verified"),
    [
        ({"min_available": "34%"}, [(0, 1, 2, 3), (0, 2, 2, 3), (1, 3, 2, 3)]),
        # the docs' zookeeper.yaml: maxUnavailable 1 over a StatefulSet of 3
        ({"max_unavailable": "1"}, [(0, 1, 2, 3), (0, 2, 2, 3), (1, 3, 2, 3)]),
    ],
)
def test_a_stateful_set_gives_its_scale(
    budget: dict[str, str], verified: list[tuple[int, int, int, int]]
) -> None:
    """TestStatefulSetController: the pods' StatefulSet is their controller, its
    spec.replicas the expected count (it was "found no controllers for pod")."""
    sim = Sim(new_pdb(**budget))
    ss = apps_pb2.StatefulSet()
    ss.metadata.name, ss.metadata.namespace, ss.metadata.uid = "ss", NS, f"ss-{next(_uids)}"
    ss.spec.replicas = 3
    sim.add(ss)
    for i, want in enumerate(verified):
        pod = new_pod(f"ss-{i}")
        owned_by(pod, ss, "StatefulSet")
        sim.add(pod)
        sim.sync()
        sim.verify(*want)


def test_two_controllers_add_their_scales() -> None:
    """TestTwoControllers: a bare ReplicaSet and a Deployment's ReplicaSet, 28% of 22."""
    rs_labels = {"foo": "bar", "baz": "quux"}
    d_labels = {"foo": "bar", "baz": "quuux"}
    size, minimum_one, minimum_two = 11, 4, 7
    sim = Sim(new_pdb(min_available="28%"))
    rs1 = new_rs("rs1", size)
    sim.add(rs1)
    sim.sync()
    sim.verify(0, 0, 0, 0)
    pods: list[core_pb2.Pod] = []
    unavailable = size - minimum_one - 1
    for i in range(1, size + 1):
        pod = new_pod(f"quux {i}", labels=rs_labels, ready=i > unavailable)
        owned_by(pod, rs1, "ReplicaSet")
        pods.append(pod)
        sim.add(pod)
        sim.sync()
        if i <= unavailable:
            sim.verify(0, 0, minimum_one, size)
        elif i - unavailable <= minimum_one:
            sim.verify(0, i - unavailable, minimum_one, size)
        else:
            sim.verify(1, i - unavailable, minimum_one, size)
    d = new_deployment("d", size)
    rs2 = new_rs("rs2", size)
    owned_by(rs2, d, "Deployment")
    sim.add(d, rs2)
    sim.sync()
    sim.verify(1, minimum_one + 1, minimum_one, size)
    unavailable = 2 * size - (minimum_two + 2) - unavailable
    for i in range(1, size + 1):
        pod = new_pod(f"quuux {i}", labels=d_labels, ready=i > unavailable)
        owned_by(pod, rs2, "ReplicaSet")
        pods.append(pod)
        sim.add(pod)
        sim.sync()
        if i <= unavailable:
            sim.verify(0, minimum_one + 1, minimum_two, 2 * size)
        elif i - unavailable <= minimum_two - (minimum_one + 1):
            sim.verify(0, minimum_one + 1 + i - unavailable, minimum_two, 2 * size)
        else:
            sim.verify(
                i - unavailable - (minimum_two - (minimum_one + 1)),
                minimum_one + 1 + i - unavailable,
                minimum_two,
                2 * size,
            )
    sim.verify(2, 2 + minimum_two, minimum_two, 2 * size)
    del pods[size - 1].status.conditions[:]
    sim.sync()
    sim.verify(1, 1 + minimum_two, minimum_two, 2 * size)
    del pods[size - 2].status.conditions[:]
    sim.sync()
    sim.verify(0, minimum_two, minimum_two, 2 * size)
    pods[size - 1].status.conditions.add(type="Ready", status="True")
    sim.sync()
    sim.verify(1, 1 + minimum_two, minimum_two, 2 * size)


def test_disrupted_pods_expire_after_the_deletion_timeout() -> None:
    """TestUpdateDisruptedPods: an entry goes when its pod is terminating, deleted, or was
    not deleted within DELETION_TIMEOUT; the rest stay and keep their pods out of
    currentHealthy; the budget is synced again when the next entry expires."""
    pdb = new_pdb(min_available="1")
    pdb.status.disrupted_pods.update(
        {
            "p1": rfc3339(NOW),
            "p2": rfc3339(NOW - 180),
            "p3": rfc3339(NOW - 60),
            "notthere": rfc3339(NOW),
        }
    )
    sim = Sim(pdb)
    p1 = new_pod("p1")
    p1.metadata.deletion_timestamp = rfc3339(NOW)
    sim.add(p1, new_pod("p2"), new_pod("p3"))
    sim.sync()
    sim.verify(0, 1, 1, 3, {"p3": rfc3339(NOW - 60)})
    assert sim.recheck == NOW - 60 + DELETION_TIMEOUT
    sim.now = NOW + 61  # p3's entry has expired: it counts again
    sim.sync()
    sim.verify(1, 2, 1, 3)


@pytest.mark.parametrize(
    "selector",
    [
        {"match_labels": {"k8s.io/too/many/slashes": "value"}},
        {"match_expressions": [{"key": "foo", "operator": "illegal", "values": ["bar"]}]},
    ],
    ids=["illegal value key", "illegal operator"],
)
def test_invalid_selector_fails_safe(selector: dict[str, Any]) -> None:
    """TestInvalidSelectors: the status stays zero (DisruptionAllowed False, SyncFailed)."""
    pdb = new_pdb(min_available="3")
    pdb.spec.selector.Clear()
    pdb.spec.selector.match_labels.update(selector.get("match_labels", {}))
    for e in selector.get("match_expressions", []):
        pdb.spec.selector.match_expressions.add(**e)
    sim = Sim(pdb)
    sim.add(new_pod("p"))
    sim.sync()
    sim.verify(0, 0, 0, 0)
    assert sim.condition() == ("False", "SyncFailed")


def test_status_records_the_observed_generation() -> None:
    pdb = new_pdb(min_available="1")
    pdb.metadata.generation = 3
    sim = Sim(pdb)
    sim.add(new_pod("a"), new_pod("b"))
    sim.sync()
    assert sim.pdb.status.observed_generation == 3
    assert sim.pdb.status.conditions[0].observed_generation == 3


@pytest.mark.parametrize(
    ("rs_api", "rs_kind", "d_api", "d_kind", "want"),
    [
        ("apps/v1", "ReplicaSet", None, None, 10),
        ("invalid/v1", "ReplicaSet", None, None, None),
        ("apps/v1", "ReplicaSet", "extensions/v1", "Deployment", 10),
        ("invalid/v1", "ReplicaSet", "apps/v1", "Deployment", None),
        ("apps/v1", "InvalidKind", "apps/v1", "Deployment", None),
        ("extensions/v1", "ReplicaSet", "deployment/v1", "Deployment", None),
        ("apps/v1", "ReplicaSet", "extensions/v1", "InvalidKind", 5),
    ],
    ids=[
        "replicaset controller with apps group",
        "replicaset controller with invalid group",
        "deployment: happy path",
        "deployment: invalid rs apiVersion",
        "deployment: invalid rs kind",
        "deployment: invalid deployment apiVersion",
        "deployment: invalid deployment kind (the ReplicaSet's own scale)",
    ],
)
def test_finders(
    rs_api: str, rs_kind: str, d_api: str | None, d_kind: str | None, want: int | None
) -> None:
    """TestBasicFinderFunctions and TestDeploymentFinderFunction (ReplicaSet and Deployment)."""
    d = new_deployment("d", 10)
    rs = new_rs("rs", 10 if d_api is None else 5)
    if d_api is not None:
        owned_by(rs, d, d_kind or "", d_api)
    pod = new_pod("p")
    owned_by(pod, rs, rs_kind, rs_api)
    found = find_scale(pod, pod.metadata.owner_references[0], {f"{NS}/rs": rs}, {f"{NS}/d": d})
    assert (found[1] if found else None) == want


# ---------------------------------------------------------------- against an apiserver


async def test_controller_keeps_the_budget_evictions_spend(cluster: ControllerCluster) -> None:
    controller = DisruptionController(cluster.client, cluster.informers)
    pdbs = cluster.informers.get(BY_KIND["PodDisruptionBudget"])
    await cluster.start(controller)
    await cluster.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    for name in ("a", "b"):
        pod = await cluster.pod(name, {"app": "web"})
        await cluster.set_status(pod, ready=True)

    def status() -> tuple[int, int, int, int]:
        pdb = pdbs.store.get(f"{NS}/web")
        st = pdb.status if pdb is not None else policy_pb2.PodDisruptionBudgetStatus()  # type: ignore[attr-defined]
        return st.disruptions_allowed, st.current_healthy, st.desired_healthy, st.expected_pods

    await cluster.until(lambda: status() == (1, 2, 1, 2))
    await cluster.client.evict("a", NS)
    await cluster.until(lambda: status() == (0, 1, 1, 1))
    with pytest.raises(
        TooManyRequestsError,
        match="The disruption budget web needs 1 healthy pods and has 1 currently",
    ):
        await cluster.client.evict("b", NS)
    pdb = pdbs.store[f"{NS}/web"]
    assert dict(pdb.status.disrupted_pods) == {}  # type: ignore[attr-defined]  # "a" is gone
    assert [(c.type, c.status, c.reason) for c in pdb.status.conditions] == [  # type: ignore[attr-defined]
        ("DisruptionAllowed", "False", "InsufficientPods")
    ]
