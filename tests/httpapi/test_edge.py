"""The edge of the HTTP API: authentication (401), authorization (403 in RBAC's words),
output negotiation (Table, PartialObjectMetadata, 406) and the non-resource paths."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from aiohttp.test_utils import TestClient

from services.apiserver import ApiServer
from services.auth import Decision, RequestAttributes, User
from tests.builders import pod
from tests.httpapi.conftest import as_json, client_for

PODS = "/api/v1/namespaces/default/pods"
NODE = User("system:node:n1", groups=("system:nodes", "system:authenticated"))


class Tokens:
    def authenticate(self, token: str) -> User | None:
        return {"node-token": NODE}.get(token)


@dataclass
class OnlyGets:
    """Allows get/list/watch; records every request it was asked about. Async, as an
    authorizer that reads objects is."""

    seen: list[RequestAttributes] = field(default_factory=list)

    async def authorize(self, attrs: RequestAttributes) -> Decision:
        self.seen.append(attrs)
        if attrs.verb in ("get", "list", "watch"):
            return Decision(True)
        return Decision(False, "only reads are allowed")


@pytest.fixture
async def guarded(registry: ApiServer):
    authz = OnlyGets()
    client = await client_for(registry, authn=Tokens(), authz=authz)
    try:
        yield client, authz
    finally:
        await client.close()


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic bm9kZQ=="}]
)
async def test_no_or_unknown_token_is_401(guarded, headers) -> None:
    client, _ = guarded
    r = await client.get(PODS, headers=headers)
    body = await r.json()
    assert r.status == 401 and body["reason"] == "Unauthorized" and body["kind"] == "Status"


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version"])
async def test_health_and_version_need_no_token(guarded, path: str) -> None:
    client, _ = guarded
    assert (await client.get(path)).status == 200
    assert (await client.get("/api")).status == 401  # discovery is for authenticated callers


async def test_denied_request_is_403_with_rbacs_message(guarded) -> None:
    client, authz = guarded
    auth = {"Authorization": "Bearer node-token"}
    assert (await client.get(PODS, headers=auth)).status == 200
    r = await client.patch(
        f"{PODS}/x/status",
        data=b"{}",
        headers={**auth, "Content-Type": "application/merge-patch+json"},
    )
    body = await r.json()
    assert r.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "x" is forbidden: User "system:node:n1" cannot patch resource "pods/status" '
        'in API group "" in the namespace "default": only reads are allowed'
    )
    last = authz.seen[-1]
    assert (last.user, last.verb, last.resource, last.subresource, last.namespace, last.name) == (
        NODE,
        "patch",
        "pods",
        "status",
        "default",
        "x",
    )


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
PARTIAL = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"


async def test_table_output_for_list_and_get(http: TestClient) -> None:
    await http.post(PODS, json=as_json(pod("t1")))
    r = await http.get(PODS, headers={"Accept": TABLE})
    body = await r.json()
    assert body["kind"] == "Table" and body["apiVersion"] == "meta.k8s.io/v1"
    assert body["columnDefinitions"][0]["name"] == "Name"
    assert [row["cells"][0] for row in body["rows"]] == ["t1"]
    assert body["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert body["metadata"]["resourceVersion"]
    r = await http.get(f"{PODS}/t1", headers={"Accept": TABLE}, params={"includeObject": "Object"})
    row = (await r.json())["rows"][0]
    assert row["object"]["kind"] == "Pod"


async def test_partial_object_metadata_list(http: TestClient) -> None:
    await http.post(PODS, json=as_json(pod("m1")))
    body = await (await http.get(PODS, headers={"Accept": PARTIAL})).json()
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["items"][0] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": body["items"][0]["metadata"],
    }
    assert body["items"][0]["metadata"]["name"] == "m1"


async def test_unservable_accept_is_406(http: TestClient) -> None:
    r = await http.get(PODS, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 406 and (await r.json())["reason"] == "NotAcceptable"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/api", "APIVersions"),
        ("/apis", "APIGroupList"),
        ("/api/v1", "APIResourceList"),
        ("/apis/apps/v1", "APIResourceList"),
        ("/apis/apps", "APIGroup"),
    ],
)
async def test_discovery_paths(http: TestClient, path: str, kind: str) -> None:
    r = await http.get(path)
    assert r.status == 200 and (await r.json())["kind"] == kind


async def test_version_and_openapi_paths(http: TestClient) -> None:
    assert (await (await http.get("/version")).json())["major"] == "1"
    paths = (await (await http.get("/openapi/v3")).json())["paths"]
    assert "api/v1" in paths and "apis/apps/v1" in paths
    assert (await http.get("/openapi/v3/api/v1")).status == 200
    assert (await http.get("/openapi/v3/apis/nope/v1")).status == 404
    assert (await http.get("/openapi/v2")).status == 404


async def test_the_authorizer_sees_the_object_a_create_writes(guarded) -> None:
    client, authz = guarded
    doc = as_json(pod("seen", nodeName="n1"))
    await client.post(PODS, json=doc, headers={"Authorization": "Bearer node-token"})
    obj = authz.seen[-1].obj  # type: ignore[attr-defined]
    assert obj is not None and obj.spec.node_name == "n1"


AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


@pytest.mark.parametrize(
    ("accept", "aggregated"), [(AGGREGATED_ACCEPT, True), ("application/json", False), ("", False)]
)
async def test_aggregated_discovery_only_when_asked_and_under_its_media_type(
    http: TestClient, accept: str, aggregated: bool
) -> None:
    from services.httpapi import discovery

    for path, legacy in (("/api", "APIVersions"), ("/apis", "APIGroupList")):
        r = await http.get(path, headers={"Accept": accept} if accept else {})
        body = await r.json(content_type=None)
        if aggregated:
            assert r.headers["Content-Type"] == discovery.AGGREGATED_MEDIA_TYPE
            assert body["kind"] == "APIGroupDiscoveryList"
        else:
            assert r.headers["Content-Type"] == "application/json" and body["kind"] == legacy


class Broken:
    def authorize(self, attrs: RequestAttributes) -> Decision:
        raise RuntimeError("the authorizer's lookup failed")


async def test_a_failing_collaborator_is_a_500_status(registry: ApiServer, caplog) -> None:
    client = await client_for(registry, authz=Broken())
    try:
        r = await client.get(PODS)
        body = await r.json()
        assert r.status == 500 and body["reason"] == "InternalError" and body["kind"] == "Status"
        assert "the authorizer's lookup failed" in caplog.text
    finally:
        await client.close()
