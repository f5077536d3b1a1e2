"""Server-side apply and managedFields over HTTP: the edge's half (PATCH with
application/apply-patch+yaml, 409 with causes, fieldManager required; managedFields on
HTTP writes). The field manager itself is services/api/machinery/fieldmanager.py."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.builders import pod
from tests.httpapi.conftest import as_json

PODS = "/api/v1/namespaces/default/pods"
APPLY = {"Content-Type": "application/apply-patch+yaml"}

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: ssa
  labels: {owner: %s}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.9
"""


async def test_apply_creates_then_updates(http: TestClient) -> None:
    r = await http.patch(
        f"{PODS}/ssa?fieldManager=a", data=(MANIFEST % "a").encode(), headers=APPLY
    )
    assert r.status in (200, 201), await r.text()
    body = await r.json()
    assert body["metadata"]["labels"] == {"owner": "a"}
    assert any(
        m["manager"] == "a" and m["operation"] == "Apply" for m in body["metadata"]["managedFields"]
    )
    r = await http.patch(
        f"{PODS}/ssa?fieldManager=a", data=(MANIFEST % "b").encode(), headers=APPLY
    )
    assert r.status == 200 and (await r.json())["metadata"]["labels"] == {"owner": "b"}


async def test_apply_conflict_is_409_with_causes_and_force_takes_over(http: TestClient) -> None:
    await http.patch(f"{PODS}/ssa?fieldManager=a", data=(MANIFEST % "a").encode(), headers=APPLY)
    r = await http.patch(
        f"{PODS}/ssa?fieldManager=b", data=(MANIFEST % "b").encode(), headers=APPLY
    )
    body = await r.json()
    assert r.status == 409 and body["reason"] == "Conflict", body
    assert any(c.get("field") == ".metadata.labels.owner" for c in body["details"]["causes"]), body
    r = await http.patch(
        f"{PODS}/ssa?fieldManager=b&force=true", data=(MANIFEST % "b").encode(), headers=APPLY
    )
    assert r.status == 200 and (await r.json())["metadata"]["labels"] == {"owner": "b"}


async def test_apply_needs_a_field_manager(http: TestClient) -> None:
    r = await http.patch(f"{PODS}/ssa", data=(MANIFEST % "a").encode(), headers=APPLY)
    assert r.status == 400


async def test_http_writes_record_managed_fields(http: TestClient) -> None:
    r = await http.post(PODS + "?fieldManager=maker", json=as_json(pod("mf")))
    fields = (await r.json())["metadata"]["managedFields"]
    assert [(m["manager"], m["operation"]) for m in fields] == [("maker", "Update")]
    r = await http.patch(
        f"{PODS}/mf?fieldManager=labeler",
        data=b'{"metadata":{"labels":{"a":"b"}}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    managers = {m["manager"] for m in (await r.json())["metadata"]["managedFields"]}
    assert managers == {"maker", "labeler"}
