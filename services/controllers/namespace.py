"""The namespace controller (upstream pkg/controller/namespace: namespace_controller.go and
deletion/namespaced_resources_deleter.go, status_condition_utils.go): empties a deleted
namespace and then releases it.

The apiserver only marks a deleted namespace (deletionTimestamp, phase Terminating,
services/apiserver/deletion.py); its "kubernetes" spec finalizer holds it. This
controller queues every namespace that has a deletionTimestamp, 5 s later
(namespaceDeletionGracePeriod: other apiservers see the deletion, last creates land),
and a sync of one namespace runs upstream's deleter:

    get the namespace ── gone, or no deletionTimestamp ──────────────────► done
        │ phase not Terminating: UpdateStatus it
        │ spec.finalizers empty (finalized) ──────────────────────────────► done
        ▼
    for every namespaced kind (the "discovery"): estimate (pods: the longest
    terminationGracePeriodSeconds of its non-terminal pods, 0 once that long has passed
    since the deletion), delete each object (Background propagation), list again:
        none left ──► 0 · some with finalizers ──► estimate, or 15 s without one
        some left, no finalizers, no estimate ──► error "unexpected items still remain"
        │ the five conditions (NamespaceDeletionDiscoveryFailure, ...GroupVersionParsing-
        │ Failure, ...ContentFailure, NamespaceContentRemaining, NamespaceFinalizers-
        │ Remaining) written with UpdateStatus when they changed
        ├─ an error ─────────────────► requeued with the per-key backoff
        ├─ estimate > 0 ─────────────► requeued after estimate / 2 + 1 seconds
        ▼
    namespaces/finalize without "kubernetes" (the apiserver removes the namespace once
    spec and metadata finalizers are empty)

Every delay is on the controllers' clock (the time scale applies). One addition to
upstream: a pod deleted from a terminating namespace queues the namespace at once, so a
`kubectl delete namespace` returns as soon as its pods are gone instead of at the next
estimate (upstream waits for it). Without this controller (`kubera up --no-controllers`)
a deleted namespace stays Terminating, as upstream's does without kube-controller-manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from services.api.machinery.kubeobject import narrow, object_meta
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339
from services.controllers.controller_utils import wait_synced
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

NAMESPACES, PODS = BY_KIND["Namespace"], BY_KIND["Pod"]
#: v1.FinalizerKubernetes: the spec finalizer this controller owns.
FINALIZER_KUBERNETES = "kubernetes"
#: v1.NamespaceTerminating.
PHASE_TERMINATING = "Terminating"
#: The wait assumed for objects held by finalizers (upstream's finalizerEstimateSeconds).
FINALIZER_ESTIMATE_SECONDS = 15

#: The condition types the deleter keeps, in upstream's order (conditionTypes).
CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
#: Reason and message of each condition when nothing is wrong (okReasons, okMessages).
CONDITIONS_OK = {
    "NamespaceDeletionDiscoveryFailure": (
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
}


@dataclass
class NamespaceConfig(WorkerSettings):
    """Settings of the namespace controller."""

    workers: int = 10
    """Namespaces synced at once (--concurrent-namespace-syncs)."""

    deletion_grace_period: float = 5.0
    """Seconds between seeing a namespace's deletion and emptying it (upstream's
    namespaceDeletionGracePeriod)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.deletion_grace_period < 0:
            raise ValueError(
                f"deletion_grace_period must not be negative, got {self.deletion_grace_period}"
            )


class ResourcesRemainingError(Exception):
    """Content is still going; look again in about `estimate` seconds."""

    def __init__(self, estimate: int) -> None:
        super().__init__(
            f"some content remains in the namespace, estimate {estimate} seconds before it is removed"
        )
        self.estimate = estimate


class ContentError(Exception):
    """What failed while deleting one kind's content (the condition's message is this)."""


def gvr_string(kind: Kind) -> str:
    """schema.GroupVersionResource's String(): "apps/v1, Resource=deployments"."""
    return f"{kind.group}/{kind.version}, Resource={kind.resource}"


def aggregate(errors: Sequence[Exception]) -> str:
    """utilerrors.NewAggregate's message: the one error, or "[a, b]"."""
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"


def requeue_after(estimate: int) -> int:
    """Seconds until a namespace with content remaining is looked at again."""
    return estimate // 2 + 1


# ============================================================= conditions (pure)


@dataclass
class ConditionUpdater:
    """upstream's namespaceConditionUpdater: the failures of one sync, turned into the
    namespace's five conditions by `update`."""

    now: str
    new: list[core_pb2.NamespaceCondition] = field(default_factory=list)
    content_errors: list[str] = field(default_factory=list)

    def _add(self, ctype: str, reason: str, message: str) -> None:
        self.new.append(
            core_pb2.NamespaceCondition(
                type=ctype,
                status="True",
                reason=reason,
                message=message,
                last_transition_time=self.now,
            )
        )

    def discovery_failed(self, err: Exception) -> None:
        self._add("NamespaceDeletionDiscoveryFailure", "DiscoveryFailed", str(err))

    def group_version_failed(self, err: Exception) -> None:
        self._add(
            "NamespaceDeletionGroupVersionParsingFailure", "GroupVersionParsingFailed", str(err)
        )

    def delete_content_failed(self, err: Exception) -> None:
        self.content_errors.append(str(err))

    def content_totals(self, remaining: dict[str, int], finalizers: dict[str, int]) -> None:
        """`remaining`: "resource.group" -> objects left; `finalizers`: finalizer -> objects."""
        for ctype, reason, intro, counts, item in (
            (
                "NamespaceContentRemaining",
                "SomeResourcesRemain",
                "Some resources are remaining: ",
                remaining,
                "{} has {} resource instances",
            ),
            (
                "NamespaceFinalizersRemaining",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: ",
                finalizers,
                "{} in {} resource instances",
            ),
        ):
            if counts:
                parts = sorted(item.format(k, n) for k, n in counts.items() if n)
                self._add(ctype, reason, intro + ", ".join(parts))

    def update(self, status: core_pb2.NamespaceStatus) -> bool:
        """Write the conditions into `status`; whether anything changed. A condition keeps
        its lastTransitionTime unless its status changes (updateConditions)."""
        new = {c.type: c for c in self.new}
        if "NamespaceDeletionContentFailure" not in new and self.content_errors:
            msgs = sorted(self.content_errors)
            self._add(
                "NamespaceDeletionContentFailure",
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(msgs)} remaining: {', '.join(msgs)}",
            )
            new["NamespaceDeletionContentFailure"] = self.new[-1]
        changed = False
        for ctype in CONDITION_TYPES:
            cond = new.get(ctype)
            if cond is None:
                reason, message = CONDITIONS_OK[ctype]
                cond = core_pb2.NamespaceCondition(
                    type=ctype,
                    status="False",
                    reason=reason,
                    message=message,
                    last_transition_time=self.now,
                )
            old = next((c for c in status.conditions if c.type == ctype), None)
            if old is None:
                status.conditions.append(cond)
                changed = True
            elif (old.status, old.reason, old.message) != (cond.status, cond.reason, cond.message):
                if old.status != cond.status:
                    old.last_transition_time = self.now
                old.status, old.reason, old.message = cond.status, cond.reason, cond.message
                changed = True
        return changed


# ============================================================= the controller


def namespaced_kinds() -> Sequence[Kind]:
    """What the deleter empties: every namespaced kind the apiserver serves (upstream's
    discovery, filtered to resources with the delete verb; every kubera kind has it)."""
    return [k for k in KINDS if k.namespaced]


@dataclass
class _Content:
    """One kind's outcome (gvrDeletionMetadata)."""

    estimate: int = 0
    remaining: int = 0
    finalizers: dict[str, int] = field(default_factory=dict)


class NamespaceController:
    """Empties terminating namespaces and drops their "kubernetes" finalizer."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: NamespaceConfig | None = None,
        clock: Clock | None = None,
        discover: Callable[[], tuple[Sequence[Kind], Exception | None]] | None = None,
    ) -> None:
        self.client = client
        self.config = config or NamespaceConfig()
        self.clock = clock or RealClock()
        #: The kinds to empty, and a discovery error to report beside them.
        self.discover = discover or (lambda: (namespaced_kinds(), None))
        self.ns_informer = informers.get(NAMESPACES)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = controller_queue(
            "namespace",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.ns_informer.add_handlers(
            Handlers(self._ns_changed, lambda _o, n: self._ns_changed(n), None)
        )
        self.pod_informer.add_handlers(Handlers(None, None, self._pod_deleted))

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, self.ns_informer.synced, self.pod_informer.synced):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="namespace",
                )
        finally:
            self.queue.shutdown()

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """Only pod deletions matter here."""
        return False

    def _ns_changed(self, ns: Message) -> None:
        meta = object_meta(ns)
        if meta.deletion_timestamp:
            self.queue.add_after(meta.name, self.config.deletion_grace_period)

    def _pod_deleted(self, pod: Message) -> None:
        ns = self.ns_informer.store.get(object_meta(pod).namespace)
        if ns is not None and object_meta(ns).deletion_timestamp:
            self.queue.add(object_meta(ns).name)

    async def sync(self, name: str) -> None:
        """One pass of the deleter; content still going comes back after its estimate."""
        try:
            await self.delete(name)
        except ResourcesRemainingError as e:
            wait = requeue_after(e.estimate)
            log.debug("content remaining in namespace %s, waiting %d seconds", name, wait)
            self.queue.add_after(name, wait)

    # ------------------------------------------------------------------ the deleter

    async def delete(self, name: str) -> None:
        """namespacedResourcesDeleter.Delete: raises ResourcesRemainingError while content
        is going, any other error when a step failed (the key then backs off)."""
        try:
            ns = narrow(await self.client.get(NAMESPACES, name), core_pb2.Namespace)
        except NotFoundError:
            return
        if not ns.metadata.deletion_timestamp:
            return
        try:
            ns = await self._retry_on_conflict(ns, self._mark_terminating)
        except NotFoundError:
            return
        if not ns.metadata.deletion_timestamp or not ns.spec.finalizers:
            return
        estimate = await self.delete_all_content(ns)
        if estimate > 0:
            raise ResourcesRemainingError(estimate)
        try:
            await self._retry_on_conflict(ns, self._finalize)
        except NotFoundError:
            return

    async def _retry_on_conflict(
        self,
        ns: core_pb2.Namespace,
        fn: Callable[[core_pb2.Namespace], Awaitable[core_pb2.Namespace]],
    ) -> core_pb2.Namespace:
        """retryOnConflictError: `fn` again on the namespace read anew after a conflict;
        an error if the namespace was replaced (another UID) meanwhile."""
        latest = ns
        while True:
            try:
                return await fn(latest)
            except ConflictError:
                prev = latest
                latest = narrow(
                    await self.client.get(NAMESPACES, ns.metadata.name), core_pb2.Namespace
                )
                if prev.metadata.uid != latest.metadata.uid:
                    raise RuntimeError("namespace uid has changed across retries") from None

    async def _mark_terminating(self, ns: core_pb2.Namespace) -> core_pb2.Namespace:
        """updateNamespaceStatusFunc: phase Terminating once deleted."""
        if not ns.metadata.deletion_timestamp or ns.status.phase == PHASE_TERMINATING:
            return ns
        new = codec.clone(ns)
        new.status.phase = PHASE_TERMINATING
        return await self.client.update_status(new)

    async def _finalize(self, ns: core_pb2.Namespace) -> core_pb2.Namespace:
        """finalizeNamespace: spec.finalizers without "kubernetes" (the rest sorted)."""
        new = codec.clone(ns)
        kept = sorted({f for f in ns.spec.finalizers if f != FINALIZER_KUBERNETES})
        new.spec.finalizers[:] = kept
        return await self.client.finalize(new)

    async def delete_all_content(self, ns: core_pb2.Namespace) -> int:
        """deleteAllContent: every kind emptied, the conditions written; the longest
        estimate of what is still going. Raises ContentError naming what failed."""
        updater = ConditionUpdater(now=rfc3339(self.clock.now()))
        errors: list[Exception] = []
        kinds, err = self.discover()
        if err is not None:
            errors.append(err)
            updater.discovery_failed(err)
        deleted_at = parse_rfc3339(ns.metadata.deletion_timestamp)
        estimate = 0
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for kind in kinds:
            content, failed = await self._delete_kind(kind, ns.metadata.name, deleted_at)
            if failed is not None:
                errors.append(failed)
                updater.delete_content_failed(failed)
            estimate = max(estimate, content.estimate)
            if content.remaining:
                remaining[f"{kind.resource}.{kind.group}"] = content.remaining
                for f, n in content.finalizers.items():
                    finalizers[f] = finalizers.get(f, 0) + n
        updater.content_totals(remaining, finalizers)
        if updater.update(ns.status):
            try:
                await self.client.update_status(ns)
            except Exception as e:  # noqa: BLE001 - upstream logs it and goes on
                log.warning(
                    "couldn't update status condition for namespace %s: %s", ns.metadata.name, e
                )
        if errors:
            raise ContentError(aggregate(errors))
        return estimate

    async def _delete_kind(
        self, kind: Kind, namespace: str, deleted_at: float
    ) -> tuple[_Content, Exception | None]:
        """deleteAllContentForGroupVersionResource: what is left of `kind`, and what failed."""
        estimate = 0
        try:
            if kind is PODS:
                estimate = await self._pods_estimate(namespace, deleted_at)
            items, _ = await self.client.list(kind, namespace=namespace)
            for item in items:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(
                        kind, object_meta(item).name, namespace, propagation_policy="Background"
                    )
            left, _ = await self.client.list(kind, namespace=namespace)
        except Exception as e:  # noqa: BLE001 - one kind's failure is reported, not fatal
            return _Content(estimate=estimate), e
        if not left:
            return _Content(), None
        held: dict[str, int] = {}
        for item in left:
            for f in object_meta(item).finalizers:
                held[f] = held.get(f, 0) + 1
        if estimate:
            return _Content(estimate, len(left), held), None
        if held:
            return _Content(FINALIZER_ESTIMATE_SECONDS, len(left), held), None
        return _Content(0, len(left)), ContentError(
            f"unexpected items still remain in namespace: {namespace} for gvr: {gvr_string(kind)}"
        )

    async def _pods_estimate(self, namespace: str, deleted_at: float) -> int:
        """estimateGracefulTermination for pods: the longest grace period of the
        namespace's non-terminal pods, 0 once that long has passed since the deletion."""
        pods, _ = await self.client.list(PODS, namespace=namespace)
        estimate = 0
        for obj in pods:
            pod = narrow(obj, core_pb2.Pod)
            if pod.status.phase in ("Succeeded", "Failed"):
                continue
            if pod.spec.HasField("termination_grace_period_seconds"):
                estimate = max(estimate, pod.spec.termination_grace_period_seconds)
        if self.clock.now() - deleted_at >= estimate:
            return 0
        return estimate


__all__ = [
    "CONDITIONS_OK",
    "CONDITION_TYPES",
    "ConditionUpdater",
    "FINALIZER_ESTIMATE_SECONDS",
    "NamespaceConfig",
    "NamespaceController",
    "ResourcesRemainingError",
    "aggregate",
    "gvr_string",
    "namespaced_kinds",
    "requeue_after",
]
