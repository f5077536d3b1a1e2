"""The HTTP watch: a chunked stream of newline-delimited JSON events, as kube-apiserver's.

Why this module exists: a watch is the one response that is not a single document. Each
line is ``{"type": T, "object": O}`` with T one of ADDED, MODIFIED, DELETED, BOOKMARK or
ERROR; a batch of the registry's `watch_batches` (never splitting a revision) is written
as one chunk. The stream's rules, as upstream's:

* a BOOKMARK's object has only apiVersion, kind and metadata.resourceVersion;
* a resourceVersion older than the watch cache keeps is answered 200 with one ERROR
  event carrying a 410 Expired Status, then the end (client-go and the Python client
  relist on it); any other refusal mid-stream likewise, with its own Status;
* `timeoutSeconds` ends the stream cleanly (no ERROR), as does the server's default
  (30 minutes, upstream's minimum request timeout);
* a client that goes away cancels the handler (the app runs with handler cancellation),
  which closes the registry's watch and unregisters it from the cache.

Malformed parameters (selectors, resourceVersion) are checked before the stream starts,
so they are ordinary 400 responses.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web
from google.protobuf.message import Message

from services.api.machinery.errors import ApiError, BadRequestError
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.listoptions import ListOptions
from services.apiserver import Filter, parse_resource_version
from services.httpapi.status import from_error
from services.httpapi.verbs import Call, to_json

#: Upstream's --min-request-timeout: a watch without timeoutSeconds ends after this.
DEFAULT_TIMEOUT_SECONDS = 1800

#: (kind's object) -> the JSON a watch event carries (the object, or a Table of it).
Render = Callable[[Message], dict[str, Any]]


def _timeout(call: Call) -> float:
    raw = call.query.get("timeoutSeconds", "")
    if not raw:
        return DEFAULT_TIMEOUT_SECONDS
    try:
        value = int(raw)
    except ValueError:
        raise BadRequestError(f"timeoutSeconds must be an integer, not {raw!r}") from None
    if value < 0:
        raise BadRequestError("timeoutSeconds must not be negative")
    return float(value) if value else DEFAULT_TIMEOUT_SECONDS


def _watch_options(call: Call) -> ListOptions:
    """The watch's options, validated up front (400 before the stream)."""
    q = call.query
    fields = q.get("fieldSelector", "")
    name = call.info.name
    if name:  # GET .../pods/NAME?watch=1: upstream's single-object watch
        fields = f"metadata.name={name}" + (f",{fields}" if fields else "")
    labels = q.get("labelSelector", "")
    rv = q.get("resourceVersion", "")
    options = ListOptions(
        label_selector=labels,
        field_selector=fields,
        resource_version=rv,
        allow_bookmarks=q.get("allowWatchBookmarks") in ("1", "true", "True"),
    )
    Filter(call.kind, call.namespace, options)
    parse_resource_version(rv)
    return dataclasses.replace(options, timeout_seconds=_timeout(call))


def line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def encoded_line(event_type: str, obj_json: bytes) -> bytes:
    """`line` with the object already JSON (one encoding shared by every watcher)."""
    return b'{"type":"' + event_type.encode() + b'","object":' + obj_json + b"}\n"


def bookmark(call: Call, obj: Message) -> dict[str, Any]:
    return {
        "kind": call.kind.kind,
        "apiVersion": call.kind.api_version,
        "metadata": {"resourceVersion": object_meta(obj).resource_version},
    }


async def serve_watch(
    request: web.Request,
    call: Call,
    *,
    render: Render | None = None,
    content_type: str = "application/json",
) -> web.StreamResponse:
    """Stream the watch `call` asks for until its timeout, an error, or the client leaves."""
    options = _watch_options(call)
    show: Render = render or (lambda o: to_json(call.kind, o))
    kind = call.kind

    def encode(o: Message) -> bytes:
        return json.dumps(to_json(kind, o), separators=(",", ":")).encode()

    def event_line(t: str, e: Any) -> bytes:
        if t == "BOOKMARK":
            return line(t, bookmark(call, e.obj))
        if render is None:  # the plain JSON form: encoded once per object version
            return encoded_line(t, e.json(encode))
        return line(t, show(e.obj))

    resp = web.StreamResponse(status=200, headers={"Content-Type": content_type})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    batches = call.api.watch_batches(call.kind, namespace=call.namespace, options=options)
    try:
        async with contextlib.aclosing(batches), asyncio.timeout(options.timeout_seconds):  # type: ignore[type-var]
            async for batch in batches:
                chunk = b"".join(event_line(t, e) for t, e in batch)
                await resp.write(chunk)
    except TimeoutError:
        pass
    except ApiError as e:
        await resp.write(line("ERROR", from_error(e)))
    except ConnectionResetError:
        return resp
    with contextlib.suppress(ConnectionResetError):
        await resp.write_eof()
    return resp
