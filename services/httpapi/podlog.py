"""GET pods/NAME/log, and its `follow` stream.

The log is the hollow container's synthetic one (services/api/helpers/containerlog.py),
derived from the pod object, so any apiserver replica serves it. With `follow=true` the
answer is a chunked text/plain stream, as the kubelet's: what there is, then each line the
followed container instance adds, read from a watch of the pod (no polling of the log), until
that instance terminates, the pod goes, or the client leaves. A client that leaves while
nothing happens is noticed within CLIENT_CHECK_SECONDS (aiohttp does not cancel a handler
when its client goes), so an abandoned stream holds no watch for long.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from protos.kubera.v1 import core_pb2
from services.api.helpers import containerlog
from services.api.machinery.kubeobject import narrow
from services.api.machinery.listoptions import ListOptions
from services.httpapi.verbs import Call

#: How often a follow stream with nothing to send checks that its client is still there.
CLIENT_CHECK_SECONDS = 1.0


async def pod_log(call: Call) -> tuple[str, AsyncIterator[str] | None]:
    """The log text as upstream answers it (the container chosen as its LogLocation does; a
    pod not yet on a node has none: ""), and, when `follow` asks for more, the chunks that
    follow it."""
    options = containerlog.log_options(call.info.name, call.query)
    pod = narrow(await call.api.get(call.kind, call.namespace, call.info.name), core_pb2.Pod)
    container = containerlog.log_container(pod, options.container)
    if not pod.spec.node_name:
        return "", None
    lines = containerlog.container_log(pod, container, previous=options.previous)
    text = containerlog.render(lines, options)
    budget = None if options.limit_bytes is None else options.limit_bytes - len(text.encode())
    if not options.follow or options.previous or budget == 0:
        return text, None
    if not containerlog.running(pod, container):
        return text, None
    return text, _follow(call, pod, container, lines, options, budget)


async def _follow(
    call: Call,
    pod: core_pb2.Pod,
    container: str,
    sent: list[str],
    options: containerlog.LogOptions,
    budget: int | None,
) -> AsyncIterator[str]:
    """The lines the followed instance adds, from the pod's versions after `pod`."""
    watch = ListOptions(
        field_selector=f"metadata.name={call.info.name}",
        resource_version=pod.metadata.resource_version,
    )
    sent = list(sent)
    batches = call.api.watch_batches(call.kind, namespace=call.namespace, options=watch)
    async with contextlib.aclosing(batches):  # type: ignore[type-var]
        async for batch in batches:
            for event_type, entry in batch:
                if event_type == "DELETED":
                    return
                if event_type not in ("ADDED", "MODIFIED"):
                    continue
                now = narrow(entry.obj, core_pb2.Pod)
                new, ended = containerlog.follow_lines(now, container, sent)
                if new:
                    sent += new
                    text, budget = containerlog.render_more(new, options, budget)
                    yield text
                if ended or budget == 0:
                    return


async def serve_pod_log(request: web.Request, call: Call) -> web.StreamResponse:
    text, more = await pod_log(call)
    if more is None:
        return web.Response(status=200, text=text, content_type="text/plain")
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    with contextlib.suppress(ConnectionResetError):
        await resp.write(text.encode())
        async with contextlib.aclosing(more):  # type: ignore[type-var]
            await _pump(request, resp, more)
        await resp.write_eof()
    return resp


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _pump(request: web.Request, resp: web.StreamResponse, chunks: AsyncIterator[str]) -> None:
    """Write `chunks` as they come, until they end or the client leaves."""
    nxt: asyncio.Future[str] = asyncio.ensure_future(anext(chunks))
    try:
        while True:
            done, _ = await asyncio.wait({nxt}, timeout=CLIENT_CHECK_SECONDS)
            if not done:
                if _client_gone(request):
                    return
                continue
            try:
                chunk = nxt.result()
            except StopAsyncIteration:
                return
            await resp.write(chunk.encode())
            nxt = asyncio.ensure_future(anext(chunks))
    finally:
        if not nxt.done():
            nxt.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await nxt
