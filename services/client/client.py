"""An asyncio client for the kubera apiserver, with typed errors.

gRPC status codes become the ApiError subclasses of services/api/machinery/errors.py in one place
(`_call`), so callers catch `NotFoundError`, `ConflictError`, `GoneError`, ... and never
look at grpc. Objects are the kubera.v1 protobuf messages; one that arrives and does not
decode raises CorruptObjectError (`_decode`), never a protobuf exception, so a caller's
loop (an informer's) can handle it like any other ApiError.

Batches are sent in calls of at most MAX_BATCH_ITEMS objects and MAX_REQUEST_BYTES (the
apiserver's caps, services/api/machinery/limits.py), so a caller may pass any number. Warnings the
apiserver sends (a list that left out a corrupt object) go to `warning_handler`, by
default the log (client-go's WarningHandler; the CLI prints them as kubectl does).
"""

from __future__ import annotations

import builtins
import copy
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from protos.kubera.v1 import policy_pb2
from services.api.helpers.fencing import METADATA_KEY as FENCING_METADATA
from services.api.helpers.fencing import Fencing
from services.api.machinery import codec
from services.api.machinery.errors import (
    ERRORS_BY_CODE,
    ERRORS_BY_REASON,
    REASON_KEY,
    STORAGE_UNAVAILABLE,
    ApiError,
    CorruptObjectError,
    PreconditionError,
    UnavailableError,
)
from services.api.machinery.kinds import Kind, kind_of
from services.api.machinery.kubeobject import narrow
from services.api.machinery.limits import MAX_BATCH_ITEMS, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from services.api.machinery.listoptions import LIST_ALL, ListOptions
from services.auth.grpcauth import CA_ENV, TOKEN_ENV, bearer
from services.client.binds import BindCoalescer, outcome
from services.client.endpoints import Endpoints, join_addresses
from services.grpcserver import RECONNECT_OPTIONS

log = logging.getLogger("services.client")

#: Room left in a batch message for everything but the objects (resource, tags, lengths).
_BATCH_OVERHEAD = 64 * 1024

M = TypeVar("M", bound=Message)

#: fencing() -> the leader's token (election key, create_revision) while leading, else None.
FencingSource = Callable[[], Fencing | None]


class UnimplementedError(ApiError):
    """The apiserver does not have this RPC (an older one: WatchBatches); the caller
    falls back to the one it has (Watch)."""

    code = grpc.StatusCode.UNIMPLEMENTED
    reason = "MethodNotImplemented"


def error_from_rpc(e: grpc.aio.AioRpcError) -> ApiError:
    reason = next((v for k, v in (e.trailing_metadata() or ()) if k == REASON_KEY), "")
    return error_from_status(e.code(), e.details() or "", str(reason))


def error_from_status(code: grpc.StatusCode, details: str, reason: str) -> ApiError:
    """The ApiError of a call that ended with `code`, `details` and kubera-reason `reason`
    ("" for none): a whole call's status, or one bind's in a BindBatch."""
    cls = ERRORS_BY_REASON.get(reason) or ERRORS_BY_CODE.get(code)
    by_code = ERRORS_BY_CODE.get(code)
    if cls is not None and by_code is not None and issubclass(by_code, cls):
        cls = by_code  # one reason, two codes (Forbidden: admission's, the authorizer's)
    if cls is None:
        return ApiError(f"{code.name}: {details}")
    if cls is UnavailableError and not reason:
        return UnavailableError(f"apiserver unavailable: {details}")
    return cls.from_message(details or code.name)


def _decode(a: Any, what: str) -> Message:
    """The object in an Any from the apiserver; CorruptObjectError when it does not decode."""
    try:
        return codec.unpack(a)
    except Exception as e:  # noqa: BLE001 - codec.DecodeError, protobuf's DecodeError, ...
        raise CorruptObjectError(
            f"{what}: the apiserver sent an object that does not decode "
            f"({a.type_url or 'no type'}): {e}"
        ) from None


def _dial(
    address: str, *, ca: bytes | None = None
) -> tuple[grpc.aio.Channel, pb_grpc.ApiServerStub]:
    """A channel to one apiserver (redialling by itself after a drop) and its stub; TLS
    trusting `ca` (PEM) when given."""
    options = [
        ("grpc.max_receive_message_length", MAX_RESPONSE_BYTES),
        ("grpc.max_send_message_length", MAX_REQUEST_BYTES),
        *RECONNECT_OPTIONS,
    ]
    if ca is not None:
        creds = grpc.ssl_channel_credentials(root_certificates=ca)
        channel = grpc.aio.secure_channel(address, creds, options=options)
    else:
        channel = grpc.aio.insecure_channel(address, options=options)
    return channel, pb_grpc.ApiServerStub(channel)


def never_sent(e: grpc.aio.AioRpcError) -> bool:
    """Whether a call failed before its request left: its channel could not connect (the
    apiserver is down, or refused the connection). Such a call is safe to send again to
    another replica, a write too; one that broke in flight may have been applied."""
    return (
        e.code() == grpc.StatusCode.UNAVAILABLE
        and "failed to connect to all addresses" in (e.details() or "").lower()
    )


def transport_failure(e: grpc.aio.AioRpcError) -> bool:
    """Whether a call failed UNAVAILABLE for want of its apiserver (a refused connection,
    a dropped stream), not because the apiserver answered so. The apiserver's own errors
    carry a kubera-reason, or, for its storage (etcd unreachable), none but a message that
    starts with STORAGE_UNAVAILABLE. Only a transport failure says the replica is
    unreachable: every replica is on the same etcd, so moving on for an etcd hiccup would
    rotate every client at once and help none."""
    if e.code() != grpc.StatusCode.UNAVAILABLE:
        return False
    if any(k == REASON_KEY for k, _ in (e.trailing_metadata() or ())):
        return False
    return not (e.details() or "").startswith(STORAGE_UNAVAILABLE)


def _log_warning(message: str) -> None:
    log.warning("apiserver: %s", message)


def batches(packed: Sequence[Any]) -> Iterator[tuple[int, int]]:
    """[start, end) ranges of `packed` Any objects, each within the apiserver's caps."""
    budget = MAX_REQUEST_BYTES - _BATCH_OVERHEAD
    start, size = 0, 0
    for i, a in enumerate(packed):
        n = a.ByteSize() + 8  # the field's tag and length
        if i > start and (i - start >= MAX_BATCH_ITEMS or size + n > budget):
            yield start, i
            start, size = i, 0
        size += n
    if start < len(packed):
        yield start, len(packed)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: Message


@dataclass(frozen=True)
class BatchResult:
    object: Message | None
    error: ApiError | None


class Client:
    """One gRPC channel to the apiserver. Use as `async with Client(address) as c:`.

    `address` may name several apiserver replicas (`host:port,host:port`, or a list): calls
    go to one of them and move to the next when it is unreachable (services/client/
    endpoints.py)."""

    def __init__(
        self,
        address: str | Sequence[str],
        *,
        timeout: float | None = 30.0,
        fencing: FencingSource | None = None,
        warning_handler: Callable[[str], None] | None = None,
        spread_key: str = "",
        token: str | None = None,
        ca_file: str = "",
        ca: bytes = b"",
    ) -> None:
        """`fencing`: where a leader's writes get their token. With it, every write carries
        the token and is refused by the apiserver once the term is over; while the source
        answers None (not leading) writes fail here without being sent.
        `warning_handler`: called with each warning the apiserver sends (default: log).
        `spread_key`: with several addresses, which one to start at (a stable hash of it;
        "": the first).
        `token`: the bearer token every call carries (services/auth/grpcauth.py; "": none,
        for an apiserver without authentication; None: $KUBERA_TOKEN, else none).
        `ca` / `ca_file`: dial TLS, trusting this CA (PEM contents / path; neither: the
        file $KUBERA_CA_FILE names, else plaintext, the loopback default)."""
        ca_file = ca_file or ("" if ca else os.environ.get(CA_ENV, ""))
        pem = ca or (Path(ca_file).read_bytes() if ca_file else b"")
        self.endpoints: Endpoints[tuple[grpc.aio.Channel, pb_grpc.ApiServerStub]] = Endpoints(
            address, functools.partial(_dial, ca=pem or None), spread_key=spread_key
        )
        if token is None:
            token = os.environ.get(TOKEN_ENV, "")
        self.token = token
        self._auth: tuple[tuple[str, str], ...] = bearer(token)
        self.address = join_addresses(self.endpoints.addresses)
        self.timeout = timeout
        self.fencing = fencing
        self.warning_handler = warning_handler or _log_warning
        #: Concurrent binds go out together as BindBatch calls (services/client/binds.py).
        self.binds = BindCoalescer(
            lambda req: self._call(self._stub.BindBatch, req), error_from_status, _decode
        )

    @property
    def _channel(self) -> grpc.aio.Channel:
        """The channel to the apiserver calls go to now."""
        return self.endpoints.connection()[0]

    @property
    def _stub(self) -> pb_grpc.ApiServerStub:
        """The stub on that channel; a call made through it reports an unreachable
        apiserver with `_unreachable` (both happen before the call's first await)."""
        return self.endpoints.connection()[1]

    def _unreachable(self, address: str, e: grpc.aio.AioRpcError) -> bool:
        """A call to `address` failed: the next call goes to the next replica when this
        one is unreachable (a refused connection, a broken stream: `transport_failure`;
        not an error the apiserver sent, its etcd's included). Returns whether this client
        moved on because of it."""
        if not transport_failure(e) or not self.endpoints.failed(address):
            return False
        log.warning(
            "apiserver %s unreachable (%s); using %s",
            address,
            e.details(),
            self.endpoints.current,
        )
        return True

    def _on_current(self, method: Any, address: str) -> Any:
        """The multicallable of the current replica's stub that `method` is on `address`'s
        (a stub's methods are its instance attributes, one per RPC)."""
        old = vars(self.endpoints.connection(address)[1])
        name = next(k for k, v in old.items() if v is method)
        return getattr(self._stub, name)

    def fenced(self, fencing: FencingSource | None) -> Client:
        """This client's channel with another fencing source (None: unfenced); closing
        either closes the shared channel."""
        other = copy.copy(self)
        other.fencing = fencing
        return other

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        for channel, _ in self.endpoints.connections():
            await channel.close()

    def _write_metadata(self) -> tuple[tuple[str, str], ...]:
        if self.fencing is None:
            return self._auth
        token = self.fencing()
        if token is None:
            raise PreconditionError(
                "not the leader: this client writes only under a current fencing token"
            )
        return (*self._auth, (FENCING_METADATA, f"{token[0]}@{token[1]}"))

    async def _call(
        self, method: Any, request: Any, timeout: float | None = None, *, write: bool = False
    ) -> Any:
        metadata = self._write_metadata() if write else self._auth
        address = self.endpoints.current  # the one `method`'s stub was taken from
        attempts = len(self.endpoints.addresses)
        for attempt in range(attempts):
            try:
                return await method(request, timeout=timeout or self.timeout, metadata=metadata)
            except grpc.aio.AioRpcError as e:
                self._unreachable(address, e)
                # moved on (by this failure or a concurrent one) and nothing was sent
                if self.endpoints.current == address or not never_sent(e):
                    raise error_from_rpc(e) from None
                if attempt == attempts - 1:
                    raise error_from_rpc(e) from None
                # not sent anywhere: the same call on the next replica
                method = self._on_current(method, address)
                address = self.endpoints.current
        raise AssertionError("not reached: the last attempt returns or raises")

    async def health(self, timeout: float | None = None) -> pb.HealthResponse:
        return await self._call(self._stub.Health, pb.HealthRequest(), timeout)

    async def create(self, obj: M, *, dry_run: bool = False) -> M:
        kind = kind_of(obj)
        resp = await self._call(
            self._stub.Create,
            pb.CreateRequest(resource=kind.resource, object=codec.pack(obj), dry_run=dry_run),
            write=not dry_run,
        )
        return narrow(_decode(resp.object, f"create {kind.resource}"), type(obj))

    async def get(self, kind: Kind, name: str, namespace: str = "") -> Message:
        resp = await self._call(
            self._stub.Get, pb.GetRequest(resource=kind.resource, namespace=namespace, name=name)
        )
        return _decode(resp.object, f"get {kind.resource} {name}")

    async def list(
        self, kind: Kind, *, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> tuple[list[Message], str]:
        """The objects `options`' selectors match and the resourceVersion to watch from."""
        resp = await self._call(
            self._stub.List,
            pb.ListRequest(
                resource=kind.resource,
                namespace=namespace,
                label_selector=options.label_selector,
                field_selector=options.field_selector,
            ),
        )
        for w in resp.warnings:
            self.warning_handler(w)
        return [_decode(a, f"list {kind.resource}") for a in resp.items], resp.resource_version

    async def update(self, obj: M) -> M:
        return await self._update(self._stub.Update, obj, "update")

    async def update_status(self, obj: M, *, check_allocation: bool = False) -> M:
        """`check_allocation`: a shared-state scheduler's ResourceClaim status, whose newly
        allocated devices the apiserver records and refuses when another claim holds one
        (AllocationConflictError; services/apiserver/allocation.py)."""
        return await self._update(
            self._stub.UpdateStatus, obj, "update", check_allocation=check_allocation
        )

    async def finalize(self, obj: M) -> M:
        """A namespace's spec.finalizers as `obj` has them (namespaces/finalize)."""
        return await self._update(self._stub.Finalize, obj, "finalize")

    async def _update(self, method: Any, obj: M, verb: str, *, check_allocation: bool = False) -> M:
        kind = kind_of(obj)
        req = pb.UpdateRequest(
            resource=kind.resource, object=codec.pack(obj), check_allocation=check_allocation
        )
        resp = await self._call(method, req, write=True)
        return narrow(_decode(resp.object, f"{verb} {kind.resource}"), type(obj))

    async def patch(
        self, kind: Kind, name: str, merge_patch: str, *, namespace: str = "", status: bool = False
    ) -> Message:
        resp = await self._call(
            self._stub.Patch,
            pb.PatchRequest(
                resource=kind.resource,
                namespace=namespace,
                name=name,
                merge_patch=merge_patch,
                status=status,
            ),
            write=True,
        )
        return _decode(resp.object, f"patch {kind.resource} {name}")

    async def delete(
        self,
        kind: Kind,
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str = "",
        resource_version: str = "",
        ignore_store_read_error: bool = False,
        propagation_policy: str = "",
    ) -> Message:
        """`propagation_policy`: Orphan, Background or Foreground (DeleteOptions').
        `ignore_store_read_error`: upstream's
        ignoreStoreReadErrorWithClusterBreakingPotential: a key whose value does not decode
        is removed as it is (no grace period, finalizers or preconditions)."""
        req = pb.DeleteRequest(
            resource=kind.resource,
            namespace=namespace,
            name=name,
            uid=uid,
            resource_version=resource_version,
            ignore_store_read_error_with_cluster_breaking_potential=ignore_store_read_error,
            propagation_policy=propagation_policy,
        )
        if grace_period_seconds is not None:
            req.grace_period_seconds = grace_period_seconds
        resp = await self._call(self._stub.Delete, req, write=True)
        return _decode(resp.object, f"delete {kind.resource} {name}")

    async def evict(
        self,
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str = "",
        resource_version: str = "",
        dry_run: bool = False,
    ) -> Message:
        """The pods/eviction subresource (policy/v1 Eviction): the pod as the delete left
        it. A budget that allows no disruption now raises TooManyRequestsError (retry
        later, as kubectl drain does every 5 s); a pod under several budgets
        InternalError."""
        ev = policy_pb2.Eviction(api_version="policy/v1", kind="Eviction")
        ev.metadata.name, ev.metadata.namespace = name, namespace
        opts = ev.delete_options
        if grace_period_seconds is not None:
            opts.grace_period_seconds = grace_period_seconds
        if uid:
            opts.preconditions.uid = uid
        if resource_version:
            opts.preconditions.resource_version = resource_version
        if dry_run:
            opts.dry_run.append("All")
        resp = await self._call(self._stub.Evict, pb.EvictRequest(eviction=ev), write=True)
        return _decode(resp.object, f"evict pods {name}")

    async def bind(
        self,
        name: str,
        node_name: str,
        namespace: str = "default",
        *,
        resource_version: str = "",
        uid: str = "",
        fencing: Fencing | None = None,
        check_allocation: bool = False,
    ) -> Message:
        """Bind a pod to a node; `fencing` = (election key, its create_revision).
        Concurrent calls travel together in BindBatch calls; each gets its own pod or its
        own error, exactly as from a single Bind.

        `check_allocation` (shared-state scheduling): the apiserver also checks the pod
        against the node's allocation record and raises AllocationConflictError when it no
        longer fits. Such a bind is guarded by the record, not by a leader's term, so it
        carries a fencing token only when one is passed here explicitly."""
        req = pb.BindRequest(
            namespace=namespace,
            name=name,
            node_name=node_name,
            resource_version=resource_version,
            uid=uid,
            check_allocation=check_allocation,
        )
        if fencing is None and self.fencing is not None and not check_allocation:
            fencing = self.fencing()
            if fencing is None:
                raise PreconditionError(
                    f"not the leader: binding of pod {namespace}/{name} refused without a "
                    "current fencing token"
                )
        if fencing is not None:
            req.fencing.key, req.fencing.create_revision = fencing
        return await self.binds.bind(req)

    async def bind_single(self, req: pb.BindRequest) -> Message:
        """One Bind call, not coalesced (the reference path of the batched one)."""
        resp = await self._call(self._stub.Bind, req)
        return _decode(resp.object, f"bind pod {req.name}")

    async def bind_batch(
        self, requests: Sequence[pb.BindRequest]
    ) -> builtins.list[Message | ApiError]:
        """Send these binds as BindBatch calls (at most MAX_BATCH_ITEMS each), not
        coalesced with others: for each, in order, the bound pod or the ApiError its
        single Bind would have raised (returned, not raised). Fencing as in the requests."""
        out: builtins.list[Message | ApiError] = []
        for start in range(0, len(requests), MAX_BATCH_ITEMS):
            chunk = requests[start : start + MAX_BATCH_ITEMS]
            resp = await self._call(self._stub.BindBatch, pb.BindBatchRequest(binds=chunk))
            out.extend(
                outcome(r, req.name, error_from_status, _decode)
                for req, r in zip(chunk, resp.results, strict=True)
            )
        return out

    async def batch_create(self, objs: Sequence[Message]) -> builtins.list[BatchResult]:
        """Create many objects of one kind, in as many calls as the caps need; results
        in order."""
        if not objs:
            return []
        kind = kind_of(objs[0])
        packed = [codec.pack(o) for o in objs]
        out: builtins.list[BatchResult] = []
        for start, end in batches(packed):
            resp = await self._call(
                self._stub.BatchCreate,
                pb.BatchCreateRequest(resource=kind.resource, objects=packed[start:end]),
                write=True,
            )
            out.extend(self._batch_results(resp))
        return out

    async def batch_update(
        self, objs: Sequence[Message], *, status: bool = False
    ) -> builtins.list[BatchResult]:
        """Update many objects of one kind (their statuses when `status`); an object with
        a resourceVersion is updated only at that version. Results in order."""
        if not objs:
            return []
        kind = kind_of(objs[0])
        packed = [codec.pack(o) for o in objs]
        out: builtins.list[BatchResult] = []
        for start, end in batches(packed):
            resp = await self._call(
                self._stub.BatchUpdate,
                pb.BatchUpdateRequest(
                    resource=kind.resource, objects=packed[start:end], status=status
                ),
                write=True,
            )
            out.extend(self._batch_results(resp))
        return out

    @staticmethod
    def _batch_results(resp: pb.BatchCreateResponse) -> builtins.list[BatchResult]:
        out = []
        for r in resp.results:
            if r.code == 0:
                out.append(BatchResult(_decode(r.object, "batch result"), None))
            else:
                code = next(
                    (c for c in grpc.StatusCode if c.value[0] == r.code), grpc.StatusCode.UNKNOWN
                )
                cls = ERRORS_BY_CODE.get(code, ApiError)
                out.append(BatchResult(None, cls.from_message(r.message)))
        return out

    async def watch(
        self, kind: Kind, *, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> AsyncIterator[WatchEvent]:
        """Events from `options.resource_version` on (empty: current state as ADDED first).
        Raises GoneError when that version is too old: list again and watch from the list."""
        request = _watch_request(kind, namespace, options)
        what = f"watch {kind.resource}"
        # Each event's object is decoded once here; an informer hands that one object to
        # every handler (services/client/informer.py).
        async for ev in self._stream("Watch", request, what):
            yield WatchEvent(ev.type, _decode(ev.object, what))

    async def watch_batches(
        self, kind: Kind, *, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> AsyncIterator[builtins.list[WatchEvent]]:
        """`watch`'s events, the same ones in the same order with the same errors, in
        lists as the server sent them (the WatchBatches RPC): each list ends at a revision
        boundary (after the initial state of a watch from ""), so once a list is handled
        its last event's resourceVersion is complete. One message per list instead of per
        event is most of what a busy watch costs either side."""
        request = _watch_request(kind, namespace, options)
        what = f"watch {kind.resource}"
        async for msg in self._stream("WatchBatches", request, what):
            yield [WatchEvent(ev.type, _decode(ev.object, what)) for ev in msg.events]

    async def _stream(self, method: str, request: pb.WatchRequest, what: str) -> AsyncIterator:
        """The messages of the server-streaming `method` (on the current replica's stub);
        a call refused before it was sent anywhere is tried on the next replica, any other
        error is raised typed."""
        for attempt in range(len(self.endpoints.addresses), 0, -1):
            address = self.endpoints.current
            call = getattr(self._stub, method)(request, metadata=self._auth)
            started = False
            try:
                async for msg in call:
                    started = True
                    yield msg
                return
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                    raise UnimplementedError(f"{what}: {method}: {e.details()}") from None
                self._unreachable(address, e)
                moved = self.endpoints.current != address
                if started or attempt == 1 or not moved or not never_sent(e):
                    raise error_from_rpc(e) from None
                # not sent anywhere: the same watch on the next replica
            finally:
                call.cancel()


def _watch_request(kind: Kind, namespace: str, options: ListOptions) -> pb.WatchRequest:
    return pb.WatchRequest(
        resource=kind.resource,
        namespace=namespace,
        label_selector=options.label_selector,
        field_selector=options.field_selector,
        resource_version=options.resource_version,
        allow_watch_bookmarks=options.allow_bookmarks,
    )
