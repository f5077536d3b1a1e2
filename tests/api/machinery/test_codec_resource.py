"""The DRA kinds and PodGroup through kubera's codec: a capacity is a quantity held in a
scalar field (DeviceCapacity.value), opaque parameters are arbitrary JSON
(google.protobuf.Value), and both come back as Kubernetes writes them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.api.machinery import codec
from tests.api.resource_manifests import MANIFESTS, manifest, stored


@pytest.mark.parametrize("kind", list(MANIFESTS))
def test_every_kind_round_trips_with_canonical_quantities(kind: str) -> None:
    obj = codec.decode(manifest(kind), validate="strict").obj
    assert codec.canonicalize_quantities(obj) == []
    assert codec.encode(obj) == stored(kind)


@pytest.mark.parametrize(
    ("value", "canonical"),
    [(80, "80"), (0.5, "500m"), ("1024Mi", "1Gi"), ("80Gi", "80Gi"), ("1e3", "1e3")],
)
def test_device_capacity_is_a_quantity(value: Any, canonical: str) -> None:
    doc = manifest("ResourceSlice")
    doc["spec"]["devices"][0]["capacity"] = {"memory": {"value": value}}
    obj: Any = codec.decode(doc).obj
    assert codec.canonicalize_quantities(obj) == []
    assert obj.spec.devices[0].capacity["memory"].value == canonical


def test_a_bad_capacity_is_an_error_at_its_field_path() -> None:
    doc = manifest("ResourceSlice")
    doc["spec"]["devices"][0]["capacity"] = {"memory": {"value": "80Gx"}}
    (err,) = codec.canonicalize_quantities(codec.decode(doc).obj)
    assert err.path == "spec.devices[0].capacity[memory].value"
    assert "quantities must match the regular expression" in err.detail


def test_a_capacity_of_the_wrong_type_is_a_decode_error() -> None:
    doc = manifest("ResourceSlice")
    doc["spec"]["devices"][0]["capacity"] = {"memory": {"value": [1]}}
    with pytest.raises(codec.DecodeError, match=r"capacity\[memory\]\.value"):
        codec.decode(doc)


@pytest.mark.parametrize(
    "parameters",
    [
        {"replicas": 4, "ratio": 0.25, "on": True, "off": None, "list": [1, "a", [2], {"b": 3}]},
        [1, 2, 3],
        "just a string",
        7,
        {"big": 2**53},
    ],
    ids=["object", "array", "string", "number", "largest-exact-int"],
)
def test_opaque_parameters_are_arbitrary_json(parameters: Any) -> None:
    doc = manifest("DeviceClass")
    doc["spec"]["config"] = [{"opaque": {"driver": "gpu.example.com", "parameters": parameters}}]
    out = codec.encode(codec.decode(doc).obj)
    assert out["spec"]["config"][0]["opaque"]["parameters"] == parameters
    # 4 stays 4, not 4.0 (JSON object order is not kept: protobuf's Struct is a map).
    got = json.dumps(out["spec"]["config"][0]["opaque"]["parameters"], sort_keys=True)
    assert got == json.dumps(parameters, sort_keys=True)


def test_whole_numbers_in_other_json_fields_stay_integers() -> None:
    doc = manifest("ResourceClaim")
    out = codec.encode(codec.decode(doc).obj)
    params = out["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert params == {"mode": "shared", "replicas": 2}
    assert isinstance(params["replicas"], int)


def test_the_wire_form_round_trips() -> None:
    for kind in MANIFESTS:
        obj = codec.decode(manifest(kind)).obj
        assert codec.encode(codec.unpack(codec.pack(obj))) == codec.encode(obj)
