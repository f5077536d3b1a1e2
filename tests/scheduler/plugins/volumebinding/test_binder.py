"""The volume binder (upstream volumebinding/binder_test.go, its tables as data: the
fixtures keep upstream's names, each case its scenario name).

Upstream's testEnv has an informer cache (the assume caches' source) and an API (its
fake clientset's reactor); here FakeVolumeAPI's `pv_store` / `pvc_store` are the cache
and `objects` the API (`add(obj, api=False)` puts an object in the cache only).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.volumes import ANN_SELECTED_NODE
from services.scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from services.scheduler.plugins.volumebinding.binder import BindingError
from tests.scheduler.plugins.volumebinding._fakes import (
    PV,
    PVC,
    csi_driver,
)
from tests.scheduler.plugins.volumebinding._fixtures import (
    NODE_VALUE,
    NS,
    PROVISIONER,
    binding,
    boundMigrationPVC,
    boundPVC,
    conflictingGenericPVC,
    correctGenericPVC,
    csiNode1Migrated,
    csiNode1NotMigrated,
    env,
    find,
    immediateBoundPVC,
    immediateUnboundPVC,
    migrationPVBound,
    node1,
    node1Zone1,
    node1Zone2,
    noProvisionerPVC,
    pairs,
    preboundPVC,
    provisionedPVC,
    provisionedPVC2,
    provisionedPVCHigherVersion,
    pvBound,
    pvBoundGeneric,
    pvBoundImmediate,
    pvBoundImmediateNode2,
    pvNode1a,
    pvNode1aBound,
    pvNode1b,
    pvNode1bBound,
    pvNode1bBoundHigherVersion,
    pvNode1c,
    pvNode2,
    selectedNodePVC,
    test_pod_with,
    topoMismatchPVC,
    unboundPVC,
    unboundPVC2,
    with_selected_node,
)

# ======================================================= FindPodVolumes without provisioning


@dataclass
class FindCase:
    pvs: list[PV] = field(default_factory=list)
    pod_pvcs: list[PVC] = field(default_factory=list)
    cache_pvcs: list[PVC] | None = None
    pod: core_pb2.Pod | None = None
    expected_bindings: list[tuple[PVC, PV]] | None = None
    expected_provisions: list[PVC] | None = None
    reasons: list[str] = field(default_factory=list)
    should_fail: bool = False
    needs_capacity: bool = False


WITHOUT_PROVISIONING = {
    "no-volumes": FindCase(pod=test_pod_with()),
    "no-pvcs": FindCase(pod=test_pod_with(empty_dir=True)),
    "pvc-not-found": FindCase(cache_pvcs=[], pod_pvcs=[boundPVC], should_fail=True),
    "bound-pvc": FindCase(pod_pvcs=[boundPVC], pvs=[pvBound]),
    "bound-pvc,pv-not-exists": FindCase(pod_pvcs=[boundPVC], reasons=[ERR_REASON_PV_NOT_EXIST]),
    "prebound-pvc": FindCase(pod_pvcs=[preboundPVC], pvs=[pvNode1aBound], should_fail=True),
    "unbound-pvc,pv-same-node": FindCase(
        pod_pvcs=[unboundPVC],
        pvs=[pvNode2, pvNode1a, pvNode1b],
        expected_bindings=[(unboundPVC, pvNode1a)],
    ),
    "unbound-pvc,pv-different-node": FindCase(
        pod_pvcs=[unboundPVC], pvs=[pvNode2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "two-unbound-pvcs": FindCase(
        pod_pvcs=[unboundPVC, unboundPVC2],
        pvs=[pvNode1a, pvNode1b],
        expected_bindings=[(unboundPVC, pvNode1a), (unboundPVC2, pvNode1b)],
    ),
    "two-unbound-pvcs,order-by-size": FindCase(
        pod_pvcs=[unboundPVC2, unboundPVC],
        pvs=[pvNode1a, pvNode1b],
        expected_bindings=[(unboundPVC, pvNode1a), (unboundPVC2, pvNode1b)],
    ),
    "two-unbound-pvcs,partial-match": FindCase(
        pod_pvcs=[unboundPVC, unboundPVC2],
        pvs=[pvNode1a],
        expected_bindings=[(unboundPVC, pvNode1a)],
        reasons=[ERR_REASON_BIND_CONFLICT],
    ),
    "one-bound,one-unbound": FindCase(
        pod_pvcs=[unboundPVC, boundPVC],
        pvs=[pvBound, pvNode1a],
        expected_bindings=[(unboundPVC, pvNode1a)],
    ),
    "one-bound,one-unbound,no-match": FindCase(
        pod_pvcs=[unboundPVC, boundPVC], pvs=[pvBound, pvNode2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "one-prebound,one-unbound": FindCase(
        pod_pvcs=[unboundPVC, preboundPVC], pvs=[pvNode1a, pvNode1b], should_fail=True
    ),
    "immediate-bound-pvc": FindCase(pod_pvcs=[immediateBoundPVC], pvs=[pvBoundImmediate]),
    "immediate-bound-pvc-wrong-node": FindCase(
        pod_pvcs=[immediateBoundPVC],
        pvs=[pvBoundImmediateNode2],
        reasons=[ERR_REASON_NODE_CONFLICT],
    ),
    "immediate-unbound-pvc": FindCase(pod_pvcs=[immediateUnboundPVC], should_fail=True),
    "immediate-unbound-pvc,delayed-mode-bound": FindCase(
        pod_pvcs=[immediateUnboundPVC, boundPVC], pvs=[pvBound], should_fail=True
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": FindCase(
        pod_pvcs=[immediateUnboundPVC, unboundPVC], should_fail=True
    ),
    "generic-ephemeral,no-pvc": FindCase(
        pod=test_pod_with(ephemeral=["no-such-pvc"]), should_fail=True
    ),
    "generic-ephemeral,with-pvc": FindCase(
        pod=test_pod_with(ephemeral=["test-volume"]),
        cache_pvcs=[correctGenericPVC],
        pvs=[pvBoundGeneric],
    ),
    "generic-ephemeral,wrong-pvc": FindCase(
        pod=test_pod_with(ephemeral=["test-volume"]),
        cache_pvcs=[conflictingGenericPVC],
        pvs=[pvBoundGeneric],
        should_fail=True,
    ),
}

WITH_PROVISIONING = {
    "one-provisioned": FindCase(
        pod_pvcs=[provisionedPVC], expected_provisions=[provisionedPVC], needs_capacity=True
    ),
    "two-unbound-pvcs,one-matched,one-provisioned": FindCase(
        pod_pvcs=[unboundPVC, provisionedPVC],
        pvs=[pvNode1a],
        expected_bindings=[(unboundPVC, pvNode1a)],
        expected_provisions=[provisionedPVC],
        needs_capacity=True,
    ),
    "one-bound,one-provisioned": FindCase(
        pod_pvcs=[boundPVC, provisionedPVC],
        pvs=[pvBound],
        expected_provisions=[provisionedPVC],
        needs_capacity=True,
    ),
    "one-binding,one-selected-node": FindCase(
        pod_pvcs=[boundPVC, selectedNodePVC],
        pvs=[pvBound],
        expected_provisions=[selectedNodePVC],
        needs_capacity=True,
    ),
    "immediate-unbound-pvc": FindCase(pod_pvcs=[immediateUnboundPVC], should_fail=True),
    "one-immediate-bound,one-provisioned": FindCase(
        pod_pvcs=[immediateBoundPVC, provisionedPVC],
        pvs=[pvBoundImmediate],
        expected_provisions=[provisionedPVC],
        needs_capacity=True,
    ),
    "invalid-provisioner": FindCase(
        pod_pvcs=[noProvisionerPVC], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "volume-topology-unsatisfied": FindCase(
        pod_pvcs=[topoMismatchPVC], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
}

DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": True,
    "CSIDriver without capacity tracking": False,
}


def run_find(case: FindCase, tracking: bool | None, n: core_pb2.Node = node1, **kw: Any) -> None:
    drivers = [] if tracking is None else [csi_driver(PROVISIONER, tracking)]
    cache = case.pod_pvcs if case.cache_pvcs is None else case.cache_pvcs
    _, binder = env(pvs=case.pvs, pvcs=cache, drivers=drivers, **kw)
    p = case.pod or test_pod_with(case.pod_pvcs)
    if case.should_fail:
        with pytest.raises(BindingError):
            find(binder, p, n)
        return
    volumes, reasons = find(binder, p, n)
    want_reasons, want_prov = list(case.reasons), case.expected_provisions
    if case.needs_capacity and tracking:
        # without CSIStorageCapacity objects, provisioning is blocked
        want_reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        want_prov = None
    assert sorted(reasons) == sorted(want_reasons)
    want_pairs = [
        (c.metadata.name, v.metadata.name) for c, v in case.expected_bindings or []
    ] or None
    assert pairs(volumes.static_bindings) == want_pairs
    got_prov = [d.pvc for d in volumes.dynamic_provisions] if volumes.dynamic_provisions else None
    assert got_prov == want_prov


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("name", WITHOUT_PROVISIONING)
def test_find_pod_volumes_without_provisioning(name: str, driver: str) -> None:
    run_find(WITHOUT_PROVISIONING[name], DRIVERS[driver])


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("name", WITH_PROVISIONING)
def test_find_pod_volumes_with_provisioning(name: str, driver: str) -> None:
    run_find(WITH_PROVISIONING[name], DRIVERS[driver])


MIGRATION = {
    "pvc-bound": (node1Zone1, [csiNode1Migrated], []),
    "pvc-bound,csinode-not-migrated": (node1Zone1, [csiNode1NotMigrated], []),
    "pvc-bound,missing-csinode": (node1Zone1, [], []),
    "pvc-bound,node-different-zone": (node1Zone2, [csiNode1Migrated], [ERR_REASON_NODE_CONFLICT]),
}


@pytest.mark.parametrize("name", MIGRATION)
def test_find_pod_volumes_with_csi_migration(name: str) -> None:
    n, csi_nodes, reasons = MIGRATION[name]
    _, binder = env(
        pvs=[migrationPVBound], pvcs=[boundMigrationPVC], nodes=[n], csi_nodes=csi_nodes
    )
    _, got = find(binder, test_pod_with([boundMigrationPVC]), n)
    assert got == reasons


# ================================================================ Assume / Revert


ASSUME: dict[str, dict[str, Any]] = {
    "all-bound": {"pod_pvcs": [boundPVC], "pvs": [pvBound], "all_bound": True},
    "one-binding": {
        "pod_pvcs": [unboundPVC],
        "bindings": [(unboundPVC, pvNode1a)],
        "pvs": [pvNode1a],
        "expected_bindings": [(unboundPVC, pvNode1aBound)],
        "expected_provisions": [],
    },
    "two-bindings": {
        "pod_pvcs": [unboundPVC, unboundPVC2],
        "bindings": [(unboundPVC, pvNode1a), (unboundPVC2, pvNode1b)],
        "pvs": [pvNode1a, pvNode1b],
        "expected_bindings": [(unboundPVC, pvNode1aBound), (unboundPVC2, pvNode1bBound)],
        "expected_provisions": [],
    },
    "pv-already-bound": {
        "pod_pvcs": [unboundPVC],
        "bindings": [(unboundPVC, pvNode1aBound)],
        "pvs": [pvNode1aBound],
        "expected_bindings": [(unboundPVC, pvNode1aBound)],
        "expected_provisions": [],
    },
    "tmpupdate-failed": {
        "pod_pvcs": [unboundPVC],
        "bindings": [(unboundPVC, pvNode1a), (unboundPVC2, pvNode1b)],
        "pvs": [pvNode1a],
        "should_fail": True,
    },
    "one-binding, one-pvc-provisioned": {
        "pod_pvcs": [unboundPVC, provisionedPVC],
        "bindings": [(unboundPVC, pvNode1a)],
        "pvs": [pvNode1a],
        "provisions": [provisionedPVC],
        "expected_bindings": [(unboundPVC, pvNode1aBound)],
        "expected_provisions": [selectedNodePVC],
    },
    "one-binding, one-provision-tmpupdate-failed": {
        "pod_pvcs": [unboundPVC, provisionedPVCHigherVersion],
        "bindings": [(unboundPVC, pvNode1a)],
        "pvs": [pvNode1a],
        "provisions": [provisionedPVC2],
        "should_fail": True,
    },
}


def _volumes(bindings: list[tuple[PVC, PV]] | None, provisions: list[PVC] | None) -> PodVolumes:
    return PodVolumes(
        None if bindings is None else [binding(c, v) for c, v in bindings],
        None if provisions is None else [DynamicProvision(c) for c in provisions],
    )


def assert_assumed(
    binder: VolumeBinder, bindings: list[tuple[PVC, PV]], provisions: list[PVC]
) -> None:
    """validateAssume: the volumes' claimRefs and the claims' selected node, in the caches."""
    for c, v in bindings:
        got = binder.pv_cache.get(v.metadata.name)
        assert (got.spec.claim_ref.name, got.spec.claim_ref.namespace) == (
            c.metadata.name,
            c.metadata.namespace,
        )
    for c in provisions:
        got = binder.pvc_cache.get(f"{c.metadata.namespace}/{c.metadata.name}")
        assert got.metadata.annotations[ANN_SELECTED_NODE] == NODE_VALUE


def assert_restored(
    binder: VolumeBinder, bindings: list[tuple[PVC, PV]], provisions: list[PVC]
) -> None:
    """validateCacheRestored: the caches answer the informer's objects again."""
    for _, v in bindings:
        if v.metadata.name in binder.listers.pvs:  # missing is fine
            assert binder.pv_cache.get(v.metadata.name) is binder.pv_cache.get_api(v.metadata.name)
    for c in provisions:
        got = binder.pvc_cache.get(f"{c.metadata.namespace}/{c.metadata.name}")
        assert ANN_SELECTED_NODE not in got.metadata.annotations


@pytest.mark.parametrize("name", ASSUME)
def test_assume_pod_volumes(name: str) -> None:
    s = ASSUME[name]
    _, binder = env(pvs=s["pvs"], pvcs=s["pod_pvcs"])
    p = test_pod_with(s["pod_pvcs"])
    volumes = _volumes(s.get("bindings"), s.get("provisions"))
    if s.get("should_fail"):
        with pytest.raises(Exception):  # noqa: B017 - the assume cache's refusal
            binder.assume_pod_volumes(p, "node1", volumes)
        assert_restored(binder, s["bindings"], s.get("provisions", []))
        assert pairs(volumes.static_bindings) == [
            (c.metadata.name, v.metadata.name) for c, v in s["bindings"]
        ]
        return
    assert binder.assume_pod_volumes(p, "node1", volumes) is s.get("all_bound", False)
    want_bindings = s.get("expected_bindings", s.get("bindings"))
    want_prov = s.get("expected_provisions", s.get("provisions"))
    assert_assumed(binder, want_bindings or [], want_prov or [])
    if want_bindings is None:
        assert volumes.static_bindings is None
    else:
        assert [(b.pvc, b.pv) for b in volumes.static_bindings or []] == list(want_bindings)
    got_prov = (
        None if volumes.dynamic_provisions is None else [d.pvc for d in volumes.dynamic_provisions]
    )
    assert got_prov == want_prov


def test_revert_assumed_pod_volumes() -> None:
    _, binder = env(pvs=[pvNode1a], pvcs=[unboundPVC, provisionedPVC])
    p = test_pod_with([unboundPVC, provisionedPVC])
    volumes = _volumes([(unboundPVC, pvNode1a)], [provisionedPVC])
    assert binder.assume_pod_volumes(p, "node1", volumes) is False
    assert_assumed(binder, [(unboundPVC, pvNode1aBound)], [selectedNodePVC])
    binder.revert_assumed_pod_volumes(volumes)
    assert_restored(binder, [(unboundPVC, pvNode1a)], [provisionedPVC])


def test_find_assume_volumes_keeps_the_chosen_volume() -> None:
    """TestFindAssumeVolumes: once assumed, finding again always answers that volume."""
    _, binder = env(pvs=[pvNode2, pvNode1a, pvNode1c], pvcs=[unboundPVC])
    p = test_pod_with([unboundPVC])
    volumes, reasons = find(binder, p, node1)
    assert reasons == []
    assert binder.assume_pod_volumes(p, "node1", volumes) is False
    chosen = pairs(volumes.static_bindings)
    for _ in range(50):
        again, reasons = find(binder, p, node1)
        assert reasons == [] and pairs(again.static_bindings) == chosen


# ==================================================================== bindAPIUpdate


def _same(a: Any, b: Any) -> bool:
    """Equal but for the resourceVersion (the caches may hold the written copy)."""
    x, y = type(a)(), type(b)()
    x.CopyFrom(a)
    y.CopyFrom(b)
    x.metadata.resource_version = y.metadata.resource_version = ""
    return bool(x == y)


BIND_API: dict[str, dict[str, Any]] = {
    "nothing-to-bind-nil": {"should_fail": True},
    "nothing-to-bind-bindings-nil": {"provisioned": [], "should_fail": True},
    "nothing-to-bind-provisionings-nil": {"bindings": [], "should_fail": True},
    "nothing-to-bind-empty": {"bindings": [], "provisioned": []},
    "one-binding": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "cached_pvs": [pvNode1a],
        "expected_pvs": [pvNode1aBound],
        "provisioned": [],
    },
    "two-bindings": {
        "bindings": [(unboundPVC, pvNode1aBound), (unboundPVC2, pvNode1bBound)],
        "cached_pvs": [pvNode1a, pvNode1b],
        "expected_pvs": [pvNode1aBound, pvNode1bBound],
        "provisioned": [],
    },
    "api-already-updated": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "cached_pvs": [pvNode1aBound],
        "expected_pvs": [pvNode1aBound],
        "provisioned": [],
    },
    "api-update-failed": {
        "bindings": [(unboundPVC, pvNode1aBound), (unboundPVC2, pvNode1bBound)],
        "cached_pvs": [pvNode1a, pvNode1b],
        "api_pvs": [pvNode1a, pvNode1bBoundHigherVersion],
        "expected_pvs": [pvNode1aBound, pvNode1b],
        "expected_api_pvs": [pvNode1aBound, pvNode1bBoundHigherVersion],
        "provisioned": [],
        "should_fail": True,
    },
    "one-provisioned-pvc": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC)],
        "cached_pvcs": [provisionedPVC],
        "expected_pvcs": [with_selected_node(provisionedPVC)],
    },
    "provision-api-update-failed": {
        "bindings": [],
        "provisioned": [with_selected_node(provisionedPVC), with_selected_node(provisionedPVC2)],
        "cached_pvcs": [provisionedPVC, provisionedPVC2],
        "api_pvcs": [provisionedPVC, provisionedPVCHigherVersion],
        "expected_pvcs": [with_selected_node(provisionedPVC), provisionedPVC2],
        "expected_api_pvcs": [with_selected_node(provisionedPVC), provisionedPVCHigherVersion],
        "should_fail": True,
    },
    "binding-succeed, provision-api-update-failed": {
        "bindings": [(unboundPVC, pvNode1aBound)],
        "cached_pvs": [pvNode1a],
        "expected_pvs": [pvNode1aBound],
        "provisioned": [with_selected_node(provisionedPVC), with_selected_node(provisionedPVC2)],
        "cached_pvcs": [provisionedPVC, provisionedPVC2],
        "api_pvcs": [provisionedPVC, provisionedPVCHigherVersion],
        "expected_pvcs": [with_selected_node(provisionedPVC), provisionedPVC2],
        "expected_api_pvcs": [with_selected_node(provisionedPVC), provisionedPVCHigherVersion],
        "should_fail": True,
    },
}


@pytest.mark.parametrize("name", BIND_API)
def test_bind_api_update(name: str) -> None:
    s = BIND_API[name]
    api, binder = env(
        pvs=s.get("cached_pvs", []),
        api_pvs=s.get("api_pvs"),
        pvcs=s.get("cached_pvcs", []),
        api_pvcs=s.get("api_pvcs"),
    )
    bindings = None if "bindings" not in s else [binding(c, v) for c, v in s["bindings"]]
    claims = (
        None
        if "provisioned" not in s
        else [
            with_selected_node(c, c.metadata.annotations[ANN_SELECTED_NODE])
            for c in s["provisioned"]
        ]
    )
    for b in bindings or []:  # assumeVolumes
        binder.pv_cache.assume(b.pv)
    for c in claims or []:
        binder.pvc_cache.assume(c)
    p = test_pod_with()
    if s.get("should_fail"):
        with pytest.raises(Exception):  # noqa: B017 - an API conflict or missing lists
            asyncio.run(binder.bind_api_update(p, bindings, claims))
    else:
        asyncio.run(binder.bind_api_update(p, bindings, claims))
    for want in s.get("expected_pvs", []):
        assert _same(binder.pv_cache.get(want.metadata.name), want)
    for want in s.get("expected_api_pvs", s.get("expected_pvs", [])):
        assert _same(api.objects[("pv", want.metadata.name)], want)
    for want in s.get("expected_pvcs", []):
        assert _same(binder.pvc_cache.get(f"{NS}/{want.metadata.name}"), want)
    for want in s.get("expected_api_pvcs", s.get("expected_pvcs", [])):
        assert _same(api.objects[("pvc", f"{NS}/{want.metadata.name}")], want)
