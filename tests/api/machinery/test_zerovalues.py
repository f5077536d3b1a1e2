"""Upstream's zero values: the fields its Go types always write are in kubera's JSON, so the
official Python client's strict models read kubera's objects; the table is upstream's release
1.37 OpenAPI, from the pinned kubernetes-validate package (never the installed client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import symbol_database
from kubernetes import client as k8s

from protos.kubera.v1 import core_pb2, policy_pb2, scheduling_pb2
from services.api.machinery import codec
from services.api.machinery.zerovalues import ALWAYS_WRITTEN

ROOT = Path(__file__).resolve().parents[3]


def test_the_table_is_what_the_generator_makes_from_upstreams_openapi() -> None:
    r = subprocess.run(
        [sys.executable, "scripts/genzerovalues.py", "--check"], cwd=ROOT, capture_output=True
    )
    assert r.returncode == 0, r.stderr.decode()


def test_the_generator_does_not_read_the_installed_client() -> None:
    text = (ROOT / "scripts/genzerovalues.py").read_text()
    assert "import kubernetes" not in text and "kubernetes.client" not in text


def _gen() -> object:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import genzerovalues
    finally:
        sys.path.pop(0)
    return genzerovalues


@pytest.mark.parametrize(
    ("current", "earlier", "expected"),
    [
        pytest.param(
            {"S": {"properties": {"a": {"type": "integer"}}, "required": ["a"]}},
            [],
            {"a": 0},
            id="required-in-1.37",
        ),
        pytest.param(
            {"S": {"properties": {"a": {"type": ["integer", "null"]}}}},
            [{"S": {"properties": {"a": {}}, "required": ["a"]}}],
            {"a": 0},
            id="made-optional-later-still-written",
        ),
        pytest.param(
            {"S": {"properties": {"b": {"type": "string"}}}},
            [{"S": {"properties": {"a": {}}, "required": ["a"]}}],
            {},
            id="removed-field-is-not-written",
        ),
        pytest.param(
            {"S": {"properties": {"a": {"type": "string"}}}},
            [],
            {},
            id="optional-field-is-omitted",
        ),
    ],
)
def test_a_field_is_written_when_upstream_required_it_in_1_37_or_before(
    current: dict, earlier: list, expected: dict
) -> None:
    assert _gen().always_written("S", current, earlier) == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("prop", "zero"),
    [
        ({"type": "integer"}, 0),
        ({"type": ["boolean", "null"]}, False),
        ({"type": "string"}, ""),
        ({"type": "array", "items": {}}, []),
        ({"type": "object", "additionalProperties": {}}, {}),
        ({"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}, None),
        ({"$ref": "#/$defs/io.k8s.apimachinery.pkg.api.resource.Quantity"}, "0"),
        ({"$ref": "#/$defs/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}, 0),
        ({"allOf": [{"$ref": "#/$defs/io.k8s.api.core.v1.PodSpec"}]}, {}),
    ],
)
def test_the_zero_written_is_gos_zero_of_the_upstream_type(prop: dict, zero: object) -> None:
    assert _gen().zero(prop) == zero  # type: ignore[attr-defined]


def test_a_pdb_matching_no_pod_reads_zero_expected_pods_and_disruptions() -> None:
    pdb = policy_pb2.PodDisruptionBudget(api_version="policy/v1", kind="PodDisruptionBudget")
    pdb.metadata.name, pdb.metadata.namespace = "p", "default"
    pdb.status.observed_generation = 1
    st = codec.encode(pdb)["status"]
    assert (st["expectedPods"], st["disruptionsAllowed"]) == (0, 0)
    assert (st["currentHealthy"], st["desiredHealthy"]) == (0, 0)
    assert k8s.V1PodDisruptionBudget.from_dict(codec.encode(pdb)).status.expected_pods == 0


def test_a_priority_class_of_value_zero_writes_its_value() -> None:
    pc = scheduling_pb2.PriorityClass(api_version="scheduling.k8s.io/v1", kind="PriorityClass")
    pc.metadata.name = "zero"
    assert codec.encode(pc)["value"] == 0


def test_no_field_upstream_requires_is_missing_from_kubera_messages() -> None:
    r = subprocess.run(
        [sys.executable, "scripts/genzerovalues.py", "--missing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert r.stdout.split() == []


def _running_pod() -> core_pb2.Pod:
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name, pod.metadata.namespace = "p", "default"
    pod.spec.containers.add(name="c", image="nginx")
    pod.status.phase = "Running"
    pod.status.container_statuses.add(name="c", image="nginx")  # ready false, restartCount 0
    pod.status.conditions.add(type="Ready", status="False")
    return pod


def test_a_container_status_carries_its_zero_restart_count_and_readiness() -> None:
    d = codec.encode(_running_pod())
    cs = d["status"]["containerStatuses"][0]
    assert (cs["restartCount"], cs["ready"], cs["imageID"]) == (0, False, "")


def test_the_strict_python_client_reads_a_pod_kubera_writes() -> None:
    with pytest.raises(ValueError, match="restartCount"):  # the client is strict indeed
        k8s.V1Pod.from_dict({"status": {"containerStatuses": [{"name": "c", "image": "x"}]}})
    pod = k8s.V1Pod.from_dict(codec.encode(_running_pod()))
    assert pod.status.container_statuses[0].restart_count == 0


@pytest.mark.parametrize("full_name", sorted(ALWAYS_WRITTEN))
def test_zero_values_read_back_as_what_was_written(full_name: str) -> None:
    cls = symbol_database.Default().GetSymbol(full_name)
    d = codec.encode(cls())
    assert set(ALWAYS_WRITTEN[full_name]) <= set(d)
    back = cls()
    assert codec.decode_into(d, back, validate="strict") == ()
    assert codec.encode(back) == d


#: A sample read off upstream's Go types (staging/src/k8s.io/api/*/v1/types.go): fields whose
#: json tag has no `omitempty`, so Go writes them at their zero value. The generated table
#: must hold each (an independent check of the OpenAPI-derived rule).
GO_TYPES_SAMPLE = {
    # policy/v1: `DisruptionsAllowed int32 json:"disruptionsAllowed"` (+optional since 1.36)
    "kubera.v1.PodDisruptionBudgetStatus": (
        "disruptionsAllowed",
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
    ),
    # scheduling/v1: `Value int32 json:"value"`
    "kubera.v1.PriorityClass": ("value",),
    # core/v1: `Ready bool json:"ready"`, `RestartCount int32 json:"restartCount"`, ...
    "kubera.v1.ContainerStatus": ("name", "ready", "restartCount", "image", "imageID"),
    # core/v1 and apps/v1 conditions: `Type ... json:"type"`, `Status ... json:"status"`
    "kubera.v1.PodCondition": ("type", "status"),
    "kubera.v1.NodeCondition": ("type", "status"),
    "kubera.v1.DeploymentCondition": ("type", "status"),
    "kubera.v1.ReplicaSetCondition": ("type", "status"),
    # core/v1: `ContainerPort int32 json:"containerPort"`
    "kubera.v1.ContainerPort": ("containerPort",),
}


@pytest.mark.parametrize("message", sorted(GO_TYPES_SAMPLE))
def test_fields_go_writes_without_omitempty_are_in_the_table(message: str) -> None:
    assert set(GO_TYPES_SAMPLE[message]) <= set(ALWAYS_WRITTEN.get(message, {}))
