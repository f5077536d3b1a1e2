"""Authentication and authorization at a gRPC server's edge, for every call.

One server interceptor (`AuthInterceptor`) in front of every method of a server: the
apiserver's (ApiServer + the chaos control service), and the other servers kubera's
components run (a scheduler's trace API, a node pool's API, a replica's chaos control).

    call ─► token from metadata `authorization: Bearer <token>`
              none / unknown ─► UNAUTHENTICATED
          ─► the call's RequestAttributes (`api_attributes`, one per item of a batch)
              any denied     ─► PERMISSION_DENIED with upstream's 403 message
          ─► the method

The mapping of the apiserver's methods to upstream's verbs is here and only here:

    Create, BatchCreate   create            (per object; a node's Lease or Node is checked
    Get / List            get / list         against the object it sends)
    Watch, WatchBatches   watch
    Update, BatchUpdate   update            (status=true: subresource "status")
    UpdateStatus          update pods/status-style subresource "status"
    Finalize              update namespaces/finalize
    Patch                 patch             (status=true: subresource "status")
    Delete                delete
    Evict                 create pods/eviction
    Bind, BindBatch       create pods/binding (per bind)
    Health                any authenticated caller

A batch (BatchCreate, BatchUpdate, BindBatch) is authorized item by item, as its other
outcomes are: the denied items' indices and messages go to the servicer through
`DENIED_ITEMS` (a context variable of the call), which answers them PERMISSION_DENIED in
their places and applies the rest; a batch with every item denied is refused whole.

Any other service on the server (chaos control, a scheduler's Explain, a pool's SetAlive)
is the admin's only (`ADMIN_ONLY`), except what `public` names (health probes).

A server given no authenticator runs without this interceptor: the in-process servers
tests start keep their ALLOW_ALL default; `kubera up` is the secure one.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import grpc

from services.api.machinery.kinds import BY_RESOURCE, BY_TYPE_URL
from services.api.machinery.limits import MAX_BATCH_ITEMS
from services.auth import (
    ADMIN,
    CURRENT_USER,
    MASTERS,
    Authenticator,
    Authorizer,
    RequestAttributes,
    User,
    maybe_await,
)
from services.auth.authorizer import forbidden_message
from services.grpcserver import Undecodable

#: Read-only methods of the components' own servers, open to any caller (a process's
#: figures; a pool's stats); the rest of those servers is the admin's (`admin_only`).
CHAOS_STATUS = "/kubera.v1.Chaos/Status"
POOL_STATS = "/kubera.v1.NodePool/Stats"

#: The environment variable a client takes its token from when given none (the kubera
#: CLI sets it from the context `kubera up` wrote, as kubectl reads $KUBECONFIG).
TOKEN_ENV = "KUBERA_TOKEN"
#: ... and the CA it trusts when the apiserver serves gRPC over TLS (its host's option).
CA_ENV = "KUBERA_CA_FILE"

#: The metadata key a client sends its token in (gRPC keys are lower-case).
METADATA_KEY = "authorization"
API_SERVICE = "/kubera.v1.ApiServer/"

#: Batch methods, authorized per item (see the module docstring).
BATCH_METHODS = frozenset(f"{API_SERVICE}{m}" for m in ("BatchCreate", "BatchUpdate", "BindBatch"))

#: index -> 403 message of the items of this call's batch the authorizer denied (None:
#: none denied, or no authorization on this server).
DENIED_ITEMS: contextvars.ContextVar[dict[int, str] | None] = contextvars.ContextVar(
    "denied_items", default=None
)


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata carrying `token` (none for "")."""
    return ((METADATA_KEY, f"Bearer {token}"),) if token else ()


def token_of(metadata: Iterable[Any] | None) -> str:
    for key, value in metadata or ():
        if key == METADATA_KEY:
            text = value.decode() if isinstance(value, bytes) else str(value)
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


def _decode(a: Any) -> Any:
    """The object in an Any, or None when it does not decode (the servicer then answers
    INVALID_ARGUMENT; authorization goes by the request's other fields)."""
    kind = BY_TYPE_URL.get(a.type_url)
    if kind is None:
        return None
    obj = kind.message()
    try:
        obj.ParseFromString(a.value)
    except Exception:  # noqa: BLE001 - bad bytes: the servicer names them
        return None
    return obj


def _object_attrs(
    user: User, verb: str, resource: str, obj: Any, subresource: str = ""
) -> RequestAttributes:
    kind = BY_RESOURCE.get(resource)
    meta = getattr(obj, "metadata", None)
    namespace = str(getattr(meta, "namespace", "") or "")
    if kind is not None and kind.namespaced and not namespace:
        namespace = "default"
    return RequestAttributes(
        user,
        verb,
        resource,
        api_group=kind.group if kind is not None else "",
        subresource=subresource,
        namespace=namespace if kind is None or kind.namespaced else "",
        name=str(getattr(meta, "name", "") or ""),
        obj=obj,
    )


def _named(
    user: User, verb: str, resource: str, namespace: str, name: str, subresource: str = ""
) -> RequestAttributes:
    kind = BY_RESOURCE.get(resource)
    return RequestAttributes(
        user,
        verb,
        resource,
        api_group=kind.group if kind is not None else "",
        subresource=subresource,
        namespace=namespace if kind is None or kind.namespaced else "",
        name=name,
    )


def api_attributes(method: str, request: Any, user: User) -> list[RequestAttributes] | None:
    """The RequestAttributes of one ApiServer call (one per item of a batch); None for a
    method any authenticated caller may call (Health). KeyError for an unknown method."""
    name = method.removeprefix(API_SERVICE)
    r = request
    if name == "Health":
        return None
    if name == "Create":
        return [_object_attrs(user, "create", r.resource, _decode(r.object))]
    if name == "BatchCreate":
        return [_object_attrs(user, "create", r.resource, _decode(a)) for a in r.objects]
    if name in ("Update", "UpdateStatus", "Finalize"):
        sub = {"UpdateStatus": "status", "Finalize": "finalize"}.get(name, "")
        return [_object_attrs(user, "update", r.resource, _decode(r.object), sub)]
    if name == "BatchUpdate":
        sub = "status" if r.status else ""
        return [_object_attrs(user, "update", r.resource, _decode(a), sub) for a in r.objects]
    if name == "Get":
        return [_named(user, "get", r.resource, r.namespace, r.name)]
    if name == "List":
        return [_named(user, "list", r.resource, r.namespace, "")]
    if name in ("Watch", "WatchBatches"):
        return [_named(user, "watch", r.resource, r.namespace, "")]
    if name == "Patch":
        sub = "status" if r.status else ""
        return [_named(user, "patch", r.resource, r.namespace, r.name, sub)]
    if name == "Delete":
        return [_named(user, "delete", r.resource, r.namespace, r.name)]
    if name == "Evict":
        m = r.eviction.metadata
        return [_named(user, "create", "pods", m.namespace or "default", m.name, "eviction")]
    if name == "Bind":
        return [_named(user, "create", "pods", r.namespace, r.name, "binding")]
    if name == "BindBatch":
        return [_named(user, "create", "pods", b.namespace, b.name, "binding") for b in r.binds]
    raise KeyError(method)


class Denied(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Authenticates and authorizes every call of a server (see the module docstring).
    `public`: full method names any caller may call without a token (health probes)."""

    def __init__(
        self,
        authn: Authenticator,
        authz: Authorizer | None = None,
        *,
        public: Iterable[str] = (),
    ) -> None:
        self.authn = authn
        self.authz = authz
        self.public = frozenset(public)
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def check(self, method: str, request: Any, metadata: Any) -> User | None:
        """The caller, once allowed; Denied otherwise."""
        if method in self.public:
            return None
        token = token_of(metadata)
        user = self.authn.authenticate(token) if token else None
        if user is None:
            raise Denied(
                grpc.StatusCode.UNAUTHENTICATED,
                "Unauthorized: a bearer token is required"
                if not token
                else "Unauthorized: the bearer token is not valid",
            )
        if MASTERS in user.groups:
            return user
        if request is None and method.startswith(API_SERVICE):
            return user  # undecodable: refused INVALID_ARGUMENT before the method runs
        if not method.startswith(API_SERVICE) or self.authz is None:
            raise Denied(
                grpc.StatusCode.PERMISSION_DENIED,
                f'User "{user.name}" cannot call {method}: only the admin (group {MASTERS}) may',
            )
        try:
            attrs = api_attributes(method, request, user)
        except KeyError:
            raise Denied(
                grpc.StatusCode.PERMISSION_DENIED,
                f'User "{user.name}" cannot call {method}: no rule for this method',
            ) from None
        if method in BATCH_METHODS and len(attrs or ()) > MAX_BATCH_ITEMS:
            # refused before any item is authorized (each may read a pod): the servicer's
            # own limit, answered here first
            raise Denied(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{method.rsplit('/', 1)[-1]}: {len(attrs or ())} items sent, at most "
                f"{MAX_BATCH_ITEMS} per call: send them in several calls",
            )
        denied: dict[int, str] = {}
        for i, a in enumerate(attrs or ()):
            decision = await maybe_await(self.authz.authorize(a))
            if not decision.allowed:
                message = forbidden_message(a, decision.reason)
                if method not in BATCH_METHODS:
                    raise Denied(grpc.StatusCode.PERMISSION_DENIED, message)
                denied[i] = message
        if denied:
            if len(denied) == len(attrs or ()):
                raise Denied(grpc.StatusCode.PERMISSION_DENIED, denied[min(denied)])
            DENIED_ITEMS.set(denied)
        return user

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method  # type: ignore[attr-defined]
        known = self._wrapped.get(method)
        if known is None or known[0] is not handler:
            known = (handler, self._wrap(handler, method))
            self._wrapped[method] = known
        return known[1]

    def _wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        check = self.check

        async def guard(request: Any, context: grpc.aio.ServicerContext) -> None:
            if isinstance(request, Undecodable):
                # the decode guard behind this answers INVALID_ARGUMENT; authenticate first
                request = None
            try:
                user = await check(method, request, context.invocation_metadata())
            except Denied as d:
                await context.abort(d.code, d.message)
            else:
                CURRENT_USER.set(user)

        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await guard(request, context)
                return await unary(request, context)

            return handler._replace(unary_unary=unary_unary)  # type: ignore[attr-defined,no-any-return]
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await guard(request, context)
                async for item in stream(request, context):
                    yield item

            return handler._replace(unary_stream=unary_stream)  # type: ignore[attr-defined,no-any-return]
        return handler  # request-streaming: kubera's protos have none


# -- the other servers: admin only -------------------------------------------------------


def token_hash(token: str) -> str:
    """What a component is given to recognise the admin's token without holding it (so a
    component's config never carries a credential it could act as admin with)."""
    return hashlib.sha256(token.encode()).hexdigest()


class AdminTokenAuthenticator:
    """The admin, recognised by its token's sha256 (`token_hash`); nobody else."""

    def __init__(self, admin_sha256: str) -> None:
        self._sha = admin_sha256

    def authenticate(self, token: str) -> User | None:
        if token and hmac.compare_digest(token_hash(token), self._sha):
            return ADMIN
        return None


def admin_only(
    admin_sha256: str, *, public: Iterable[str] = ()
) -> list[grpc.aio.ServerInterceptor]:
    """The interceptors of a component's own server (chaos control, a scheduler's trace
    API, a node pool's API): every method but `public` the admin's only. [] when
    `admin_sha256` is "" (no authentication: tests, a cluster started without it)."""
    if not admin_sha256:
        return []
    return [AuthInterceptor(AdminTokenAuthenticator(admin_sha256), public=public)]


# -- the client side ---------------------------------------------------------------------


class _BearerUnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, token: str) -> None:
        self._md = bearer(token)

    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(_with_token(client_call_details, self._md), request)


class _BearerUnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, token: str) -> None:
        self._md = bearer(token)

    async def intercept_unary_stream(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(_with_token(client_call_details, self._md), request)


def _with_token(details: Any, md: tuple[tuple[str, str], ...]) -> Any:
    metadata = [*(details.metadata or ()), *md]
    return details._replace(metadata=metadata)


def env_ca() -> bytes:
    """The CA of $KUBERA_CA_FILE (PEM; b"" when unset): what a client of a cluster whose
    components serve TLS trusts (the CLI sets it from the context `kubera up` wrote)."""
    path = os.environ.get(CA_ENV, "")
    return Path(path).read_bytes() if path else b""


def token_channel(address: str, token: str, *, ca: bytes = b"", **kwargs: Any) -> grpc.aio.Channel:
    """A channel whose every call carries `token` (none for ""): TLS trusting `ca` when
    given, else plaintext."""
    interceptors = [_BearerUnaryUnary(token), _BearerUnaryStream(token)] if token else None
    if ca:
        creds = grpc.ssl_channel_credentials(root_certificates=ca)
        return grpc.aio.secure_channel(address, creds, interceptors=interceptors, **kwargs)
    return grpc.aio.insecure_channel(address, interceptors=interceptors, **kwargs)
