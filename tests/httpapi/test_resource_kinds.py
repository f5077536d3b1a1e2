"""The DRA kinds and PodGroup over HTTP JSON: a manifest of each kind is created at its
REST path and read back as the apiserver stored it (canonical quantities, upstream's
defaults, opaque parameters as written), and listed as a meta.k8s.io Table."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from services.api.machinery.kinds import BY_KIND
from tests.api.resource_manifests import MANIFESTS, defaulted, manifest

SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def _collection(kind: str) -> str:
    k = BY_KIND[kind]
    ns = "namespaces/default/" if k.namespaced else ""
    return f"/apis/{k.group}/{k.version}/{ns}{k.resource}"


def _without_server_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` without the metadata the server adds, and without the empty status of a custom
    resource (PodGroup: kubera's controller sets one; a built-in kind's `status: {}`, which
    kube-apiserver shows for a new claim since Go writes every struct, is in `defaulted`)."""
    meta = {k: v for k, v in doc["metadata"].items() if k not in SERVER_SET}
    out = {**doc, "metadata": meta}
    if out.get("status") == {} and out["apiVersion"].startswith("scheduling.x-k8s.io/"):
        del out["status"]
    return out


@pytest.mark.parametrize("kind", list(MANIFESTS))
async def test_each_kind_is_stored_as_kubernetes_would(http: TestClient, kind: str) -> None:
    r = await http.post(_collection(kind), json=manifest(kind))
    assert r.status == 201, await r.text()
    name = manifest(kind)["metadata"]["name"]
    got = await http.get(f"{_collection(kind)}/{name}")
    assert got.status == 200
    assert _without_server_fields(await got.json()) == defaulted(kind)


async def test_a_yaml_number_capacity_is_accepted_over_json(http: TestClient) -> None:
    doc = manifest("ResourceSlice")
    doc["spec"]["devices"][0]["capacity"] = {"memory": {"value": 0.5}}
    r = await http.post(_collection("ResourceSlice"), json=doc)
    assert r.status == 201, await r.text()
    body = await r.json()
    assert body["spec"]["devices"][0]["capacity"] == {"memory": {"value": "500m"}}


async def test_a_bad_capacity_is_422_at_its_field(http: TestClient) -> None:
    doc = manifest("ResourceSlice")
    doc["spec"]["devices"][0]["capacity"] = {"memory": {"value": "lots"}}
    r = await http.post(_collection("ResourceSlice"), json=doc)
    assert r.status == 422
    body = await r.json()
    fields = [c["field"] for c in body["details"]["causes"]]
    assert fields == ["spec.devices[0].capacity[memory].value"]


async def test_resource_claims_list_as_a_table_with_their_state(http: TestClient) -> None:
    await http.post(_collection("ResourceClaim"), json=manifest("ResourceClaim"))
    r = await http.get(
        _collection("ResourceClaim"),
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    table = await r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "State", "Age"]
    assert [row["cells"][:2] for row in table["rows"]] == [["two-gpus", "pending"]]
