"""The resource path grammar (upstream's RequestInfoFactory cases)."""

from __future__ import annotations

import pytest

from services.httpapi.requestinfo import NotAResource, parse

CASES = [
    # method, path, query, (verb, group, version, resource, namespace, name, subresource)
    ("GET", "/api/v1/pods", {}, ("list", "", "v1", "pods", "", "", "")),
    ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "v1", "pods", "ns", "", "")),
    ("GET", "/api/v1/namespaces/ns/pods/p", {}, ("get", "", "v1", "pods", "ns", "p", "")),
    (
        "GET",
        "/api/v1/namespaces/ns/pods",
        {"watch": "true"},
        ("watch", "", "v1", "pods", "ns", "", ""),
    ),
    (
        "GET",
        "/api/v1/namespaces/ns/pods",
        {"watch": "1"},
        ("watch", "", "v1", "pods", "ns", "", ""),
    ),
    ("GET", "/api/v1/watch/namespaces/ns/pods", {}, ("watch", "", "v1", "pods", "ns", "", "")),
    ("GET", "/api/v1/namespaces", {}, ("list", "", "v1", "namespaces", "", "", "")),
    ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "v1", "namespaces", "", "ns", "")),
    (
        "PUT",
        "/api/v1/namespaces/ns/status",
        {},
        ("update", "", "v1", "namespaces", "", "ns", "status"),
    ),
    (
        "PUT",
        "/api/v1/namespaces/ns/finalize",
        {},
        ("update", "", "v1", "namespaces", "", "ns", "finalize"),
    ),
    ("PATCH", "/api/v1/nodes/n1/status", {}, ("patch", "", "v1", "nodes", "", "n1", "status")),
    ("POST", "/api/v1/namespaces/ns/pods", {}, ("create", "", "v1", "pods", "ns", "", "")),
    (
        "POST",
        "/api/v1/namespaces/ns/pods/p/binding",
        {},
        ("create", "", "v1", "pods", "ns", "p", "binding"),
    ),
    (
        "POST",
        "/api/v1/namespaces/ns/pods/p/eviction",
        {},
        ("create", "", "v1", "pods", "ns", "p", "eviction"),
    ),
    ("DELETE", "/api/v1/namespaces/ns/pods/p", {}, ("delete", "", "v1", "pods", "ns", "p", "")),
    (
        "DELETE",
        "/api/v1/namespaces/ns/pods",
        {},
        ("deletecollection", "", "v1", "pods", "ns", "", ""),
    ),
    (
        "GET",
        "/apis/apps/v1/namespaces/ns/deployments/d/scale",
        {},
        ("get", "apps", "v1", "deployments", "ns", "d", "scale"),
    ),
    ("GET", "/apis/apps/v1/deployments", {}, ("list", "apps", "v1", "deployments", "", "", "")),
    (
        "GET",
        "/apis/scheduling.k8s.io/v1/priorityclasses/high",
        {},
        ("get", "scheduling.k8s.io", "v1", "priorityclasses", "", "high", ""),
    ),
]


@pytest.mark.parametrize(("method", "path", "query", "want"), CASES)
def test_resource_paths_parse_like_upstream(method, path, query, want) -> None:
    info = parse(method, path, query)
    got = (
        info.verb,
        info.group,
        info.version,
        info.resource,
        info.namespace,
        info.name,
        info.subresource,
    )
    assert got == want


@pytest.mark.parametrize(
    ("path", "served"),
    [
        ("/api/v1/pods", True),
        ("/apis/apps/v1/deployments", True),
        ("/api/v1/widgets", False),
        ("/apis/apps/v2/deployments", False),
    ],
)
def test_only_served_group_version_resources_have_a_kind(path: str, served: bool) -> None:
    assert (parse("GET", path, {}).kind is not None) is served


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps",
        "/apis/apps/v1",
        "/version",
        "/api/v1/namespaces/ns/pods/p/status/extra",
    ],
)
def test_non_resource_paths_are_not_resource_requests(path: str) -> None:
    with pytest.raises(NotAResource):
        parse("GET", path, {})
