"""The binder's PreBind half and its capacity check (upstream binder_test.go
TestCheckBindings, TestCheckBindingsWithCSIMigration, TestBindPodVolumes, TestCapacity:
their cases by name; fixtures in _fixtures.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from services.api.helpers.volumes import ANN_BIND_COMPLETED
from services.clock import FakeClock
from services.scheduler.plugins.volumebinding import (
    ERR_REASON_NOT_ENOUGH_SPACE,
    DynamicProvision,
    PodVolumes,
)
from services.scheduler.plugins.volumebinding.binder import BindingError
from tests.scheduler.plugins.volumebinding._fakes import (
    PVC,
    FakeVolumeAPI,
    capacity,
    csi_driver,
    make_binder,
)
from tests.scheduler.plugins.volumebinding._fixtures import (
    CLASSES,
    NODE_KEY,
    PROVISIONER,
    WAIT,
    WAIT_PROV,
    binding,
    boundPVCNode1a,
    csiNode1Migrated,
    csiNode1NotMigrated,
    env,
    find,
    migrationPVBound,
    migrationPVBoundToUnbound,
    networkAttachedCapacity,
    node1,
    node1Capacity,
    node1NoLabels,
    node1Zone1,
    node1Zone2,
    node2,
    node2Capacity,
    nonmigrationPVBoundToUnbound,
    preboundPVCNode1a,
    provisionedPVC,
    provisionedPVCBound,
    provMigrationPVCBound,
    pvBound,
    pvNode1a,
    pvNode1aBound,
    pvNode1b,
    pvNode1bBound,
    pvNode2,
    selectedNodePVC,
    test_pod_with,
    test_pv,
    unboundPVC,
    unboundPVC2,
    with_selected_node,
    without_annotations,
    without_claim_uid,
)

# ==================================================================== checkBindings

CHECK: dict[str, dict[str, Any]] = {
    "nothing-to-bind-nil": {"should_fail": True},
    "nothing-to-bind-bindings-nil": {"provisioned": [], "should_fail": True},
    "nothing-to-bind-provisionings-nil": {"bindings": [], "should_fail": True},
    "nothing-to-bind": {"bindings": [], "provisioned": [], "bound": True},
    "binding-bound": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [boundPVCNode1a],
        "bound": True,
    },
    "binding-prebound": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [preboundPVCNode1a],
    },
    "binding-unbound": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [unboundPVC],
    },
    "binding-pvc-not-exists": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound],
        "should_fail": True,
    },
    "binding-pv-not-exists": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [boundPVCNode1a],
        "delete_pvs": True,
        "should_fail": True,
    },
    "binding-claimref-nil": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1a],
        "init_pvcs": [boundPVCNode1a],
        "api_pvs": [pvNode1a],
        "api_pvcs": [boundPVCNode1a],
        "should_fail": True,
    },
    "binding-claimref-uid-empty": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [boundPVCNode1a],
        "api_pvs": [without_claim_uid(pvNode1aBound)],
        "api_pvcs": [boundPVCNode1a],
        "should_fail": True,
    },
    "binding-one-bound,one-unbound": {
        "bindings": [(unboundPVC, pvNode1aBound), (unboundPVC2, pvNode1bBound)],
        "provisioned": [],
        "init_pvs": [pvNode1aBound, pvNode1bBound],
        "init_pvcs": [boundPVCNode1a, unboundPVC2],
    },
    "provisioning-pvc-bound": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "init_pvs": [pvBound],
        "init_pvcs": [provisionedPVCBound],
        "api_pvcs": [with_selected_node(provisionedPVCBound)],
        "bound": True,
    },
    "provisioning-pvc-unbound": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "init_pvcs": [with_selected_node(provisionedPVC)],
    },
    "provisioning-pvc-not-exists": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "init_pvcs": [provisionedPVC],
        "delete_pvcs": True,
        "should_fail": True,
    },
    "provisioning-pvc-annotations-nil": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "init_pvcs": [provisionedPVC],
        "api_pvcs": [provisionedPVC],
        "should_fail": True,
    },
    "provisioning-pvc-selected-node-dropped": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "init_pvcs": [provisionedPVC],
        "api_pvcs": [without_annotations(provisionedPVC)],
        "should_fail": True,
    },
    "provisioning-pvc-selected-node-wrong-node": {
        "init_pvcs": [provisionedPVC],
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "api_pvcs": [with_selected_node(provisionedPVC, "wrong-node")],
        "should_fail": True,
    },
    "binding-bound-provisioning-unbound": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "provisioned": [with_selected_node(provisionedPVC)],
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [boundPVCNode1a, with_selected_node(provisionedPVC)],
    },
    "tolerate-provisioning-pvc-bound-pv-not-found": {
        "init_pvs": [pvNode1a],
        "init_pvcs": [provisionedPVC],
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "api_pvcs": [with_selected_node(provisionedPVCBound)],
        "delete_pvs": True,
    },
}

CHECK_MIGRATION: dict[str, dict[str, Any]] = {
    "provisioning-pvc-bound": {
        "bindings": [],
        "provisioned": [with_selected_node(provMigrationPVCBound)],
        "init_pvs": [migrationPVBound],
        "init_pvcs": [provMigrationPVCBound],
        "nodes": [node1Zone1],
        "csi_nodes": [csiNode1Migrated],
        "api_pvcs": [with_selected_node(provMigrationPVCBound)],
        "bound": True,
    },
    "binding-node-pv-same-zone": {
        "bindings": [(unboundPVC, migrationPVBoundToUnbound)],
        "provisioned": [],
        "init_pvs": [migrationPVBoundToUnbound],
        "init_pvcs": [unboundPVC],
        "nodes": [node1Zone1],
        "csi_nodes": [csiNode1Migrated],
    },
    "binding-without-csinode": {
        "bindings": [(unboundPVC, migrationPVBoundToUnbound)],
        "provisioned": [],
        "init_pvs": [migrationPVBoundToUnbound],
        "init_pvcs": [unboundPVC],
        "nodes": [node1Zone1],
        "csi_nodes": [],
    },
    "binding-non-migrated-plugin": {
        "bindings": [(unboundPVC, migrationPVBoundToUnbound)],
        "provisioned": [],
        "init_pvs": [migrationPVBoundToUnbound],
        "init_pvcs": [unboundPVC],
        "nodes": [node1Zone1],
        "csi_nodes": [csiNode1NotMigrated],
    },
    "binding-node-pv-in-different-zones": {
        "bindings": [(unboundPVC, migrationPVBoundToUnbound)],
        "provisioned": [],
        "init_pvs": [migrationPVBoundToUnbound],
        "init_pvcs": [unboundPVC],
        "nodes": [node1Zone2],
        "csi_nodes": [csiNode1Migrated],
        "should_fail": True,
    },
    "binding-node-pv-different-zones-migration-off": {
        "bindings": [(unboundPVC, nonmigrationPVBoundToUnbound)],
        "provisioned": [],
        "init_pvs": [nonmigrationPVBoundToUnbound],
        "init_pvcs": [unboundPVC],
        "nodes": [node1Zone2],
        "csi_nodes": [csiNode1Migrated],
    },
}


async def _write_all(api: FakeVolumeAPI, objs: list[Any]) -> list[Any]:
    """updateVolumes / updateClaims: through the API, seen by the cache (no lag here)."""
    return [await api.update(o) for o in objs]


def run_check(s: dict[str, Any]) -> None:
    p = test_pod_with()
    api, binder = env(
        pvs=s.get("init_pvs", []),
        pvcs=s.get("init_pvcs", []),
        nodes=s.get("nodes", [node1]),
        csi_nodes=s.get("csi_nodes", []),
        pods=[p],
    )
    bindings = None if "bindings" not in s else [binding(c, v) for c, v in s["bindings"]]
    claims = None if "provisioned" not in s else list(s["provisioned"])
    for b in bindings or []:
        binder.pv_cache.assume(b.pv)
    for c in claims or []:
        binder.pvc_cache.assume(c)
    if s.get("delete_pvs"):
        for v in s.get("init_pvs", []):
            api.delete(v, api=False)
    else:
        asyncio.run(_write_all(api, s.get("api_pvs", [])))
    if s.get("delete_pvcs"):
        for c in s.get("init_pvcs", []):
            api.delete(c, api=False)
    else:
        asyncio.run(_write_all(api, s.get("api_pvcs", [])))
    if s.get("should_fail"):
        with pytest.raises(BindingError):
            binder.check_bindings(p, "node1", bindings, claims)
        return
    assert binder.check_bindings(p, "node1", bindings, claims) is s.get("bound", False)


@pytest.mark.parametrize("name", CHECK)
def test_check_bindings(name: str) -> None:
    run_check(CHECK[name])


@pytest.mark.parametrize("name", CHECK_MIGRATION)
def test_check_bindings_with_csi_migration(name: str) -> None:
    run_check(CHECK_MIGRATION[name])


# ================================================================== BindPodVolumes


class _DelayClock(FakeClock):
    """Runs `then` once, when the binder's wait has passed `after` seconds (upstream's
    delayFunc goroutine, 5 s after BindPodVolumes started)."""

    def __init__(self, after: float, then: Callable[[], Any] | None) -> None:
        super().__init__()
        self.after, self.then = after, then

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds)
        if self.then is not None and self.monotonic() >= self.after:
            then, self.then = self.then, None
            result = then()
            if asyncio.iscoroutine(result):
                await result


def _fully_bound(claim: PVC, volume_name: str) -> PVC:
    c = PVC()
    c.CopyFrom(claim)
    c.spec.volume_name = volume_name
    c.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
    return c


BIND: dict[str, dict[str, Any]] = {
    "nothing-to-bind-nil": {"bindings_nil": True, "should_fail": True},
    "nothing-to-bind-empty": {},
    "already-bound": {
        "binding": (unboundPVC, pvNode1aBound),
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [boundPVCNode1a],
    },
    "binding-static-pv-succeeds-after-time": {
        "init_pvs": [pvNode1a],
        "init_pvcs": [unboundPVC],
        "binding": (unboundPVC, pvNode1aBound),
        # the PV controller binds the claim to the volume
        "delay": lambda api: api.update(
            _fully_bound(api.pvc_store["testns/unbound-pvc"], "pv-node1a")
        ),
    },
    "binding-dynamic-pv-succeeds-after-time": {
        "claim_to_provision": with_selected_node(provisionedPVC, "node1"),
        "init_pvcs": [provisionedPVC],
        "delay": lambda api: _provision(api),
    },
    "bound-by-pv-controller-before-bind": {
        "init_pvs": [pvNode1a],
        "init_pvcs": [unboundPVC],
        "binding": (unboundPVC, pvNode1aBound),
        "api_pv": pvNode1aBound,
        "api_pvc": boundPVCNode1a,
        "should_fail": True,  # bindAPIUpdate conflicts
    },
    "pod-deleted-after-time": {
        "binding": (unboundPVC, pvNode1aBound),
        "init_pvs": [pvNode1a],
        "init_pvcs": [unboundPVC],
        "delay": "delete-pod",
        "should_fail": True,
    },
    "binding-times-out": {
        "binding": (unboundPVC, pvNode1aBound),
        "init_pvs": [pvNode1a],
        "init_pvcs": [unboundPVC],
        "should_fail": True,
    },
    "binding-fails": {
        "binding": (unboundPVC2, pvNode1bBound),
        "init_pvs": [pvNode1b],
        "init_pvcs": [unboundPVC2],
        "should_fail": True,
    },
    "check-fails": {
        "binding": (unboundPVC, pvNode1aBound),
        "init_pvs": [pvNode1a],
        "init_pvcs": [unboundPVC],
        "delay": lambda api: api.delete(api.pvc_store["testns/unbound-pvc"]),
        "should_fail": True,
    },
    "node-affinity-fails": {
        "binding": (unboundPVC, pvNode1aBound),
        "init_pvs": [pvNode1aBound],
        "init_pvcs": [boundPVCNode1a],
        "nodes": [node1NoLabels],
        "should_fail": True,
    },
    "node-affinity-fails-dynamic-provisioning": {
        "init_pvs": [pvNode1a, pvNode2],
        "init_pvcs": [selectedNodePVC],
        "claim_to_provision": selectedNodePVC,
        "nodes": [node1, node2],
        "delay": lambda api: api.update(
            _fully_bound(api.pvc_store["testns/provisioned-pvc"], "pv-node2")
        ),
        "should_fail": True,
    },
}


async def _provision(api: FakeVolumeAPI) -> None:
    """The provisioner makes a volume on node1 for the claim, and the controller binds."""
    claim = api.pvc_store["testns/provisioned-pvc"]
    volume = test_pv("dynamic-pv", "node1", "1G", "1", claim, WAIT)
    api.add(volume)
    await api.update(_fully_bound(claim, "dynamic-pv"))


@pytest.mark.parametrize("name", BIND)
def test_bind_pod_volumes(name: str) -> None:
    """TestBindPodVolumes (bind timeout 10 s, upstream's delay functions at 5 s)."""
    s = BIND[name]
    p = test_pod_with()
    api = FakeVolumeAPI()
    pods = {f"{p.metadata.namespace}/{p.metadata.name}": p}
    delay = s.get("delay")
    if delay == "delete-pod":
        delay = lambda _api: pods.clear()  # noqa: E731
    clock = _DelayClock(5.0, (lambda: delay(api)) if delay is not None else None)
    for v in s.get("init_pvs", []):
        api.add(v)
    for c in s.get("init_pvcs", []):
        api.add(c)
    binder = make_binder(api, classes=CLASSES, nodes=s.get("nodes", [node1]), bind_timeout=10.0)
    binder._clock = clock  # noqa: SLF001
    binder._pods = lambda: pods  # noqa: SLF001 - the pod informer's store
    bindings = [] if s.get("binding") is None else [binding(*s["binding"])]
    claims = [] if s.get("claim_to_provision") is None else [s["claim_to_provision"]]
    for b in bindings:
        binder.pv_cache.assume(b.pv)
    for c in claims:
        binder.pvc_cache.assume(c)

    async def run() -> None:
        if s.get("api_pv") is not None:
            await api.update(s["api_pv"])
        if s.get("api_pvc") is not None:
            await api.update(s["api_pvc"])
        volumes = PodVolumes(
            None if s.get("bindings_nil") else bindings,
            [DynamicProvision(c) for c in claims],
        )
        await binder.bind_pod_volumes(p, "node1", volumes)

    if s.get("should_fail"):
        with pytest.raises(Exception):  # noqa: B017 - BindingError or the API's conflict
            asyncio.run(run())
    else:
        asyncio.run(run())


# ==================================================================== capacity

CAPACITY: dict[str, dict[str, Any]] = {
    "network-attached": {
        "capacities": [networkAttachedCapacity],
        "provisions": [networkAttachedCapacity],
    },
    "local-storage": {"capacities": [node1Capacity], "provisions": [node1Capacity]},
    # the three share one name ("net"): the last one stored is the one left
    "multiple": {
        "capacities": [networkAttachedCapacity, node2Capacity, node1Capacity],
        "provisions": [node1Capacity],
    },
    "no-storage": {"reasons": [ERR_REASON_NOT_ENOUGH_SPACE]},
    "wrong-node": {
        "capacities": [capacity("net", WAIT_PROV, {NODE_KEY: "node2"}, "1Gi")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
    "wrong-storage-class": {
        "capacities": [capacity("net", WAIT, {NODE_KEY: "node1"}, "1Gi")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
    "insufficient-storage": {
        "capacities": [capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "1Mi")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
    "insufficient-volume-size": {
        "capacities": [capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "1Gi", "1Mi")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
    "zero-storage": {
        "capacities": [capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "0Mi")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
    "zero-volume-size": {
        "capacities": [capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "", "0Mi")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
    "nil-storage": {
        "capacities": [capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "", "")],
        "reasons": [ERR_REASON_NOT_ENOUGH_SPACE],
    },
}


@pytest.mark.parametrize("opt_in", [True, False], ids=["CSIDriver.StorageCapacity=true", "false"])
@pytest.mark.parametrize("name", CAPACITY)
def test_capacity(name: str, opt_in: bool) -> None:
    s = CAPACITY[name]
    _, binder = env(
        pvcs=[provisionedPVC],
        drivers=[csi_driver(PROVISIONER, opt_in)],
        capacities=s.get("capacities", []),
    )
    volumes, reasons = find(binder, test_pod_with([provisionedPVC]), node1)
    if not opt_in:
        assert reasons == []
        assert [(d.pvc, d.node_capacity) for d in volumes.dynamic_provisions or []] == [
            (provisionedPVC, None)
        ]
        return
    assert reasons == s.get("reasons", [])
    if not reasons:
        assert [(d.pvc, d.node_capacity) for d in volumes.dynamic_provisions or []] == [
            (provisionedPVC, c) for c in s["provisions"]
        ]
