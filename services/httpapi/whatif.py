"""POST /apis/kubera.io/v1/whatif: the scheduler leader's what-if over HTTP (for the web UI
and any HTTP client), authenticated like every other path.

    body (JSON)      services/scheduler/whatif/remote.py `request_from_json`: a "manifest"
                     (YAML text, the UI's pasted manifest) or "steps", with session, keep,
                     rollbackTo, close
    authorize        a what-if of an object needs the right to create it (as a dry-run
                     create does): each pod, node and group object, in its namespace
    admit            each through the registry's dry-run create (nothing stored)
    ask the leader   found through its records in etcd (remote.call_leader)
    answer           200 WhatIfResult (per step, per pod: node or reasons, score, top
                     scores, victims); a refusal as a Status: 400/422 bad input, 403, 404 an
                     unknown session, 503 no scheduler leader
"""

from __future__ import annotations

import json
from typing import Any

import grpc
from aiohttp import web
from google.protobuf.message import Message

from protos.kubera.v1 import scheduler_pb2 as pb
from services.api.machinery import codec
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import kind_of
from services.api.machinery.meta import object_meta
from services.apiserver import ApiServer
from services.auth import Authorizer, RequestAttributes, User, maybe_await
from services.auth.authorizer import forbidden_message
from services.httpapi.status import from_error, status
from services.scheduler.whatif import remote

PATH = "/apis/kubera.io/v1/whatif"

#: gRPC codes of the leader's refusals -> (HTTP code, reason).
_GRPC_TO_HTTP = {
    grpc.StatusCode.INVALID_ARGUMENT: (400, "BadRequest"),
    grpc.StatusCode.NOT_FOUND: (404, "NotFound"),
    grpc.StatusCode.FAILED_PRECONDITION: (503, "ServiceUnavailable"),
    grpc.StatusCode.UNAVAILABLE: (503, "ServiceUnavailable"),
    grpc.StatusCode.DEADLINE_EXCEEDED: (504, "Timeout"),
}


def is_whatif(path: str) -> bool:
    return path.rstrip("/") == PATH


def _json(code: int, doc: dict[str, Any]) -> web.Response:
    return web.Response(status=code, body=json.dumps(doc).encode(), content_type="application/json")


def _refusal(code: int, reason: str, message: str) -> web.Response:
    return _json(code, status(code, reason, message))


def written(request: pb.WhatIfRequest) -> list[Message]:
    """What the what-if would create: its pods, group objects and nodes."""
    out: list[Message] = []
    for step in request.steps:
        if step.WhichOneof("op") == "schedule":
            out.extend(step.schedule.pods)
            out.extend(codec.unpack(a) for a in step.schedule.objects)
        elif step.WhichOneof("op") == "add_node":
            out.append(step.add_node)
    return out


async def serve(
    request: web.Request, api: ApiServer, user: User, authz: Authorizer
) -> web.StreamResponse:
    if request.method != "POST":
        return _refusal(405, "MethodNotAllowed", "a what-if is a POST")
    try:
        doc = json.loads(await request.read() or b"null")
    except ValueError as e:
        return _refusal(400, "BadRequest", f"the body is not JSON: {e}")
    try:
        req = remote.request_from_json(doc)
        for obj in written(req):
            meta, kind = object_meta(obj), kind_of(obj)
            attrs = RequestAttributes(
                user=user,
                verb="create",
                resource=kind.http_resource,
                api_group=kind.group,
                namespace=(meta.namespace or "default") if kind.namespaced else "",
                obj=obj,
            )
            decision = await maybe_await(authz.authorize(attrs))
            if not decision.allowed:
                return _refusal(403, "Forbidden", forbidden_message(attrs, decision.reason))
        admitted = await remote.admit(req, api.create)
        resp = await remote.call_leader(api.storage, admitted, grpc.aio.insecure_channel)
    except ApiError as e:
        err = from_error(e)
        return _json(err["code"], err)
    except remote.NoLeaderError as e:
        return _refusal(503, "ServiceUnavailable", str(e))
    except grpc.aio.AioRpcError as e:
        code, reason = _GRPC_TO_HTTP.get(e.code(), (500, "InternalError"))
        return _refusal(code, reason, e.details() or str(e.code()))
    return _json(200, remote.response_to_json(resp))
