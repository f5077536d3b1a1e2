"""The pods/eviction subresource (upstream's pkg/registry/core/pod/storage/eviction.go):
delete a pod unless that would violate its PodDisruptionBudget.

The rules, in upstream's order:

* the pod is not found: NotFound; DeleteOptions preconditions (uid, resourceVersion)
  that no longer hold: Conflict;
* a pod that cannot disrupt anything more (Pending, Succeeded, Failed, or already
  terminating: upstream's canIgnorePDB) is deleted without looking at budgets;
* budgets are those of the pod's namespace whose selector matches its labels (an unset,
  empty or invalid selector matches nothing); none: delete; more than one: 500
  (InternalError, "This pod has more than one PodDisruptionBudget, which the eviction
  subresource does not support.");
* a pod that is not Ready is deleted without spending the budget when the budget says
  AlwaysAllow, or (IfHealthyBudget, the default) when currentHealthy >= desiredHealthy > 0;
* otherwise the budget must be current (status.observedGeneration >= generation, else 429
  "still being processed"), have disruptionsAllowed >= 0 and at most 2,000 disruptedPods
  (else Forbidden) and disruptionsAllowed > 0 (else 429 TooManyRequests, "Cannot evict pod
  as it would violate the pod's disruption budget." with the cause naming the budget).

The budget's new status (disruptionsAllowed - 1, the pod in disruptedPods at the eviction
time, DisruptionAllowed False once it reaches 0) and the pod's deletion (or its
deletionTimestamp, grace period and DisruptionTarget condition) are written in ONE txn
that compares both keys at the versions read: a concurrent budget or pod update fails it,
and the whole decision is taken again from fresh reads (upstream's retry on conflict).
A dry run ("All") decides and writes nothing.
"""

from __future__ import annotations

from protos.kubera.v1 import core_pb2, policy_pb2
from services.api import validation
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.disruption import (
    ALWAYS_ALLOW,
    covers,
    pod_ready,
    update_disruption_allowed_condition,
)
from services.api.machinery.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    InternalError,
    InvalidError,
    TooManyRequestsError,
    unsupported,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.apiserver.deletion import grace_period
from services.apiserver.objects import MAX_RETRIES, held, not_found
from services.apiserver.store import Store
from services.clock import rfc3339
from services.storage import Compare, Delete, KeyValue, Put

POD = BY_KIND["Pod"]
PDB = BY_KIND["PodDisruptionBudget"]

#: Upstream's MaxDisruptedPodSize: evictions the controller has not yet confirmed.
MAX_DISRUPTED_POD_SIZE = 2000

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_BUDGETS = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
    "not support."
)
#: The DisruptionTarget condition an evicted pod gets (upstream's addConditionAndDeletePod).
EVICTION_REASON = "EvictionByEvictionAPI"
EVICTION_MESSAGE = "Eviction API: evicting"


def too_many_requests(cause: str) -> TooManyRequestsError:
    """Upstream's NewTooManyRequests with a DisruptionBudget cause (the cause follows the
    message: gRPC carries one string)."""
    return TooManyRequestsError(f"{VIOLATION} {cause}")


def still_processing(pdb_name: str) -> TooManyRequestsError:
    return too_many_requests(
        f"The disruption budget {pdb_name} is still being processed by the server."
    )


def can_ignore_pdb(pod: core_pb2.Pod) -> bool:
    """Upstream's canIgnorePDB: the pod disrupts nothing more by going."""
    return pod.status.phase in ("Pending", "Succeeded", "Failed") or bool(
        pod.metadata.deletion_timestamp
    )


def check_and_decrement(pdb: policy_pb2.PodDisruptionBudget, pod_name: str, now: float) -> None:
    """Upstream's checkAndDecrement, on `pdb` in place: refuse, or spend one disruption
    and record the pod in disruptedPods."""
    st = pdb.status
    if st.observed_generation < pdb.metadata.generation:
        raise still_processing(pdb.metadata.name)
    if st.disruptions_allowed < 0:
        raise ForbiddenError(
            f'poddisruptionbudget.policy "{pdb.metadata.name}" is forbidden: '
            "pdb disruptions allowed is negative"
        )
    if len(st.disrupted_pods) > MAX_DISRUPTED_POD_SIZE:
        raise ForbiddenError(
            f'poddisruptionbudget.policy "{pdb.metadata.name}" is forbidden: DisruptedPods '
            "map too big - too many evictions not confirmed by PDB controller"
        )
    if st.disruptions_allowed == 0:
        raise too_many_requests(
            f"The disruption budget {pdb.metadata.name} needs {st.desired_healthy} healthy "
            f"pods and has {st.current_healthy} currently"
        )
    st.disruptions_allowed -= 1
    if st.disruptions_allowed == 0:
        update_disruption_allowed_condition(st, now)
    st.disrupted_pods[pod_name] = rfc3339(now)


async def budgets_for(
    store: Store, pod: core_pb2.Pod
) -> list[tuple[KeyValue, policy_pb2.PodDisruptionBudget]]:
    """The budgets covering `pod`, read from storage (with their versions, to compare)."""
    items, _ = await store.storage.list(PDB.prefix(pod.metadata.namespace))
    out = []
    for kv in items:
        pdb = narrow(store.decode(PDB, kv), policy_pb2.PodDisruptionBudget)
        if covers(pdb, pod):
            out.append((kv, pdb))
    return out


def _options(eviction: policy_pb2.Eviction) -> tuple[bool, int | None]:
    """(dry run, grace period) from the eviction's DeleteOptions, validated."""
    opts = eviction.delete_options
    for v in opts.dry_run:
        if v != "All":
            raise InvalidError(
                "Eviction",
                eviction.metadata.name,
                [unsupported("deleteOptions.dryRun", v, ["All"])],
            )
    grace = opts.grace_period_seconds if opts.HasField("grace_period_seconds") else None
    if grace is not None:
        errors = validation.validate_grace_period_seconds(grace)
        if errors:
            raise InvalidError("Eviction", eviction.metadata.name, errors)
    return bool(opts.dry_run), grace


def _check_preconditions(pod: core_pb2.Pod, pre: policy_pb2.Preconditions) -> None:
    if pre.HasField("uid") and pre.uid != pod.metadata.uid:
        raise ConflictError(
            f"Precondition failed: UID in precondition: {pre.uid}, UID in object meta: {pod.metadata.uid}"
        )
    if pre.HasField("resource_version") and pre.resource_version != pod.metadata.resource_version:
        raise ConflictError(
            f"Precondition failed: ResourceVersion in precondition: {pre.resource_version}, "
            f"ResourceVersion in object meta: {pod.metadata.resource_version}"
        )


async def evict(store: Store, eviction: policy_pb2.Eviction) -> core_pb2.Pod:
    """Evict the pod `eviction.metadata` names (see the module's rules); the pod as the
    delete left it (gone: at the delete's revision; terminating: its new version)."""
    name = eviction.metadata.name
    if not name:
        raise BadRequestError("name is required for an Eviction")
    namespace = store.namespace(POD, eviction.metadata.namespace)
    dry_run, grace = _options(eviction)
    key = POD.key(namespace, name)
    for _ in range(MAX_RETRIES):
        pod_kv = await store.storage.get(key)
        if pod_kv is None:
            raise not_found(POD, name)
        pod = narrow(store.decode(POD, pod_kv), core_pb2.Pod)
        _check_preconditions(pod, eviction.delete_options.preconditions)
        budget: tuple[KeyValue, policy_pb2.PodDisruptionBudget] | None = None
        if not can_ignore_pdb(pod):
            budgets = await budgets_for(store, pod)
            if len(budgets) > 1:
                raise InternalError(MULTIPLE_BUDGETS)
            if budgets:
                pdb_kv, pdb = budgets[0]
                st = pdb.status
                unready_free = not pod_ready(pod) and (
                    pdb.spec.unhealthy_pod_eviction_policy == ALWAYS_ALLOW
                    or (st.current_healthy >= st.desired_healthy and st.desired_healthy > 0)
                )
                if not unready_free:
                    check_and_decrement(pdb, name, store.clock.now())
                    budget = (pdb_kv, pdb)
        if dry_run:
            return pod
        try:
            return await _commit(store, pod, pod_kv, grace, budget)
        except _Raced:
            continue
    raise ConflictError(
        f'Operation cannot be fulfilled on pods "{name}": the pod or its '
        "PodDisruptionBudget kept changing; please try again"
    )


class _Raced(ApiError):
    """The txn lost to a concurrent write of the pod or its budget: decide again."""


async def _commit(
    store: Store,
    pod: core_pb2.Pod,
    pod_kv: KeyValue,
    grace_request: int | None,
    budget: tuple[KeyValue, policy_pb2.PodDisruptionBudget] | None,
) -> core_pb2.Pod:
    """Delete (or start terminating) the pod and write the budget, in one txn."""
    now = store.clock.now()
    meta = pod.metadata
    compares = [Compare(pod_kv.key, "mod", "==", pod_kv.mod_revision)]
    ops: list[Put | Delete] = []
    grace = grace_period(POD, pod, grace_request)
    gone = grace == 0 and not held(POD, pod)
    if gone:
        ops.append(Delete(pod_kv.key))
    else:
        changed = update_pod_condition(
            pod.status,
            "DisruptionTarget",
            "True",
            now,
            reason=EVICTION_REASON,
            message=EVICTION_MESSAGE,
        )
        if not meta.deletion_timestamp or meta.deletion_grace_period_seconds > grace:
            meta.deletion_timestamp = rfc3339(now + grace)
            meta.deletion_grace_period_seconds = grace
            if meta.generation > 0:
                meta.generation += 1
            changed = True
        if changed:
            ops.append(Put(pod_kv.key, store.encode(pod)))
    if budget is not None:
        pdb_kv, pdb = budget
        compares.append(Compare(pdb_kv.key, "mod", "==", pdb_kv.mod_revision))
        ops.append(Put(pdb_kv.key, store.encode(pdb)))
    if not ops:
        return pod
    res = await store.txn(compares, ops, what=f"Eviction of pod {meta.name}")
    if not res.succeeded:
        raise _Raced("raced")
    if any(isinstance(op, Put) and op.key == pod_kv.key for op in ops) or gone:
        meta.resource_version = str(res.revision)
    return pod
