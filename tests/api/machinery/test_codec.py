"""Manifests in, Kubernetes-shaped dicts out: the codec's rules."""

from __future__ import annotations

import pytest

from services.api.machinery import codec
from services.api.machinery.codec import DecodeError

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}


def with_spec(**extra):
    doc = {**POD, "spec": {**POD["spec"], **extra}}
    return doc


def test_kubernetes_field_names_round_trip() -> None:
    doc = with_spec(
        nodeSelector={"disk": "ssd"},
        tolerations=[
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
        ],
        terminationGracePeriodSeconds=5,
    )
    doc["status"] = {"hostIP": "10.0.0.1", "qosClass": "BestEffort", "podIPs": [{"ip": "1.2.3.4"}]}
    out = codec.encode(codec.decode(doc).obj)
    assert out["spec"]["tolerations"][0]["tolerationSeconds"] == 60  # int64 as a JSON number
    assert out["spec"]["terminationGracePeriodSeconds"] == 5
    assert out["status"] == doc["status"]
    assert list(out)[:4] == ["apiVersion", "kind", "metadata", "spec"]


@pytest.mark.parametrize(
    ("value", "stored"),
    [(2, "2"), (0.5, "0.5"), ("500m", "500m")],
    ids=["yaml-int-quantity-accepted", "yaml-float-quantity-accepted", "string-quantity-kept"],
)
def test_quantities_accept_yaml_numbers(value, stored) -> None:
    doc = with_spec(
        containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": value}}}]
    )
    pod = codec.decode(doc).obj
    assert pod.spec.containers[0].resources.requests["cpu"] == stored


def test_canonicalize_quantities_rewrites_every_quantity_map() -> None:
    doc = with_spec(
        containers=[
            {
                "name": "c",
                "image": "i",
                "resources": {
                    "requests": {"cpu": 0.5, "memory": "1.5Gi"},
                    "limits": {"cpu": "1000m"},
                },
            }
        ],
        overhead={"memory": "120Mi"},
    )
    pod = codec.decode(doc).obj
    assert codec.canonicalize_quantities(pod) == []
    r = pod.spec.containers[0].resources
    assert dict(r.requests) == {"cpu": "500m", "memory": "1536Mi"} and dict(r.limits) == {
        "cpu": "1"
    }


def test_bad_quantity_is_reported_at_its_path() -> None:
    pod = codec.decode(
        with_spec(
            containers=[{"name": "c", "image": "i", "resources": {"limits": {"memory": "5x"}}}]
        )
    ).obj
    errors = codec.canonicalize_quantities(pod)
    assert [e.path for e in errors] == ["spec.containers[0].resources.limits[memory]"]


def test_int_or_string_keeps_its_type_on_output() -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b"},
        "spec": {"minAvailable": 2},
    }
    assert codec.encode(codec.decode(pdb).obj)["spec"]["minAvailable"] == 2
    pdb["spec"] = {"maxUnavailable": "50%"}
    assert codec.encode(codec.decode(pdb).obj)["spec"]["maxUnavailable"] == "50%"


@pytest.mark.parametrize("mode", ["warn", "ignore"])
def test_unknown_fields_are_dropped_and_listed_in_warn_mode(mode) -> None:
    doc = with_spec(bogus=1)
    doc["metadata"] = {"name": "p", "color": "red"}
    d = codec.decode(doc, validate=mode)
    assert d.unknown_fields == (("metadata.color", "spec.bogus") if mode == "warn" else ())


def test_unknown_fields_are_an_error_in_strict_mode() -> None:
    doc = with_spec(containers=[{"name": "c", "image": "i", "colour": "x"}])
    with pytest.raises(DecodeError, match=r'unknown field "spec.containers\[0\].colour"'):
        codec.decode(doc, validate="strict")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"containers": {}}, 'spec.containers: Invalid value: "{}"|spec.containers: Invalid value'),
        (
            {"priority": "high"},
            'spec.priority: Invalid value: "high": expected integer, got string',
        ),
        ({"hostNetwork": "yes"}, 'spec.hostNetwork: Invalid value: "yes": expected boolean'),
        ({"nodeName": 7}, "spec.nodeName: Invalid value: 7: expected string, got integer"),
        ({"nodeSelector": ["a"]}, "spec.nodeSelector: Invalid value"),
    ],
    ids=[
        "list-given-object",
        "int-given-string",
        "bool-given-string",
        "string-given-int",
        "map-given-list",
    ],
)
def test_type_errors_name_the_field(spec, message) -> None:
    with pytest.raises(DecodeError, match=message.split("|")[-1].replace("[", r"\[")):
        codec.decode(with_spec(**spec))


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"kind": "Pod", "metadata": {"name": "x"}}, "apiVersion"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "Kind"),
        ({"apiVersion": "v1", "kind": "Gadget"}, 'no matches for kind "Gadget" in version "v1"'),
        (
            {"apiVersion": "apps/v1", "kind": "Pod"},
            'no matches for kind "Pod" in version "apps/v1"',
        ),
        (["not", "a", "mapping"], "expected a Kubernetes object"),
    ],
    ids=[
        "missing-apiversion",
        "missing-kind",
        "unknown-kind",
        "wrong-group-for-kind",
        "not-a-mapping",
    ],
)
def test_manifest_identity_errors(doc, message) -> None:
    with pytest.raises(DecodeError, match=message):
        codec.decode(doc)


def test_null_fields_are_unset() -> None:
    pod = codec.decode(with_spec(nodeName=None)).obj
    assert pod.spec.node_name == ""


def test_an_out_of_range_integer_names_its_field() -> None:
    with pytest.raises(
        DecodeError, match=r"spec.priority: Invalid value: 3000000000: out of range"
    ):
        codec.decode(with_spec(priority=3_000_000_000))
