"""The UI's aiohttp application, mounted by the apiserver's HTTP API at /ui/.

    GET  /ui/?token=T        spend a login token: session cookie, 303 to /ui/ (401 if T
                             is unknown, spent or expired)
    GET  /ui/                the page (401 without a session)
    GET  /ui/static/NAME     its script and style (401 without a session)
    GET  /ui/api/stream      the live feed, server-sent events (services/ui/stream.py)
    GET  /ui/api/trace?namespace=NS&name=N   a pod's decision trace (services/ui/traces.py)
    GET  /ui/api/replicas    every replicated component's replicas (services/ui/replicas.py),
                             asked when the page opens and when a Lease changes holder
    POST /ui/api/tokens      a login token, for a caller with a bearer token who may watch
                             nodes, pods, leases and events cluster-wide (`kubera ui`)

No URL answers anything but 401 without a session, the token exchange and the token
request aside (services/ui/sessions.py draws the login). Every answer forbids framing,
sends no Referer (the login URL holds a token) and allows scripts from this origin only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web

from services.apiserver import ApiServer
from services.auth import (
    ALLOW_ALL,
    Authenticator,
    Authorizer,
    RequestAttributes,
    maybe_await,
)
from services.clock import Clock, RealClock
from services.ui.replicas import replicas
from services.ui.sessions import COOKIE, SESSION_SECONDS, Session, Sessions
from services.ui.stream import serve_stream
from services.ui.traces import TraceError, pod_trace

STATIC = Path(__file__).parent / "static"
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
#: What a caller must be allowed to read, cluster-wide, to be given a login token.
READS = (("nodes", ""), ("pods", ""), ("leases", "coordination.k8s.io"), ("events", ""))

SESSIONS = web.AppKey("sessions", Sessions)


def _page(code: int, title: str, text: str) -> web.Response:
    body = f"<!doctype html><meta charset=utf-8><title>kubera</title><h1>{title}</h1><p>{text}</p>"
    return web.Response(status=code, text=body, content_type="text/html", headers=HEADERS)


UNAUTHORIZED = (
    "Unauthorized",
    "This page needs a login URL: run <code>kubera ui</code> and open the URL it prints.",
)


class Ui:
    def __init__(
        self, api: ApiServer, authn: Authenticator, authz: Authorizer, clock: Clock
    ) -> None:
        self.api = api
        self.authn = authn
        self.authz = authz
        self.clock = clock
        self.sessions = Sessions(clock)
        self.files = {p.name: p for p in STATIC.iterdir() if p.suffix in CONTENT_TYPES}

    def session_of(self, request: web.Request) -> Session | None:
        return self.sessions.session(request.cookies.get(COOKIE, ""))

    async def index(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("token")
        if token is not None:
            sid = self.sessions.redeem(token)
            if sid is None:
                return _page(
                    401,
                    "Unauthorized",
                    "This login URL was used already or has expired: run "
                    "<code>kubera ui</code> for a new one.",
                )
            resp = web.Response(status=303, headers={**HEADERS, "Location": "/ui/"})
            resp.set_cookie(
                COOKIE,
                sid,
                path="/ui/",
                httponly=True,
                secure=request.secure,
                samesite="Strict",
                max_age=int(SESSION_SECONDS),
            )
            return resp
        if self.session_of(request) is None:
            return _page(401, *UNAUTHORIZED)
        return self._file("index.html")

    async def static(self, request: web.Request) -> web.StreamResponse:
        if self.session_of(request) is None:
            return _page(401, *UNAUTHORIZED)
        name = request.match_info["name"]
        if name not in self.files or name == "index.html":
            raise web.HTTPNotFound()
        return self._file(name)

    def _file(self, name: str) -> web.Response:
        path = self.files[name]
        return web.Response(
            body=path.read_bytes(),
            content_type=CONTENT_TYPES[path.suffix],
            charset="utf-8",
            headers=HEADERS,
        )

    async def stream(self, request: web.Request) -> web.StreamResponse:
        session = self.session_of(request)
        if session is None:
            return _json(401, {"message": "Unauthorized"})
        return await serve_stream(request, self.api, session.user.name, self.clock, session.bearer)

    async def trace(self, request: web.Request) -> web.StreamResponse:
        session = self.session_of(request)
        if session is None:
            return _json(401, {"message": "Unauthorized"})
        name = request.query.get("name", "")
        namespace = request.query.get("namespace", "") or "default"
        if not name:
            return _json(400, {"message": "name is required"})
        try:
            attempts = await pod_trace(self.api.storage, session.bearer, namespace, name)
        except TraceError as e:
            return _json(e.code, {"message": e.message})
        return _json(200, {"pod": f"{namespace}/{name}", "attempts": attempts})

    async def replicas(self, request: web.Request) -> web.StreamResponse:
        if self.session_of(request) is None:
            return _json(401, {"message": "Unauthorized"})
        return _json(200, {"replicas": await replicas(self.api.storage)})

    async def tokens(self, request: web.Request) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        bearer = header[7:].strip() if header[:7].lower() == "bearer " else ""
        user = await maybe_await(self.authn.authenticate(bearer))
        if user is None:
            return _json(401, {"message": "Unauthorized"})
        for resource, group in READS:
            attrs = RequestAttributes(user=user, verb="watch", resource=resource, api_group=group)
            decision = await maybe_await(self.authz.authorize(attrs))
            if not decision.allowed:
                return _json(
                    403,
                    {"message": f'user "{user.name}" cannot watch {resource} cluster-wide'},
                )
        token = self.sessions.issue_login(user, bearer)
        return _json(201, {"token": token, "path": f"/ui/?token={token}"})


def _json(code: int, doc: dict[str, Any]) -> web.Response:
    return web.Response(
        status=code, body=json.dumps(doc).encode(), content_type="application/json", headers=HEADERS
    )


def build_ui(
    api: ApiServer,
    *,
    authn: Authenticator = ALLOW_ALL,
    authz: Authorizer = ALLOW_ALL,
    clock: Clock | None = None,
) -> web.Application:
    """The UI, to mount at /ui (`app.add_subapp("/ui", build_ui(...))`)."""
    ui = Ui(api, authn, authz, clock or RealClock())
    app = web.Application()
    app[SESSIONS] = ui.sessions
    app.router.add_get("/", ui.index)
    app.router.add_get("/static/{name}", ui.static)
    app.router.add_get("/api/stream", ui.stream)
    app.router.add_get("/api/trace", ui.trace)
    app.router.add_get("/api/replicas", ui.replicas)
    app.router.add_post("/api/tokens", ui.tokens)
    return app
