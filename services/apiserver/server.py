"""The apiserver's gRPC edge: requests in, `ApiServer` calls, and the one place where
errors become gRPC status codes (ApiError subclasses carry theirs; anything else is a
bug or broken infrastructure and crosses as INTERNAL / UNAVAILABLE).

What arrives is checked here before any work (the limits are services/api/machinery/limits.py):
a request that does not decode is answered INVALID_ARGUMENT by the server's
RequestDecodeGuard (services/grpcserver.py) before it reaches a method; an object inside
one (the Any payloads) is decoded in one place, `_unpack`, which names the field that did
not decode (INVALID_ARGUMENT); a batch over MAX_BATCH_ITEMS is RESOURCE_EXHAUSTED naming
the cap and the count; messages over MAX_REQUEST_BYTES are refused by gRPC itself.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from services.api.helpers.fencing import METADATA_KEY, Fencing
from services.api.machinery import codec
from services.api.machinery.errors import (
    REASON_KEY,
    STORAGE_UNAVAILABLE,
    ApiError,
    BadRequestError,
    PermissionDeniedError,
    RequestTooLargeError,
)
from services.api.machinery.kinds import BY_RESOURCE, Kind
from services.api.machinery.limits import MAX_BATCH_ITEMS
from services.api.machinery.listoptions import ListOptions
from services.apiserver import fencing as fencing_mod
from services.apiserver.bindbatch import BindOutcome
from services.apiserver.registry import ApiServer, BatchResult, BindItem
from services.auth import Authenticator
from services.auth.authorizer import KuberaAuthorizer, Lookup
from services.auth.grpcauth import CHAOS_STATUS, DENIED_ITEMS, AuthInterceptor
from services.grpcserver import start_server
from services.storage import StorageRequestTooLargeError, StorageUnavailableError

log = logging.getLogger(__name__)


def _resource(name: str) -> Kind:
    kind = BY_RESOURCE.get(name)
    if kind is None:
        raise BadRequestError(f'the server doesn\'t have a resource type "{name}"')
    return kind


def _unpack(kind: Kind, a: Any, field: str = "object"):
    """The object in a request's Any `field`; INVALID_ARGUMENT naming it when it is of
    another type or its bytes do not decode."""
    if a.type_url != kind.type_url:
        raise BadRequestError(
            f"{field}: object of type {a.type_url or '<none>'} sent to resource {kind.resource}"
        )
    obj = kind.message()
    try:
        obj.ParseFromString(a.value)
    except Exception as e:  # noqa: BLE001 - DecodeError, or anything bad bytes raise
        raise BadRequestError(
            f"{field}: the object does not decode as {obj.DESCRIPTOR.full_name}: {e}"
        ) from None
    return obj


def _unpack_all(kind: Kind, items: Any, verb: str) -> list:
    if len(items) > MAX_BATCH_ITEMS:
        raise RequestTooLargeError(
            f"{verb}: {len(items)} objects sent, at most {MAX_BATCH_ITEMS} per call: send "
            "them in several calls"
        )
    return [_unpack(kind, a, f"objects[{i}]") for i, a in enumerate(items)]


async def _authorized_items(
    objs: list, apply: Callable[[list], Awaitable[list[BatchResult]]]
) -> list[BatchResult]:
    """`apply` to the items the authorizer allowed (services/auth/grpcauth.py,
    DENIED_ITEMS); the denied ones answer PERMISSION_DENIED in their places."""
    denied = DENIED_ITEMS.get() or {}
    if not denied:
        return await apply(objs)
    done = iter(await apply([o for i, o in enumerate(objs) if i not in denied]))
    return [
        BatchResult(None, PermissionDeniedError(denied[i])) if i in denied else next(done)
        for i in range(len(objs))
    ]


def _batch_response(results: list[BatchResult]) -> pb.BatchCreateResponse:
    out = pb.BatchCreateResponse()
    for r in results:
        if r.error is not None:
            out.results.add(code=r.error.code.value[0], message=_clip(r.error.message))
        else:
            out.results.add(code=0, object=codec.pack(r.obj))  # type: ignore[arg-type]
    return out


#: Longest error message sent: a status message travels in gRPC trailers, which a client
#: refuses past 16 KiB (and a message that echoes a 2 MB name is no use to anyone).
MAX_MESSAGE_CHARS = 4096


def _clip(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return f"{message[:MAX_MESSAGE_CHARS]}... ({len(message) - MAX_MESSAGE_CHARS} more characters)"


def _status(e: BaseException) -> tuple[grpc.StatusCode, str, str]:
    """The gRPC code, message and kubera-reason ("" for none) an exception crosses as."""
    if isinstance(e, ApiError):
        return e.code, _clip(e.message), e.reason
    if isinstance(e, StorageUnavailableError):
        return grpc.StatusCode.UNAVAILABLE, _clip(f"{STORAGE_UNAVAILABLE}: {e}"), ""
    if isinstance(e, StorageRequestTooLargeError):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, _clip(str(e)), RequestTooLargeError.reason
    log.error("internal error", exc_info=e)
    return grpc.StatusCode.INTERNAL, _clip(f"internal error: {type(e).__name__}: {e}"), ""


async def _abort(context: grpc.aio.ServicerContext, e: Exception) -> None:
    code, message, reason = _status(e)
    if reason:
        context.set_trailing_metadata(((REASON_KEY, reason),))
    await context.abort(code, message)


def _bind_item(request: pb.BindRequest) -> BindItem:
    fencing = (
        Fencing(request.fencing.key, request.fencing.create_revision)
        if request.HasField("fencing")
        else None
    )
    return BindItem(
        request.namespace,
        request.name,
        request.node_name,
        resource_version=request.resource_version,
        uid=request.uid,
        fencing=fencing,
        check_allocation=request.check_allocation,
    )


def _unary(fn: Callable) -> Callable:
    @functools.wraps(fn)
    async def wrapper(
        self: ApiServerServicer, request: Any, context: grpc.aio.ServicerContext
    ) -> Any:
        try:
            token = next(
                (v for k, v in context.invocation_metadata() or () if k == METADATA_KEY),
                None,
            )
            if token is not None:
                fencing_mod.CURRENT.set(Fencing.parse(str(token)))
            return await fn(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as e:  # noqa: BLE001 - translated at the edge
            await _abort(context, e)

    return wrapper


class ApiServerServicer(pb_grpc.ApiServerServicer):
    def __init__(self, api: ApiServer) -> None:
        self.api = api

    @_unary
    async def Create(self, request: pb.CreateRequest, context: Any) -> pb.ObjectResponse:
        kind = _resource(request.resource)
        obj = await self.api.create(_unpack(kind, request.object), dry_run=request.dry_run)
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def Get(self, request: pb.GetRequest, context: Any) -> pb.ObjectResponse:
        obj = await self.api.get(_resource(request.resource), request.namespace, request.name)
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def List(self, request: pb.ListRequest, context: Any) -> pb.ListResponse:
        listed = await self.api.list_objects(
            _resource(request.resource),
            request.namespace,
            ListOptions(
                label_selector=request.label_selector, field_selector=request.field_selector
            ),
        )
        return pb.ListResponse(
            items=[codec.pack(o) for o in listed.items],
            resource_version=str(listed.revision),
            warnings=listed.warnings,
        )

    @_unary
    async def Update(self, request: pb.UpdateRequest, context: Any) -> pb.ObjectResponse:
        kind = _resource(request.resource)
        obj = await self.api.update(_unpack(kind, request.object))
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def UpdateStatus(self, request: pb.UpdateRequest, context: Any) -> pb.ObjectResponse:
        kind = _resource(request.resource)
        obj = await self.api.update(
            _unpack(kind, request.object), status=True, check_allocation=request.check_allocation
        )
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def Finalize(self, request: pb.UpdateRequest, context: Any) -> pb.ObjectResponse:
        kind = _resource(request.resource)
        obj = await self.api.finalize(_unpack(kind, request.object))
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def Patch(self, request: pb.PatchRequest, context: Any) -> pb.ObjectResponse:
        obj = await self.api.patch(
            _resource(request.resource),
            request.namespace,
            request.name,
            request.merge_patch,
            status=request.status,
        )
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def Delete(self, request: pb.DeleteRequest, context: Any) -> pb.ObjectResponse:
        obj = await self.api.delete(
            _resource(request.resource),
            request.namespace,
            request.name,
            grace_period_seconds=request.grace_period_seconds
            if request.HasField("grace_period_seconds")
            else None,
            uid=request.uid,
            resource_version=request.resource_version,
            ignore_store_read_error=request.ignore_store_read_error_with_cluster_breaking_potential,
            propagation_policy=request.propagation_policy,
        )
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def Evict(self, request: pb.EvictRequest, context: Any) -> pb.ObjectResponse:
        obj = await self.api.evict(request.eviction)
        return pb.ObjectResponse(object=codec.pack(obj))

    @_unary
    async def Bind(self, request: pb.BindRequest, context: Any) -> pb.ObjectResponse:
        # A BindBatch of one: the request read by `_bind_item`, and `bind_batch` binds a
        # lone item with `ApiServer.bind`, the single path; its error is this call's.
        (outcome,) = await self.api.bind_batch([_bind_item(request)])
        if outcome.error is not None:
            raise outcome.error
        return pb.ObjectResponse(object=codec.pack(outcome.pod))  # type: ignore[arg-type]

    @_unary
    async def BindBatch(self, request: pb.BindBatchRequest, context: Any) -> pb.BindBatchResponse:
        if len(request.binds) > MAX_BATCH_ITEMS:
            raise RequestTooLargeError(
                f"BindBatch: {len(request.binds)} binds sent, at most {MAX_BATCH_ITEMS} per "
                "call: send them in several calls"
            )
        denied = DENIED_ITEMS.get() or {}
        allowed = [b for i, b in enumerate(request.binds) if i not in denied]
        done = iter(await self.api.bind_batch([_bind_item(b) for b in allowed]))
        outcomes = [
            BindOutcome(None, PermissionDeniedError(denied[i])) if i in denied else next(done)
            for i in range(len(request.binds))
        ]
        out = pb.BindBatchResponse()
        for o in outcomes:
            if o.error is None:
                out.results.add(code=0, object=codec.pack(o.pod))  # type: ignore[arg-type]
            else:
                code, message, reason = _status(o.error)
                out.results.add(code=code.value[0], message=message, reason=reason)
        return out

    @_unary
    async def BatchCreate(
        self, request: pb.BatchCreateRequest, context: Any
    ) -> pb.BatchCreateResponse:
        kind = _resource(request.resource)
        objs = _unpack_all(kind, request.objects, "BatchCreate")
        return _batch_response(await _authorized_items(objs, self.api.batch_create))

    @_unary
    async def BatchUpdate(
        self, request: pb.BatchUpdateRequest, context: Any
    ) -> pb.BatchCreateResponse:
        kind = _resource(request.resource)
        objs = _unpack_all(kind, request.objects, "BatchUpdate")
        return _batch_response(
            await _authorized_items(
                objs, functools.partial(self.api.batch_update, status=request.status)
            )
        )

    @_unary
    async def Health(self, request: pb.HealthRequest, context: Any) -> pb.HealthResponse:
        rev = await self.api.storage.revision()
        return pb.HealthResponse(
            ok=True, etcd=getattr(self.api.storage, "endpoint", "memory"), revision=rev
        )

    async def Watch(self, request: pb.WatchRequest, context: grpc.aio.ServicerContext):
        try:
            kind = _resource(request.resource)
            async for type_, entry in self.api.watch(
                kind, namespace=request.namespace, options=_watch_options(request)
            ):
                yield pb.WatchEvent(type=type_, object=codec.pack_bytes(kind, entry.data))
        except grpc.aio.AbortError:
            raise
        except Exception as e:  # noqa: BLE001 - translated at the edge
            await _abort(context, e)

    async def WatchBatches(self, request: pb.WatchRequest, context: grpc.aio.ServicerContext):
        """Watch's events, what is ready in one message (one per revision boundary at
        most `WATCH_BATCH_EVENTS` / `WATCH_BATCH_BYTES`): a message costs both sides far
        more than the events in it."""
        try:
            kind = _resource(request.resource)
            async for batch in self.api.watch_batches(
                kind, namespace=request.namespace, options=_watch_options(request)
            ):
                yield pb.WatchEventBatch(
                    events=[
                        pb.WatchEvent(type=t, object=codec.pack_bytes(kind, e.data))
                        for t, e in batch
                    ]
                )
        except grpc.aio.AbortError:
            raise
        except Exception as e:  # noqa: BLE001 - translated at the edge
            await _abort(context, e)


async def serve(
    api: ApiServer,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    also: Callable[[grpc.aio.Server], None] | None = None,
    authn: Authenticator | None = None,
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """Start a grpc.aio server for `api` (with whatever `also` adds to it: the process's
    chaos control); returns it and the bound port. With `authn`, every call is
    authenticated and authorized (services/auth/grpcauth.py, the rules of
    services/auth/authorizer.py reading objects through `registry_lookup`); without,
    every caller may do everything (the in-process servers of tests). `credentials`:
    serve TLS."""
    interceptors = []
    if authn is not None:
        interceptors.append(
            AuthInterceptor(
                authn, KuberaAuthorizer(registry_lookup(api)), public=(HEALTH_METHOD, CHAOS_STATUS)
            )
        )

    def register(s: grpc.aio.Server) -> None:
        pb_grpc.add_ApiServerServicer_to_server(ApiServerServicer(api), s)
        if also is not None:
            also(s)

    return await start_server(
        register,
        "the apiserver",
        host,
        port,
        large_messages=True,
        interceptors=interceptors,
        credentials=credentials,
    )


#: Health answers any caller (a probe before the caller has a token, `kubera components`).
HEALTH_METHOD = "/kubera.v1.ApiServer/Health"


def registry_lookup(api: ApiServer) -> Lookup:
    """The authorizer's object reads: the watch cache first, etcd when the cache has no
    bound pod. A pod's spec.nodeName never changes once set (binding is final), so a
    cached pod bound to a node is bound to it now; one the cache does not have yet, or
    has unbound while the bind is in flight, is read from etcd."""

    async def lookup(resource: str, namespace: str, name: str) -> Any:
        kind = BY_RESOURCE.get(resource)
        if kind is None or not name:
            return None
        cache = api.store.caches.get(resource)
        if cache is not None and cache.started:
            entry = cache.store.get(kind.key(namespace if kind.namespaced else "", name))
            spec = getattr(entry.obj, "spec", None) if entry is not None else None
            if entry is not None and getattr(spec, "node_name", None):
                return entry.obj
        return await api.get_or_none(kind, namespace, name)

    return lookup


def _watch_options(request: pb.WatchRequest) -> ListOptions:
    return ListOptions(
        label_selector=request.label_selector,
        field_selector=request.field_selector,
        resource_version=request.resource_version,
        allow_bookmarks=request.allow_watch_bookmarks,
    )
