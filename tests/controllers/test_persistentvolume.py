"""The PersistentVolume controller (services/controllers/volume/persistentvolume.py).

Upstream's pkg/controller/volume/persistentvolume/binder_test.go (TestSync: one syncClaim
or syncVolume over initial volumes and claims, compared with the expected ones and
events; sets 1 to 4 and 13, TestMultiSync's 10-2), with kubera's real apiserver in place
of upstream's fake reactor: the objects are created, the controller's informers catch up,
and the sync runs once. A claimRef UID of "=" stands for the claim's own UID (the
apiserver assigns it); any other UID is foreign. Then kubera's own cases for delayed
binding, the hollow provisioner and reclaiming (after upstream's provisioning_test.go,
delete_test.go and recycle_test.go), and a run of the controller with the protection
controllers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, storage_pb2
from services.api.helpers.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
)
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.controllers.volume.persistentvolume import PersistentVolumeController
from services.controllers.volume.protection import PVCProtectionController, PVProtectionController
from tests.builders import MakePod, persistent_volume, persistent_volume_claim, storage_class
from tests.controllers.conftest import NS, ControllerCluster

PVS, PVCS, EVENTS = BY_KIND["PersistentVolume"], BY_KIND["PersistentVolumeClaim"], BY_KIND["Event"]
BC, BIND = "bc", "bind"  # annBoundByController, annBindCompleted
_ANNS = {BC: ANN_BOUND_BY_CONTROLLER, BIND: ANN_BIND_COMPLETED}
LABELS = {"foo": "true", "bar": "false"}


@dataclass
class V:
    """newVolume(name, size, uid, claim, phase, Retain, annotations...)."""

    name: str
    size: str
    uid: str = ""
    claim: str = ""
    phase: str = "Pending"
    anns: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    cls: str = ""
    policy: str = "Retain"


@dataclass
class C:
    """newClaim(name, size, volumeName, phase, annotations...)."""

    name: str
    size: str
    volume: str = ""
    phase: str = "Pending"
    anns: tuple[str, ...] = ()
    selector: dict[str, str] | None = None
    cls: str | None = None


def v(
    name: str,
    size: str,
    uid: str = "",
    claim: str = "",
    phase: str = "Pending",
    *anns: str,
    **kw: Any,
) -> V:
    return V(name, size, uid, claim, phase, anns, **kw)


def c(name: str, size: str, volume: str = "", phase: str = "Pending", *anns: str, **kw: Any) -> C:
    return C(name, size, volume, phase, anns, **kw)


@dataclass
class Case:
    name: str
    volumes: list[V]
    want_volumes: list[V]
    claims: list[C]
    want_claims: list[C]
    events: list[str]
    sync: str  # "claim" or "volume": the first claim / volume is synced once
    error: bool = False


CASES = [
    # [1] The user did not care which volume they get.
    Case("1-1 successful bind", [v("volume1-1", "1Gi", phase="Available")], [v("volume1-1", "1Gi", "=", "claim1-1", "Bound", BC)],
         [c("claim1-1", "1Gi")], [c("claim1-1", "1Gi", "volume1-1", "Bound", BC, BIND)], [], "claim"),
    Case("1-2 noop", [v("volume1-2", "1Gi")], [v("volume1-2", "1Gi")],
         [c("claim1-2", "10Gi")], [c("claim1-2", "10Gi")], ["Normal FailedBinding"], "claim"),
    Case("1-3 reset to Pending", [v("volume1-3", "1Gi")], [v("volume1-3", "1Gi")],
         [c("claim1-3", "10Gi", "", "Bound")], [c("claim1-3", "10Gi")], ["Normal FailedBinding"], "claim"),
    Case("1-4 smallest volume", [v("volume1-4-1", "10Gi", phase="Available"), v("volume1-4-2", "1Gi", phase="Available")],
         [v("volume1-4-1", "10Gi", phase="Available"), v("volume1-4-2", "1Gi", "=", "claim1-4", "Bound", BC)],
         [c("claim1-4", "1Gi")], [c("claim1-4", "1Gi", "volume1-4-2", "Bound", BC, BIND)], [], "claim"),
    Case("1-5 prebound volume by name", [v("volume1-5-1", "10Gi", "", "claim1-5"), v("volume1-5-2", "1Gi")],
         [v("volume1-5-1", "10Gi", "=", "claim1-5", "Bound"), v("volume1-5-2", "1Gi")],
         [c("claim1-5", "1Gi")], [c("claim1-5", "1Gi", "volume1-5-1", "Bound", BC, BIND)], [], "claim"),
    Case("1-6 prebound volume by UID", [v("volume1-6-1", "10Gi", "=", "claim1-6"), v("volume1-6-2", "1Gi")],
         [v("volume1-6-1", "10Gi", "=", "claim1-6", "Bound"), v("volume1-6-2", "1Gi")],
         [c("claim1-6", "1Gi")], [c("claim1-6", "1Gi", "volume1-6-1", "Bound", BC, BIND)], [], "claim"),
    Case("1-7 prebound volume to different claim", [v("volume1-7", "10Gi", "uid1-777", "claim1-7")],
         [v("volume1-7", "10Gi", "uid1-777", "claim1-7")],
         [c("claim1-7", "1Gi")], [c("claim1-7", "1Gi")], ["Normal FailedBinding"], "claim"),
    Case("1-8 complete bind after crash - PV bound", [v("volume1-8", "1Gi", "=", "claim1-8", "Pending", BC)],
         [v("volume1-8", "1Gi", "=", "claim1-8", "Bound", BC)],
         [c("claim1-8", "1Gi")], [c("claim1-8", "1Gi", "volume1-8", "Bound", BC, BIND)], [], "claim"),
    Case("1-9 complete bind after crash - PV status saved", [v("volume1-9", "1Gi", "=", "claim1-9", "Bound", BC)],
         [v("volume1-9", "1Gi", "=", "claim1-9", "Bound", BC)],
         [c("claim1-9", "1Gi")], [c("claim1-9", "1Gi", "volume1-9", "Bound", BC, BIND)], [], "claim"),
    Case("1-10 complete bind after crash - PVC bound", [v("volume1-10", "1Gi", "=", "claim1-10", "Bound", BC)],
         [v("volume1-10", "1Gi", "=", "claim1-10", "Bound", BC)],
         [c("claim1-10", "1Gi", "volume1-10", "Pending", BC, BIND)],
         [c("claim1-10", "1Gi", "volume1-10", "Bound", BC, BIND)], [], "claim"),
    Case("1-11 bind when selector matches", [v("volume1-1", "1Gi", phase="Available", labels=LABELS)],
         [v("volume1-1", "1Gi", "=", "claim1-1", "Bound", BC, labels=LABELS)],
         [c("claim1-1", "1Gi", selector=LABELS)],
         [c("claim1-1", "1Gi", "volume1-1", "Bound", BC, BIND, selector=LABELS)], [], "claim"),
    Case("1-12 do not bind when selector does not match", [v("volume1-1", "1Gi")], [v("volume1-1", "1Gi")],
         [c("claim1-1", "1Gi", selector=LABELS)], [c("claim1-1", "1Gi", selector=LABELS)],
         ["Normal FailedBinding"], "claim"),
    # [2] The user asked for a specific volume.
    Case("2-1 claim prebound to non-existing volume - noop", [], [],
         [c("claim2-1", "10Gi", "volume2-1")], [c("claim2-1", "10Gi", "volume2-1")], [], "claim"),
    Case("2-2 claim prebound to non-existing volume - reset status", [], [],
         [c("claim2-2", "10Gi", "volume2-2", "Bound")], [c("claim2-2", "10Gi", "volume2-2")], [], "claim"),
    Case("2-3 claim prebound to unbound volume", [v("volume2-3", "1Gi")],
         [v("volume2-3", "1Gi", "=", "claim2-3", "Bound", BC)],
         [c("claim2-3", "1Gi", "volume2-3")], [c("claim2-3", "1Gi", "volume2-3", "Bound", BIND)], [], "claim"),
    Case("2-4 claim prebound to prebound volume by name", [v("volume2-4", "1Gi", "", "claim2-4")],
         [v("volume2-4", "1Gi", "=", "claim2-4", "Bound")],
         [c("claim2-4", "1Gi", "volume2-4")], [c("claim2-4", "1Gi", "volume2-4", "Bound", BIND)], [], "claim"),
    Case("2-5 claim prebound to prebound volume by UID", [v("volume2-5", "1Gi", "=", "claim2-5")],
         [v("volume2-5", "1Gi", "=", "claim2-5", "Bound")],
         [c("claim2-5", "1Gi", "volume2-5")], [c("claim2-5", "1Gi", "volume2-5", "Bound", BIND)], [], "claim"),
    Case("2-6 claim prebound to already bound volume", [v("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", "Bound")],
         [v("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", "Bound")],
         [c("claim2-6", "1Gi", "volume2-6", "Bound")], [c("claim2-6", "1Gi", "volume2-6")],
         ["Warning FailedBinding"], "claim"),
    Case("2-7 claim bound by controller to already bound volume",
         [v("volume2-7", "1Gi", "uid2-7_1", "claim2-7_1", "Bound")],
         [v("volume2-7", "1Gi", "uid2-7_1", "claim2-7_1", "Bound")],
         [c("claim2-7", "1Gi", "volume2-7", "Bound", BC)], [c("claim2-7", "1Gi", "volume2-7", "Bound", BC)],
         [], "claim", error=True),
    Case("2-8 claim prebound to unbound volume that does not match the selector", [v("volume2-3", "1Gi")],
         [v("volume2-3", "1Gi", "=", "claim2-3", "Bound", BC)],
         [c("claim2-3", "1Gi", "volume2-3", selector=LABELS)],
         [c("claim2-3", "1Gi", "volume2-3", "Bound", BIND, selector=LABELS)], [], "claim"),
    # [3] Syncing a bound claim.
    Case("3-1 bound claim with missing VolumeName", [], [],
         [c("claim3-1", "10Gi", "", "Bound", BC, BIND)], [c("claim3-1", "10Gi", "", "Lost", BC, BIND)],
         ["Warning ClaimLost"], "claim"),
    Case("3-2 bound claim with missing volume", [], [],
         [c("claim3-2", "10Gi", "volume3-2", "Bound", BC, BIND)],
         [c("claim3-2", "10Gi", "volume3-2", "Lost", BC, BIND)], ["Warning ClaimLost"], "claim"),
    Case("3-3 bound claim with unbound volume", [v("volume3-3", "10Gi")],
         [v("volume3-3", "10Gi", "=", "claim3-3", "Bound", BC)],
         [c("claim3-3", "10Gi", "volume3-3", "Pending", BC, BIND)],
         [c("claim3-3", "10Gi", "volume3-3", "Bound", BC, BIND)], [], "claim"),
    Case("3-4 bound claim with prebound volume", [v("volume3-4", "10Gi", "claim3-4-x", "claim3-4")],
         [v("volume3-4", "10Gi", "claim3-4-x", "claim3-4")],
         [c("claim3-4", "10Gi", "volume3-4", "Pending", BC, BIND)],
         [c("claim3-4", "10Gi", "volume3-4", "Lost", BC, BIND)], ["Warning ClaimMisbound"], "claim"),
    Case("3-5 bound claim with bound volume", [v("volume3-5", "10Gi", "=", "claim3-5")],
         [v("volume3-5", "10Gi", "=", "claim3-5", "Bound")],
         [c("claim3-5", "10Gi", "volume3-5", "Pending", BIND)],
         [c("claim3-5", "10Gi", "volume3-5", "Bound", BIND)], [], "claim"),
    Case("3-6 bound claim with a volume bound elsewhere", [v("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x")],
         [v("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x")],
         [c("claim3-6", "10Gi", "volume3-6", "Pending", BIND)],
         [c("claim3-6", "10Gi", "volume3-6", "Lost", BIND)], ["Warning ClaimMisbound"], "claim"),
    Case("3-7 bound claim with unbound volume where selector doesn't match", [v("volume3-3", "10Gi")],
         [v("volume3-3", "10Gi", "=", "claim3-3", "Bound", BC)],
         [c("claim3-3", "10Gi", "volume3-3", "Pending", BC, BIND, selector=LABELS)],
         [c("claim3-3", "10Gi", "volume3-3", "Bound", BC, BIND, selector=LABELS)], [], "claim"),
    # [4] syncVolume.
    Case("4-1 pending volume", [v("volume4-1", "10Gi")], [v("volume4-1", "10Gi", phase="Available")],
         [], [], [], "volume"),
    Case("4-2 pending prebound volume", [v("volume4-2", "10Gi", "", "claim4-2")],
         [v("volume4-2", "10Gi", "", "claim4-2", "Available")], [], [], [], "volume"),
    Case("4-3 bound volume with missing claim", [v("volume4-3", "10Gi", "uid4-3", "claim4-3", "Bound")],
         [v("volume4-3", "10Gi", "uid4-3", "claim4-3", "Released")], [], [], [], "volume"),
    Case("4-4 volume bound to claim with different UID", [v("volume4-4", "10Gi", "uid4-4", "claim4-4", "Bound")],
         [v("volume4-4", "10Gi", "uid4-4", "claim4-4", "Released")],
         [c("claim4-4", "10Gi", "volume4-4", "Bound", BIND)], [c("claim4-4", "10Gi", "volume4-4", "Bound", BIND)],
         [], "volume"),
    Case("4-5 volume bound by controller to unbound claim", [v("volume4-5", "10Gi", "=", "claim4-5", "Bound", BC)],
         [v("volume4-5", "10Gi", "=", "claim4-5", "Bound", BC)],
         [c("claim4-5", "10Gi")], [c("claim4-5", "10Gi")], [], "volume"),
    Case("4-5 volume bound by user to unbound claim", [v("volume4-5", "10Gi", "=", "claim4-5", "Bound")],
         [v("volume4-5", "10Gi", "=", "claim4-5", "Bound")],
         [c("claim4-5", "10Gi")], [c("claim4-5", "10Gi")], [], "volume"),
    Case("4-6 volume bound to bound claim", [v("volume4-6", "10Gi", "=", "claim4-6", "Available")],
         [v("volume4-6", "10Gi", "=", "claim4-6", "Bound")],
         [c("claim4-6", "10Gi", "volume4-6", "Bound")], [c("claim4-6", "10Gi", "volume4-6", "Bound")], [], "volume"),
    Case("4-7 volume bound by controller to claim bound somewhere else",
         [v("volume4-7", "10Gi", "=", "claim4-7", "Bound", BC)], [v("volume4-7", "10Gi", phase="Available")],
         [c("claim4-7", "10Gi", "volume4-7-x", "Bound")], [c("claim4-7", "10Gi", "volume4-7-x", "Bound")],
         [], "volume"),
    Case("4-8 volume bound by user to claim bound somewhere else",
         [v("volume4-8", "10Gi", "=", "claim4-8", "Bound")], [v("volume4-8", "10Gi", "", "claim4-8", "Available")],
         [c("claim4-8", "10Gi", "volume4-8-x", "Bound")], [c("claim4-8", "10Gi", "volume4-8-x", "Bound")],
         [], "volume"),
    # [13] Claims with a class.
    Case("13-1 binding to class", [v("volume13-1-1", "1Gi", phase="Available"), v("volume13-1-2", "10Gi", phase="Available", cls="gold")],
         [v("volume13-1-1", "1Gi", phase="Available"), v("volume13-1-2", "10Gi", "=", "claim13-1", "Bound", BC, cls="gold")],
         [c("claim13-1", "1Gi", cls="gold")], [c("claim13-1", "1Gi", "volume13-1-2", "Bound", BC, BIND, cls="gold")], [], "claim"),
    Case("13-2 binding without a class", [v("volume13-2-1", "1Gi", phase="Available", cls="gold"), v("volume13-2-2", "10Gi", phase="Available")],
         [v("volume13-2-1", "1Gi", phase="Available", cls="gold"), v("volume13-2-2", "10Gi", "=", "claim13-2", "Bound", BC)],
         [c("claim13-2", "1Gi")], [c("claim13-2", "1Gi", "volume13-2-2", "Bound", BC, BIND)], [], "claim"),
    Case("13-4 empty class", [v("volume13-4", "1Gi", phase="Available")],
         [v("volume13-4", "1Gi", "=", "claim13-4", "Bound", BC)],
         [c("claim13-4", "1Gi", cls="")], [c("claim13-4", "1Gi", "volume13-4", "Bound", BC, BIND, cls="")], [], "claim"),
    # TestMultiSync's race: two volumes bound to one claim; the one it names wins.
    Case("10-2 bind PV race", [v("volume10-2-1", "1Gi", "=", "claim10-2", "Bound", BC), v("volume10-2-2", "1Gi", "=", "claim10-2", "Bound", BC)],
         [v("volume10-2-1", "1Gi", "=", "claim10-2", "Bound", BC), v("volume10-2-2", "1Gi", phase="Available")],
         [c("claim10-2", "1Gi", "volume10-2-1", "Bound", BC, BIND)], [c("claim10-2", "1Gi", "volume10-2-1", "Bound", BC, BIND)],
         [], "volume-last"),
]  # fmt: skip


def _claim_obj(x: C) -> storage_pb2.PersistentVolumeClaim:
    spec: dict[str, Any] = {}
    if x.volume:
        spec["volumeName"] = x.volume
    if x.selector is not None:
        spec["selector"] = {"matchLabels": x.selector}
    if x.cls is not None:
        spec["storageClassName"] = x.cls
    anns = {_ANNS[a]: "yes" for a in x.anns}
    return persistent_volume_claim(
        x.name, x.size, namespace=NS, metadata={"annotations": anns}, **spec
    )


async def _setup(cluster: ControllerCluster, case: Case) -> dict[str, str]:
    uids: dict[str, str] = {}
    for x in case.claims:
        made: Any = await cluster.client.create(_claim_obj(x))
        uids[x.name] = made.metadata.uid
        if x.phase != "Pending":
            made.status.phase = x.phase
            await cluster.client.update_status(made)
    for y in case.volumes:
        spec: dict[str, Any] = {"persistentVolumeReclaimPolicy": y.policy}
        if y.claim:
            uid = uids.get(y.claim, "") if y.uid == "=" else y.uid
            spec["claimRef"] = {"name": y.claim, "namespace": NS, **({"uid": uid} if uid else {})}
        if y.cls:
            spec["storageClassName"] = y.cls
        meta: dict[str, Any] = {
            "annotations": {_ANNS[a]: "yes" for a in y.anns},
            "labels": y.labels,
        }
        made = await cluster.client.create(
            persistent_volume(y.name, y.size, status="", metadata=meta, **spec)
        )
        if y.phase != "Pending":
            made.status.phase = y.phase
            await cluster.client.update_status(made)
    return uids


async def _caught_up(cluster: ControllerCluster, pv_informer: Any, pvc_informer: Any) -> None:
    """The informers hold what the apiserver holds."""
    pvs, _ = await cluster.client.list(PVS)
    pvcs, _ = await cluster.client.list(PVCS, namespace=NS)

    def same() -> bool:
        return all(
            (s := inf.store.get(k)) is not None
            and s.metadata.resource_version == o.metadata.resource_version  # type: ignore[attr-defined]
            for inf, objs, key in (
                (pv_informer, pvs, lambda o: o.metadata.name),
                (pvc_informer, pvcs, lambda o: f"{NS}/{o.metadata.name}"),
            )
            for o in objs
            for k in [key(o)]
        )

    await cluster.until(same)


def _volume_shape(pv: Any, uids: dict[str, str]) -> tuple[Any, ...]:
    ref = pv.spec.claim_ref if pv.spec.HasField("claim_ref") else None
    uid = ""
    if ref is not None and ref.uid:
        uid = "=" if uids.get(ref.name) == ref.uid else ref.uid
    return (
        pv.metadata.name,
        pv.status.phase,
        ref.name if ref is not None else "",
        uid,
        ANN_BOUND_BY_CONTROLLER in pv.metadata.annotations,
    )


def _want_volume(y: V) -> tuple[Any, ...]:
    return (y.name, y.phase, y.claim, y.uid, BC in y.anns)


def _claim_shape(pvc: Any) -> tuple[Any, ...]:
    anns = tuple(a for a, full in _ANNS.items() if full in pvc.metadata.annotations)
    return (pvc.metadata.name, pvc.status.phase, pvc.spec.volume_name, anns)


def _want_claim(x: C) -> tuple[Any, ...]:
    return (x.name, x.phase, x.volume, tuple(a for a in _ANNS if a in x.anns))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_one_sync_as_upstream(cluster: ControllerCluster, case: Case) -> None:
    controller = PersistentVolumeController(cluster.client, cluster.informers)
    await cluster.start()  # informers only: the test calls the sync
    uids = await _setup(cluster, case)
    await _caught_up(cluster, controller.pv_informer, controller.pvc_informer)
    if case.sync == "claim":
        call = controller.sync_claim(f"{NS}/{case.claims[0].name}")
    else:
        call = controller.sync_volume(case.volumes[-1 if case.sync == "volume-last" else 0].name)
    if case.error:
        with pytest.raises(RuntimeError):
            await call
    else:
        await call
    await controller.events.flush()
    pvs, _ = await cluster.client.list(PVS)
    pvcs, _ = await cluster.client.list(PVCS, namespace=NS)
    assert sorted(_volume_shape(p, uids) for p in pvs) == sorted(
        _want_volume(y) for y in case.want_volumes
    )
    assert sorted(_claim_shape(p) for p in pvcs) == sorted(_want_claim(x) for x in case.want_claims)
    events, _ = await cluster.client.list(EVENTS, namespace=NS)
    assert sorted(f"{e.type} {e.reason}" for e in events) == sorted(case.events)  # type: ignore[attr-defined]
    await controller.events.close()


# ---------------------------------------------------------------------- kubera's cases


async def _run(cluster: ControllerCluster, *extra: Any) -> PersistentVolumeController:
    controller = PersistentVolumeController(cluster.client, cluster.informers)
    cluster.bump_on(PVS, PVCS)
    await cluster.start(controller, *extra)
    return controller


def _pv(cluster: ControllerCluster, name: str) -> Any:
    return cluster.informers.get(PVS).store.get(name)


def _pvc(cluster: ControllerCluster, name: str) -> Any:
    return cluster.informers.get(PVCS).store.get(f"{NS}/{name}")


async def _available(cluster: ControllerCluster, name: str) -> None:
    """Wait until the controller made the new volume Available. A claim that finds no
    Available volume waits for the 15 s resync, as upstream's: a volume turning Available
    queues no claim."""
    await cluster.until(
        lambda: _pv(cluster, name) is not None and _pv(cluster, name).status.phase == "Available"
    )


async def _reasons(cluster: ControllerCluster, controller: PersistentVolumeController) -> set[str]:
    await controller.events.flush()
    events, _ = await cluster.client.list(EVENTS, namespace=NS)
    return {e.reason for e in events}  # type: ignore[attr-defined]


async def test_a_wait_for_first_consumer_claim_waits_for_the_selected_node(
    cluster: ControllerCluster,
) -> None:
    await cluster.client.create(storage_class("local", volumeBindingMode="WaitForFirstConsumer"))
    await cluster.client.create(
        persistent_volume("free", "1Gi", status="", storageClassName="local")
    )
    controller = await _run(cluster)
    await cluster.client.create(
        persistent_volume_claim("data", "1Gi", namespace=NS, storageClassName="local")
    )
    await cluster.until(
        lambda: (
            _pv(cluster, "free") is not None and _pv(cluster, "free").status.phase == "Available"
        )
    )
    await cluster.until(lambda: _pvc(cluster, "data") is not None)
    await controller.sync_claim(f"{NS}/data")
    assert "WaitForFirstConsumer" in await _reasons(cluster, controller)
    assert _pvc(cluster, "data").status.phase == "Pending" and not _pv(
        cluster, "free"
    ).spec.HasField("claim_ref")
    # the scheduler picks a node: the hollow provisioner makes a volume for the claim
    claim = _pvc(cluster, "data")
    claim.metadata.annotations[ANN_SELECTED_NODE] = "n1"
    await cluster.client.update(claim)
    await cluster.until(lambda: _pvc(cluster, "data").status.phase == "Bound")
    got = _pvc(cluster, "data")
    pv = _pv(cluster, got.spec.volume_name)
    assert got.spec.volume_name == f"pvc-{got.metadata.uid}"
    assert got.metadata.annotations[ANN_STORAGE_PROVISIONER] == "hollow.kubera.io"
    assert (
        pv.spec.csi.driver,
        pv.spec.storage_class_name,
        pv.spec.persistent_volume_reclaim_policy,
    ) == (
        "hollow.kubera.io",
        "local",
        "Delete",
    )
    # node-local, as kind's local-path volumes: the claim's later pods go to n1 too
    assert _affinity(pv) == [[("kubernetes.io/hostname", "In", ["n1"])]]
    assert "ProvisioningSucceeded" in await _reasons(cluster, controller)


def _affinity(pv: Any) -> list[list[tuple[str, str, list[str]]]]:
    return [
        [(e.key, e.operator, list(e.values)) for e in term.match_expressions]
        for term in pv.spec.node_affinity.required.node_selector_terms
    ]


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        pytest.param(None, [], id="reachable-from-every-node"),
        pytest.param(
            [
                {
                    "matchLabelExpressions": [
                        {"key": "topology.kubernetes.io/zone", "values": ["b", "c"]}
                    ]
                }
            ],
            [[("topology.kubernetes.io/zone", "In", ["b"])]],
            id="in-the-first-allowed-topology",
        ),
    ],
)
async def test_an_immediate_hollow_volume_is_pinned_only_by_its_classs_allowed_topologies(
    cluster: ControllerCluster, allowed: Any, expected: Any
) -> None:
    extra = {"allowedTopologies": allowed} if allowed else {}
    await cluster.client.create(storage_class("fast", **extra))
    await _run(cluster)
    await cluster.client.create(
        persistent_volume_claim("data", "1Gi", namespace=NS, storageClassName="fast")
    )
    await cluster.until(
        lambda: _pvc(cluster, "data") is not None and _pvc(cluster, "data").status.phase == "Bound"
    )
    assert _affinity(_pv(cluster, _pvc(cluster, "data").spec.volume_name)) == expected


async def test_an_immediate_class_provisions_at_once_and_delete_removes_the_volume(
    cluster: ControllerCluster,
) -> None:
    await cluster.client.create(storage_class("fast"))
    await _run(
        cluster,
        PVCProtectionController(cluster.client, cluster.informers),
        PVProtectionController(cluster.client, cluster.informers),
    )
    await cluster.client.create(
        persistent_volume_claim("data", "2Gi", namespace=NS, storageClassName="fast")
    )
    await cluster.until(
        lambda: _pvc(cluster, "data") is not None and _pvc(cluster, "data").status.phase == "Bound"
    )
    name = _pvc(cluster, "data").spec.volume_name
    assert _pv(cluster, name).status.phase == "Bound"
    assert dict(_pvc(cluster, "data").status.capacity) == {"storage": "2Gi"}
    await cluster.client.delete(PVCS, "data", NS)
    await cluster.until(lambda: _pv(cluster, name) is None)  # Released, deleted, unprotected


async def test_retain_leaves_the_volume_released(cluster: ControllerCluster) -> None:
    await cluster.client.create(persistent_volume("keep", "1Gi", status=""))
    await _run(cluster, PVCProtectionController(cluster.client, cluster.informers))
    await _available(cluster, "keep")
    await cluster.client.create(persistent_volume_claim("data", "1Gi", namespace=NS))
    await cluster.until(lambda: _pv(cluster, "keep").status.phase == "Bound")
    await cluster.client.delete(PVCS, "data", NS)
    await cluster.until(lambda: _pv(cluster, "keep").status.phase == "Released")
    assert _pv(cluster, "keep").spec.claim_ref.name == "data"


async def test_delete_without_a_deleter_fails_the_volume(cluster: ControllerCluster) -> None:
    """delete_test.go "8-2 - plugin not found": an in-tree volume nobody can delete."""
    await cluster.client.create(
        persistent_volume("gce", "1Gi", status="", persistentVolumeReclaimPolicy="Delete")
    )
    controller = await _run(cluster, PVCProtectionController(cluster.client, cluster.informers))
    await _available(cluster, "gce")
    await cluster.client.create(persistent_volume_claim("data", "1Gi", namespace=NS))
    await cluster.until(lambda: _pv(cluster, "gce").status.phase == "Bound")
    await cluster.client.delete(PVCS, "data", NS)
    await cluster.until(lambda: _pv(cluster, "gce").status.phase == "Failed")
    assert "VolumeFailedDelete" in await _reasons(cluster, controller)


async def test_a_class_of_another_provisioner_is_waited_for(cluster: ControllerCluster) -> None:
    await cluster.client.create(storage_class("ebs", provisioner="ebs.csi.aws.com"))
    controller = await _run(cluster)
    await cluster.client.create(
        persistent_volume_claim("data", "1Gi", namespace=NS, storageClassName="ebs")
    )
    await cluster.until(
        lambda: (
            _pvc(cluster, "data") is not None
            and _pvc(cluster, "data").metadata.annotations.get(ANN_STORAGE_PROVISIONER)
            == "ebs.csi.aws.com"
        )
    )
    assert "ExternalProvisioning" in await _reasons(cluster, controller)
    pvs, _ = await cluster.client.list(PVS)
    assert not pvs


async def test_a_claim_in_use_by_a_pod_stays_until_the_pod_is_gone(
    cluster: ControllerCluster,
) -> None:
    await cluster.client.create(persistent_volume("vol", "1Gi", status=""))
    await _run(
        cluster,
        PVCProtectionController(cluster.client, cluster.informers),
        PVProtectionController(cluster.client, cluster.informers),
    )
    await _available(cluster, "vol")
    await cluster.client.create(persistent_volume_claim("data", "1Gi", namespace=NS))
    await cluster.until(
        lambda: _pvc(cluster, "data") is not None and _pvc(cluster, "data").status.phase == "Bound"
    )
    pod = MakePod().typed().name("user").namespace(NS).container("c", "app:v1")
    pod = pod.spec({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]})
    made: core_pb2.Pod = await cluster.client.create(pod.obj())  # type: ignore[assignment]
    await cluster.bind(made, "n1")
    await cluster.until(
        lambda: (
            cluster.pods.store.get(f"{NS}/user") is not None
            and cluster.pods.store[f"{NS}/user"].spec.node_name == "n1"
        )
    )  # type: ignore[attr-defined]
    await cluster.client.delete(PVCS, "data", NS)
    await cluster.until(lambda: bool(_pvc(cluster, "data").metadata.deletion_timestamp))
    # the volume cannot go while bound either
    await cluster.client.delete(PVS, "vol")
    await cluster.until(lambda: bool(_pv(cluster, "vol").metadata.deletion_timestamp))
    assert _pvc(cluster, "data") is not None and _pv(cluster, "vol") is not None
    await cluster.client.delete(BY_KIND["Pod"], "user", NS, grace_period_seconds=0)
    await cluster.until(lambda: _pvc(cluster, "data") is None)
    await cluster.until(lambda: _pv(cluster, "vol") is None)
    with pytest.raises(NotFoundError):
        await cluster.client.get(PVS, "vol")


async def test_a_claim_without_class_gets_the_default_class_made_after_it(
    cluster: ControllerCluster,
) -> None:
    """RetroactiveDefaultStorageClass: the claim is given the class, then provisioned."""
    controller = await _run(cluster)
    await cluster.client.create(persistent_volume_claim("data", "1Gi", namespace=NS))
    await cluster.until(lambda: _pvc(cluster, "data") is not None)
    default = {"storageclass.kubernetes.io/is-default-class": "true"}
    await cluster.client.create(storage_class("standard", metadata={"annotations": default}))
    await cluster.until(lambda: "standard" in cluster.informers.get(BY_KIND["StorageClass"]).store)
    await controller.sync_claim(f"{NS}/data")
    await cluster.until(lambda: _pvc(cluster, "data").status.phase == "Bound")
    assert _pvc(cluster, "data").spec.storage_class_name == "standard"


async def test_a_delayed_claim_names_the_unscheduled_pod_it_waits_for(
    cluster: ControllerCluster,
) -> None:
    """emitEventForUnboundDelayBindingClaim: WaitForPodScheduled while a pod using the
    claim is not scheduled."""
    await cluster.client.create(storage_class("local", volumeBindingMode="WaitForFirstConsumer"))
    controller = await _run(cluster)
    await cluster.client.create(
        persistent_volume_claim("data", "1Gi", namespace=NS, storageClassName="local")
    )
    pod = MakePod().typed().name("web-0").namespace(NS).container("c", "app:v1")
    await cluster.client.create(
        pod.spec({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}).obj()
    )
    await cluster.until(
        lambda: _pvc(cluster, "data") is not None and f"{NS}/web-0" in cluster.pods.store
    )
    await controller.sync_claim(f"{NS}/data")
    await controller.events.flush()
    events, _ = await cluster.client.list(EVENTS, namespace=NS)
    assert ("WaitForPodScheduled", "waiting for pod web-0 to be scheduled") in {
        (e.reason, e.message)  # type: ignore[attr-defined]
        for e in events
    }
