"""The verbs of the HTTP API on an in-memory registry: what each answers, and every
refusal as a Status with kube-apiserver's HTTP code and reason."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from services.apiserver import ApiServer
from services.httpapi.verbs import continue_token, names_resource_version
from tests.builders import MakeNode, pod
from tests.httpapi.conftest import RV_WAIT, as_json

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSONPATCH = {"Content-Type": "application/json-patch+json"}


async def create_pod(http: TestClient, name: str, **spec) -> dict:
    r = await http.post(PODS, json=as_json(pod(name, **spec)))
    assert r.status == 201, await r.text()
    return await r.json()


async def test_create_answers_201_with_the_stored_object(http: TestClient) -> None:
    body = await create_pod(http, "p1")
    assert body["kind"] == "Pod" and body["apiVersion"] == "v1"
    assert body["metadata"]["uid"] and body["metadata"]["resourceVersion"]
    r = await http.get(f"{PODS}/p1")
    assert r.status == 200
    assert (await r.json())["metadata"]["uid"] == body["metadata"]["uid"]


async def test_create_defaults_apiversion_and_kind_from_the_url(http: TestClient) -> None:
    doc = as_json(pod("bare"))
    del doc["apiVersion"], doc["kind"]
    r = await http.post(PODS, json=doc)
    assert r.status == 201, await r.text()


@pytest.mark.parametrize(
    ("path", "doc", "code", "reason"),
    [
        (
            PODS,
            {"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "x"}},
            400,
            "BadRequest",
        ),
        (
            PODS,
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "other"}},
            400,
            "BadRequest",
        ),
        (
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "x"},
                "spec": {"containers": []},
            },
            422,
            "Invalid",
        ),
        ("/api/v1/namespaces/nope/pods", as_json(pod("x", namespace="nope")), 404, "NotFound"),
    ],
    ids=["wrong-apiversion", "namespace-mismatch", "invalid", "namespace-missing"],
)
async def test_create_refusals_are_status_objects(
    http: TestClient, path, doc, code, reason
) -> None:
    r = await http.post(path, json=doc)
    body = await r.json()
    assert (r.status, body["kind"], body["status"], body["reason"], body["code"]) == (
        code,
        "Status",
        "Failure",
        reason,
        code,
    ), body


async def test_undecodable_base64_is_a_bad_request_as_upstreams_decoder_says(
    http: TestClient,
) -> None:
    """The docs' secret/tls-auth-secret.yaml (placeholders for its data): 400, not 422."""
    doc = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "secret-tls"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "REPLACE_WITH_BASE64_CERT", "tls.key": "REPLACE_WITH_BASE64_KEY"},
    }
    r = await http.post("/api/v1/namespaces/default/secrets", json=doc)
    body = await r.json()
    assert (r.status, body["reason"]) == (400, "BadRequest"), body
    assert body["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 7'
    )


async def test_invalid_object_lists_field_causes(http: TestClient) -> None:
    r = await http.post(
        PODS,
        json={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x"},
            "spec": {"containers": []},
        },
    )
    body = await r.json()
    assert r.status == 422
    causes = body["details"]["causes"]
    assert any(
        c["field"] == "spec.containers" and c["reason"] == "FieldValueRequired" for c in causes
    ), causes


async def test_create_twice_is_409_already_exists(http: TestClient) -> None:
    await create_pod(http, "dup")
    r = await http.post(PODS, json=as_json(pod("dup")))
    assert r.status == 409 and (await r.json())["reason"] == "AlreadyExists"


async def test_get_missing_is_404_with_upstream_wording(http: TestClient) -> None:
    r = await http.get(f"{PODS}/ghost")
    body = await r.json()
    assert r.status == 404
    assert body["message"] == 'pods "ghost" not found'
    assert body["details"] == {"name": "ghost", "kind": "pods"}


async def test_field_validation_warn_sends_warning_headers(http: TestClient) -> None:
    doc = as_json(pod("w"))
    doc["spec"]["foo"] = 1
    r = await http.post(PODS + "?fieldValidation=Warn", json=doc)
    assert r.status == 201
    assert r.headers.getall("Warning") == ['299 - "unknown field \\"spec.foo\\""']


@pytest.mark.parametrize(("mode", "code"), [("Strict", 400), ("Ignore", 201)])
async def test_field_validation_strict_refuses_and_ignore_is_silent(
    http: TestClient, mode, code
) -> None:
    doc = as_json(pod("s"))
    doc["spec"]["foo"] = 1
    r = await http.post(f"{PODS}?fieldValidation={mode}", json=doc)
    assert r.status == code
    assert "Warning" not in r.headers
    if code == 400:
        assert 'unknown field "spec.foo"' in (await r.json())["message"]


async def test_dry_run_create_update_patch_delete_write_nothing(http: TestClient) -> None:
    r = await http.post(PODS + "?dryRun=All", json=as_json(pod("dry")))
    assert r.status == 201
    assert (await http.get(f"{PODS}/dry")).status == 404
    live = await create_pod(http, "live")
    live["metadata"]["labels"] = {"a": "b"}
    r = await http.put(f"{PODS}/live?dryRun=All", json=live)
    assert r.status == 200 and (await r.json())["metadata"]["labels"] == {"a": "b"}
    r = await http.patch(
        f"{PODS}/live?dryRun=All", data=b'{"metadata":{"labels":{"c":"d"}}}', headers=MERGE
    )
    assert r.status == 200
    r = await http.delete(f"{PODS}/live?dryRun=All")
    assert r.status == 200
    got = await (await http.get(f"{PODS}/live")).json()
    assert "labels" not in got["metadata"]


async def test_update_with_a_stale_resource_version_is_409_conflict(http: TestClient) -> None:
    p = await create_pod(http, "u")
    p["metadata"]["labels"] = {"x": "1"}
    assert (await http.put(f"{PODS}/u", json=p)).status == 200
    p["metadata"]["labels"] = {"x": "2"}
    r = await http.put(f"{PODS}/u", json=p)
    assert r.status == 409 and (await r.json())["reason"] == "Conflict"


async def test_update_name_must_match_the_url(http: TestClient) -> None:
    p = await create_pod(http, "n1")
    r = await http.put(f"{PODS}/n2", json=p)
    assert r.status == 400


@pytest.mark.parametrize(
    ("headers", "body", "labels"),
    [
        (MERGE, b'{"metadata":{"labels":{"a":"1"}}}', {"run": "x", "a": "1"}),
        (MERGE, b'{"metadata":{"labels":{"run":null}}}', None),
        (
            JSONPATCH,
            b'[{"op":"add","path":"/metadata/labels/b","value":"2"}]',
            {"run": "x", "b": "2"},
        ),
    ],
    ids=["merge-add", "merge-remove", "json-patch-add"],
)
async def test_patch_types(http: TestClient, headers, body, labels) -> None:
    doc = as_json(pod("pt"))
    doc["metadata"]["labels"] = {"run": "x"}
    assert (await http.post(PODS, json=doc)).status == 201
    r = await http.patch(f"{PODS}/pt", data=body, headers=headers)
    assert r.status == 200, await r.text()
    assert (await r.json())["metadata"].get("labels") == labels


@pytest.mark.parametrize(
    ("content_type", "body"),
    [("application/vnd.kubernetes.protobuf", b"k8s\x00\x0a\xff"), ("application/cbor", b"\xa0")],
)
async def test_bodies_kubera_cannot_read_are_415(
    http: TestClient, content_type: str, body: bytes
) -> None:
    r = await http.post(PODS, data=body, headers={"Content-Type": content_type})
    assert r.status == 415 and (await r.json())["reason"] == "UnsupportedMediaType"


async def test_patch_with_an_unknown_content_type_is_415(http: TestClient) -> None:
    await create_pod(http, "ct")
    r = await http.patch(f"{PODS}/ct", data=b"{}", headers={"Content-Type": "text/plain"})
    assert r.status == 415 and (await r.json())["reason"] == "UnsupportedMediaType"


async def test_patch_pinned_to_an_old_resource_version_conflicts(http: TestClient) -> None:
    p = await create_pod(http, "pin")
    rv = p["metadata"]["resourceVersion"]
    await http.patch(f"{PODS}/pin", data=b'{"metadata":{"labels":{"a":"1"}}}', headers=MERGE)
    body = json.dumps({"metadata": {"resourceVersion": rv, "labels": {"a": "2"}}}).encode()
    r = await http.patch(f"{PODS}/pin", data=body, headers=MERGE)
    assert r.status == 409


async def test_status_subresource_changes_only_status(http: TestClient) -> None:
    await create_pod(http, "st")
    r = await http.patch(
        f"{PODS}/st/status",
        data=b'{"status":{"phase":"Running"},"metadata":{"labels":{"no":"pe"}}}',
        headers=MERGE,
    )
    assert r.status == 200, await r.text()
    got = await (await http.get(f"{PODS}/st")).json()
    assert got["status"]["phase"] == "Running"
    assert "labels" not in got["metadata"]


async def test_status_of_a_kind_without_one_is_404(http: TestClient) -> None:
    r = await http.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/x/status")
    assert r.status == 404


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        ("GET", "/api/v1/widgets", 404),
        ("GET", "/apis/nope/v1/things", 404),
        ("POST", f"{PODS}/p", 405),
        ("PUT", PODS, 405),
        ("POST", "/api/v1/namespaces/default/pods/p/exec", 404),
        ("GET", "/api/v1/namespaces/default/nodes", 404),
        ("POST", "/api/v1/pods", 404),
        ("GET", "/api/v1/pods/p", 404),
    ],
)
async def test_unknown_routes_are_404_and_wrong_methods_405(
    http: TestClient, method, path, code
) -> None:
    r = await http.request(method, path, data=b"{}")
    body = await r.json()
    assert r.status == code and body["kind"] == "Status" and body["code"] == code


async def test_list_selectors_and_all_namespaces(http: TestClient) -> None:
    for name, node in (("a", "n1"), ("b", "n2"), ("c", "")):
        doc = as_json(pod(name, **({"nodeName": node} if node else {})))
        doc["metadata"]["labels"] = {"app": name}
        assert (await http.post(PODS, json=doc)).status == 201

    async def names(path: str) -> list[str]:
        r = await http.get(path)
        assert r.status == 200, await r.text()
        body = await r.json()
        assert body["kind"] == "PodList" and body["metadata"]["resourceVersion"]
        return [i["metadata"]["name"] for i in body["items"]]

    assert await names(PODS + "?labelSelector=app%20in%20(a,b)") == ["a", "b"]
    assert await names(PODS + "?fieldSelector=spec.nodeName=n1") == ["a"]
    assert await names(PODS + "?fieldSelector=spec.nodeName!=n1") == ["b", "c"]
    assert await names(PODS + "?fieldSelector=metadata.name=c") == ["c"]
    assert await names("/api/v1/pods") == ["a", "b", "c"]
    r = await http.get(PODS + "?fieldSelector=spec.bogus=1")
    assert r.status == 400


async def test_list_pages_with_limit_and_continue(http: TestClient) -> None:
    for i in range(5):
        await create_pod(http, f"p{i}")
    seen, token, pages = [], "", 0
    while pages < 10:
        r = await http.get(PODS, params={"limit": "2", **({"continue": token} if token else {})})
        body = await r.json()
        seen += [i["metadata"]["name"] for i in body["items"]]
        pages += 1
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert seen == [f"p{i}" for i in range(5)] and pages == 3


async def test_later_pages_read_at_the_first_pages_revision(http: TestClient) -> None:
    for i in range(4):
        await create_pod(http, f"p{i}")
    first = await (await http.get(PODS, params={"limit": "2"})).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["p0", "p1"]
    assert first["metadata"]["remainingItemCount"] == 2
    await http.delete(f"{PODS}/p2")
    await create_pod(http, "p9")
    await http.patch(f"{PODS}/p3", data=b'{"metadata":{"labels":{"late":"yes"}}}', headers=MERGE)
    rest = await (
        await http.get(PODS, params={"limit": "5", "continue": first["metadata"]["continue"]})
    ).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["p2", "p3"]
    assert "labels" not in rest["items"][1]["metadata"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert "continue" not in rest["metadata"]


async def test_an_expired_continue_token_is_410(http: TestClient) -> None:
    for i in range(3):
        await create_pod(http, f"p{i}")
    first = await (await http.get(PODS, params={"limit": "1"})).json()
    for i in range(60):  # past the test cache's window of 50 events
        await http.patch(
            f"{PODS}/p0",
            data=json.dumps({"metadata": {"labels": {"n": str(i)}}}).encode(),
            headers=MERGE,
        )
    r = await http.get(PODS, params={"limit": "1", "continue": first["metadata"]["continue"]})
    body = await r.json()
    assert r.status == 410 and body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old")


async def test_a_forged_continue_token_is_400(http: TestClient) -> None:
    r = await http.get(PODS, params={"limit": "1", "continue": "not-base64-json"})
    assert r.status == 400
    assert continue_token(1, "k")  # opaque, but decodable by the server


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"resourceVersion": "0"}, 200),
        ({"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan"}, 200),
        ({"resourceVersion": "99999", "resourceVersionMatch": "NotOlderThan"}, 504),
        ({"resourceVersion": "1", "resourceVersionMatch": "Exact"}, 410),
        ({"resourceVersionMatch": "Exact"}, 400),
        ({"resourceVersion": "1", "resourceVersionMatch": "Sometime"}, 400),
    ],
)
async def test_list_resource_version_match(http: TestClient, params, code) -> None:
    await create_pod(http, "rv")
    r = await http.get(PODS, params=params)
    assert r.status == code, await r.text()


@pytest.mark.parametrize(
    ("rv", "code"), [("", 200), ("0", 200), ("1", 200), ("999999", 504), ("x", 400)]
)
async def test_get_with_a_resource_version(http: TestClient, rv: str, code: int) -> None:
    await create_pod(http, "g")
    r = await http.get(f"{PODS}/g", params={"resourceVersion": rv} if rv else {})
    assert r.status == code, await r.text()
    if code == 504:
        body = await r.json()
        assert (
            body["reason"] == "Timeout"
            and body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        )


@pytest.mark.parametrize("path", [PODS, f"{PODS}/late"], ids=["list", "get"])
async def test_a_resource_version_past_the_store_is_waited_for_then_504_as_upstream(
    http: TestClient, registry: ApiServer, path: str
) -> None:
    """upstream's WaitUntilFreshAndList/Get: blockTimeout, then NewTooLargeResourceVersionError
    (a NewTimeoutError: 504 Timeout, "Timeout: ..." message, retryAfterSeconds 1, the cause
    ResourceVersionTooLarge, no kind or name)."""
    await create_pod(http, "late")
    want = await registry.storage.revision() + 1000
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    r = await http.get(path, params={"resourceVersion": str(want)})
    assert loop.time() - t0 >= RV_WAIT
    assert r.status == 504
    body = await r.json()
    current = await registry.storage.revision()
    assert body["reason"] == "Timeout" and body["code"] == 504
    assert body["message"] == f"Timeout: Too large resource version: {want}, current: {current}"
    assert body["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }


async def test_a_list_at_a_resource_version_reached_during_the_wait_is_served(
    http: TestClient, registry: ApiServer
) -> None:
    want = await registry.storage.revision() + 1
    listing = asyncio.create_task(http.get(PODS, params={"resourceVersion": str(want)}))
    await create_pod(http, "arrives")
    r = await listing
    assert r.status == 200, await r.text()
    body = await r.json()
    assert int(body["metadata"]["resourceVersion"]) >= want
    assert "arrives" in [p["metadata"]["name"] for p in body["items"]]


async def test_a_watch_from_past_the_store_ends_with_the_too_large_error_event(
    http: TestClient, registry: ApiServer
) -> None:
    want = await registry.storage.revision() + 1000
    r = await http.get(PODS, params={"watch": "1", "resourceVersion": str(want)})
    assert r.status == 200  # upstream: errors after the watch began are ERROR events
    (line,) = [x for x in (await r.text()).splitlines() if x]
    event = json.loads(line)
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 504, "Timeout")
    assert status["message"].startswith("Timeout: Too large resource version: ")
    assert status["details"]["retryAfterSeconds"] == 1


async def test_delete_answers_success_status_or_the_object(http: TestClient) -> None:
    assert (await http.post("/api/v1/nodes", json={"metadata": {"name": "gone"}})).status == 201
    r = await http.delete("/api/v1/nodes/gone")
    body = await r.json()
    assert r.status == 200 and body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "gone" and body["details"]["kind"] == "nodes"
    await create_pod(http, "gone")
    r = await http.delete(f"{PODS}/gone")  # pods answer with the deleted pod, as upstream
    body = await r.json()
    assert r.status == 200 and body["kind"] == "Pod" and body["metadata"]["name"] == "gone"
    await create_pod(http, "bound", nodeName="n1")
    r = await http.delete(f"{PODS}/bound", json={"kind": "DeleteOptions", "gracePeriodSeconds": 30})
    body = await r.json()
    assert r.status == 200 and body["kind"] == "Pod" and body["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"preconditions": {"uid": "not-it"}}, 409),
        ({"preconditions": {"uid": "not-it"}, "dryRun": ["All"]}, 409),
        ({"preconditions": {"resourceVersion": "1"}}, 409),
        ({"propagationPolicy": "Sometimes"}, 400),
        ({"gracePeriodSeconds": -5}, 422),
    ],
)
async def test_delete_options_are_checked(http: TestClient, options, code) -> None:
    await create_pod(http, "d", nodeName="n1")
    r = await http.delete(f"{PODS}/d", json=options)
    assert r.status == code, await r.text()


async def test_delete_propagation_orphan_and_foreground_hold_the_owner_for_the_collector(
    http: TestClient,
) -> None:
    """propagationPolicy reaches the apiserver's delete: Orphan and Foreground leave the
    owner terminating with the collector's finalizer, Background removes it now; the
    dependents are the garbage collector's (tests/controllers/test_garbagecollector.py)."""
    rs_doc = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": as_json(pod("t"))["spec"]},
        },
    }
    url = "/apis/apps/v1/namespaces/default/replicasets/rs"
    for policy, held in (
        ("Orphan", ["orphan"]),
        ("Foreground", ["foregroundDeletion"]),
        ("Background", None),
    ):
        r = await http.post("/apis/apps/v1/namespaces/default/replicasets", json=rs_doc)
        assert r.status == 201, await r.text()
        r = await http.delete(url, params={"propagationPolicy": policy})
        assert r.status == 200
        got = await http.get(url)
        if held is None:
            assert got.status == 404
            continue
        meta = (await got.json())["metadata"]
        assert meta["finalizers"] == held and meta["deletionTimestamp"]
        r = await http.patch(
            url,
            json={"metadata": {"finalizers": None}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status == 200, await r.text()
        assert (await http.get(url)).status == 404


async def test_deletecollection_deletes_what_the_selector_matches(http: TestClient) -> None:
    for name, app in (("x", "a"), ("y", "a"), ("z", "b")):
        doc = as_json(pod(name))
        doc["metadata"]["labels"] = {"app": app}
        await http.post(PODS, json=doc)
    r = await http.delete(PODS, params={"labelSelector": "app=a"})
    body = await r.json()
    assert r.status == 200 and sorted(i["metadata"]["name"] for i in body["items"]) == ["x", "y"]
    left = await (await http.get(PODS)).json()
    assert [i["metadata"]["name"] for i in left["items"]] == ["z"]


async def test_binding_sets_the_node_and_a_second_bind_conflicts(http: TestClient) -> None:
    await create_pod(http, "b")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"kind": "Node", "name": "n1"},
    }
    r = await http.post(f"{PODS}/b/binding", json=binding)
    assert r.status == 201 and (await r.json())["status"] == "Success"
    assert (await (await http.get(f"{PODS}/b")).json())["spec"]["nodeName"] == "n1"
    r = await http.post(f"{PODS}/b/binding", json=binding)
    assert r.status == 409


async def test_a_bindings_labels_and_annotations_reach_the_pod(http: TestClient) -> None:
    await create_pod(http, "m")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "m", "labels": {"l": "1"}, "annotations": {"a": "2"}},
        "target": {"kind": "Node", "name": "n1"},
    }
    assert (await http.post(f"{PODS}/m/binding", json=binding)).status == 201
    meta = (await (await http.get(f"{PODS}/m")).json())["metadata"]
    assert meta["labels"]["l"] == "1" and meta["annotations"]["a"] == "2"
    binding["metadata"] = {"name": "m", "labels": {"l": 1}}
    r = await http.post(f"{PODS}/m/binding", json=binding)
    assert r.status == 400 and "metadata.labels" in (await r.json())["message"]


async def test_eviction_blocked_by_a_pdb_is_429(http: TestClient) -> None:
    doc = as_json(pod("e", nodeName="n1"))
    doc["metadata"]["labels"] = {"app": "e"}
    await http.post(PODS, json=doc)
    running = b'{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}'
    assert (await http.patch(f"{PODS}/e/status", data=running, headers=MERGE)).status == 200
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "e"}}},
    }
    r = await http.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", json=pdb)
    assert r.status == 201, await r.text()
    pdb_status = {
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": 0,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        }
    }
    r = await http.patch(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/pdb/status",
        data=json.dumps(pdb_status).encode(),
        headers=MERGE,
    )
    assert r.status == 200, await r.text()
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "e", "namespace": "default"},
    }
    r = await http.post(f"{PODS}/e/eviction", json=eviction)
    body = await r.json()
    assert r.status == 429 and body["reason"] == "TooManyRequests", body
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"


async def test_eviction_without_a_budget_deletes_the_pod(http: TestClient) -> None:
    await create_pod(http, "free")
    r = await http.post(
        f"{PODS}/free/eviction",
        json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "free"}},
    )
    assert r.status == 201
    assert (await http.get(f"{PODS}/free")).status == 404


async def test_scale_subresource_get_put_patch(http: TestClient) -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": as_json(pod("t"))["spec"]},
        },
    }
    base = "/apis/apps/v1/namespaces/default/deployments"
    assert (await http.post(base, json=dep)).status == 201
    scale = await (await http.get(f"{base}/web/scale")).json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 2 and scale["status"]["selector"] == "app=web"
    scale["spec"]["replicas"] = 5
    r = await http.put(f"{base}/web/scale", json=scale)
    assert r.status == 200 and (await r.json())["spec"]["replicas"] == 5
    r = await http.put(f"{base}/web/scale", json=scale)  # the same resourceVersion again
    assert r.status == 409
    r = await http.patch(f"{base}/web/scale", data=b'{"spec":{"replicas":7}}', headers=MERGE)
    assert r.status == 200
    assert (await (await http.get(f"{base}/web")).json())["spec"]["replicas"] == 7
    r = await http.get("/api/v1/namespaces/default/pods/x/scale")
    assert r.status == 404


async def test_node_status_patch(http: TestClient) -> None:
    node = as_json(MakeNode().name("n1").obj())
    node.update(apiVersion="v1", kind="Node")
    assert (await http.post("/api/v1/nodes", json=node)).status == 201
    r = await http.patch(
        "/api/v1/nodes/n1/status",
        data=b'{"status":{"capacity":{"cpu":"4"}}}',
        headers=MERGE,
    )
    assert r.status == 200, await r.text()
    assert (await r.json())["status"]["capacity"] == {"cpu": "4"}


@pytest.mark.parametrize(
    ("ptype", "body", "pinned"),
    [
        ("application/merge-patch+json", b'{"metadata":{"resourceVersion":"5"}}', True),
        ("application/merge-patch+json", b'{"metadata":{"labels":{"a":"b"}}}', False),
        ("application/strategic-merge-patch+json", b'{"metadata":{"resourceVersion":"5"}}', True),
        (
            "application/json-patch+json",
            b'[{"op":"test","path":"/metadata/resourceVersion","value":"5"}]',
            True,
        ),
        (
            "application/json-patch+json",
            b'[{"op":"add","path":"/metadata/labels","value":{}}]',
            False,
        ),
        ("application/merge-patch+json", b"not json", False),
    ],
)
def test_a_patch_naming_a_resource_version_is_conditional(
    ptype: str, body: bytes, pinned: bool
) -> None:
    assert names_resource_version(ptype, body) is pinned


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
        ("application/yaml", b"a: [" * 50_000 + b"]" * 50_000),
    ],
    ids=["json", "yaml"],
)
async def test_deeply_nested_bodies_are_400_not_500(
    http: TestClient, content_type: str, body: bytes
) -> None:
    r = await http.post(PODS, data=body, headers={"Content-Type": content_type})
    assert r.status == 400, await r.text()


@pytest.mark.parametrize("via", ["http", "grpc-with-empty-resources"])
async def test_a_pod_read_and_put_back_whole_is_no_change(
    http: TestClient, registry: ApiServer, via: str
) -> None:
    """GET-modify-PUT, as `kubectl edit` and the clients' read-modify-write do: the body
    carries the empty structs Go writes (`resources: {}`, `lastState: {}`), which must not
    count as a change of a pod's immutable spec, however the pod was created."""
    if via == "http":
        r = await http.post(PODS, json=as_json(pod("rt", containers=[{"name": "c", "image": "i"}])))
        assert r.status == 201, await r.text()
    else:
        p = pod("rt", containers=[{"name": "c", "image": "i", "resources": {"requests": {}}}])
        p.spec.containers[0].resources.SetInParent()
        stored: Any = await registry.create(p)
        assert not stored.spec.containers[0].HasField("resources")  # one form of empty
    live = await (await http.get(f"{PODS}/rt")).json()
    assert live["spec"]["containers"][0]["resources"] == {} and live["status"] is not None
    live["metadata"]["labels"] = {"edited": "yes"}
    r = await http.put(f"{PODS}/rt", json=live)
    assert r.status == 200, await r.text()
    assert (await r.json())["metadata"]["labels"] == {"edited": "yes"}
