"""API errors as values, worded the way the Kubernetes apiserver words them.

Validation produces `FieldError`s (a field path, a type and a detail); the apiserver
wraps a list of them in `InvalidError`, and every other refusal in an `ApiError` subclass
that maps to exactly one gRPC status code at the edge (services/apiserver/server.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import grpc

# The field.ErrorType strings of apimachinery's validation package.
REQUIRED = "Required value"
INVALID = "Invalid value"
UNSUPPORTED = "Unsupported value"
FORBIDDEN = "Forbidden"
DUPLICATE = "Duplicate value"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
NOT_FOUND = "Not found"

_NO_VALUE = object()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class FieldError:
    """One problem at one field path, e.g. ``spec.containers[0].name: Required value``."""

    path: str
    type: str
    detail: str = ""
    value: Any = field(default=_NO_VALUE, compare=False)

    def __str__(self) -> str:
        text = f"{self.path}: {self.type}"
        if self.value is not _NO_VALUE and self.type in (
            INVALID,
            UNSUPPORTED,
            DUPLICATE,
            NOT_FOUND,
        ):
            text += f": {_show(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, REQUIRED, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, INVALID, detail, value)


def unsupported(path: str, value: Any, supported: list[str] | tuple[str, ...]) -> FieldError:
    quoted = ", ".join(json.dumps(s) for s in supported)
    return FieldError(path, UNSUPPORTED, f"supported values: {quoted}", value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, FORBIDDEN, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, DUPLICATE, "", value)


def too_long(path: str, max_len: int) -> FieldError:
    return FieldError(path, TOO_LONG, f"may not be more than {max_len} bytes")


class ApiError(Exception):
    """A refusal the client can act on; `code` is the gRPC status it crosses the wire as."""

    code: ClassVar[grpc.StatusCode] = grpc.StatusCode.UNKNOWN
    reason: ClassVar[str] = "Unknown"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @classmethod
    def from_message(cls, message: str) -> ApiError:
        """Rebuild an error received over the wire (only its message crosses)."""
        err = cls.__new__(cls)
        ApiError.__init__(err, message)
        return err


class NotFoundError(ApiError):
    code = grpc.StatusCode.NOT_FOUND
    reason = "NotFound"


class AlreadyExistsError(ApiError):
    code = grpc.StatusCode.ALREADY_EXISTS
    reason = "AlreadyExists"


class ConflictError(ApiError):
    code = grpc.StatusCode.ABORTED
    reason = "Conflict"


class AllocationConflictError(ConflictError):
    """A bind checked against the node's allocation record (shared-state scheduling) does
    not fit: another scheduler took the room first. The pod is requeued, not failed."""

    reason = "AllocationConflict"


class BadRequestError(ApiError):
    code = grpc.StatusCode.INVALID_ARGUMENT
    reason = "BadRequest"


class InvalidError(BadRequestError):
    """An object failed validation; the message lists every field error."""

    reason = "Invalid"

    def __init__(self, kind: str, name: str, errors: list[FieldError]) -> None:
        self.kind = kind
        self.name = name
        self.errors = list(errors)
        shown = (
            str(self.errors[0])
            if len(self.errors) == 1
            else "[" + ", ".join(map(str, self.errors)) + "]"
        )
        super().__init__(f'{kind} "{name}" is invalid: {shown}')


class ForbiddenError(ApiError):
    """Refused by admission (for instance: the namespace does not exist)."""

    code = grpc.StatusCode.FAILED_PRECONDITION
    reason = "Forbidden"


class PermissionDeniedError(ForbiddenError):
    """Refused by the authorizer (services/auth): HTTP 403, gRPC PERMISSION_DENIED; the
    message names who and what (services/auth/authorizer.py, `forbidden_message`)."""

    code = grpc.StatusCode.PERMISSION_DENIED


class UnauthorizedError(ApiError):
    """No bearer token, or one nobody issued: HTTP 401, gRPC UNAUTHENTICATED."""

    code = grpc.StatusCode.UNAUTHENTICATED
    reason = "Unauthorized"


class PreconditionError(ApiError):
    """A precondition no longer holds: a stale leader's bind, a pod already bound."""

    code = grpc.StatusCode.FAILED_PRECONDITION
    reason = "PreconditionFailed"


class GoneError(ApiError):
    """The requested resourceVersion is older than what is kept: list again, then watch."""

    code = grpc.StatusCode.OUT_OF_RANGE
    reason = "Expired"


class UnavailableError(ApiError):
    code = grpc.StatusCode.UNAVAILABLE
    reason = "ServiceUnavailable"


class ResourceVersionTooLargeError(ApiError):
    """A watch, list or get asked for a resourceVersion the store has not reached, even
    after a short wait: upstream's storage.NewTooLargeResourceVersionError, a
    NewTimeoutError (504, reason Timeout, message "Timeout: Too large resource version: X,
    current: Y", retryAfterSeconds 1) with the cause ResourceVersionTooLarge. client-go's
    reflector relists on it; so do informers. DEADLINE_EXCEEDED mirrors upstream's 504:
    the server timed out waiting for it. Build it with `at`."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED
    reason = "ResourceVersionTooLarge"
    #: upstream's resourceVersionTooHighRetrySeconds (cacher/watch_cache.go)
    retry_after_seconds: ClassVar[int] = 1

    @classmethod
    def at(cls, want: int, current: int) -> ResourceVersionTooLargeError:
        """The error for `want` when the store is at `current`, worded as upstream's."""
        return cls(f"Timeout: Too large resource version: {want}, current: {current}")


class CorruptObjectError(ApiError):
    """A stored value that does not decode (upstream storage.NewCorruptObjError, reason
    StorageReadError): the message names the key. DATA_LOSS, not INTERNAL: the server is
    fine, one stored object is not, and retrying will not help; the way out is deleting
    the key (DeleteRequest.ignore_store_read_error_with_cluster_breaking_potential).
    Clients raise it too for an object in a response they cannot decode."""

    code = grpc.StatusCode.DATA_LOSS
    reason = "StorageReadError"


class RequestTooLargeError(ApiError):
    """A request over one of the apiserver's caps (items per batch; upstream 413
    RequestEntityTooLarge). RESOURCE_EXHAUSTED, the code gRPC itself answers for a
    message over the size cap."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason = "RequestEntityTooLarge"


class TooManyRequestsError(ApiError):
    """Upstream's 429 TooManyRequests: try again later. The eviction subresource answers it
    when the pod's PodDisruptionBudget allows no disruption now (or its status is not yet
    current); kubectl drain retries it every 5 s. RESOURCE_EXHAUSTED, told apart from
    RequestTooLargeError by its reason. The message ends with the causes (upstream's
    StatusCause DisruptionBudget), which name the budget."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason = "TooManyRequests"


class InternalError(ApiError):
    """Upstream's 500 (StatusReasonInternalError) for a refusal the server words itself,
    e.g. a pod covered by more than one PodDisruptionBudget asked to be evicted."""

    code = grpc.StatusCode.INTERNAL
    reason = "InternalError"


#: The gRPC trailing-metadata key carrying `reason`, so a client can tell apart errors
#: that share a status code (Invalid vs BadRequest, Forbidden vs PreconditionFailed).
REASON_KEY = "kubera-reason"

#: How the message of an UNAVAILABLE the apiserver sends for its storage (etcd
#: unreachable) begins. It carries no reason (callers see an UnavailableError, as for an
#: unreachable apiserver), so a client tells it apart from a transport failure by this
#: prefix: the apiserver answered, so moving to another replica (on the same etcd) helps
#: nothing (services/client/client.py, `transport_failure`).
STORAGE_UNAVAILABLE = "storage unavailable"

ERRORS_BY_REASON: dict[str, type[ApiError]] = {
    cls.reason: cls
    for cls in (
        NotFoundError,
        AlreadyExistsError,
        ConflictError,
        AllocationConflictError,
        BadRequestError,
        InvalidError,
        ForbiddenError,
        UnauthorizedError,
        PreconditionError,
        GoneError,
        UnavailableError,
        ResourceVersionTooLargeError,
        CorruptObjectError,
        RequestTooLargeError,
        TooManyRequestsError,
        InternalError,
    )
}

ERRORS_BY_CODE: dict[grpc.StatusCode, type[ApiError]] = {
    cls.code: cls
    for cls in (
        NotFoundError,
        AlreadyExistsError,
        ConflictError,
        BadRequestError,
        PreconditionError,
        GoneError,
        UnavailableError,
        CorruptObjectError,
        RequestTooLargeError,
        PermissionDeniedError,
        UnauthorizedError,
    )
}


def quote(value: object) -> str:
    """A value quoted for an error message: strings as Go's %q prints them, others repr."""
    return json.dumps(value) if isinstance(value, str) else repr(value)
