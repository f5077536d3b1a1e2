"""A small aiohttp server of the read-only documents (discovery, OpenAPI v3, Table lists
of fixed objects) and a real `kubectl` run against it, for the discovery, OpenAPI and
Table tests. The full HTTP API is services/httpapi/app.py's; this one serves only what
those modules produce, so their tests need no apiserver or etcd.

Every request is recorded (method, path with query, Accept) so a test can assert what
kubectl asked for. kubectl runs with its own kubeconfig and discovery cache under the
test's tmp_path, and is killed by PID if it outlives its timeout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from google.protobuf.message import Message

from services.api.machinery import codec, kinds
from services.httpapi import discovery, openapi, tables

KUBECTL_TIMEOUT = 30.0


@dataclass
class Recorded:
    method: str
    path_qs: str
    accept: str


@dataclass
class DocServer:
    url: str
    tmp: Path
    requests: list[Recorded] = field(default_factory=list)
    #: Objects served by the list/get endpoints, by resource.
    objects: dict[str, list[Message]] = field(default_factory=dict)
    #: Bodies of PATCH/POST/PUT requests, by path.
    bodies: dict[str, Any] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.tmp / "kubeconfig"

    async def kubectl(self, *args: str) -> tuple[int, str, str]:
        """Run kubectl against the server; (exit code, stdout, stderr)."""
        proc = await asyncio.create_subprocess_exec(
            "kubectl",
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.tmp / 'kube-cache'}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), KUBECTL_TIMEOUT)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return proc.returncode or 0, out.decode(), err.decode()


def _json(doc: Any, content_type: str = "application/json") -> web.Response:
    return web.Response(body=json.dumps(doc).encode(), headers={"Content-Type": content_type})


def _not_found(what: str) -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{what} not found",
        "reason": "NotFound",
        "code": 404,
    }
    return web.json_response(status, status=404)


def _app(server: DocServer) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler: Any) -> web.StreamResponse:
        server.requests.append(
            Recorded(request.method, request.path_qs, request.headers.get("Accept", ""))
        )
        if request.method in ("PATCH", "POST", "PUT") and request.can_read_body:
            server.bodies[request.path] = await request.text()
        return await handler(request)

    async def discovery_doc(request: web.Request) -> web.Response:
        found = discovery.document_for(request.path, request.headers.get("Accept", ""))
        return _not_found(request.path) if found is None else _json(*found)

    async def openapi_doc(request: web.Request) -> web.Response:
        doc = openapi.document_for(request.path)
        return _not_found(request.path) if doc is None else web.json_response(doc)

    async def listing(request: web.Request) -> web.Response:
        kind = kinds.BY_RESOURCE.get(request.match_info["resource"])
        if kind is None:
            return _not_found(request.path)
        objs = server.objects.get(kind.resource, [])
        name = request.match_info.get("name")
        if name is not None:
            objs = [o for o in objs if o.metadata.name == name]  # type: ignore[attr-defined]
            if not objs:
                return _not_found(f'{kind.resource} "{name}"')
        if tables.wants_table(request.headers.get("Accept", "")):
            include = request.query.get("includeObject", "Metadata")
            return web.json_response(
                tables.to_table(
                    kind,
                    objs,
                    wide=True,
                    include_object=include,
                    list_meta={"resourceVersion": "7"},
                )
            )
        if name is not None:
            return web.json_response(codec.encode(objs[0]))
        return web.json_response(
            {
                "kind": kind.kind + "List",
                "apiVersion": kind.api_version,
                "metadata": {"resourceVersion": "7"},
                "items": [codec.encode(o) for o in objs],
            }
        )

    async def create(request: web.Request) -> web.Response:
        """Echo the object kubectl sends (no validation: the real edge's job)."""
        doc = json.loads(server.bodies[request.path])
        doc.setdefault("metadata", {}).setdefault(
            "namespace", request.match_info.get("namespace", "")
        )
        return web.json_response(doc, status=201)

    async def patch(request: web.Request) -> web.Response:
        """Answer with the object as served (the patch is recorded, not applied)."""
        kind = kinds.BY_RESOURCE[request.match_info["resource"]]
        name = request.match_info["name"]
        objs = [o for o in server.objects.get(kind.resource, []) if o.metadata.name == name]  # type: ignore[attr-defined]
        if not objs:
            return _not_found(f'{kind.resource} "{name}"')
        return web.json_response(codec.encode(objs[0]))

    app = web.Application(middlewares=[record])
    for path in ("/version", "/api", "/apis", "/api/{v}", "/apis/{g}", "/apis/{g}/{v}"):
        app.router.add_get(path, discovery_doc)
    for path in ("/openapi/v3", "/openapi/v3/api/{v}", "/openapi/v3/apis/{g}/{v}"):
        app.router.add_get(path, openapi_doc)
    for prefix in ("/api/{version}", "/apis/{group}/{version}"):
        for ns in ("", "/namespaces/{namespace}"):
            app.router.add_get(prefix + ns + "/{resource}", listing)
            app.router.add_get(prefix + ns + "/{resource}/{name}", listing)
            app.router.add_post(prefix + ns + "/{resource}", create)
            app.router.add_patch(prefix + ns + "/{resource}/{name}", patch)
    return app


def write_kubeconfig(path: Path, url: str) -> None:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "kubera", "cluster": {"server": url}}],
                "users": [{"name": "admin", "user": {"token": "test-token"}}],
                "contexts": [
                    {
                        "name": "kubera",
                        "context": {"cluster": "kubera", "user": "admin", "namespace": "default"},
                    }
                ],
                "current-context": "kubera",
            }
        )
    )


@asynccontextmanager
async def doc_server(
    tmp: Path, objects: dict[str, Sequence[Message]] | None = None
) -> AsyncIterator[DocServer]:
    """Serve the documents on a loopback port for the duration of the block."""
    server = DocServer(url="", tmp=tmp, objects={k: list(v) for k, v in (objects or {}).items()})
    runner = web.AppRunner(_app(server))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        server.url = f"http://127.0.0.1:{port}"
        write_kubeconfig(server.kubeconfig, server.url)
        yield server
    finally:
        await runner.cleanup()
