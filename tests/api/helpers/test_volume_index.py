"""The volume index of the PV controller and the scheduler (services/api/helpers/volumes.py
`VolumeIndex`): upstream's TestMatchVolume rows (index_test.go, as tests/api/helpers/test_volumes.py holds
them) answered through the index give the same volumes as the match over every volume,
and the index follows volumes that change class, claim or go away."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.helpers.volumes import VolumeIndex, find_best_match_for_claim
from services.api.machinery import codec
from tests.api.helpers.test_volumes import MATCH_VOLUME_CASES, TEST_VOLUMES
from tests.builders import persistent_volume, persistent_volume_claim

RWO, ROX = "ReadWriteOnce", "ReadOnlyMany"


def _index(volumes: list[Any]) -> tuple[VolumeIndex, dict[str, Any]]:
    by_name = {v.metadata.name: v for v in volumes}
    return VolumeIndex(volumes), by_name


@pytest.mark.parametrize(("claim", "expected"), MATCH_VOLUME_CASES)
def test_the_index_finds_what_the_match_over_all_volumes_finds(claim: Any, expected: Any) -> None:
    index, by_name = _index(TEST_VOLUMES)
    got = index.find_best_match(claim, by_name.get)
    assert (got.metadata.name if got else None) == expected
    everywhere = find_best_match_for_claim(claim, TEST_VOLUMES)
    assert (got.metadata.name if got else None) == (
        everywhere.metadata.name if everywhere else None
    )


@pytest.mark.parametrize(("claim", "_expected"), MATCH_VOLUME_CASES)
def test_a_claims_candidates_are_only_its_classs_volumes(claim: Any, _expected: Any) -> None:
    index, by_name = _index(TEST_VOLUMES)
    wanted = claim.spec.storage_class_name
    assert {by_name[n].spec.storage_class_name for n in index.candidates(claim)} <= {wanted}


def test_a_volume_naming_the_claim_is_found_whatever_its_class() -> None:
    """findMatchingVolume returns a volume pre-bound to the claim before it checks the class."""
    claim = persistent_volume_claim("claim01", "1G", RWO, namespace="myns")
    prebound = persistent_volume(
        "other-class",
        "5G",
        RWO,
        storageClassName="gold",
        claimRef={"name": "claim01", "namespace": "myns"},
    )
    free = persistent_volume("free", "10G", RWO)
    index, by_name = _index([free, prebound])
    assert index.candidates(claim) == ["free", "other-class"]
    got = index.find_best_match(claim, by_name.get)
    assert got is not None and got.metadata.name == "other-class"


def test_the_index_follows_a_volume_that_changes_class_or_claim_or_goes() -> None:
    claim = persistent_volume_claim("claim01", "1G", RWO, namespace="myns", storageClassName="gold")
    pv = persistent_volume("pv", "5G", RWO, storageClassName="silver")
    index, _ = _index([pv])
    assert index.candidates(claim) == [] and index.of_class("silver") == ["pv"]
    changed = codec.clone(pv)
    changed.spec.storage_class_name = "gold"
    index.add(changed)
    assert index.candidates(claim) == ["pv"] and index.of_class("silver") == []
    bound = codec.clone(changed)
    bound.spec.storage_class_name = "silver"
    bound.spec.claim_ref.namespace, bound.spec.claim_ref.name = "myns", "claim01"
    index.add(bound)
    assert index.candidates(claim) == ["pv"] and index.of_class("gold") == []
    index.remove("pv")
    assert index.candidates(claim) == [] and len(index) == 0
    index.remove("pv")  # a second delete is no error


def test_a_volume_gone_from_the_cache_is_skipped() -> None:
    claim = persistent_volume_claim("claim01", "1G", RWO, namespace="myns")
    index, by_name = _index([persistent_volume("a", "5G", RWO), persistent_volume("b", "9G", RWO)])
    del by_name["a"]
    got = index.find_best_match(claim, by_name.get)
    assert got is not None and got.metadata.name == "b"
