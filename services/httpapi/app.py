"""The aiohttp application of the Kubernetes HTTP API, and the server that runs it.

Why this module exists: it is the edge, and only composes. Each request goes through
the same steps, in upstream's handler-chain order:

    health and version (public, upstream's system:public-info-viewer)
    -> authenticate (Bearer token -> User; none or unknown: 401)
    -> non-resource paths (/version, /api, /apis, /openapi/v3, /healthz): served as they are
    -> POST /apis/kubera.io/v1/whatif: the scheduler leader's what-if (whatif.py)
    -> RequestInfo (requestinfo.parse) -> authorize, with the written object when the
       attributes carry one (denied: 403 in RBAC's wording)
    -> the verb (verbs, watch) -> the answer negotiated by Accept (JSON, a meta/v1
       Table, PartialObjectMetadata[List]) with Warning headers
    -> any ApiError: a Status with its HTTP code (status.from_error); anything else a
       500 Status, logged

Discovery, OpenAPI and Table output come from services/httpapi/discovery.py, openapi.py
and tables.py.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from google.protobuf.message import Message
from multidict import CIMultiDict

from services.api.machinery.errors import ApiError, PermissionDeniedError
from services.api.machinery.kinds import Kind
from services.apiserver import ApiServer
from services.auth import (
    ALLOW_ALL,
    CURRENT_USER,
    Authenticator,
    Authorizer,
    RequestAttributes,
    User,
    maybe_await,
)
from services.auth.authorizer import forbidden_message
from services.httpapi import (
    discovery,
    openapi,
    podlog,
    requestinfo,
    subresources,
    tables,
    verbs,
    whatif,
)
from services.httpapi.requestinfo import RequestInfo
from services.httpapi.status import from_error, status
from services.httpapi.watch import serve_watch

log = logging.getLogger(__name__)

T = TypeVar("T")

JSON = "application/json"
#: What anyone may read without a token (upstream's system:public-info-viewer role, bound
#: to system:unauthenticated too): health and the server's version.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
#: Bodies past this are refused (upstream's 3 MiB request limit, a little over etcd's 1.5 MiB value cap).
MAX_BODY = 3 * 1024 * 1024


# ------------------------------------------------------------------ negotiation


class Negotiated:
    """What the Accept header asks the answer to be: "json", "table", "partial"."""

    def __init__(self, accept: str) -> None:
        self.form = ""
        for part in (accept or JSON).split(","):
            media, *params = (p.strip() for p in part.split(";"))
            opts = dict(p.split("=", 1) for p in params if "=" in p)
            if media not in (JSON, "application/*", "*/*"):
                continue
            as_ = opts.get("as", "")
            if not as_:
                self.form = "json"
            elif as_ == "Table" and opts.get("g") == "meta.k8s.io":
                self.form = "table"
            elif (
                as_ in ("PartialObjectMetadata", "PartialObjectMetadataList")
                and opts.get("g") == "meta.k8s.io"
            ):
                self.form = "partial"
            else:
                continue
            return

    @property
    def acceptable(self) -> bool:
        return bool(self.form)


def partial(kind: Kind, obj: Message) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": verbs.to_json(kind, obj).get("metadata", {}),
    }


def render_one(neg: Negotiated, call: verbs.Call, obj: Message) -> dict[str, Any]:
    if neg.form == "table":
        table: dict[str, Any] = tables.to_table(
            call.kind,
            [obj],
            wide=True,
            include_object=call.query.get("includeObject", "Metadata"),
            now=call.api.clock.now(),
        )
        return table
    if neg.form == "partial":
        return partial(call.kind, obj)
    return verbs.to_json(call.kind, obj)


def render_page(neg: Negotiated, call: verbs.Call, page: verbs.Page) -> dict[str, Any]:
    doc = verbs.list_doc(call.kind, page)
    if neg.form == "table":
        table: dict[str, Any] = tables.to_table(
            call.kind,
            page.items,
            wide=True,
            include_object=call.query.get("includeObject", "Metadata"),
            list_meta=doc["metadata"],
            now=call.api.clock.now(),
        )
        return table
    if neg.form == "partial":
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": doc["metadata"],
            "items": [partial(call.kind, o) for o in page.items],
        }
    return doc


def respond(
    code: int,
    doc: dict[str, Any],
    warnings: list[str] = (),  # type: ignore[assignment]
    *,
    content_type: str = JSON,
) -> web.Response:
    headers: CIMultiDict[str] = CIMultiDict()
    headers["Content-Type"] = content_type
    for w in warnings:
        headers.add("Warning", "299 - " + json.dumps(w))
    return web.Response(status=code, body=json.dumps(doc).encode(), headers=headers)


def error(code: int, reason: str, message: str, **details: Any) -> web.Response:
    return respond(code, status(code, reason, message, details=details or None))


# ------------------------------------------------------------------ the handler


def written_object(call: verbs.Call) -> Message | None:
    """The object a create or update body holds, for the authorizer; None when it does
    not decode (the verb then refuses it with the reason)."""
    try:
        return verbs.decode_object(
            verbs.Call(call.api, call.info, call.kind, call.query, call.body, call.content_type),
            verbs.body_doc(call),
        )
    except ApiError:
        return None


class HttpApi:
    """The request handler: one per app, holding the registry and the auth collaborators."""

    def __init__(self, api: ApiServer, authn: Authenticator, authz: Authorizer) -> None:
        self.api = api
        self.authn = authn
        self.authz = authz

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self.serve(request)
        except Exception:
            # A bug or a broken collaborator (authenticator, authorizer): a 500 Status,
            # logged with its traceback, never aiohttp's bare text answer.
            log.exception("%s %s failed", request.method, request.path_qs)
            return error(500, "InternalError", "an internal error occurred")

    async def serve(self, request: web.Request) -> web.StreamResponse:
        if request.path.rstrip("/") in PUBLIC_PATHS and request.method in ("GET", "HEAD"):
            served = self.non_resource(request.path)
            if served is not None:
                return served
        header = request.headers.get("Authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        user: User | None = await maybe_await(self.authn.authenticate(token))
        if user is None:
            return error(401, "Unauthorized", "Unauthorized")
        CURRENT_USER.set(user)
        path = request.path
        if whatif.is_whatif(path):  # the scheduler leader's what-if (services/httpapi/whatif.py)
            return await whatif.serve(request, self.api, user, self.authz)
        non_resource = self.non_resource(path, request.headers.get("Accept", ""))
        if non_resource is not None:
            if request.method not in ("GET", "HEAD"):
                return error(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return non_resource
        try:
            info = requestinfo.parse(request.method, path, request.query)
        except requestinfo.NotAResource:
            return error(404, "NotFound", "the server could not find the requested resource")
        if info.kind is None:
            return error(404, "NotFound", "the server could not find the requested resource")
        if request.content_length and request.content_length > MAX_BODY:
            return error(413, "RequestEntityTooLarge", "the request is too large")
        body = await request.read() if request.can_read_body else b""
        call = verbs.Call(
            api=self.api,
            info=info,
            kind=info.kind,
            query=request.query,
            body=body,
            content_type=request.headers.get("Content-Type", ""),
            user=user,
            user_agent=request.headers.get("User-Agent", ""),
        )
        attrs = RequestAttributes(
            user=user,
            verb=info.verb,
            resource=info.resource,
            api_group=info.group,
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
        )
        if info.verb in ("create", "update") and not info.subresource:
            attrs = dataclasses.replace(attrs, obj=written_object(call))
        decision = await maybe_await(self.authz.authorize(attrs))
        if not decision.allowed:
            msg = forbidden_message(attrs, decision.reason)
            return error(
                403, "Forbidden", msg, name=info.name, group=info.group, kind=info.resource
            )
        call.authorize_create = functools.partial(self._authorize_create, attrs)
        try:
            return await self.dispatch(request, call)
        except ApiError as e:
            return respond(*_code(e, info), call.warnings)

    async def _authorize_create(self, attrs: RequestAttributes, obj: Message) -> None:
        """Server-side apply of an object that is not there creates it: the caller must
        also be allowed to create it (upstream authorizes the create as well)."""
        attrs = dataclasses.replace(attrs, verb="create", obj=obj)
        decision = await maybe_await(self.authz.authorize(attrs))
        if not decision.allowed:
            raise PermissionDeniedError(forbidden_message(attrs, decision.reason))

    def non_resource(self, path: str, accept: str = "") -> web.Response | None:
        """Health, discovery and OpenAPI; None when `path` is a resource path."""
        parts = [p for p in path.split("/") if p]
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok")
        if parts[:1] == ["openapi"]:
            doc = openapi.document_for(path)
            if doc is None:
                return error(404, "NotFound", "the server could not find the requested resource")
            return respond(200, doc)
        if not parts:
            return error(404, "NotFound", "the server could not find the requested resource")
        if (
            parts == ["version"]
            or parts in (["api"], ["apis"])
            or len(parts) == 2
            or (len(parts) == 3 and parts[0] == "apis")
        ):
            if parts[0] not in ("api", "apis", "version"):
                return None
            found = discovery.document_for(path, accept)
            if found is None:
                return error(404, "NotFound", "the server could not find the requested resource")
            return respond(200, found[0], content_type=found[1])
        return None

    async def dispatch(self, request: web.Request, call: verbs.Call) -> web.StreamResponse:
        info, kind = call.info, call.kind
        sub = info.subresource
        verb = info.verb
        neg = Negotiated(request.headers.get("Accept", ""))
        if verb in ("get", "list", "watch") and not neg.acceptable and sub != "log":
            return error(
                406,
                "NotAcceptable",
                "only application/json is served (as=Table and PartialObjectMetadata too)",
            )
        scoped = bool(info.namespace) if kind.resource != "namespaces" else False
        if scoped and not kind.namespaced:
            return error(404, "NotFound", "the server could not find the requested resource")
        if kind.namespaced and not info.namespace and verb not in ("list", "watch"):
            return error(404, "NotFound", "the server could not find the requested resource")
        if sub == "status" and not kind.has_status:
            return error(404, "NotFound", "the server could not find the requested resource")
        if sub == "scale" and kind.resource not in subresources.SCALABLE:
            return error(404, "NotFound", "the server could not find the requested resource")
        if sub in ("binding", "eviction", "log") and kind.resource != "pods":
            return error(404, "NotFound", "the server could not find the requested resource")
        if sub == "finalize" and kind.resource != "namespaces":
            return error(404, "NotFound", "the server could not find the requested resource")
        if sub not in ("", "status", "scale", "binding", "eviction", "log", "finalize"):
            return error(404, "NotFound", "the server could not find the requested resource")
        handler = ROUTES.get((verb, sub))
        if handler is None or (verb in ("update", "patch") and not info.name):
            return error(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        return await handler(request, call, neg)


Handler = Callable[[web.Request, verbs.Call, Negotiated], Awaitable[web.StreamResponse]]


def _code(e: ApiError, info: RequestInfo) -> tuple[int, dict[str, Any]]:
    doc = from_error(e, resource=info.resource, group=info.group, name=info.name)
    return doc["code"], doc


async def _get(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(200, render_one(neg, call, await verbs.get(call)), call.warnings)


async def _list(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(200, render_page(neg, call, await verbs.list_(call)), call.warnings)


async def _watch(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    if neg.form == "json":
        return await serve_watch(request, call)
    return await serve_watch(request, call, render=lambda o: render_one(neg, call, o))


async def _create(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    if call.info.name:
        return error(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    code, doc = await verbs.create(call)
    return respond(code, doc, call.warnings)


async def _update(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(200, await verbs.update(call), call.warnings)


async def _patch(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(200, await verbs.patch(call), call.warnings)


async def _delete(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    code, doc = await verbs.delete(call)
    return respond(code, doc, call.warnings)


async def _delete_collection(
    request: web.Request, call: verbs.Call, neg: Negotiated
) -> web.StreamResponse:
    return respond(200, await verbs.delete_collection(call), call.warnings)


async def _bind(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(*await subresources.bind(call))


async def _evict(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(*await subresources.evict(call))


async def _pod_log(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return await podlog.serve_pod_log(request, call)


async def _get_scale(request: web.Request, call: verbs.Call, neg: Negotiated) -> web.StreamResponse:
    return respond(200, await subresources.get_scale(call))


async def _update_scale(
    request: web.Request, call: verbs.Call, neg: Negotiated
) -> web.StreamResponse:
    return respond(200, await subresources.update_scale(call))


#: (verb, subresource) -> handler; a pair not here is 405 MethodNotAllowed.
ROUTES: dict[tuple[str, str], Handler] = {
    ("get", ""): _get,
    ("get", "status"): _get,
    ("list", ""): _list,
    ("watch", ""): _watch,
    ("create", ""): _create,
    ("update", ""): _update,
    ("update", "status"): _update,
    ("update", "finalize"): _update,
    ("patch", ""): _patch,
    ("patch", "status"): _patch,
    ("delete", ""): _delete,
    ("deletecollection", ""): _delete_collection,
    ("create", "binding"): _bind,
    ("create", "eviction"): _evict,
    ("get", "log"): _pod_log,
    ("get", "scale"): _get_scale,
    ("update", "scale"): _update_scale,
    ("patch", "scale"): _update_scale,
}


def build_app(
    api: ApiServer,
    *,
    authn: Authenticator = ALLOW_ALL,
    authz: Authorizer = ALLOW_ALL,
    subapps: Mapping[str, web.Application] | None = None,
) -> web.Application:
    """The Kubernetes HTTP API over `api` (every path goes through `HttpApi`), and
    `subapps` (prefix -> application: the UI at /ui) beside it, which do their own
    authentication: their prefixes are no Kubernetes API path."""
    app = web.Application(client_max_size=MAX_BODY)
    for prefix, sub in (subapps or {}).items():
        app.add_subapp(prefix, sub)
    app.router.add_route("*", "/{tail:.*}", HttpApi(api, authn, authz).handle)
    return app


class MalformedRequests(logging.Filter):
    """aiohttp logs a request it cannot parse (a bad request line, method or header) at
    ERROR with a traceback, after answering it 400. That is the client's error, not the
    server's: kube-apiserver's HTTP server logs nothing for it. Such records go down to
    DEBUG; everything else aiohttp logs passes untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and (exc.code or 400) < 500:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("malformed request: %s", exc)
            return False
        return True


def _quiet_malformed_requests() -> None:
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequests) for f in server_log.filters):
        server_log.addFilter(MalformedRequests())


async def serve_http(
    api: ApiServer,
    host: str,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    authn: Authenticator = ALLOW_ALL,
    authz: Authorizer = ALLOW_ALL,
    subapps: Mapping[str, web.Application] | None = None,
) -> tuple[web.AppRunner, int]:
    """Serve the HTTP API on host:port (0: any free port); the runner (`cleanup()` stops
    it) and the bound port. A client that leaves cancels its handler (watches end)."""
    _quiet_malformed_requests()
    runner = web.AppRunner(
        build_app(api, authn=authn, authz=authz, subapps=subapps),
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=1.0,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
    bound = server.sockets[0].getsockname()[1] if server is not None else port  # type: ignore[attr-defined]
    return runner, int(bound)
