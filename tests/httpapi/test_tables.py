"""meta.k8s.io/v1 Table: kubectl's columns per kind (upstream printers.go), typed cells,
includeObject, and real `kubectl get` rendering the server's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from services.api.printers import printers
from services.clock import parse_rfc3339
from services.httpapi import tables
from tests.builders import MakeNode, MakePod
from tests.httpapi.kubectl_docs import doc_server

CREATED = "2030-01-01T00:00:00Z"
NOW = parse_rfc3339("2030-01-01T00:05:00Z")


def _running_pod(name: str, namespace: str = "default", node: str = "n1") -> Message:
    pod = (
        MakePod()
        .typed()
        .name(name)
        .namespace(namespace)
        .label("app", "web")
        .creation_timestamp(CREATED)
        .container("c", "nginx")
        .node(node)
        .phase("Running")
        .condition("Ready", "True")
        .obj()
    )
    json_format.ParseDict(
        {
            "podIP": "10.0.0.7",
            "containerStatuses": [
                {"name": "c", "ready": True, "restartCount": 2, "state": {"running": {}}}
            ],
        },
        pod.status,
    )
    return pod


def _node(name: str) -> Message:
    node = MakeNode().typed().name(name).condition("Ready", "True").obj()
    node.metadata.creation_timestamp = CREATED
    node.status.node_info.kubelet_version = "v1.32.0-kubera"
    return node


def _deployment(name: str) -> Message:
    doc: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": CREATED},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    return codec.decode(doc).obj


def _names(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
@pytest.mark.parametrize("wide", [False, True])
def test_every_kind_has_one_cell_per_column(kind: Kind, wide: bool) -> None:
    obj = kind.new()
    obj.metadata.name = "x"  # type: ignore[attr-defined]
    table = tables.to_table(kind, [obj], wide=wide, now=NOW)
    (row,) = table["rows"]
    assert len(row["cells"]) == len(table["columnDefinitions"])
    assert all(c["priority"] == (1 if c["priority"] else 0) for c in table["columnDefinitions"])
    assert wide or all(c["priority"] == 0 for c in table["columnDefinitions"])


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_printers_list_default_columns_before_wide_ones(kind: Kind) -> None:
    priorities = [c.priority for c in printers.columns_of(kind).columns]
    assert priorities == sorted(priorities)


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        ("Pod", ["Name", "Ready", "Status", "Restarts", "Age"]),
        ("Node", ["Name", "Status", "Roles", "Age", "Version"]),
        ("Deployment", ["Name", "Ready", "Up-to-date", "Available", "Age"]),
        ("ReplicaSet", ["Name", "Desired", "Current", "Ready", "Age"]),
        ("Namespace", ["Name", "Status", "Age"]),
        ("Event", ["Last Seen", "Type", "Reason", "Object", "Message"]),
        (
            "PodDisruptionBudget",
            ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
        ),
    ],
)
def test_default_columns_are_kubectls(kind: str, columns: list[str]) -> None:
    assert _names(tables.to_table(BY_KIND[kind], [], wide=False)) == columns


@pytest.mark.parametrize(
    ("kind", "wide_columns"),
    [
        ("Pod", ["IP", "Node", "Nominated Node", "Readiness Gates"]),
        # kubera's own node columns (Conditions, Taints, usage) are not in the HTTP table.
        ("Node", ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"]),
        ("Deployment", ["Containers", "Images", "Selector"]),
    ],
)
def test_wide_columns_have_priority_one(kind: str, wide_columns: list[str]) -> None:
    defs = tables.to_table(BY_KIND[kind], [], wide=True)["columnDefinitions"]
    assert [c["name"] for c in defs if c["priority"] == 1] == wide_columns


def test_event_table_interleaves_wide_columns_as_kubectl() -> None:
    event = BY_KIND["Event"].new()
    json_format.ParseDict(
        {
            "metadata": {"name": "web.1", "namespace": "default", "creationTimestamp": CREATED},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{c}"},
            "reason": "Pulled",
            "message": "pulled",
            "type": "Normal",
            "source": {"component": "kubelet"},
            "count": 1,
            "lastTimestamp": CREATED,
        },
        event,
    )
    table = tables.to_table(BY_KIND["Event"], [event], wide=True, now=NOW)
    assert _names(table) == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ]
    assert table["rows"][0]["cells"] == [
        "5m",
        "Normal",
        "Pulled",
        "pod/web",
        "spec.containers{c}",
        "kubelet",
        "pulled",
        "5m",
        "1",
        "web.1",
    ]
    # kubera's own CLI keeps its columns (no Subobject).
    assert "SUBOBJECT" not in printers.columns_of(BY_KIND["Event"]).wide


def test_pod_row_is_kubectls_pod_status() -> None:
    table = tables.to_table(BY_KIND["Pod"], [_running_pod("web")], wide=True, now=NOW)
    assert table["rows"][0]["cells"] == [
        "web",
        "1/1",
        "Running",
        "2",
        "5m",
        "10.0.0.7",
        "n1",
        "<none>",
        "<none>",
    ]
    assert table["columnDefinitions"][0]["format"] == "name"


def test_integer_columns_have_integer_cells() -> None:
    table = tables.to_table(BY_KIND["Deployment"], [_deployment("web")], wide=False, now=NOW)
    assert table["rows"][0]["cells"] == ["web", "2/3", 3, 2, "5m"]


@pytest.mark.parametrize(
    ("include", "object_kind"),
    [("Metadata", "PartialObjectMetadata"), ("Object", "Pod"), ("None", None)],
)
def test_include_object_chooses_what_each_row_carries(
    include: str, object_kind: str | None
) -> None:
    table = tables.to_table(
        BY_KIND["Pod"], [_running_pod("web")], wide=False, include_object=include, now=NOW
    )
    obj = table["rows"][0].get("object")
    assert (obj or {}).get("kind") == object_kind
    if obj is not None:
        assert obj["metadata"]["name"] == "web"
        assert obj["metadata"]["labels"] == {"app": "web"}


def test_unknown_include_object_is_an_error() -> None:
    with pytest.raises(tables.IncludeObjectError, match="includeObject"):
        tables.to_table(BY_KIND["Pod"], [], wide=False, include_object="Everything")


def test_list_meta_becomes_the_tables_metadata() -> None:
    meta = {"resourceVersion": "42", "continue": "abc"}
    table = tables.to_table(BY_KIND["Pod"], [], wide=False, list_meta=meta)
    assert (table["kind"], table["apiVersion"], table["metadata"]) == (
        "Table",
        "meta.k8s.io/v1",
        meta,
    )


@pytest.mark.parametrize(
    ("accept", "table"),
    [
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,"
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
            True,
        ),
        ("application/json; as=Table; v=v1; g=meta.k8s.io", True),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", False),
        ("application/json", False),
        ("", False),
    ],
)
def test_table_only_when_accept_names_meta_v1_table(accept: str, table: bool) -> None:
    assert tables.wants_table(accept) is table


# ------------------------------------------------------------------ kubectl


def _lines(out: str) -> list[list[str]]:
    """kubectl's columns, split on its 3-space padding."""
    return [[c.strip() for c in line.split("   ") if c.strip()] for line in out.splitlines()]


async def test_kubectl_get_pods_prints_the_servers_columns(tmp_path: Path) -> None:
    async with doc_server(tmp_path, {"pods": [_running_pod("web")]}) as server:
        rc, out, err = await server.kubectl("get", "pods")
    assert rc == 0, err
    lines = _lines(out)
    assert lines[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1][:4] == ["web", "1/1", "Running", "2"]
    assert any("as=Table" in r.accept for r in server.requests)


async def test_kubectl_get_pods_wide_shows_priority_one_columns(tmp_path: Path) -> None:
    async with doc_server(tmp_path, {"pods": [_running_pod("web")]}) as server:
        rc, out, err = await server.kubectl("get", "pods", "-o", "wide")
    assert rc == 0, err
    lines = _lines(out)
    assert lines[0][5:] == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert lines[1][5:7] == ["10.0.0.7", "n1"]


async def test_kubectl_get_all_namespaces_and_labels_read_the_row_metadata(tmp_path: Path) -> None:
    pods = [_running_pod("a", "team-a"), _running_pod("b", "team-b")]
    async with doc_server(tmp_path, {"pods": pods}) as server:
        rc, out, err = await server.kubectl("get", "pods", "-A", "--show-labels")
    assert rc == 0, err
    lines = _lines(out)
    assert lines[0][0] == "NAMESPACE" and lines[0][-1] == "LABELS"
    assert [(line[0], line[1], line[-1]) for line in lines[1:]] == [
        ("team-a", "a", "app=web"),
        ("team-b", "b", "app=web"),
    ]


async def test_kubectl_get_nodes_and_deployments_look_as_on_a_cluster(tmp_path: Path) -> None:
    objects = {"nodes": [_node("n1")], "deployments": [_deployment("web")]}
    async with doc_server(tmp_path, objects) as server:
        rc, nodes, err = await server.kubectl("get", "nodes")
        assert rc == 0, err
        rc, deploys, err = await server.kubectl("get", "deployments", "-o", "wide")
        assert rc == 0, err
    assert _lines(nodes)[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert _lines(nodes)[1][:3] == ["n1", "Ready", "<none>"]
    assert _lines(deploys)[0] == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert _lines(deploys)[1][:4] == ["web", "2/3", "3", "2"]
    assert _lines(deploys)[1][5:] == ["web", "nginx:1.27", "app=web"]


async def test_kubectl_get_all_lists_the_all_category(tmp_path: Path) -> None:
    objects = {"pods": [_running_pod("web-1")], "deployments": [_deployment("web")]}
    async with doc_server(tmp_path, objects) as server:
        rc, out, err = await server.kubectl("get", "all")
    assert rc == 0, err
    listed = {r.path_qs.split("?")[0] for r in server.requests if r.method == "GET"}
    assert {
        "/api/v1/namespaces/default/pods",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/apps/v1/namespaces/default/replicasets",
    } <= listed
    names = [line.split()[0] for line in out.splitlines() if line and not line.startswith("NAME")]
    assert names == ["pod/web-1", "deployment.apps/web"]


async def test_kubectl_sort_by_asks_for_whole_objects_in_the_rows(tmp_path: Path) -> None:
    pods = [
        _running_pod("b", node="n2"),
        _running_pod("a", node="n1"),
        _running_pod("c", node="n0"),
    ]
    async with doc_server(tmp_path, {"pods": pods}) as server:
        rc, out, err = await server.kubectl("get", "pods", "--sort-by=.spec.nodeName")
    assert rc == 0, err
    assert [line[0] for line in _lines(out)[1:]] == ["c", "a", "b"]
    assert any("includeObject=Object" in r.path_qs for r in server.requests)
