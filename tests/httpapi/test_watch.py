"""The HTTP watch stream: newline-delimited events, bookmarks, 410 as an ERROR event,
timeoutSeconds, Table events, and the watch ended when the client leaves."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from services.apiserver import ApiServer
from tests.builders import pod
from tests.httpapi.conftest import as_json
from tests.waiting import eventually

PODS = "/api/v1/namespaces/default/pods"


async def read_events(resp: Any, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    events = []
    async with asyncio.timeout(timeout):
        while len(events) < count:
            line = await resp.content.readline()
            if not line:
                break
            events.append(json.loads(line))
    return events


async def test_watch_streams_added_modified_deleted(http: TestClient) -> None:
    r0 = await http.get(PODS)
    rv = (await r0.json())["metadata"]["resourceVersion"]
    resp = await http.get(PODS, params={"watch": "1", "resourceVersion": rv})
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("application/json")
    await http.post(PODS, json=as_json(pod("w")))
    await http.patch(
        f"{PODS}/w",
        data=b'{"metadata":{"labels":{"a":"b"}}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    await http.delete(f"{PODS}/w")
    events = await read_events(resp, 3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(
        e["object"]["kind"] == "Pod" and e["object"]["metadata"]["name"] == "w" for e in events
    )
    resp.close()


async def test_watch_without_resource_version_starts_with_the_current_state(
    http: TestClient,
) -> None:
    await http.post(PODS, json=as_json(pod("old")))
    resp = await http.get(PODS, params={"watch": "true"})
    events = await read_events(resp, 1)
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "old"
    resp.close()


async def test_watch_of_one_named_object(http: TestClient) -> None:
    await http.post(PODS, json=as_json(pod("a")))
    await http.post(PODS, json=as_json(pod("b")))
    resp = await http.get(f"{PODS}/b", params={"watch": "1"})
    events = await read_events(resp, 1)
    assert events[0]["object"]["metadata"]["name"] == "b"
    resp.close()


async def test_bookmarks_carry_only_the_resource_version(http: TestClient) -> None:
    rv = (await (await http.get(PODS)).json())["metadata"]["resourceVersion"]
    resp = await http.get(
        PODS, params={"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"}
    )
    (event,) = await read_events(resp, 1)
    assert event["type"] == "BOOKMARK"
    assert event["object"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": event["object"]["metadata"]["resourceVersion"]},
    }
    resp.close()


async def test_expired_resource_version_is_one_error_event_with_410_then_the_end(
    http: TestClient, registry: ApiServer
) -> None:
    for i in range(60):  # past the cache's 50 events
        await http.post(PODS, json=as_json(pod(f"p{i}")))
    resp = await http.get(PODS, params={"watch": "1", "resourceVersion": "2"})
    assert resp.status == 200
    events = await read_events(resp, 2)
    assert len(events) == 1
    (event,) = events
    assert event["type"] == "ERROR"
    assert event["object"]["kind"] == "Status" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"


async def test_timeout_seconds_ends_the_stream_cleanly(http: TestClient) -> None:
    rv = (await (await http.get(PODS)).json())["metadata"]["resourceVersion"]
    resp = await http.get(PODS, params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "1"})
    async with asyncio.timeout(10):
        body = await resp.read()
    assert body == b""


@pytest.mark.parametrize(
    "params",
    [
        {"labelSelector": "a in in"},
        {"fieldSelector": "spec.bogus=1"},
        {"resourceVersion": "abc"},
        {"timeoutSeconds": "x"},
    ],
)
async def test_malformed_watch_parameters_are_400_before_the_stream(
    http: TestClient, params
) -> None:
    r = await http.get(PODS, params={"watch": "1", **params})
    assert r.status == 400 and (await r.json())["kind"] == "Status"


async def test_table_watch_sends_each_object_as_a_table(http: TestClient) -> None:
    await http.post(PODS, json=as_json(pod("t")))
    resp = await http.get(
        PODS,
        params={"watch": "1"},
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
    )
    (event,) = await read_events(resp, 1)
    assert event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "t"
    resp.close()


async def test_a_client_that_leaves_ends_its_watch(http: TestClient, registry: ApiServer) -> None:
    cache = registry.caches["pods"]
    before = cache.watchers
    resp = await http.get(PODS, params={"watch": "1"})
    await http.post(PODS, json=as_json(pod("x")))
    await read_events(resp, 1)
    assert cache.watchers == before + 1
    resp.close()
    await eventually(lambda: cache.watchers == before)


async def test_two_watchers_share_one_json_encoding_per_event(
    http: TestClient, monkeypatch
) -> None:
    from services.httpapi import watch

    calls: list[str] = []
    real = watch.to_json

    def counting(kind, obj):  # type: ignore[no-untyped-def]
        calls.append(obj.metadata.name)
        return real(kind, obj)

    monkeypatch.setattr(watch, "to_json", counting)
    url = "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0&timeoutSeconds=1"
    assert (
        await http.post("/api/v1/namespaces/default/pods", json=as_json(pod("shared")))
    ).status == 201
    bodies = [await (await http.get(url)).read() for _ in range(2)]
    assert bodies[0] == bodies[1] and b'"name":"shared"' in bodies[0]
    assert calls.count("shared") == 1
