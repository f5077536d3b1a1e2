"""The pods/eviction subresource against PodDisruptionBudgets, ported from upstream's
pkg/registry/core/pod/storage/eviction_test.go (TestEviction, TestEvictionIgnorePDB,
TestEvictionPDBStatus, TestEvictionDryRun), on the memory storage and real etcd.

Each case: a pod in a phase (Ready or not, maybe terminating), zero or more budgets with a
status; the eviction either deletes the pod (and, when the budget was spent, writes its
status in the same txn) or is refused with upstream's code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from protos.kubera.v1 import core_pb2, policy_pb2
from services.api.machinery.errors import (
    ApiError,
    ConflictError,
    InternalError,
    NotFoundError,
    TooManyRequestsError,
)
from services.api.machinery.kinds import BY_KIND
from services.apiserver.eviction import MULTIPLE_BUDGETS, VIOLATION
from services.apiserver.registry import ApiServer
from tests.apiserver.conftest import obj
from tests.harness import served

POD = BY_KIND["Pod"]
PDB = BY_KIND["PodDisruptionBudget"]


async def make_pod(
    api: ApiServer,
    name: str = "foo",
    *,
    phase: str = "Running",
    ready: bool = True,
    labels: dict[str, str] | None = None,
    node: str = "n1",
    grace: int = 30,
) -> core_pb2.Pod:
    pod = await api.create(
        obj(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": labels or {"a": "true"},
                },
                "spec": {
                    "nodeName": node,
                    "terminationGracePeriodSeconds": grace,
                    "containers": [{"name": "c", "image": "i"}],
                },
            }
        )
    )
    pod.status.phase = phase  # type: ignore[attr-defined]
    pod.status.conditions.add(type="Ready", status="True" if ready else "False")  # type: ignore[attr-defined]
    return await api.update(pod, status=True)  # type: ignore[return-value]


async def make_pdb(
    api: ApiServer,
    name: str = "foo",
    *,
    allowed: int = 0,
    current: int = 0,
    desired: int = 0,
    stale: bool = False,
    policy: str = "",
    selector: dict[str, str] | None = None,
    disrupted: dict[str, str] | None = None,
) -> policy_pb2.PodDisruptionBudget:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": selector or {"a": "true"}},
        "minAvailable": 1,
    }
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    pdb = await api.create(
        obj(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "default"},
                "spec": spec,
            }
        )
    )
    st = pdb.status  # type: ignore[attr-defined]
    st.observed_generation = pdb.metadata.generation - (1 if stale else 0)  # type: ignore[attr-defined]
    st.disruptions_allowed, st.current_healthy, st.desired_healthy = allowed, current, desired
    st.expected_pods = max(current, desired)
    st.disrupted_pods.update(disrupted or {})
    return await api.update(pdb, status=True)  # type: ignore[return-value]


def eviction(name: str = "foo", **opts: Any) -> policy_pb2.Eviction:
    ev = policy_pb2.Eviction(api_version="policy/v1", kind="Eviction")
    ev.metadata.name, ev.metadata.namespace = name, "default"
    if "grace" in opts:
        ev.delete_options.grace_period_seconds = opts["grace"]
    if "rv" in opts:
        ev.delete_options.preconditions.resource_version = opts["rv"]
    if "uid" in opts:
        ev.delete_options.preconditions.uid = opts["uid"]
    if opts.get("dry_run"):
        ev.delete_options.dry_run.append("All")
    return ev


@dataclass
class Case:
    name: str
    phase: str = "Running"
    ready: bool = True
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    error: type[ApiError] | None = None
    message: str = ""
    #: The budget's disruptionsAllowed afterwards (None: not checked / no budget).
    allowed_after: int | None = None
    #: Whether the eviction recorded the pod in the budget's disruptedPods.
    recorded: bool = False


NO_BUDGET = {"allowed": 0, "current": 2, "desired": 2}
ONE_ALLOWED = {"allowed": 1, "current": 2, "desired": 1}

CASES = [
    # TestEviction
    Case(
        "running pod, matching budget with no disruptions allowed: 429 naming the budget",
        pdbs=[NO_BUDGET],
        error=TooManyRequestsError,
        message="The disruption budget foo needs 2 healthy pods and has 2 currently",
        allowed_after=0,
    ),
    Case(
        "pending pod ignores a budget with no disruptions allowed",
        phase="Pending",
        pdbs=[NO_BUDGET],
        allowed_after=0,
    ),
    Case(
        "succeeded pod ignores a budget with no disruptions allowed",
        phase="Succeeded",
        pdbs=[NO_BUDGET],
        allowed_after=0,
    ),
    Case(
        "failed pod ignores a budget with no disruptions allowed",
        phase="Failed",
        pdbs=[NO_BUDGET],
        allowed_after=0,
    ),
    Case(
        "running pod, budget with a disruption allowed: deleted and the budget spent",
        pdbs=[ONE_ALLOWED],
        allowed_after=0,
        recorded=True,
    ),
    Case(
        "budget selecting other pods does not apply",
        pdbs=[{**NO_BUDGET, "selector": {"a": "false"}}],
        allowed_after=0,
    ),
    Case("no budget at all: deleted"),
    Case(
        "more than one matching budget: 500",
        pdbs=[ONE_ALLOWED, {**ONE_ALLOWED, "name": "bar"}],
        error=InternalError,
        message=MULTIPLE_BUDGETS,
    ),
    Case(
        "budget status older than its generation: 429 still being processed",
        pdbs=[{**ONE_ALLOWED, "stale": True}],
        error=TooManyRequestsError,
        message="The disruption budget foo is still being processed by the server.",
    ),
    # TestEvictionIgnorePDB
    Case(
        "unready pod, IfHealthyBudget, budget has its healthy pods: deleted, budget not spent",
        ready=False,
        pdbs=[{"allowed": 0, "current": 2, "desired": 2}],
        allowed_after=0,
    ),
    Case(
        "unready pod, IfHealthyBudget, budget short of healthy pods: 429",
        ready=False,
        pdbs=[{"allowed": 0, "current": 1, "desired": 2}],
        error=TooManyRequestsError,
        allowed_after=0,
    ),
    Case(
        "unready pod, IfHealthyBudget, desiredHealthy 0 spends the budget",
        ready=False,
        pdbs=[{"allowed": 1, "current": 0, "desired": 0}],
        allowed_after=0,
        recorded=True,
    ),
    Case(
        "unready pod, AlwaysAllow: deleted even with no disruptions allowed",
        ready=False,
        pdbs=[{"allowed": 0, "current": 1, "desired": 2, "policy": "AlwaysAllow"}],
        allowed_after=0,
    ),
    Case(
        "ready pod, AlwaysAllow, no disruptions allowed: 429",
        pdbs=[{"allowed": 0, "current": 2, "desired": 2, "policy": "AlwaysAllow"}],
        error=TooManyRequestsError,
        allowed_after=0,
    ),
    Case(
        "negative disruptionsAllowed: forbidden",
        pdbs=[{"allowed": -1, "current": 1, "desired": 2}],
        error=ApiError,
        message="pdb disruptions allowed is negative",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_eviction(api: ApiServer, case: Case) -> None:
    await make_pod(api, phase=case.phase, ready=case.ready)
    for p in case.pdbs:
        await make_pdb(api, **p)
    if case.error is not None:
        with pytest.raises(case.error) as info:
            await api.evict(eviction())
        if case.error is TooManyRequestsError:
            assert info.value.message.startswith(VIOLATION)
        assert case.message in info.value.message
        assert await api.get_or_none(POD, "default", "foo") is not None  # pod kept
    else:
        await api.evict(eviction(grace=0))
        assert await api.get_or_none(POD, "default", "foo") is None
    if case.allowed_after is not None:
        pdb = await api.get(PDB, "default", "foo")
        assert pdb.status.disruptions_allowed == case.allowed_after  # type: ignore[attr-defined]
        assert ("foo" in pdb.status.disrupted_pods) == case.recorded  # type: ignore[attr-defined]


async def test_pod_not_found_is_not_found(api: ApiServer) -> None:
    with pytest.raises(NotFoundError, match='pods "foo" not found'):
        await api.evict(eviction())


async def test_terminating_pod_is_deleted_without_checking_budgets(api: ApiServer) -> None:
    await make_pod(api)
    await make_pdb(api, **NO_BUDGET)
    await api.delete(POD, "default", "foo", grace_period_seconds=30)
    await api.evict(eviction(grace=0))
    assert await api.get_or_none(POD, "default", "foo") is None


async def test_spent_budget_status_and_graceful_pod_are_one_write(api: ApiServer) -> None:
    """TestEvictionPDBStatus: disruptionsAllowed 1 -> 0 turns DisruptionAllowed False
    (InsufficientPods); the pod is terminating with its grace and DisruptionTarget."""
    await make_pod(api, grace=30)
    await make_pdb(api, **ONE_ALLOWED)
    pod = await api.evict(eviction())
    assert pod.metadata.deletion_timestamp and pod.metadata.deletion_grace_period_seconds == 30
    target = [c for c in pod.status.conditions if c.type == "DisruptionTarget"]
    assert [(c.status, c.reason) for c in target] == [("True", "EvictionByEvictionAPI")]
    pdb = await api.get(PDB, "default", "foo")
    st = pdb.status  # type: ignore[attr-defined]
    assert st.disruptions_allowed == 0 and "foo" in st.disrupted_pods
    cond = [(c.type, c.status, c.reason) for c in st.conditions]
    assert cond == [("DisruptionAllowed", "False", "InsufficientPods")]
    # the pod and the budget were written at the same revision: one txn
    assert pod.metadata.resource_version == pdb.metadata.resource_version


async def test_dry_run_decides_and_writes_nothing(api: ApiServer) -> None:
    await make_pod(api)
    await make_pdb(api, **ONE_ALLOWED)
    await api.evict(eviction(dry_run=True, grace=0))
    assert await api.get_or_none(POD, "default", "foo") is not None
    pdb = await api.get(PDB, "default", "foo")
    assert pdb.status.disruptions_allowed == 1  # type: ignore[attr-defined]
    await make_pdb(api, "bar", **NO_BUDGET, selector={"b": "x"})
    with pytest.raises(TooManyRequestsError):
        await make_pod(api, "blocked", labels={"b": "x"})
        await api.evict(eviction("blocked", dry_run=True))


async def test_preconditions_are_honoured(api: ApiServer) -> None:
    pod = await make_pod(api)
    with pytest.raises(ConflictError, match="Precondition failed: UID"):
        await api.evict(eviction(uid="other", grace=0))
    with pytest.raises(ConflictError, match="Precondition failed: ResourceVersion"):
        await api.evict(eviction(rv="1", grace=0))
    await api.evict(eviction(rv=pod.metadata.resource_version, uid=pod.metadata.uid, grace=0))
    assert await api.get_or_none(POD, "default", "foo") is None


async def test_budget_changed_between_read_and_write_is_decided_again(
    api: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent budget update fails the txn's compare; the retry reads the new status
    (here: no disruptions left) and refuses, instead of overspending."""
    from services.apiserver import eviction as ev_mod

    await make_pod(api)
    await make_pdb(api, **ONE_ALLOWED)
    real = ev_mod.budgets_for
    raced = False

    async def racing(store, pod):  # type: ignore[no-untyped-def]
        nonlocal raced
        found = await real(store, pod)
        if not raced:
            raced = True
            other = await api.get(PDB, "default", "foo")
            other.status.disruptions_allowed = 0  # type: ignore[attr-defined]
            await api.update(other, status=True)
        return found

    monkeypatch.setattr(ev_mod, "budgets_for", racing)
    with pytest.raises(TooManyRequestsError):
        await api.evict(eviction(grace=0))
    assert await api.get_or_none(POD, "default", "foo") is not None


async def test_eviction_errors_cross_grpc_with_their_codes(api: ApiServer) -> None:
    async with served(api) as cp:
        client = cp.client
        await make_pod(api)
        await make_pdb(api, **NO_BUDGET)
        with pytest.raises(TooManyRequestsError) as info:
            await client.evict("foo", "default")
        assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        await make_pdb(api, "bar", **ONE_ALLOWED)
        with pytest.raises(InternalError, match="more than one PodDisruptionBudget"):
            await client.evict("foo", "default")
        await api.delete(PDB, "default", "bar")
        await api.delete(PDB, "default", "foo")
        pod = await client.evict("foo", "default", grace_period_seconds=0)
        assert pod.metadata.name == "foo"  # type: ignore[attr-defined]
        with pytest.raises(NotFoundError):
            await client.evict("foo", "default")


async def test_kubelet_node_pressure_eviction_ignores_budgets(api: ApiServer) -> None:
    """Node-pressure eviction is the kubelet's (docs: it does not respect PDBs): it fails
    the pod (phase Failed, reason Evicted) and deletes it; neither write consults budgets,
    and the budget's status is left to its controller."""
    pod = await make_pod(api)
    await make_pdb(api, **NO_BUDGET)
    pod.status.phase, pod.status.reason = "Failed", "Evicted"
    await api.update(pod, status=True)
    await api.delete(POD, "default", "foo", grace_period_seconds=0)
    assert await api.get_or_none(POD, "default", "foo") is None
    pdb = await api.get(PDB, "default", "foo")
    assert pdb.status.disruptions_allowed == 0 and not pdb.status.disrupted_pods  # type: ignore[attr-defined]
