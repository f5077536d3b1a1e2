"""Struct fields Go's encoding/json writes whatever their tag: `omitempty` does not omit a
struct, so upstream writes `lastState: {}`, `lastProbeTime: null`, a Service's
`status: {loadBalancer: {}}`. The list is read off upstream's Go types
(scripts/genstructfields.py) and folded into the zero-value table (scripts/genzerovalues.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import struct_pb2
from kubernetes import client as k8s

from protos.kubera.v1 import apps_pb2, batch_pb2, core_pb2, service_pb2
from services.api.machinery import codec
from services.controllers.deployment.util import compute_hash
from services.controllers.history import hash_revision, template_patch

ROOT = Path(__file__).resolve().parents[3]
STRUCT_FIELDS = json.loads((ROOT / "scripts/upstream/structfields.json").read_text())


def _gen() -> Any:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import genstructfields
        import genzerovalues
    finally:
        sys.path.pop(0)
    return genstructfields, genzerovalues


META = """package v1
type Time struct { time.Time `protobuf:"-"` }
func (t Time) MarshalJSON() ([]byte, error) { return nil, nil }
type ObjectMeta struct {
\tName string `json:"name,omitempty"`
\tCreationTimestamp Time `json:"creationTimestamp,omitempty,omitzero"`
\tDeletionTimestamp *Time `json:"deletionTimestamp,omitempty"`
}
type TypeMeta struct {
\tKind string `json:"kind,omitempty"`
}
"""


def _table(types_go: str) -> dict[str, dict[str, Any]]:
    gen, _ = _gen()
    meta = gen.Package("k8s.io/apimachinery/pkg/apis/meta/v1")
    gen.parse_go(META, meta)
    core = gen.Package("k8s.io/api/core/v1")
    gen.parse_go(types_go, core)
    pkgs = {meta.path: meta, core.path: core}
    fields: dict[str, dict[str, Any]] = gen.struct_fields(pkgs)
    return fields.get("io.k8s.api.core.v1.S", {})


_IMPORTS = 'package v1\nimport (\n\tmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"\n)\n'


@pytest.mark.parametrize(
    ("fields", "written"),
    [
        pytest.param('A Inner `json:"a,omitempty"`', {"a": {}}, id="omitempty-struct-written"),
        pytest.param('A Inner `json:"a"`', {"a": {}}, id="plain-struct-written"),
        pytest.param('A *Inner `json:"a,omitempty"`', {}, id="pointer-omitted"),
        pytest.param('A []Inner `json:"a,omitempty"`', {}, id="slice-omitted"),
        pytest.param('A map[string]Inner `json:"a,omitempty"`', {}, id="map-omitted"),
        pytest.param('A Phase `json:"a,omitempty"`', {}, id="named-string-omitted"),
        pytest.param('A Inner `json:"a,omitempty,omitzero"`', {}, id="omitzero-omitted"),
        pytest.param('A Inner `json:"-"`', {}, id="dash-never-written"),
        pytest.param('T metav1.Time `json:"t,omitempty"`', {"t": None}, id="time-writes-null"),
        pytest.param('T *metav1.Time `json:"t,omitempty"`', {}, id="time-pointer-omitted"),
        pytest.param(
            'metav1.ObjectMeta `json:"metadata,omitempty"`',
            {"metadata": {}},
            id="object-meta-written-empty",
        ),
        pytest.param(
            'metav1.TypeMeta `json:",inline"`\n\tB Inner `json:"b"`',
            {"b": {}},
            id="inline-embedded-contributes-its-fields",
        ),
        pytest.param(
            'A Inner `json:"a"` // a comment with `json:"x"` in it\n\t// Z Inner `json:"z"`',
            {"a": {}},
            id="comments-ignored",
        ),
    ],
)
def test_go_writes_a_struct_field_unless_pointer_or_omitzero(fields: str, written: dict) -> None:
    src = (
        _IMPORTS
        + f"type Phase string\ntype Inner struct {{\n}}\ntype S struct {{\n\t{fields}\n}}\n"
    )
    assert _table(src) == written


def test_object_meta_writes_no_creation_timestamp_since_omitzero() -> None:
    gen, _ = _gen()
    meta = gen.Package("k8s.io/apimachinery/pkg/apis/meta/v1")
    gen.parse_go(META, meta)
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" not in gen.struct_fields(
        {meta.path: meta}
    )
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" not in STRUCT_FIELDS["fields"]


def test_a_struct_with_an_unknown_marshaller_is_refused_not_written_empty() -> None:
    src = _IMPORTS + (
        "type Odd struct {}\nfunc (o *Odd) MarshalJSON() ([]byte, error) { return nil, nil }\n"
        'type S struct {\n\tA Odd `json:"a"`\n}\n'
    )
    with pytest.raises(SystemExit, match="Odd has its own MarshalJSON"):
        _table(src)


def test_the_file_records_the_upstream_commits_it_was_read_from() -> None:
    src = STRUCT_FIELDS["source"]
    assert set(src) == {"k8s.io/api", "k8s.io/apimachinery"}
    assert all(len(c) == 40 for c in src.values())


def _pinned_definitions() -> dict[str, Any]:
    _, zv = _gen()
    defs: dict[str, Any] = zv.definitions(zv.RELEASE)
    return defs


def test_every_struct_field_is_a_reference_in_upstreams_pinned_openapi() -> None:
    """The Go read agrees with the 1.37 OpenAPI: each field it names exists there and is an
    object reference (never a string, number or list)."""
    defs = _pinned_definitions()
    checked = 0
    for schema, fields in STRUCT_FIELDS["fields"].items():
        props = defs.get(schema, {}).get("properties")
        if props is None:
            continue  # a type the OpenAPI does not publish (internal or list-only)
        for name in fields:
            assert name in props, f"{schema}.{name}"
            prop = props[name]
            assert "$ref" in prop or "allOf" in prop, f"{schema}.{name}: {prop}"
            checked += 1
    assert checked > 300


def test_kubera_lacks_only_the_struct_fields_listed_here() -> None:
    _, zv = _gen()
    assert zv.table()[2] == ["kubera.v1.NodeStatus.daemonEndpoints"]


def _pod() -> core_pb2.Pod:
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name, pod.metadata.namespace = "p", "default"
    pod.metadata.creation_timestamp = "2026-12-07T00:00:00Z"
    pod.spec.containers.add(name="c", image="nginx")
    pod.status.phase = "Pending"
    cs = pod.status.container_statuses.add(name="c", image="nginx")
    cs.state.update({"waiting": {"reason": "ContainerCreating"}})
    pod.status.conditions.add(type="PodScheduled", status="True")
    return pod


def test_a_pod_reads_as_upstream_writes_it() -> None:
    d = codec.encode(_pod())
    assert d["spec"]["containers"][0]["resources"] == {}
    cs = d["status"]["containerStatuses"][0]
    assert cs["lastState"] == {} and cs["state"] == {"waiting": {"reason": "ContainerCreating"}}
    cond = d["status"]["conditions"][0]
    assert cond["lastProbeTime"] is None and cond["lastTransitionTime"] is None
    assert k8s.V1Pod.from_dict(d).status.container_statuses[0].last_state is not None


def test_an_empty_status_is_written_empty() -> None:
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name = "p"
    assert codec.encode(pod)["status"] == {}
    svc = service_pb2.Service(api_version="v1", kind="Service")
    svc.metadata.name = "s"
    svc.spec.ports.add(port=80, target_port="8080", protocol="TCP")
    assert codec.encode(svc)["status"] == {"loadBalancer": {}}


def test_a_workload_template_writes_its_metadata_but_no_creation_timestamp() -> None:
    dep = apps_pb2.Deployment(api_version="apps/v1", kind="Deployment")
    dep.metadata.name = "d"
    dep.spec.template.spec.containers.add(name="c", image="nginx")
    d = codec.encode(dep)
    assert d["spec"]["strategy"] == {} and d["status"] == {}
    assert d["spec"]["template"]["metadata"] == {}  # upstream's omitzero since 1.34
    job = batch_pb2.Job(api_version="batch/v1", kind="Job")
    job.metadata.name = "j"
    assert codec.encode(job)["spec"]["template"] == {"metadata": {}, "spec": {"containers": []}}


def test_a_templates_hashes_did_not_change_when_the_codec_began_writing_structs() -> None:
    """pod-template-hash and a ControllerRevision's hash are kubera's own (JSON-based): the
    empty structs now written stay out of them, so no workload rolls on an upgrade. The
    values are those the codec gave before it wrote them."""
    t = core_pb2.PodTemplateSpec()
    t.metadata.labels["app"] = "web"
    t.spec.containers.add(name="web", image="nginx:1.27").ports.add(container_port=80)
    data = struct_pb2.Struct()
    data.update(template_patch(t))
    assert (compute_hash(t), hash_revision(data)) == ("5b45c7b54c", "74b4c9858d")


def test_empty_struct_fields_read_back_unset_so_a_round_trip_changes_nothing() -> None:
    pod = _pod()
    back = core_pb2.Pod()
    codec.decode_into(codec.encode(pod), back, validate="strict")
    assert back == pod and not back.spec.containers[0].HasField("resources")
