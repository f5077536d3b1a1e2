"""The what-if's caller side, shared by the apiserver's HTTP endpoint
(services/httpapi/whatif.py) and `kubera whatif`: build the request, admit its objects
as the apiserver would store them, find the scheduler leader and ask it.

    request_from_json(doc)    the HTTP body (Kubernetes JSON objects) -> WhatIfRequest
    admit(request, create)    every pod, node and object through a dry-run create (defaults,
                              admission: priority, tolerations, limit ranges; validation
                              and quota answer as a real create would), nothing stored
    call_leader(storage, request, channel)
                              the scheduler replicas from their records in etcd, the
                              holders of their election keys first; a replica that does not
                              lead (FAILED_PRECONDITION) or does not answer (UNAVAILABLE)
                              passes the call to the next
    response_to_json(resp)    the answer as JSON (protobuf's JSON mapping, camelCase)

It imports no scheduler code: the apiserver's process stays without it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc
import yaml
from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from protos.kubera.v1 import scheduler_pb2 as pb
from protos.kubera.v1 import scheduler_pb2_grpc as pb_grpc
from services.api.machinery import codec
from services.api.machinery.errors import BadRequestError
from services.api.machinery.kinds import kind_of
from services.storage.keys import ELECTION_PREFIX, REPLICAS_PREFIX

#: The kinds a Schedule step carries beside its pods (what gangs name).
GROUP_KINDS = frozenset({"PodGroup.scheduling.k8s.io", "Workload", "PodGroup"})
#: Seconds one scheduler replica gets to answer.
CALL_TIMEOUT = 60.0

Create = Callable[..., Awaitable[Message]]


class NoLeaderError(Exception):
    """No scheduler replica answered as the leader."""


def schedule_step(objects: Iterable[Message], *, preempt: bool = False) -> pb.WhatIfStep:
    """A Schedule step of these decoded objects: the pods, and the PodGroups / Workloads
    they name. Raises BadRequestError for any other kind."""
    step = pb.WhatIfStep(schedule=pb.WhatIfSchedule(preempt=preempt))
    for obj in objects:
        if isinstance(obj, core_pb2.Pod):
            step.schedule.pods.add().CopyFrom(obj)
            continue
        kind = kind_of(obj)
        if kind.name not in GROUP_KINDS:
            raise BadRequestError(
                f"a what-if schedules Pods (with the PodGroups and Workloads they name), "
                f"not {kind.kind} {kind.api_version}"
            )
        step.schedule.objects.add().CopyFrom(codec.pack(obj))
    return step


def decode_manifest(text: str) -> list[Message]:
    """The objects of a YAML (or JSON) manifest, one per document (Lists flattened)."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as e:
        raise BadRequestError(f"the manifest does not parse: {e}") from None
    out: list[Message] = []
    for doc in docs:
        items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else None
        for item in items if isinstance(items, list) else [doc]:
            out.append(_decode(item))
    return out


def _decode(doc: Any) -> Message:
    try:
        return codec.decode(doc, validate="strict").obj
    except codec.DecodeError as e:
        raise BadRequestError(str(e)) from None


def _decode_as(doc: Any, kind_name: str) -> Message:
    obj = _decode(doc)
    if kind_of(obj).name != kind_name:
        raise BadRequestError(f"expected a {kind_name}")
    return obj


def request_from_json(doc: Any) -> pb.WhatIfRequest:
    """The HTTP body: {session, keep, rollbackTo, close, and either "manifest" (YAML text:
    one Schedule step of its pods, with "preempt") or "steps": [{"schedule": {"pods":
    [...], "objects": [...], "preempt": bool}}, {"deleteNode": name}, {"deletePod":
    {"namespace", "name"}}, {"addNode": Node}]}, objects in their Kubernetes JSON."""
    if not isinstance(doc, dict):
        raise BadRequestError("expected a JSON object")
    req = pb.WhatIfRequest(
        session=str(doc.get("session") or ""),
        keep=bool(doc.get("keep", False)),
        close=bool(doc.get("close", False)),
    )
    if doc.get("rollbackTo") is not None:
        try:
            req.rollback_to = int(doc["rollbackTo"])
        except (TypeError, ValueError):
            raise BadRequestError("rollbackTo: expected an integer") from None
    if doc.get("manifest"):
        objs = decode_manifest(str(doc["manifest"]))
        req.steps.append(schedule_step(objs, preempt=bool(doc.get("preempt", False))))
    for i, step in enumerate(doc.get("steps") or []):
        if not isinstance(step, dict) or len(step) != 1:
            raise BadRequestError(
                f"steps[{i}]: expected one of schedule, deleteNode, deletePod, addNode"
            )
        op, value = next(iter(step.items()))
        if op == "schedule" and isinstance(value, dict):
            objs = [_decode(p) for p in value.get("pods") or []]
            objs += [_decode(o) for o in value.get("objects") or []]
            req.steps.append(schedule_step(objs, preempt=bool(value.get("preempt", False))))
        elif op == "deleteNode" and isinstance(value, str):
            req.steps.add(delete_node=value)
        elif op == "deletePod" and isinstance(value, dict):
            req.steps.add(
                delete_pod=pb.WhatIfPodRef(
                    namespace=str(value.get("namespace") or "default"),
                    name=str(value.get("name") or ""),
                )
            )
        elif op == "addNode":
            node = _decode_as(value, "Node")
            assert isinstance(node, core_pb2.Node)
            req.steps.add(add_node=node)
        else:
            raise BadRequestError(f"steps[{i}]: unknown step {op!r}")
    return req


async def admit(request: pb.WhatIfRequest, create: Create) -> pb.WhatIfRequest:
    """The request with every pod, node and object as a dry-run create answers it
    (`create(obj, dry_run=True)`: the apiserver's registry or a client). A refusal raises
    the apiserver's error (422 with its causes, 403 for quota, 404 for a namespace)."""
    out = pb.WhatIfRequest()
    out.CopyFrom(request)
    for step in out.steps:
        which = step.WhichOneof("op")
        if which == "schedule":
            for obj in step.schedule.objects:
                obj.CopyFrom(codec.pack(await create(codec.unpack(obj), dry_run=True)))
            for pod in step.schedule.pods:
                if not pod.metadata.namespace:
                    pod.metadata.namespace = "default"
                pod.CopyFrom(await create(pod, dry_run=True))
        elif which == "add_node":
            step.add_node.CopyFrom(await create(step.add_node, dry_run=True))
    return out


async def leader_addresses(storage: Any) -> list[str]:
    """Every scheduler replica's API address, the holders of their election keys first."""
    kvs, _ = await storage.list(REPLICAS_PREFIX)
    holders: dict[str, str] = {}
    first: list[str] = []
    rest: list[str] = []
    for kv in kvs:
        try:
            rec = json.loads(kv.value)
        except ValueError:
            continue
        if rec.get("component") != "kube-scheduler" or not rec.get("scheduler"):
            continue
        lease = "/".join(kv.key[len(REPLICAS_PREFIX) :].split("/")[:2])
        if lease not in holders:
            held = await storage.get(f"{ELECTION_PREFIX}{lease}")
            holders[lease] = held.value.decode(errors="replace") if held is not None else ""
        leads = holders[lease] == rec.get("identity")
        (first if leads else rest).append(str(rec["scheduler"]))
    return first + rest


async def call_leader(
    storage: Any,
    request: pb.WhatIfRequest,
    channel: Callable[[str], grpc.aio.Channel],
    *,
    timeout: float = CALL_TIMEOUT,
) -> pb.WhatIfResponse:
    """The leader's answer (see the module docstring). Raises NoLeaderError when no
    replica answers as one, grpc.aio.AioRpcError for the leader's refusal."""
    addresses = await leader_addresses(storage)
    if not addresses:
        raise NoLeaderError("this cluster runs no scheduler")
    why = ""
    for address in addresses:
        async with channel(address) as ch:
            try:
                resp: pb.WhatIfResponse = await pb_grpc.SchedulerStub(ch).WhatIf(
                    request, timeout=timeout
                )
                return resp
            except grpc.aio.AioRpcError as e:
                if e.code() not in (
                    grpc.StatusCode.FAILED_PRECONDITION,
                    grpc.StatusCode.UNAVAILABLE,
                ):
                    raise
                why = e.details() or str(e.code())
    raise NoLeaderError(f"no scheduler replica answered as the leader ({why})")


def response_to_json(resp: pb.WhatIfResponse) -> dict[str, Any]:
    doc: dict[str, Any] = json_format.MessageToDict(resp)
    return {"kind": "WhatIfResult", "apiVersion": "kubera.io/v1", **doc}
