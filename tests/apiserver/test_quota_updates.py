"""ResourceQuota admission of updates and of services and claims (services/apiserver/quota.py),
with the cases of upstream's plugin/pkg/admission/resourcequota/admission_test.go
(TestAdmitHandlesOldObjects, TestAdmitHandlesNegativePVCUpdates, TestAdmitHandlesPVCUpdates,
TestAdmitHandlesCreatingUpdates, TestAdmitBelowServiceNodePortQuota-like creates), then the
path through the apiserver: a service turned NodePort or LoadBalancer and a claim grown are
charged (403 and nothing written past the quota), and a create whose allocation is retried
reserves its usage once."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery.errors import ForbiddenError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import batch as batch_mod
from services.apiserver import create as create_mod
from services.apiserver.quota import check_request
from services.apiserver.registry import ApiServer
from services.apiserver.serviceips import allocation_keys
from services.storage import Put, Storage
from tests.builders import persistent_volume_claim, resource_quota, service

NOW = 1_800_000_000.0
SERVICES = BY_KIND["Service"]
CLAIMS = BY_KIND["PersistentVolumeClaim"]
QUOTAS = BY_KIND["ResourceQuota"]
SERVICE_HARD = {"services": "10", "services.loadbalancers": "10", "services.nodeports": "10"}


def _stored(obj: Any, version: str = "1") -> Any:
    obj.metadata.resource_version = version
    return obj


# ------------------------------------------------------------------ CheckRequest on update

UPDATES = [
    # TestAdmitHandlesOldObjects: LoadBalancer -> NodePort with one port; the load balancer
    # is not given back (no negative usage), the node port is charged.
    (
        "a service turned NodePort is charged its node port",
        SERVICES,
        _stored(service("service", "test", type_="LoadBalancer")),
        service("service", "test", type_="NodePort", ports=[{"port": 1234}]),
        SERVICE_HARD,
        {"services": "1", "services.loadbalancers": "1", "services.nodeports": "0"},
        {"services": "1", "services.loadbalancers": "1", "services.nodeports": "1"},
    ),
    # TestAdmitHandlesCreatingUpdates: an old object without a version is a create.
    (
        "an update whose old object has no version is billed as a create",
        SERVICES,
        service("service", "test", type_="LoadBalancer"),
        service("service", "test", type_="NodePort", ports=[{"port": 1234}]),
        SERVICE_HARD,
        {"services": "1", "services.loadbalancers": "1", "services.nodeports": "0"},
        {"services": "2", "services.loadbalancers": "1", "services.nodeports": "1"},
    ),
    # TestAdmitHandlesPVCUpdates: 10Gi -> 15Gi charges 5Gi.
    (
        "a claim grown is charged the difference",
        CLAIMS,
        _stored(persistent_volume_claim("pvc-to-update", "10Gi", namespace="test")),
        persistent_volume_claim("pvc-to-update", "15Gi", namespace="test"),
        {"persistentvolumeclaims": "3", "requests.storage": "100Gi"},
        {"persistentvolumeclaims": "1", "requests.storage": "10Gi"},
        {"persistentvolumeclaims": "1", "requests.storage": "15Gi"},
    ),
    # TestAdmitHandlesNegativePVCUpdates: a shrink writes no quota.
    (
        "a claim shrunk changes no quota",
        CLAIMS,
        _stored(persistent_volume_claim("pvc-to-update", "10Gi", namespace="test")),
        persistent_volume_claim("pvc-to-update", "5Gi", namespace="test"),
        {"persistentvolumeclaims": "3", "requests.storage": "100Gi"},
        {"persistentvolumeclaims": "1", "requests.storage": "10Gi"},
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "kind", "old", "new", "hard", "used", "want"), UPDATES, ids=[c[0] for c in UPDATES]
)
def test_an_update_is_charged_what_it_adds(
    name: str,
    kind: Any,
    old: Any,
    new: Any,
    hard: dict[str, str],
    used: dict[str, str],
    want: dict[str, str] | None,
) -> None:
    rq = resource_quota("quota", "test", hard=hard, used=used)
    changed = check_request([rq], kind, new, NOW, old)
    assert [dict(c.status.used) for c in changed] == ([want] if want is not None else [])


def test_a_service_turned_load_balancer_past_the_quota_is_refused() -> None:
    rq = resource_quota(
        "quota",
        "test",
        hard={"services.loadbalancers": "1"},
        used={"services.loadbalancers": "1"},
    )
    old = _stored(service("web", "test", ports=[{"port": 80}]))
    new = service("web", "test", type_="LoadBalancer", ports=[{"port": 80}])
    with pytest.raises(ForbiddenError) as e:
        check_request([rq], SERVICES, new, NOW, old)
    assert str(e.value) == (
        'services "web" is forbidden: exceeded quota: quota, requested: services.loadbalancers=1, '
        "used: services.loadbalancers=1, limited: services.loadbalancers=1"
    )


def test_a_node_port_service_is_charged_one_node_port_per_port_on_create() -> None:
    rq = resource_quota(
        "quota", "test", hard={"services.nodeports": "2"}, used={"services.nodeports": "1"}
    )
    svc = service("web", "test", type_="NodePort", ports=[{"port": 80}, {"port": 81}])
    with pytest.raises(ForbiddenError) as e:
        check_request([rq], SERVICES, svc, NOW)
    assert "requested: services.nodeports=2, used: services.nodeports=1" in str(e.value)


# ------------------------------------------------------------------ through the apiserver


async def _take(storage: Storage, key: str) -> None:
    """Another apiserver's create takes an allocation key."""
    await storage.txn([], [Put(key, b"other/winner")])


async def _computed_quota(api: ApiServer, hard: dict[str, str], used: dict[str, str]) -> None:
    """Create a quota and write its status as the quota controller would."""
    await api.create(resource_quota("q", "default", hard=hard))
    stored = await api.get(QUOTAS, "default", "q")
    stored.status.CopyFrom(resource_quota("q", "default", hard=hard, used=used).status)  # type: ignore[attr-defined]
    await api.update_status(stored)


async def _used(api: ApiServer) -> dict[str, str]:
    rq = await api.get(QUOTAS, "default", "q")
    return dict(rq.status.used)  # type: ignore[attr-defined]


async def test_a_service_turned_node_port_is_charged_and_refused_past_the_quota(
    api: ApiServer,
) -> None:
    await _computed_quota(
        api,
        {"services": "5", "services.nodeports": "1"},
        {"services": "0", "services.nodeports": "0"},
    )
    for name in ("a", "b"):
        await api.create(service(name, ports=[{"port": 80}]))
    assert await _used(api) == {"services": "2", "services.nodeports": "0"}
    a = await api.get(SERVICES, "default", "a")
    a.spec.type = "NodePort"  # type: ignore[attr-defined]
    await api.update(a)
    assert await _used(api) == {"services": "2", "services.nodeports": "1"}
    b = await api.get(SERVICES, "default", "b")
    b.spec.type = "NodePort"  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError) as e:
        await api.update(b)
    assert str(e.value) == (
        'services "b" is forbidden: exceeded quota: q, requested: services.nodeports=1, '
        "used: services.nodeports=1, limited: services.nodeports=1"
    )
    stored = await api.get(SERVICES, "default", "b")
    assert stored.spec.type == "ClusterIP"  # type: ignore[attr-defined]
    assert not any(p.node_port for p in stored.spec.ports)  # type: ignore[attr-defined]
    assert await _used(api) == {"services": "2", "services.nodeports": "1"}


async def test_a_claim_grown_past_the_quota_is_refused(api: ApiServer) -> None:
    await _computed_quota(api, {"requests.storage": "10Gi"}, {"requests.storage": "0"})
    await api.create(persistent_volume_claim("data", "4Gi"))
    claim = await api.get(CLAIMS, "default", "data")
    claim.spec.resources.requests["storage"] = "8Gi"  # type: ignore[attr-defined]
    await api.update(claim)
    assert await _used(api) == {"requests.storage": "8Gi"}
    claim = await api.get(CLAIMS, "default", "data")
    claim.spec.resources.requests["storage"] = "11Gi"  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError) as e:
        await api.update(claim)
    assert str(e.value) == (
        'persistentvolumeclaims "data" is forbidden: exceeded quota: q, requested: '
        "requests.storage=3Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi"
    )
    stored = await api.get(CLAIMS, "default", "data")
    assert stored.spec.resources.requests["storage"] == "8Gi"  # type: ignore[attr-defined]


async def test_a_dry_run_update_is_checked_but_reserves_nothing(api: ApiServer) -> None:
    await _computed_quota(api, {"services.nodeports": "1"}, {"services.nodeports": "0"})
    await api.create(service("a", ports=[{"port": 80}]))
    a = await api.get(SERVICES, "default", "a")
    a.spec.type = "NodePort"  # type: ignore[attr-defined]
    await api.update(a, dry_run=True)
    assert await _used(api) == {"services.nodeports": "0"}


async def test_a_create_that_loses_its_cluster_ip_is_retried_and_charged_once(
    api: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another create takes the picked cluster IP between the pick and the txn: the create
    picks again and succeeds, and the quota is reserved once."""
    await _computed_quota(api, {"services": "5"}, {"services": "0"})
    real = create_mod.create_one
    stolen: list[str] = []

    async def racing(store: Any, kind: Any, obj: Any, guard: Any) -> Any:
        if not stolen:
            key = allocation_keys(obj)[0]
            await _take(store.storage, key)
            stolen.append(key)
        return await real(store, kind, obj, guard)

    monkeypatch.setattr(create_mod, "create_one", racing)
    created = await api.create(service("a", ports=[{"port": 80}]))
    assert stolen and not stolen[0].endswith(created.spec.cluster_ip)  # type: ignore[attr-defined]
    assert await _used(api) == {"services": "1"}


async def test_a_batch_create_that_loses_its_cluster_ip_is_charged_once(
    api: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk's txn fails on the IP taken in between; the item is created alone, its
    IP picked again, and its quota (reserved when the batch admitted it) not again."""
    await _computed_quota(api, {"services": "5"}, {"services": "0"})
    real = batch_mod.create_txn
    stolen: list[str] = []

    def racing(store: Any, kind: Any, obj: Any, guard: Any) -> Any:
        if not stolen:
            stolen.append(allocation_keys(obj)[0])
        return real(store, kind, obj, guard)

    async def steal_then_txn(*args: Any, **kw: Any) -> Any:
        if stolen and await api.store.storage.get(stolen[0]) is None:
            await _take(api.store.storage, stolen[0])
        return await original_txn(*args, **kw)

    original_txn = api.store.txn
    monkeypatch.setattr(batch_mod, "create_txn", racing)
    monkeypatch.setattr(api.store, "txn", steal_then_txn)
    results = await api.batch_create([service("a", ports=[{"port": 80}])])
    assert results[0].error is None, results[0].error
    assert stolen and not stolen[0].endswith(results[0].obj.spec.cluster_ip)  # type: ignore[union-attr]
    assert await _used(api) == {"services": "1"}
