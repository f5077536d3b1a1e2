"""OpenAPI v3: documents per group-version as kube-apiserver names and shapes them, every
kind present with its GVK, every reference resolvable, the fieldValidation parameter
kubectl looks for, and real kubectl explain / apply reading them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery import codec, listtypes
from services.api.machinery.kinds import KINDS, Kind
from services.httpapi import discovery, openapi, openapischemas
from tests.httpapi.kubectl_docs import doc_server

SCHEMAS = "#/components/schemas/"


def _doc(kind: Kind) -> dict[str, Any]:
    doc = openapi.openapi_v3_document(kind.group, kind.version)
    assert doc is not None
    return doc


def _schemas(group: str = "", version: str = "v1") -> dict[str, Any]:
    doc = openapi.openapi_v3_document(group, version)
    assert doc is not None
    return doc["components"]["schemas"]


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def _target(schema: dict[str, Any]) -> str:
    """The schema name a field refers to (through upstream's allOf wrapper)."""
    ref = schema["allOf"][0]["$ref"] if "allOf" in schema else schema["$ref"]
    return ref.removeprefix(SCHEMAS)


def test_index_lists_every_group_version_at_a_hashed_url() -> None:
    paths = openapi.openapi_v3_paths()["paths"]
    expected = {f"apis/{g}/{v}" if g else f"api/{v}" for g, v in discovery.group_versions()}
    assert set(paths) == expected
    for key, entry in paths.items():
        url, _, query = entry["serverRelativeURL"].partition("?hash=")
        assert url == f"/openapi/v3/{key}"
        assert len(query) == 128 and query == query.upper()


def test_hash_is_stable_and_differs_between_documents() -> None:
    assert openapi.document_hash("", "v1") == openapi.document_hash("", "v1")
    assert openapi.document_hash("", "v1") != openapi.document_hash("apps", "v1")


def test_unknown_group_version_has_no_document() -> None:
    assert openapi.openapi_v3_document("example.com", "v1") is None


@pytest.mark.parametrize(
    ("message", "name"),
    [
        (core_pb2.Pod, "io.k8s.api.core.v1.Pod"),
        (core_pb2.PodSpec, "io.k8s.api.core.v1.PodSpec"),
        (apps_pb2.Deployment, "io.k8s.api.apps.v1.Deployment"),
        (
            core_pb2.Pod.DESCRIPTOR.fields_by_name["metadata"].message_type,
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        ),
    ],
)
def test_schemas_are_named_as_upstream(message: Any, name: str) -> None:
    desc = message if hasattr(message, "full_name") else message.DESCRIPTOR
    assert openapischemas.schema_name(desc) == name


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_every_kind_and_its_list_carry_their_gvk(kind: Kind) -> None:
    schemas = _doc(kind)["components"]["schemas"]
    name = openapischemas.schema_name(kind.message.DESCRIPTOR)
    gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    assert schemas[name]["x-kubernetes-group-version-kind"] == [gvk]
    assert schemas[name + "List"]["x-kubernetes-group-version-kind"] == [
        {**gvk, "kind": kind.kind + "List"}
    ]
    assert {"apiVersion", "kind", "metadata"} <= set(schemas[name]["properties"])


@pytest.mark.parametrize(("group", "version"), discovery.group_versions())
def test_every_reference_resolves_in_its_own_document(group: str, version: str) -> None:
    doc = openapi.openapi_v3_document(group, version)
    assert doc is not None
    names = set(doc["components"]["schemas"])
    refs = set(_refs(doc))
    assert refs and all(r.startswith(SCHEMAS) for r in refs)
    assert {r.removeprefix(SCHEMAS) for r in refs} <= names


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("io.k8s.apimachinery.pkg.api.resource.Quantity", {"type": "string"}),
        ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", {"x-kubernetes-int-or-string": True}),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", {"type": "string", "format": "date-time"}),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
            {"type": "string", "format": "date-time"},
        ),
    ],
)
def test_apimachinery_value_types(name: str, shape: dict[str, Any]) -> None:
    schema = _schemas()[name]
    assert {k: schema[k] for k in shape} == shape


@pytest.mark.parametrize(
    ("group", "path", "target"),
    [
        (
            "",
            "io.k8s.api.core.v1.ResourceRequirements.limits*",
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
        ),
        (
            "",
            "io.k8s.api.core.v1.NodeStatus.allocatable*",
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
        ),
        (
            "apps",
            "io.k8s.api.apps.v1.RollingUpdateDeployment.maxSurge",
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        ),
        (
            "policy",
            "io.k8s.api.policy.v1.PodDisruptionBudgetSpec.minAvailable",
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        ),
        (
            "",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta.creationTimestamp",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
        ),
        (
            "",
            "io.k8s.api.core.v1.Event.eventTime",
            "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
        ),
        (
            "coordination.k8s.io",
            "io.k8s.api.coordination.v1.LeaseSpec.renewTime",
            "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
        ),
        ("", "io.k8s.api.core.v1.PodSpec.containers[]", "io.k8s.api.core.v1.Container"),
        (
            "resource.k8s.io",
            "io.k8s.api.resource.v1.DeviceCapacity.value",
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
        ),
        (
            "resource.k8s.io",
            "io.k8s.api.resource.v1.ResourceSliceSpec.devices[]",
            "io.k8s.api.resource.v1.Device",
        ),
        (
            "scheduling.x-k8s.io",
            "io.x-k8s.scheduling.v1alpha1.PodGroupSpec.minResources*",
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
        ),
    ],
)
def test_fields_refer_to_kubernetes_value_types(group: str, path: str, target: str) -> None:
    """`*`: a map's values; `[]`: a list's items."""
    schema_name, _, field = path.rpartition(".")
    field = field.rstrip("*[]")
    version = next((k.version for k in KINDS if k.group == group), "v1")
    schema = _schemas(group, version)[schema_name]["properties"][field]
    if path.endswith("*"):
        schema = schema["additionalProperties"]
    elif path.endswith("[]"):
        schema = schema["items"]
    assert _target(schema) == target


def test_free_form_fields_keep_unknown_fields() -> None:
    probe = _schemas()["io.k8s.api.core.v1.Container"]["properties"]["livenessProbe"]
    assert probe == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_descriptions_are_the_proto_comments() -> None:
    effect = _schemas()["io.k8s.api.core.v1.Taint"]["properties"]["effect"]
    assert effect["description"] == "NoSchedule, PreferNoSchedule or NoExecute."


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_every_kind_and_its_object_fields_are_described(kind: Kind) -> None:
    schema = _doc(kind)["components"]["schemas"][
        openapischemas.schema_name(kind.message.DESCRIPTOR)
    ]
    assert schema["description"]
    for field in ("apiVersion", "kind", "metadata"):
        assert schema["properties"][field]["description"], field


def test_list_strategies_come_from_the_list_types_table(monkeypatch: pytest.MonkeyPatch) -> None:
    def strategy(message: str, json_name: str) -> listtypes.ListStrategy | None:
        if (message, json_name) == ("kubera.v1.PodSpec", "containers"):
            return listtypes.ListStrategy("map", ("name",), "merge", "name")
        if (message, json_name) == ("kubera.v1.PodAffinityTerm", "labelSelector"):
            return listtypes.ListStrategy(map_type="atomic")
        return None

    monkeypatch.setattr(listtypes, "strategy", strategy)
    spec = core_pb2.PodSpec.DESCRIPTOR
    schema = openapischemas.field_schema(spec, spec.fields_by_name["containers"])
    assert {k: v for k, v in schema.items() if k.startswith("x-")} == {
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-patch-merge-key": "name",
    }
    assert "x-kubernetes-list-type" not in openapischemas.field_schema(
        spec, spec.fields_by_name["tolerations"]
    )
    term = core_pb2.PodAffinityTerm.DESCRIPTOR
    selector = openapischemas.field_schema(term, term.fields_by_name["label_selector"])
    assert selector["x-kubernetes-map-type"] == "atomic"
    assert _target(selector) == "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"


# ------------------------------------------------------------------ paths


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method in ("get", "put", "post", "patch", "delete"):
            if method in item:
                yield path, method, item[method]


@pytest.mark.parametrize(("group", "version"), discovery.group_versions())
def test_every_write_operation_offers_server_side_field_validation(
    group: str, version: str
) -> None:
    doc = openapi.openapi_v3_document(group, version)
    assert doc is not None
    writes = [(p, m, op) for p, m, op in _operations(doc) if m in ("put", "post", "patch")]
    assert writes
    for path, method, op in writes:
        names = {(q["name"], q["in"]) for q in op["parameters"]}
        assert ("fieldValidation", "query") in names, f"{method} {path}"


def test_patch_accepts_every_patch_type() -> None:
    op = (
        _schemas()
        and openapi.openapi_v3_document("", "v1")["paths"][
            "/api/v1/namespaces/{namespace}/pods/{name}"
        ]["patch"]
    )  # type: ignore[index]
    assert set(op["requestBody"]["content"]) == set(openapi.PATCH_TYPES)
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_paths_follow_the_kinds_scope_and_subresources(kind: Kind) -> None:
    root = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    base = (
        f"{root}/namespaces/{{namespace}}/{kind.http_resource}"
        if kind.namespaced
        else f"{root}/{kind.http_resource}"
    )
    paths = _doc(kind)["paths"]
    assert {"get", "post"} <= set(paths[base])
    assert {"get", "put", "patch", "delete"} <= set(paths[f"{base}/{{name}}"])
    assert ("delete" in paths[base]) == ("deletecollection" in discovery.verbs_of(kind))
    assert (f"{root}/{kind.http_resource}" in paths) is True
    for sub in discovery.subresources_of(kind):
        item = paths[f"{base}/{{name}}/{sub.name}"]
        actions = {op["x-kubernetes-action"] for m, op in item.items() if m != "parameters"}
        expected = {"create": "post", "get": "get", "update": "put", "patch": "patch"}
        assert actions == {expected[v] for v in sub.verbs}


def test_operation_ids_are_unique() -> None:
    for group, version in discovery.group_versions():
        doc = openapi.openapi_v3_document(group, version)
        assert doc is not None
        ids = [op["operationId"] for _, _, op in _operations(doc)]
        assert len(ids) == len(set(ids))
    doc = openapi.openapi_v3_document("", "v1")
    assert doc is not None
    assert (
        doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]["operationId"]
        == "listCoreV1NamespacedPod"
    )


def test_documents_are_json() -> None:
    for group, version in discovery.group_versions():
        json.dumps(openapi.openapi_v3_document(group, version))


# ------------------------------------------------------------------ kubectl


async def test_kubectl_explain_pod_spec_containers(tmp_path: Path) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("explain", "pod.spec.containers")
    assert rc == 0, err
    assert "FIELD: containers <[]Container>" in out
    fields = {
        line.split()[0]
        for line in out.splitlines()
        if line.startswith("  ") and not line.startswith("    ")
    }
    assert {"name", "image", "resources", "ports", "env"} <= fields


async def test_kubectl_explain_deployment_recursive(tmp_path: Path) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("explain", "deployment", "--recursive")
    assert rc == 0, err
    assert "KIND:       Deployment" in out and "GROUP:      apps" in out
    for field in ("rollingUpdate", "maxSurge", "containers", "nodeSelector", "matchLabels"):
        assert f" {field}\t" in out, field


async def test_kubectl_explain_reads_proto_comments(tmp_path: Path) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("explain", "node.spec.taints.effect")
    assert rc == 0, err
    assert "NoSchedule, PreferNoSchedule or NoExecute." in out


async def test_kubectl_apply_validate_strict_leaves_validation_to_the_server(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec:\n  containers:\n  - {name: c, image: nginx, bogus: 1}\n"
    )
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("apply", "--validate=strict", "-f", str(manifest))
    assert rc == 0, err
    (post,) = [r for r in server.requests if r.method == "POST"]
    assert "fieldValidation=Strict" in post.path_qs
    # The unknown field reached the server, which decides; kubectl needed no /openapi/v2.
    assert "bogus" in server.bodies["/api/v1/namespaces/default/pods"]
    assert not any(r.path_qs.startswith("/openapi/v2") for r in server.requests)


@pytest.fixture
def containers_merge_by_name(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The list types table saying what upstream's PodSpec says of containers."""

    def strategy(message: str, json_name: str) -> listtypes.ListStrategy | None:
        if (message, json_name) == ("kubera.v1.PodSpec", "containers"):
            return listtypes.ListStrategy("map", ("name",), "merge", "name")
        return None

    monkeypatch.setattr(listtypes, "strategy", strategy)
    openapi.clear_caches()
    yield
    monkeypatch.undo()
    openapi.clear_caches()


def _live_pod() -> Any:
    applied = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    live = json.loads(json.dumps(applied))
    live["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)
    }
    return codec.decode(live).obj


async def _apply_new_image(tmp_path: Path) -> dict[str, Any]:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec:\n  containers:\n  - {name: c, image: 'nginx:1.27'}\n"
    )
    async with doc_server(tmp_path, {"pods": [_live_pod()]}) as server:
        rc, out, err = await server.kubectl("apply", "-f", str(manifest))
    assert rc == 0, err
    assert "pod/web configured" in out
    return json.loads(server.bodies["/api/v1/namespaces/default/pods/web"])


async def test_kubectl_apply_merges_lists_by_the_documents_patch_merge_key(
    tmp_path: Path, containers_merge_by_name: None
) -> None:
    patch = await _apply_new_image(tmp_path)
    assert patch["spec"] == {
        "$setElementOrder/containers": [{"name": "c"}],
        "containers": [{"image": "nginx:1.27", "name": "c"}],
    }


async def test_kubectl_apply_replaces_lists_the_document_gives_no_strategy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listtypes, "strategy", lambda message, field: None)
    openapi.clear_caches()
    try:
        patch = await _apply_new_image(tmp_path)
    finally:
        monkeypatch.undo()
        openapi.clear_caches()
    assert patch["spec"] == {"containers": [{"image": "nginx:1.27", "name": "c"}]}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/openapi/v3", lambda: openapi.openapi_v3_paths()),
        ("/openapi/v3/api/v1", lambda: openapi.openapi_v3_document("", "v1")),
        ("/openapi/v3/apis/apps/v1", lambda: openapi.openapi_v3_document("apps", "v1")),
        ("/openapi/v3/apis/example.com/v1", lambda: None),
        ("/openapi/v3/apis/apps", lambda: None),
        ("/openapi/v2", lambda: None),
    ],
)
def test_document_for_dispatches_openapi_paths(path: str, expected: Any) -> None:
    assert openapi.document_for(path) == expected()
