"""The list-type table (services/api/machinery/listtypes.py) says what k8s.io/api's struct
tags say."""

from __future__ import annotations

import pytest

from services.api.machinery import listtypes
from services.api.machinery.kinds import BY_KIND, KINDS
from services.api.machinery.listtypes import ListStrategy

P = "kubera.v1."


@pytest.mark.parametrize(
    ("message", "field", "list_type", "keys", "patch_strategy", "merge_key"),
    [
        ("PodSpec", "containers", "map", ("name",), "merge", "name"),
        ("PodSpec", "initContainers", "map", ("name",), "merge", "name"),
        ("Container", "env", "map", ("name",), "merge", "name"),
        ("Container", "ports", "map", ("containerPort", "protocol"), "merge", "containerPort"),
        ("Container", "volumeMounts", "map", ("mountPath",), "merge", "mountPath"),
        ("Container", "command", "atomic", (), "", ""),
        ("PodSpec", "volumes", "map", ("name",), "merge,retainKeys", "name"),
        ("PodSpec", "imagePullSecrets", "map", ("name",), "merge", "name"),
        ("PodSpec", "tolerations", "atomic", (), "", ""),
        ("PodSpec", "schedulingGates", "map", ("name",), "merge", "name"),
        (
            "PodSpec",
            "topologySpreadConstraints",
            "map",
            ("topologyKey", "whenUnsatisfiable"),
            "merge",
            "topologyKey",
        ),
        ("ObjectMeta", "finalizers", "set", (), "merge", ""),
        ("ObjectMeta", "ownerReferences", "map", ("uid",), "merge", "uid"),
        ("PodStatus", "conditions", "map", ("type",), "merge", "type"),
        ("PodStatus", "podIPs", "map", ("ip",), "merge", "ip"),
        ("PodStatus", "containerStatuses", "atomic", (), "", ""),
        ("NodeStatus", "conditions", "map", ("type",), "merge", "type"),
        ("NodeStatus", "addresses", "map", ("type",), "merge", "type"),
        ("NodeStatus", "declaredFeatures", "atomic", (), "", ""),
        ("NodeSpec", "taints", "atomic", (), "", ""),
        ("NodeSpec", "podCIDRs", "set", (), "merge", ""),
        ("LabelSelector", "matchExpressions", "atomic", (), "", ""),
        ("DeploymentStatus", "conditions", "map", ("type",), "merge", "type"),
        ("PodSpec", "resourceClaims", "map", ("name",), "merge,retainKeys", "name"),
        ("PodStatus", "resourceClaimStatuses", "map", ("name",), "merge,retainKeys", "name"),
        ("ResourceRequirements", "claims", "map", ("name",), "", ""),
        # resource.k8s.io/v1 fields kubectl 1.32 (v1beta1) does not have: the markers say.
        ("DeviceRequest", "firstAvailable", "atomic", (), "", ""),
        ("ExactDeviceRequest", "selectors", "atomic", (), "", ""),
        ("DeviceSubRequest", "selectors", "atomic", (), "", ""),
        ("ResourceClaimStatus", "reservedFor", "map", ("uid",), "merge", "uid"),
        ("ResourceSliceSpec", "sharedCounters", "atomic", (), "", ""),
        ("Device", "consumesCounters", "atomic", (), "", ""),
        ("CapacityRequestPolicy", "validValues", "atomic", (), "", ""),
        # core/v1 1.34+ (DRAExtendedResource), newer than kubectl 1.32 too
        ("PodExtendedResourceClaimStatus", "requestMappings", "atomic", (), "", ""),
    ],
)
def test_strategy_matches_upstream_tags(
    message: str,
    field: str,
    list_type: str,
    keys: tuple[str, ...],
    patch_strategy: str,
    merge_key: str,
) -> None:
    assert listtypes.strategy(P + message, field) == ListStrategy(
        list_type, keys, patch_strategy, merge_key
    )


def test_strategy_of_an_unknown_field_is_none() -> None:
    assert listtypes.strategy(P + "PodSpec", "nodeName") is None


@pytest.mark.parametrize("kind", KINDS, ids=[k.kind for k in KINDS])
def test_every_list_field_of_every_kind_is_decided(kind: object) -> None:
    assert listtypes.fields_without_entry(kind.message.DESCRIPTOR) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        ("Pod", ("spec", "containers", "env"), ListStrategy("map", ("name",), "merge", "name")),
        (
            "Deployment",
            ("spec", "template", "spec", "containers"),
            ListStrategy("map", ("name",), "merge", "name"),
        ),
        ("Pod", ("metadata", "labels"), ListStrategy(map_type="granular")),
        ("Pod", ("spec", "nodeSelector"), ListStrategy(map_type="atomic")),
        ("Pod", ("spec", "containers", "args"), ListStrategy("atomic")),
        ("Pod", ("spec", "nodeName"), None),
        ("Pod", ("spec", "volumes", "configMap", "items"), None),
    ],
)
def test_strategy_at_walks_a_kinds_schema(
    kind: str, path: tuple[str, ...], expected: ListStrategy | None
) -> None:
    assert listtypes.strategy_at(BY_KIND[kind].message.DESCRIPTOR, path) == expected
