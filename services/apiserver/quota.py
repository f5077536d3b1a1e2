"""The ResourceQuota admission plugin: a create that would pass a quota is refused (403).

Upstream's staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota (controller.go,
CheckRequest) with the evaluators of services/api/helpers/quota.py. For a create, or an
update of a kind whose evaluator handles updates (a Service, a PersistentVolumeClaim), in
a namespace with quotas, each quota that covers the object (its status.hard names
something the object uses, and the object matches all its scopes):

1. the pod evaluator's constraints: quota on cpu/memory makes each container name them
   (403 ``failed quota: NAME: must specify limits.cpu for: app; ...``);
2. the quota must have been computed by the quota controller (status.used has each
   covered resource), else 403 ``status unknown for quota: NAME, resources: ...``;
3. used + requested must stay within status.hard, else 403 ``exceeded quota: NAME,
   requested: r=q, used: r=q, limited: r=q`` (only the exceeded resources); on an update
   the request is what the new object uses beyond the old one, never below zero
   (quota.SubtractWithNonNegativeResult), so a shrink frees nothing until the controller
   recalculates;
4. the new usage is reserved: every covering quota's status.used is written, in one etcd
   txn compared at the versions read (retried when a quota moved), before the object is.

As upstream, a write that fails after its reservation leaves the usage counted until the
quota controller recalculates it (services/controllers/resourcequota.py). A create admits
once: when its txn loses a service's cluster IP or node port to another create, only the
allocation is retried (services/apiserver/create.py), so nothing is reserved twice. Pod
updates are not charged: upstream charges them only for in-place resize, which kubera
does not serve.
"""

from __future__ import annotations

from google.protobuf.message import Message

from protos.kubera.v1 import policyv1core_pb2
from services.api.helpers import quota as q
from services.api.machinery.errors import ForbiddenError
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import narrow
from services.apiserver.admission_reads import AdmissionReads
from services.apiserver.objects import MAX_RETRIES, conflict
from services.apiserver.objects import meta as _meta
from services.apiserver.store import Store
from services.storage import Compare, Put

ResourceQuota = policyv1core_pb2.ResourceQuota


def _forbidden(kind: Kind, obj: Message, why: str) -> ForbiddenError:
    name = _meta(obj).name or _meta(obj).generate_name
    return ForbiddenError(f'{kind.resource} "{name}" is forbidden: {why}')


def check_request(
    quotas: list[ResourceQuota],
    kind: Kind,
    obj: Message,
    now: float,
    old: Message | None = None,
) -> list[ResourceQuota]:
    """CheckRequest for a create (or, with `old`, an update): the quotas whose
    status.used changes, as copies with the new usage; ForbiddenError when a quota
    refuses."""
    covering: list[ResourceQuota] = []
    for rq in quotas:
        if not q.matches(rq, kind, obj):
            continue
        restricted = q.matching_resources(kind, rq.status.hard)
        if kind.kind == "Pod":
            missing = q.pod_constraints(restricted, obj)  # type: ignore[arg-type]
            if missing:
                raise _forbidden(kind, obj, f"failed quota: {rq.metadata.name}: {missing}")
        if any(r not in rq.status.used for r in restricted):
            raise _forbidden(
                kind,
                obj,
                f"status unknown for quota: {rq.metadata.name}, resources: {','.join(sorted(restricted))}",
            )
        covering.append(rq)
    if not covering:
        return []
    usage = q.usage(kind, obj, now)
    if old is not None and _meta(old).resource_version:
        # an old object without a version is a create on update: billed in full
        usage = q.subtract_non_negative(usage, q.usage(kind, old, now))
    usage = q.remove_zeros(usage)
    if not usage:
        return []
    out: list[ResourceQuota] = []
    for rq in covering:
        hard = q.parse_list(rq.status.hard)
        used = q.parse_list(rq.status.used)
        requested = q.mask(usage, hard)
        new_usage = q.add(used, requested)
        exceeded = q.less_than_or_equal(q.mask(new_usage, requested), hard)
        if exceeded:
            raise _forbidden(
                kind,
                obj,
                f"exceeded quota: {rq.metadata.name}, requested: {q.pretty(q.mask(requested, exceeded))}, "
                f"used: {q.pretty(q.mask(used, exceeded))}, limited: {q.pretty(q.mask(hard, exceeded))}",
            )
        if not requested:
            continue
        copy = ResourceQuota()
        copy.CopyFrom(rq)
        copy.status.used.clear()
        copy.status.used.update(q.to_strings(new_usage))
        out.append(copy)
    return out


async def admit(
    store: Store,
    kind: Kind,
    obj: Message,
    reads: AdmissionReads,
    *,
    old: Message | None = None,
    dry_run: bool = False,
) -> None:
    """Check `obj`'s create (or its update from `old`) against its namespace's quotas
    and reserve its usage."""
    if not kind.namespaced or (old is not None and not q.handles_update(kind)):
        return
    rq_kind = BY_KIND["ResourceQuota"]
    namespace = _meta(obj).namespace
    if not await reads.namespace_objects(rq_kind, namespace):
        return  # the common case, answered from the watch cache
    for _ in range(MAX_RETRIES):
        kvs, _rev = await store.storage.list(rq_kind.prefix(namespace))
        read = [(kv, narrow(store.decode(rq_kind, kv), ResourceQuota)) for kv in kvs]
        changed = check_request([rq for _, rq in read], kind, obj, store.clock.now(), old)
        if dry_run or not changed:
            return
        kv_of = {rq.metadata.name: kv for kv, rq in read}
        kvs = [kv_of[rq.metadata.name] for rq in changed]
        compares = [Compare(kv.key, "mod", "==", kv.mod_revision) for kv in kvs]
        puts = [Put(kv.key, store.encode(rq)) for kv, rq in zip(kvs, changed, strict=True)]
        res = await store.txn(compares, puts)
        if res.succeeded:
            return
    raise conflict(rq_kind, namespace)
