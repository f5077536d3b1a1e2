"""Which volume satisfies a claim (services/api/helpers/volumes.py), with upstream's cases as
data: pkg/controller/volume/persistentvolume/index_test.go (TestMatchVolume over
createTestVolumes, TestMatchingWithBoundVolumes, TestFindingVolumeWithDifferentAccessModes,
TestVolumeModeCheck, TestFindMatchVolumeWithNode's affinity cases, TestCheckAccessModes).
Upstream names volumes by UID in these tables; here the UID is the name."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.volumes import (
    check_access_modes,
    find_best_match_for_claim,
    find_matching_volume,
)
from tests.builders import persistent_volume, persistent_volume_claim

RWO, ROX, RWX, RWOP = "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"
SILVER, GOLD, LARGE, WAIT = "silver", "gold", "large", "wait"


def _affinity(key: str, value: str) -> dict[str, Any]:
    """GetVolumeNodeAffinity(key, value)."""
    expr = {"key": key, "operator": "In", "values": [value]}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


def _bound(uid: str) -> dict[str, Any]:
    return {"claimRef": {"uid": uid}}


def _labels(**labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}


#: createTestVolumes, deliberately out of order as upstream's.
TEST_VOLUMES = [
    persistent_volume("gce-pd-10", "10G", RWO, ROX),
    persistent_volume("gce-pd-20", "20G", RWO, ROX, status="Bound", **_bound("def456")),
    persistent_volume("nfs-5", "5G", RWO, ROX, RWX),
    persistent_volume("gce-pd-1", "1G", RWO, ROX, status="Bound", **_bound("abc123")),
    persistent_volume("nfs-10", "10G", RWO, ROX, RWX),
    persistent_volume("gce-pd-5", "5G", RWO, ROX),
    persistent_volume("nfs-1", "1G", RWO, ROX, RWX),
    persistent_volume("gce-pd-2", "20000G", RWO, **_labels(**{"should-exist": "true"})),
    persistent_volume(
        "gce-pd-silver1",
        "10000G",
        RWO,
        storageClassName=SILVER,
        **_labels(**{"should-exist": "true"}),
    ),
    persistent_volume("gce-pd-silver2", "100G", RWO, storageClassName=SILVER),
    persistent_volume("gce-pd-gold", "50G", RWO, storageClassName=GOLD),
    persistent_volume("local-pd-very-large", "200E", RWO, ROX, RWX, storageClassName=LARGE),
    persistent_volume("local-pd-extremely-large", "800E", RWO, ROX, RWX, storageClassName=LARGE),
    persistent_volume(
        "affinity-pv",
        "100G",
        RWO,
        ROX,
        storageClassName=WAIT,
        nodeAffinity=_affinity("key1", "value1"),
    ),
    persistent_volume(
        "affinity-pv2",
        "150G",
        RWO,
        ROX,
        storageClassName=WAIT,
        nodeAffinity=_affinity("key1", "value1"),
    ),
    persistent_volume(
        "affinity-prebound",
        "100G",
        RWO,
        ROX,
        storageClassName=WAIT,
        claimRef={"name": "claim02", "namespace": "myns"},
        nodeAffinity=_affinity("key1", "value1"),
    ),
    persistent_volume(
        "affinity-pv3",
        "200G",
        RWO,
        ROX,
        storageClassName=WAIT,
        nodeAffinity=_affinity("key1", "value3"),
    ),
    *(
        persistent_volume(
            f"affinity-pv4-{phase.lower() or 'empty'}",
            "200G",
            RWO,
            ROX,
            status=phase,
            storageClassName=WAIT,
            nodeAffinity=_affinity("key1", "value4"),
        )
        for phase in ("Pending", "Failed", "Released", "")
    ),
]


def _claim(size: str, *modes: str, **spec: Any) -> Any:
    """makePVC: claim01 in myns, ROX+RWO unless `modes` says otherwise."""
    return persistent_volume_claim(
        "claim01", size, *(modes or (ROX, RWO)), namespace="myns", **spec
    )


_SHOULD_EXIST = {"matchLabels": {"should-exist": "true"}}


#: TestMatchVolume's rows: a claim and the volume of TEST_VOLUMES it gets.
MATCH_VOLUME_CASES = [
    pytest.param(_claim("8G"), "gce-pd-10", id="successful-match-gce-10"),
    pytest.param(_claim("5G", ROX, RWO, RWX), "nfs-5", id="successful-match-nfs-5"),
    pytest.param(_claim("1G"), "gce-pd-5", id="successful-skip-1g-bound-volume"),
    pytest.param(_claim("999G"), None, id="successful-no-match"),
    pytest.param(
        _claim("999G", selector={"matchLabels": {"should-not-exist": "true"}}),
        None,
        id="successful-no-match-due-to-label",
    ),
    pytest.param(
        _claim("20000G", ROX, RWO, selector=_SHOULD_EXIST),
        None,
        id="successful-no-match-due-to-size-constraint-with-label-selector",
    ),
    pytest.param(
        _claim("20000G", RWO, selector=_SHOULD_EXIST),
        "gce-pd-2",
        id="successful-match-due-with-constraint-and-label-selector",
    ),
    pytest.param(
        _claim("1G", RWO, selector=_SHOULD_EXIST, storageClassName=SILVER),
        "gce-pd-silver1",
        id="successful-match-with-class",
    ),
    pytest.param(
        _claim("1G", RWO, storageClassName=SILVER),
        "gce-pd-silver2",
        id="successful-match-with-class-and-labels",
    ),
    pytest.param(
        _claim("1E", RWO, storageClassName=LARGE),
        "local-pd-very-large",
        id="successful-match-very-large",
    ),
    pytest.param(
        _claim("800E", RWO, storageClassName=LARGE),
        "local-pd-extremely-large",
        id="successful-match-exact-extremely-large",
    ),
    pytest.param(
        _claim("950E", RWO, storageClassName=LARGE),
        None,
        id="successful-no-match-way-too-large",
    ),
]


@pytest.mark.parametrize(("claim", "expected"), MATCH_VOLUME_CASES)
def test_the_smallest_matching_volume_of_the_fewest_access_modes_is_chosen(
    claim: Any, expected: str | None
) -> None:
    got = find_best_match_for_claim(claim, TEST_VOLUMES)
    assert (got.metadata.name if got else None) == expected


def test_a_volume_bound_to_another_claim_is_never_chosen() -> None:
    """TestMatchingWithBoundVolumes."""
    vols = [
        persistent_volume("gce001", "1G", RWO, ROX, status="Bound", **_bound("abc123")),
        persistent_volume("gce002", "1G", RWO, ROX),
    ]
    got = find_best_match_for_claim(_claim("1G"), vols)
    assert got is not None and got.metadata.name == "gce002"


def test_the_closest_set_of_access_modes_wins() -> None:
    """TestFindingVolumeWithDifferentAccessModes, step by step."""
    gce = persistent_volume("gce", "10G", RWO, ROX)
    ebs = persistent_volume("ebs", "10G", RWO)
    nfs = persistent_volume("nfs", "10G", RWO, ROX, RWX)
    vols = [gce, ebs, nfs]

    def best(*modes: str) -> str:
        got = find_best_match_for_claim(_claim("1G", *modes), vols)
        assert got is not None
        return got.metadata.name

    assert best(RWO) == "ebs"
    assert best(RWO, ROX) == "gce"
    assert best(RWX, RWO, ROX) == "nfs"  # order of the requested modes does not matter
    assert best(RWX) == "nfs"  # fewer modes requested still match
    ebs.spec.claim_ref.SetInParent()  # the exact match is bound: the next level up
    assert best(RWO) == "gce"
    gce.spec.claim_ref.SetInParent()
    assert best(RWO) == "nfs"
    gce.spec.ClearField("claim_ref")
    assert best(ROX) == "gce"  # a partial mode request


@pytest.mark.parametrize(
    ("pv_mode", "claim_mode", "mismatch"),
    [
        ("Filesystem", "Block", True),
        ("Block", "Filesystem", True),
        ("Block", "Block", False),
        ("Filesystem", "Filesystem", False),
        (None, "Block", True),
        (None, "Filesystem", False),
    ],
)
def test_a_volume_of_another_volume_mode_does_not_match(
    pv_mode: str | None, claim_mode: str, mismatch: bool
) -> None:
    """TestVolumeModeCheck (a missing volume mode is Filesystem)."""
    pv = persistent_volume("local-1", "10G", RWO)
    if pv_mode is None:
        pv.spec.ClearField("volume_mode")
    else:
        pv.spec.volume_mode = pv_mode
    claim = _claim("8G", RWO, volumeMode=claim_mode)
    assert (find_best_match_for_claim(claim, [pv]) is None) is mismatch


def _node(**labels: str) -> core_pb2.Node:
    node = core_pb2.Node()
    node.metadata.labels.update(labels)
    return node


@pytest.mark.parametrize(
    ("claim", "node_labels", "excluded", "expected"),
    [
        pytest.param(
            _claim("100G", RWO, storageClassName=WAIT),
            {"key1": "value1"},
            (),
            "affinity-pv",
            id="success-match",
        ),
        pytest.param(
            persistent_volume_claim(
                "claim02", "100G", RWO, namespace="myns", storageClassName=WAIT
            ),
            {"key1": "value1"},
            (),
            "affinity-prebound",
            id="success-prebound",
        ),
        pytest.param(
            _claim("100G", RWO, storageClassName=WAIT),
            {"key1": "value1"},
            ("affinity001",),
            "affinity-pv2",
            id="success-exclusion",
        ),
        pytest.param(
            _claim("100G", RWO, storageClassName=WAIT),
            {"key1": "value1"},
            ("affinity001", "affinity002"),
            None,
            id="fail-exclusion",
        ),
        pytest.param(
            _claim("100G", RWO, storageClassName=WAIT),
            {"key1": "value2"},
            (),
            None,
            id="fail-no-node-match",
        ),
        pytest.param(
            _claim("100G", RWO, RWX, storageClassName=WAIT),
            {"key1": "value1"},
            (),
            None,
            id="fail-access-modes",
        ),
        pytest.param(
            _claim("100G", RWO, storageClassName=WAIT),
            {"key1": "value4"},
            (),
            None,
            id="fail-nonavailable",
        ),
        pytest.param(
            persistent_volume_claim(
                "claim02", "100G", RWO, namespace="myns", storageClassName=WAIT
            ),
            {"key1": "value2"},
            (),
            None,
            id="fail-prebound-node-affinity",
        ),
    ],
)
def test_on_a_node_a_volume_also_needs_its_affinity_and_every_access_mode(
    claim: Any, node_labels: dict[str, str], excluded: tuple[str, ...], expected: str | None
) -> None:
    """TestFindMatchVolumeWithNode (the scheduler's path; upstream excludes by name and
    names the volumes here by UID, so kubera's names stand for both)."""
    # upstream's exclusion names are the volumes' names (affinity001, affinity002)
    names = {"affinity001": "affinity-pv", "affinity002": "affinity-pv2"}
    got = find_matching_volume(
        claim, TEST_VOLUMES, node=_node(**node_labels), excluded={names.get(e, e) for e in excluded}
    )
    assert (got.metadata.name if got else None) == expected


def test_delayed_binding_returns_only_the_prebound_volume() -> None:
    """The controller's path for WaitForFirstConsumer: unbound volumes are left to the scheduler."""
    free = _claim("100G", RWO, storageClassName=WAIT)
    assert find_matching_volume(free, TEST_VOLUMES, delay_binding=True) is None
    prebound = persistent_volume_claim(
        "claim02", "100G", RWO, namespace="myns", storageClassName=WAIT
    )
    got = find_matching_volume(prebound, TEST_VOLUMES, delay_binding=True)
    assert got is not None and got.metadata.name == "affinity-prebound"


@pytest.mark.parametrize(
    ("pv_modes", "claim_modes", "ok"),
    [
        ((RWO, ROX), (RWO,), True),
        ((RWO,), (RWO, ROX), False),
        ((RWOP,), (RWOP,), True),
        ((RWO,), (RWOP,), False),
    ],
)
def test_a_volume_holds_every_mode_the_claim_asks_for(
    pv_modes: tuple[str, ...], claim_modes: tuple[str, ...], ok: bool
) -> None:
    """TestCheckAccessModes."""
    pv = persistent_volume("v", "1G", *pv_modes)
    assert check_access_modes(_claim("1G", *claim_modes), pv) is ok
