"""The disruption controller (upstream's pkg/controller/disruption): keeps each
PodDisruptionBudget's status, which the apiserver's eviction subresource spends.

For a budget, its pods are those of its namespace its selector matches (an unset or empty
selector matches none). Then, as upstream's trySync:

* expectedPods and desiredHealthy: minAvailable as an integer → desiredHealthy is it, and
  expectedPods the number of pods; minAvailable as a percentage, or maxUnavailable → the
  expected count is the sum of the scales of the pods' controllers (getExpectedScale: a
  ReplicaSet's spec.replicas, or, for a ReplicaSet a Deployment controls, the Deployment's;
  a StatefulSet's; each controller counted once; pods without a controller are left out), and
  desiredHealthy = ceil(minAvailable% of it), or expected - maxUnavailable (a percentage
  rounded up), not below 0. A pod whose controller is not found fails the sync.
* disruptedPods: the entries the eviction subresource wrote for pods still here and not
  terminating, dropped DELETION_TIMEOUT (2 min) after their time (the pod was not deleted
  after all); the budget is synced again when the next one would expire.
* currentHealthy: pods Ready, not terminating and not in disruptedPods.
* disruptionsAllowed = currentHealthy - desiredHealthy, 0 when negative or when no pod is
  expected; observedGeneration = generation; the DisruptionAllowed condition True /
  SufficientPods while disruptions are allowed, else False / InsufficientPods.
* a sync that fails for another reason than a conflict writes the fail-safe status
  (disruptionsAllowed 0, DisruptionAllowed False / SyncFailed with the error); a conflict
  is retried with backoff.

The status is written only when it changed. Time is the injected clock.
Not ported: upstream's stale DisruptionTarget condition cleanup and the Events it records.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2, policy_pb2
from services.api.helpers.disruption import (
    SYNC_FAILED,
    covers,
    parse_budget_selector,
    pod_ready,
    set_condition,
    update_disruption_allowed_condition,
)
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.labels import SelectorError
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    NamespaceIndex,
    controller_of,
    timestamp,
    wait_synced,
)
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
PDBS = BY_KIND["PodDisruptionBudget"]
REPLICA_SETS = BY_KIND["ReplicaSet"]
DEPLOYMENTS = BY_KIND["Deployment"]
STATEFUL_SETS = BY_KIND["StatefulSet"]

#: Upstream's DeletionTimeout: how long an eviction's disruptedPods entry holds a pod out
#: of currentHealthy before the controller concludes it was not deleted.
DELETION_TIMEOUT = 120.0


class SyncError(Exception):
    """A budget whose status cannot be computed (bad minAvailable, a controller not found)."""


@dataclass
class DisruptionConfig(WorkerSettings):
    """Settings of the disruption controller."""

    workers: int = 1
    """Budgets synced at once (upstream runs one worker)."""


def scaled_value(value: str, total: int, what: str) -> int:
    """intstr.GetScaledValueFromIntOrPercent rounding up: "3" → 3, "28%" of total → ceil."""
    try:
        if value.endswith("%"):
            return math.ceil(int(value[:-1]) * total / 100)
        return int(value)
    except ValueError:
        raise SyncError(f"invalid value for IntOrString: invalid {what} {value!r}") from None


#: (controller uid, scale) of the controller owning the pod, or None when it is not found.
ScaleFinder = Callable[[core_pb2.Pod, meta_pb2.OwnerReference], tuple[str, int] | None]


def expected_scale(pods: list[core_pb2.Pod], find: ScaleFinder) -> tuple[int, list[str]]:
    """getExpectedScale: the sum of the scales of the pods' controllers (each once), and the
    names of the pods without one (left out)."""
    scales: dict[str, int] = {}
    seen_refs: set[str] = set()
    unmanaged = []
    for pod in pods:
        ref = controller_of(pod)
        if ref is None:
            unmanaged.append(pod.metadata.name)
            continue
        if ref.uid in seen_refs:
            continue
        found = find(pod, ref)
        if found is None:
            raise SyncError(f'found no controllers for pod "{pod.metadata.name}"')
        seen_refs.add(ref.uid)
        scales[found[0]] = found[1]
    return sum(scales.values()), unmanaged


def expected_counts(
    pdb: policy_pb2.PodDisruptionBudget, pods: list[core_pb2.Pod], find: ScaleFinder
) -> tuple[int, int]:
    """getExpectedPodCount: (expectedPods, desiredHealthy)."""
    spec = pdb.spec
    if spec.HasField("max_unavailable"):
        expected, _ = expected_scale(pods, find)
        unavailable = scaled_value(spec.max_unavailable, expected, "maxUnavailable")
        return expected, max(expected - unavailable, 0)
    if spec.HasField("min_available"):
        if not spec.min_available.endswith("%"):
            return len(pods), scaled_value(spec.min_available, len(pods), "minAvailable")
        expected, _ = expected_scale(pods, find)
        return expected, scaled_value(spec.min_available, expected, "minAvailable")
    return 0, 0


def disrupted_pod_map(
    pods: list[core_pb2.Pod], pdb: policy_pb2.PodDisruptionBudget, now: float
) -> tuple[dict[str, str], float | None]:
    """buildDisruptedPodMap: the entries still pending (pod here, not terminating, within
    DELETION_TIMEOUT), and when the earliest of them expires (None: none)."""
    result: dict[str, str] = {}
    recheck: float | None = None
    for pod in pods:
        if pod.metadata.deletion_timestamp:
            continue
        when = pdb.status.disrupted_pods.get(pod.metadata.name)
        if when is None:
            continue
        at = timestamp(when)
        expires = (at or 0.0) + DELETION_TIMEOUT
        if expires < now:
            log.info(
                "pod %s/%s was expected by PDB %s to be deleted but it wasn't",
                pod.metadata.namespace,
                pod.metadata.name,
                pdb.metadata.name,
            )
            continue
        recheck = expires if recheck is None else min(recheck, expires)
        result[pod.metadata.name] = when
    return result, recheck


def count_healthy(pods: list[core_pb2.Pod], disrupted: dict[str, str], now: float) -> int:
    """countHealthyPods: Ready, not terminating, not about to be evicted."""
    healthy = 0
    for pod in pods:
        if pod.metadata.deletion_timestamp:
            continue
        when = disrupted.get(pod.metadata.name)
        if when is not None and (timestamp(when) or 0.0) + DELETION_TIMEOUT > now:
            continue
        if pod_ready(pod):
            healthy += 1
    return healthy


def conditions_up_to_date(pdb: policy_pb2.PodDisruptionBudget) -> bool:
    """pdbhelper.ConditionsAreUpToDate."""
    st = pdb.status
    cond = next((c for c in st.conditions if c.type == "DisruptionAllowed"), None)
    if cond is None or st.observed_generation != pdb.metadata.generation:
        return False
    if st.disruptions_allowed > 0:
        return cond.status == "True" and cond.reason == "SufficientPods"
    return cond.status == "False" and cond.reason == "InsufficientPods"


def compute_status(
    pdb: policy_pb2.PodDisruptionBudget,
    pods: list[core_pb2.Pod],
    find: ScaleFinder,
    now: float,
) -> tuple[policy_pb2.PodDisruptionBudgetStatus | None, float | None]:
    """trySync + updatePdbStatus without the write: the new status (None: unchanged) and
    when to sync again for an expiring disruptedPods entry. Raises SyncError."""
    expected, desired = expected_counts(pdb, pods, find)
    disrupted, recheck = disrupted_pod_map(pods, pdb, now)
    healthy = count_healthy(pods, disrupted, now)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    st = pdb.status
    if (
        (st.current_healthy, st.desired_healthy, st.expected_pods, st.disruptions_allowed)
        == (healthy, desired, expected, allowed)
        and dict(st.disrupted_pods) == disrupted
        and st.observed_generation == pdb.metadata.generation
        and conditions_up_to_date(pdb)
    ):
        return None, recheck
    new = policy_pb2.PodDisruptionBudgetStatus(
        current_healthy=healthy,
        desired_healthy=desired,
        expected_pods=expected,
        disruptions_allowed=allowed,
        disrupted_pods=disrupted,
        observed_generation=pdb.metadata.generation,
        conditions=list(st.conditions),
    )
    update_disruption_allowed_condition(new, now)
    return new, recheck


def fail_safe_status(
    pdb: policy_pb2.PodDisruptionBudget, error: Exception, now: float
) -> policy_pb2.PodDisruptionBudgetStatus:
    """failSafe: no disruptions allowed, DisruptionAllowed False / SyncFailed."""
    new = policy_pb2.PodDisruptionBudgetStatus()
    new.CopyFrom(pdb.status)
    new.disruptions_allowed = 0
    set_condition(new, "False", SYNC_FAILED, str(error), now)
    return new


def pods_for(pdb: policy_pb2.PodDisruptionBudget, pods: list[core_pb2.Pod]) -> list[core_pb2.Pod]:
    """getPodsForPdb: the pods (of the budget's namespace) its selector matches; none for
    an unset or empty selector; SyncError for an invalid one."""
    try:
        sel = parse_budget_selector(pdb)
    except SelectorError as e:
        raise SyncError(str(e)) from None
    if sel is None:
        return []
    return [p for p in pods if sel.matches(p.metadata.labels)]


def find_scale(
    pod: core_pb2.Pod,
    ref: meta_pb2.OwnerReference,
    replica_sets: Mapping[str, apps_pb2.ReplicaSet],
    deployments: Mapping[str, apps_pb2.Deployment],
    stateful_sets: Mapping[str, apps_pb2.StatefulSet] | None = None,
) -> tuple[str, int] | None:
    """The finders (getPodReplicaSet, getPodDeployment, getPodStatefulSet), by
    "namespace/name": a ReplicaSet's (uid, spec.replicas), or, when a Deployment controls
    it, the Deployment's; a StatefulSet's; None when the reference names no such object
    (kind, group, name or uid differ)."""
    if ref.kind == "StatefulSet" and ref.api_version.split("/")[0] == "apps":
        ss = (stateful_sets or {}).get(f"{pod.metadata.namespace}/{ref.name}")
        if ss is None or ss.metadata.uid != ref.uid:
            return None
        return ss.metadata.uid, ss.spec.replicas
    if ref.kind != "ReplicaSet" or ref.api_version.split("/")[0] not in ("apps", "extensions"):
        return None
    rs = replica_sets.get(f"{pod.metadata.namespace}/{ref.name}")
    if rs is None or rs.metadata.uid != ref.uid:
        return None
    owner = controller_of(rs)
    if owner is None or owner.kind != "Deployment":
        return rs.metadata.uid, rs.spec.replicas
    if owner.api_version.split("/")[0] not in ("apps", "extensions"):
        return None
    d = deployments.get(f"{pod.metadata.namespace}/{owner.name}")
    if d is None or d.metadata.uid != owner.uid:
        return None
    return d.metadata.uid, d.spec.replicas


class DisruptionController:
    """Keeps every PodDisruptionBudget's status (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: DisruptionConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or DisruptionConfig()
        self.clock = clock or RealClock()
        self.pdb_informer = informers.get(PDBS)
        self.pod_informer = informers.get(PODS)
        self.rs_informer = informers.get(REPLICA_SETS)
        self.deployment_informer = informers.get(DEPLOYMENTS)
        self.sts_informer = informers.get(STATEFUL_SETS)
        self.queue: WorkQueue[str] = controller_queue(
            "disruption",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self._pdb_index = NamespaceIndex(self.pdb_informer, policy_pb2.PodDisruptionBudget)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        enqueue = self._enqueue_pdb
        self.pdb_informer.add_handlers(Handlers(enqueue, lambda _o, n: enqueue(n), enqueue))
        self.pod_informer.add_handlers(
            Handlers(self._pod_changed, self._pod_updated, self._pod_changed)
        )
        scaled = Handlers(on_update=self._scale_updated)
        self.rs_informer.add_handlers(scaled)
        self.deployment_informer.add_handlers(scaled)
        self.sts_informer.add_handlers(scaled)

    async def run(self, stop: asyncio.Event) -> None:
        """Sync budgets until `stop` is set."""
        try:
            if await wait_synced(
                stop,
                self.pdb_informer.synced,
                self.pod_informer.synced,
                self.rs_informer.synced,
                self.deployment_informer.synced,
                self.sts_informer.synced,
            ):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="disruption",
                )
        finally:
            self.queue.shutdown()

    # ------------------------------------------------------------------ handlers

    def _enqueue_pdb(self, pdb: Message) -> None:
        self.queue.add(object_key(pdb))

    def _pod_changed(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        for pdb in self._pdb_index.list(pod.metadata.namespace):
            if covers(pdb, pod):  # type: ignore[arg-type]
                self._enqueue_pdb(pdb)

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """The pod updates `_pod_updated` acts on: those in a namespace with a budget (a
        budget added later is synced from the store in full)."""
        return self._pdb_index.has(object_meta(new).namespace)

    def _pod_updated(self, old: Message, cur: Message) -> None:
        self._pod_changed(cur)
        if dict(object_meta(old).labels) != dict(object_meta(cur).labels):
            self._pod_changed(old)

    @staticmethod
    def _replicas(obj: Message) -> int:
        """spec.replicas of a ReplicaSet, a Deployment or a StatefulSet (the scales a
        budget counts)."""
        if isinstance(obj, (apps_pb2.Deployment, apps_pb2.StatefulSet)):
            return obj.spec.replicas
        return narrow(obj, apps_pb2.ReplicaSet).spec.replicas

    def _scale_updated(self, old: Message, cur: Message) -> None:
        """A controller's spec.replicas moved: the budgets that count its scale are stale
        (upstream waits for the pods' own events or a resync; here they are synced now)."""
        if self._replicas(old) == self._replicas(cur):
            return
        for pdb in self._pdb_index.list(object_meta(cur).namespace):
            self._enqueue_pdb(pdb)

    # ------------------------------------------------------------------ lookups

    def pods_for(self, pdb: policy_pb2.PodDisruptionBudget) -> list[core_pb2.Pod]:
        return pods_for(pdb, self._pod_index.list(pdb.metadata.namespace))

    def find_scale(self, pod: core_pb2.Pod, ref: meta_pb2.OwnerReference) -> tuple[str, int] | None:
        return find_scale(
            pod,
            ref,
            self.rs_informer.store,  # type: ignore[arg-type]
            self.deployment_informer.store,  # type: ignore[arg-type]
            self.sts_informer.store,  # type: ignore[arg-type]
        )

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """One budget: compute its status and write it if it changed (see the module)."""
        stored = self.pdb_informer.store.get(key)
        if stored is None:
            return
        pdb = narrow(stored, policy_pb2.PodDisruptionBudget)
        now = self.clock.now()
        try:
            pods = self.pods_for(pdb)
            status, recheck = compute_status(pdb, pods, self.find_scale, now)
        except SyncError as e:
            await self._write(pdb, fail_safe_status(pdb, e, now))
            return
        if status is not None:
            await self._write(pdb, status)
        if recheck is not None:
            self.queue.add_after(key, max(recheck - now, 0.0))

    async def _write(
        self, pdb: policy_pb2.PodDisruptionBudget, status: policy_pb2.PodDisruptionBudgetStatus
    ) -> None:
        new = policy_pb2.PodDisruptionBudget()
        new.CopyFrom(pdb)
        new.status.CopyFrom(status)
        try:
            await self.client.update_status(new)
        except NotFoundError:
            return
        except ConflictError:
            raise  # retried with backoff, from the informer's newer copy


__all__ = [
    "DELETION_TIMEOUT",
    "DisruptionConfig",
    "DisruptionController",
    "compute_status",
]
