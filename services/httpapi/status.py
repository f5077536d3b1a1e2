"""Refusals as Kubernetes `Status` objects, with the HTTP code kube-apiserver answers.

Why this module exists: the registry raises `ApiError`s that carry a reason and a gRPC
code (services/api/machinery/errors.py); HTTP clients (client-go's `errors.IsNotFound`, the Python
client's `ApiException.status`) read the HTTP code and `reason` of a meta/v1 Status
instead. This is the one place the two vocabularies meet for HTTP, as server.py is for
gRPC. Differences from upstream: kubera's PreconditionFailed (a pod already bound, a
stale leader's bind) is upstream's 409 Conflict, so it is answered as one.
"""

from __future__ import annotations

from typing import Any

from services.api.machinery.errors import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_FOUND,
    REQUIRED,
    TOO_LONG,
    TOO_MANY,
    UNSUPPORTED,
    ApiError,
    FieldError,
    InvalidError,
    ResourceVersionTooLargeError,
)

#: reason -> (HTTP code, the reason the Status carries).
HTTP_CODES: dict[str, tuple[int, str]] = {
    "BadRequest": (400, "BadRequest"),
    "Invalid": (422, "Invalid"),
    "Unauthorized": (401, "Unauthorized"),
    "Forbidden": (403, "Forbidden"),
    "NotFound": (404, "NotFound"),
    "MethodNotAllowed": (405, "MethodNotAllowed"),
    "NotAcceptable": (406, "NotAcceptable"),
    "AlreadyExists": (409, "AlreadyExists"),
    "Conflict": (409, "Conflict"),
    "AllocationConflict": (409, "Conflict"),
    "PreconditionFailed": (409, "Conflict"),
    "Expired": (410, "Expired"),
    "Gone": (410, "Gone"),
    "RequestEntityTooLarge": (413, "RequestEntityTooLarge"),
    "UnsupportedMediaType": (415, "UnsupportedMediaType"),
    "TooManyRequests": (429, "TooManyRequests"),
    "InternalError": (500, "InternalError"),
    "StorageReadError": (500, "StorageReadError"),
    "NotImplemented": (501, "NotImplemented"),
    "ServiceUnavailable": (503, "ServiceUnavailable"),
    "ResourceVersionTooLarge": (504, "Timeout"),
}

#: FieldError types -> upstream's metav1.CauseType strings (field.ErrorType.String()).
CAUSE_TYPES = {
    REQUIRED: "FieldValueRequired",
    INVALID: "FieldValueInvalid",
    UNSUPPORTED: "FieldValueNotSupported",
    FORBIDDEN: "FieldValueForbidden",
    DUPLICATE: "FieldValueDuplicate",
    TOO_LONG: "FieldValueTooLong",
    TOO_MANY: "FieldValueTooMany",
    NOT_FOUND: "FieldValueNotFound",
}


def status(
    code: int,
    reason: str,
    message: str,
    *,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A meta/v1 Status with status Failure."""
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        out["details"] = details
    return out


def success(details: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details:
        out["details"] = details
    return out


def cause(err: FieldError) -> dict[str, str]:
    """One field error as a StatusCause: the message is the error without its path."""
    text = str(err)
    prefix = f"{err.path}: "
    return {
        "reason": CAUSE_TYPES.get(err.type, err.type),
        "message": text[len(prefix) :] if text.startswith(prefix) else text,
        "field": err.path,
    }


def from_error(
    err: ApiError, *, resource: str = "", group: str = "", name: str = ""
) -> dict[str, Any]:
    """The Status an ApiError is answered with over HTTP."""
    code, reason = HTTP_CODES.get(err.reason, (500, "InternalError"))
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    if isinstance(err, InvalidError):
        details["kind"] = err.kind
        details["name"] = err.name
        details["causes"] = [cause(e) for e in err.errors]
    elif err.reason == "TooManyRequests":
        # upstream's eviction: a DisruptionBudget cause naming the budget.
        details["causes"] = [{"reason": "DisruptionBudget", "message": err.message}]
    elif isinstance(err, ResourceVersionTooLargeError):
        # upstream's NewTooLargeResourceVersionError: storage's, so no kind or name
        details = {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": err.retry_after_seconds,
        }
    causes = getattr(err, "causes", None)
    if causes and not isinstance(err, InvalidError):
        # Server-side apply conflicts (services/api/machinery/fieldmanager.py):
        # (field path, message).
        details["causes"] = [
            {"reason": "FieldManagerConflict", "message": msg, "field": path}
            for path, msg in causes
        ]
    return status(code, reason, err.message, details=details or None)
