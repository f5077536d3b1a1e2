"""NodeRestriction and the creates server-side apply makes, through the HTTP edge with the
real token authenticator and authorizer (in-memory storage): what a node may change on
its own Node and on its pods' status (services/apiserver/noderestriction.py), an apply of a missing object
authorized as a create, an apply of a missing object's subresource a 404, and the owners
of status fields kept by a status apply."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient

from services.apiserver import ApiServer, ApiServerConfig, registry_lookup
from services.apiserver.noderestriction import forbidden_label
from services.auth.authorizer import KuberaAuthorizer
from services.auth.tokens import TokenAuthenticator, issue_tokens
from services.storage.memory import MemoryStorage
from tests.httpapi.conftest import client_for

TOKENS = issue_tokens(
    schedulers=["scheduler"], controller_managers=["controller-manager"], pools={"pool-0": ["n1"]}
)
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def hdr(component: str, content_type: str = "application/json") -> dict[str, str]:
    return {
        "Authorization": f"Bearer {TOKENS.token_for(component)}",
        "Content-Type": content_type,
    }


@pytest.fixture
async def http() -> AsyncIterator[TestClient]:
    api = ApiServer(MemoryStorage(), ApiServerConfig(watch_cache_capacity=50))
    await api.start()
    client = await client_for(
        api,
        authn=TokenAuthenticator(TOKENS.users),
        authz=KuberaAuthorizer(registry_lookup(api)),
    )
    try:
        yield client
    finally:
        await client.close()
        await api.stop()


def node(name: str, labels: dict[str, str] | None = None) -> str:
    return json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}
    )


@pytest.mark.parametrize(
    ("key", "forbidden"),
    [
        ("node-restriction.kubernetes.io/pool", True),
        ("node-role.kubernetes.io/control-plane", True),
        ("kubernetes.io/role", True),
        ("example.k8s.io/x", True),
        ("kubernetes.io/hostname", False),
        ("topology.kubernetes.io/zone", False),
        ("node.kubernetes.io/instance-type", False),
        ("kubelet.kubernetes.io/anything", False),
        ("node.kubernetes.io/anything", False),
        ("tier", False),
        ("example.com/gpu", False),
    ],
)
def test_the_labels_a_node_may_not_set_are_upstreams(key: str, forbidden: bool) -> None:
    assert forbidden_label(key) is forbidden


async def test_a_node_creates_itself_only_without_restricted_labels(http: TestClient) -> None:
    r = await http.post(
        "/api/v1/nodes",
        data=node("n1", {"node-role.kubernetes.io/control-plane": ""}),
        headers=hdr("node:n1"),
    )
    assert r.status == 403
    assert "not allowed to set the following labels" in (await r.json())["message"]
    r = await http.post(
        "/api/v1/nodes",
        data=node("n1", {"kubernetes.io/hostname": "n1", "tier": "gold"}),
        headers=hdr("node:n1"),
    )
    assert r.status == 201, await r.text()


@pytest.mark.parametrize(
    ("patch", "status", "message"),
    [
        ({"metadata": {"labels": {"tier": "silver"}}}, 200, ""),
        (
            {"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}},
            403,
            "is not allowed to modify labels: node-role.kubernetes.io/control-plane",
        ),
        (
            {"metadata": {"labels": {"node-restriction.kubernetes.io/x": "y"}}},
            403,
            "is not allowed to modify labels",
        ),
        (
            {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
            403,
            "is not allowed to modify taints",
        ),
        (
            {
                "metadata": {
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u"}
                    ]
                }
            },
            403,
            "is not allowed to modify ownerReferences",
        ),
    ],
)
async def test_a_node_updates_its_own_node_only_where_noderestriction_allows(
    http: TestClient, patch: dict, status: int, message: str
) -> None:
    admin = {"Authorization": f"Bearer {TOKENS.admin}", "Content-Type": "application/json"}
    assert (await http.post("/api/v1/nodes", data=node("n1"), headers=admin)).status == 201
    r = await http.patch("/api/v1/nodes/n1", data=json.dumps(patch), headers=hdr("node:n1", MERGE))
    assert r.status == status, await r.text()
    if message:
        assert message in (await r.json())["message"]
    # the admin may do all of it
    r = await http.patch(
        "/api/v1/nodes/n1", data=json.dumps(patch), headers={**admin, "Content-Type": MERGE}
    )
    assert r.status == 200, await r.text()


async def test_a_nodes_whole_status_write_keeps_the_attach_detach_controllers_volumes(
    http: TestClient,
) -> None:
    """The attach/detach controller writes status.volumesAttached; the kubelet's status
    write (the node's whole status, as kubera's kubelets send it) neither erases nor
    changes it, while its own volumesInUse goes through."""
    admin = {"Authorization": f"Bearer {TOKENS.admin}", "Content-Type": "application/json"}
    assert (await http.post("/api/v1/nodes", data=node("n1"), headers=admin)).status == 201
    attached = [{"name": "kubernetes.io/csi/disk.example.com^v1", "devicePath": ""}]
    r = await http.patch(
        "/api/v1/nodes/n1/status",
        data=json.dumps({"status": {"volumesAttached": attached}}),
        headers=hdr("controller-manager", MERGE),
    )
    assert r.status == 200, await r.text()
    current = await (await http.get("/api/v1/nodes/n1", headers=admin)).json()
    in_use = ["kubernetes.io/csi/disk.example.com^v1"]
    for sent in ([], [{"name": "kubernetes.io/csi/other^v2", "devicePath": "/dev/x"}]):
        body = {**current, "status": {"volumesInUse": in_use, "volumesAttached": sent}}
        body["metadata"].pop("resourceVersion", None)
        r = await http.put("/api/v1/nodes/n1/status", data=json.dumps(body), headers=hdr("node:n1"))
        assert r.status == 200, await r.text()
        got = (await r.json())["status"]
        assert (got["volumesAttached"], got["volumesInUse"]) == (attached, in_use)


async def test_server_side_apply_of_a_missing_object_is_authorized_as_a_create(
    http: TestClient,
) -> None:
    manifest = "apiVersion: v1\nkind: Node\nmetadata: {name: n9}\n"
    r = await http.patch(
        "/api/v1/nodes/n9?fieldManager=x", data=manifest, headers=hdr("controller-manager", APPLY)
    )
    assert r.status == 403, await r.text()
    assert 'cannot create resource "nodes"' in (await r.json())["message"]
    assert (await http.get("/api/v1/nodes/n9", headers=hdr("controller-manager"))).status == 404
    admin = {"Authorization": f"Bearer {TOKENS.admin}", "Content-Type": APPLY}
    r = await http.patch("/api/v1/nodes/n9?fieldManager=x", data=manifest, headers=admin)
    assert r.status in (200, 201), await r.text()


async def test_server_side_apply_of_a_missing_objects_status_is_404(http: TestClient) -> None:
    admin = {"Authorization": f"Bearer {TOKENS.admin}", "Content-Type": APPLY}
    manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: ghost, namespace: default}\nstatus: {phase: Running}\n"
    r = await http.patch(
        "/api/v1/namespaces/default/pods/ghost/status?fieldManager=x", data=manifest, headers=admin
    )
    assert r.status == 404, await r.text()


async def test_a_status_apply_keeps_its_owners_and_conflicts_with_another_manager(
    http: TestClient,
) -> None:
    admin = {"Authorization": f"Bearer {TOKENS.admin}"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    r = await http.post("/api/v1/namespaces/default/pods", json=pod, headers=admin)
    assert r.status == 201
    status = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nstatus: {phase: %s}\n"
    )
    url = "/api/v1/namespaces/default/pods/p/status?fieldManager="
    r = await http.patch(
        url + "kubelet", data=status % "Running", headers={**admin, "Content-Type": APPLY}
    )
    assert r.status == 200, await r.text()
    owners = {
        (m["manager"], m["operation"], m.get("subresource", ""))
        for m in (await r.json())["metadata"]["managedFields"]
    }
    assert ("kubelet", "Apply", "status") in owners
    r = await http.patch(
        url + "other", data=status % "Failed", headers={**admin, "Content-Type": APPLY}
    )
    assert r.status == 409, await r.text()
    assert ".status.phase" in await r.text()


async def _pod_with_claim_status(http: TestClient, node_name: str) -> str:
    """A pod bound to `node_name` whose template claim the controller recorded as c1."""
    admin = {"Authorization": f"Bearer {TOKENS.admin}"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "image": "i"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
        },
    }
    r = await http.post("/api/v1/namespaces/default/pods", json=pod, headers=admin)
    assert r.status == 201, await r.text()
    url = "/api/v1/namespaces/default/pods/p/status"
    recorded = {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c1"}]}}
    r = await http.patch(url, data=json.dumps(recorded), headers=hdr("controller-manager", MERGE))
    assert r.status == 200, await r.text()
    return url


@pytest.mark.parametrize(
    ("patch", "status", "claim"),
    [
        ({"status": {"phase": "Running"}}, 200, "c1"),
        # kubera's kubelets send whole statuses: none sent keeps the recorded ones
        ({"status": {"phase": "Running", "resourceClaimStatuses": []}}, 200, "c1"),
        (
            {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c2"}]}},
            403,
            "c1",
        ),
        ({"status": {"resourceClaimStatuses": [{"name": "gpu"}]}}, 403, "c1"),
    ],
    ids=["other-fields", "none-sent", "other-claim", "no-claim-needed"],
)
async def test_a_node_may_not_change_its_pods_resource_claim_statuses(
    http: TestClient, patch: dict, status: int, claim: str
) -> None:
    url = await _pod_with_claim_status(http, "n1")
    r = await http.patch(url, data=json.dumps(patch), headers=hdr("node:n1", MERGE))
    assert r.status == status, await r.text()
    if status == 403:
        assert 'node "n1" cannot update resource claim statuses' in (await r.json())["message"]
    r = await http.get("/api/v1/namespaces/default/pods/p", headers=hdr("node:n1"))
    got = (await r.json())["status"]["resourceClaimStatuses"]
    assert got == [{"name": "gpu", "resourceClaimName": claim}]


async def test_the_controller_manager_may_change_resource_claim_statuses(
    http: TestClient,
) -> None:
    url = await _pod_with_claim_status(http, "n1")
    patch = {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c2"}]}}
    r = await http.patch(url, data=json.dumps(patch), headers=hdr("controller-manager", MERGE))
    assert r.status == 200, await r.text()
    got = (await r.json())["status"]["resourceClaimStatuses"]
    assert got == [{"name": "gpu", "resourceClaimName": "c2"}]
