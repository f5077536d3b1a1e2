"""The resourceclaim controller (upstream pkg/controller/resourceclaim): the claims pods
make from ResourceClaimTemplates, and the end of every claim's use.

Two kinds of keys share one queue:

    "pod:<ns>/<name>"    a pod with resourceClaimTemplateName entries and no claim recorded
                         for some of them: find the claim it owns for the entry (one made
                         before a crash) or create one from the template, then record all
                         of them in status.resourceClaimStatuses (one UpdateStatus). A pod
                         bound without the scheduler (nodeName set by hand) also gets its
                         allocated claims reserved for it.
    "claim:<ns>/<name>"  drop status.reservedFor entries of pods that are gone, replaced
                         (other UID) or done; on the transition to "no reservation" clear
                         the allocation (deallocate) if the scheduler made it (the
                         delete-protection finalizer says so); a claim made for a pod that
                         is done or gone is deleted.

A pod is done (isPodDone) when its phase is Succeeded or Failed, or when it is being
deleted and was never scheduled: then no container of it runs and none will. A pod being
deleted on a node keeps its claims until its kubelet is done and the pod is gone. Pods that
are done or being deleted never get new claims.

A claim whose owner pod is gone is deleted here too (upstream leaves that to the garbage
collector, which kubera now runs as well; this controller keeps doing it so a
controller-manager without the collector still frees claims). Before a pod missing from the cache is taken for gone, the
apiserver is asked (the cache may simply not have seen a new pod yet).

Invariant of the claim-making step: at most one claim per (pod UID, entry). Claims this
controller created are remembered until the informer shows them (upstream's mutation
cache), so a sync that runs again before the watch catches up finds its own claim instead
of creating a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.claims import (
    POD_CLAIM_NAME_ANNOTATION,
    ClaimNotCreatedError,
    can_be_reserved,
    claim_name,
    existing_pod_claims,
    is_for_pod,
    is_reserved_for_pod,
    pod_reference,
)
from services.api.machinery import codec
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    controller_of,
    new_controller_ref,
    split_key,
    wait_synced,
)
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
CLAIMS = BY_KIND["ResourceClaim"]
TEMPLATES = BY_KIND["ResourceClaimTemplate"]

#: The finalizer the scheduler puts on a claim it allocates (upstream resource.Finalizer);
#: removed here once the claim is deallocated and being deleted.
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"


@dataclass
class ResourceClaimConfig(WorkerSettings):
    """Settings of the resourceclaim controller."""

    workers: int = 10
    """Keys synced at once (upstream --concurrent-resourceclaim-syncs... default 10)."""

    max_backoff: float = 60.0
    """Cap of the per-key retry delay (a missing template is retried at least this often)."""


def is_pod_done(pod: core_pb2.Pod) -> bool:
    """None of the pod's containers runs or ever will (upstream isPodDone)."""
    return pod.status.phase in ("Succeeded", "Failed") or bool(
        pod.metadata.deletion_timestamp and not pod.spec.node_name
    )


def owning_pod(claim: resource_pb2.ResourceClaim) -> tuple[str, str] | None:
    """(name, uid) of the pod that controls the claim, if one does (upstream owningPod)."""
    ref = controller_of(claim)
    if ref is None or ref.kind != "Pod" or ref.api_version != "v1":
        return None
    return ref.name, ref.uid


def pending_template_entries(pod: core_pb2.Pod) -> list[core_pb2.PodResourceClaim]:
    """The pod's template entries for which no claim is recorded in its status yet."""
    recorded = {s.name for s in pod.status.resource_claim_statuses}
    return [
        e
        for e in pod.spec.resource_claims
        if e.HasField("resource_claim_template_name") and e.name not in recorded
    ]


#: How many deleted pods' UIDs are remembered (upstream maxUIDCacheEntries).
_DELETED_PODS_REMEMBERED = 500

#: A generateName base leaves room for "-" and the 5 random characters in 63 (upstream).
_MAX_BASE_LEN = 57


def generate_name(pod: str, entry: str) -> str:
    """ "<pod>-<entry>-"; when longer than 57 both parts are cut in proportion to their
    lengths (upstream: the apiserver would cut the end, losing the entry's name)."""
    base = f"{pod}-{entry}-"
    if len(base) <= _MAX_BASE_LEN:
        return base
    return (
        pod[: len(pod) * _MAX_BASE_LEN // len(base)]
        + "-"
        + entry[: len(entry) * _MAX_BASE_LEN // len(base)]
    )


def claim_from_template(
    pod: core_pb2.Pod,
    entry: core_pb2.PodResourceClaim,
    template: resource_pb2.ResourceClaimTemplate,
) -> resource_pb2.ResourceClaim:
    """The claim for one entry of `pod`: named by the apiserver from
    "<pod>-<entry>-", the template's labels and annotations plus the pod-claim-name
    annotation, its spec, controlled by the pod."""
    claim = resource_pb2.ResourceClaim(api_version=CLAIMS.api_version, kind=CLAIMS.kind)
    claim.metadata.namespace = pod.metadata.namespace
    claim.metadata.generate_name = generate_name(pod.metadata.name, entry.name)
    claim.metadata.labels.update(template.spec.metadata.labels)
    claim.metadata.annotations.update(template.spec.metadata.annotations)
    claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] = entry.name
    claim.metadata.owner_references.append(new_controller_ref(pod, PODS))
    claim.spec.CopyFrom(template.spec.spec)
    return claim


def claims_named_by(pod: core_pb2.Pod) -> list[str]:
    """Keys of the claims the pod's entries resolve to now (those that resolve)."""
    keys = []
    for entry in pod.spec.resource_claims:
        try:
            ref = claim_name(pod, entry)
        except (ClaimNotCreatedError, ValueError):
            continue
        if ref.name:
            keys.append(f"{pod.metadata.namespace}/{ref.name}")
    return keys


class ResourceClaimController:
    """Claims from templates for pods, and the cleanup of claims (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ResourceClaimConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ResourceClaimConfig()
        self.clock = clock or RealClock()
        self.pod_informer = informers.get(PODS)
        self.claim_informer = informers.get(CLAIMS)
        self.template_informer = informers.get(TEMPLATES)
        self.queue: WorkQueue[str] = controller_queue(
            "resource_claim",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        #: pod UID -> keys of the claims it controls (upstream's claimPodOwnerIndex).
        self._owned: dict[str, set[str]] = defaultdict(set)
        #: (pod UID, entry) -> claim created here and not yet seen by the informer.
        self._created: dict[tuple[str, str], resource_pb2.ResourceClaim] = {}
        #: UIDs of pods seen deleted, newest last (upstream's deletedObjects LRU): their
        #: reservations go without asking the apiserver.
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))
        self.claim_informer.add_handlers(
            Handlers(self._add_claim, self._update_claim, self._delete_claim)
        )
        self.template_informer.add_handlers(Handlers(on_add=self._add_template))

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop,
                self.pod_informer.synced,
                self.claim_informer.synced,
                self.template_informer.synced,
            ):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="resourceclaim",
                )
        finally:
            self.queue.shutdown()

    # ------------------------------------------------------------------ event handlers

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """Only pods with claims matter to this controller."""
        old, new = narrow(old, core_pb2.Pod), narrow(new, core_pb2.Pod)
        return bool(old.spec.resource_claims or new.spec.resource_claims)

    def _add_pod(self, obj: Message) -> None:
        self._pod_changed(narrow(obj, core_pb2.Pod))

    def _update_pod(self, old: Message, cur: Message) -> None:
        self._pod_changed(narrow(cur, core_pb2.Pod))

    def _pod_changed(self, pod: core_pb2.Pod) -> None:
        if not pod.spec.resource_claims:
            return
        if is_pod_done(pod) or pod.metadata.deletion_timestamp:
            # Its reservations may go now (done), or once it is gone (deleting on a node).
            self._enqueue_claims_of(pod)
            return
        if pending_template_entries(pod) or self._lost_claims(pod) or self._claims_to_reserve(pod):
            self.queue.add(f"pod:{object_key(pod)}")

    def _delete_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        self._deleted[pod.metadata.uid] = None
        if len(self._deleted) > _DELETED_PODS_REMEMBERED:
            self._deleted.popitem(last=False)
        self._enqueue_claims_of(pod)
        # Created claims the informer has not shown yet are found through _owned later.
        for k in [k for k in self._created if k[0] == pod.metadata.uid]:
            del self._created[k]

    def _enqueue_claims_of(self, pod: core_pb2.Pod) -> None:
        keys = set(claims_named_by(pod)) | self._owned.get(pod.metadata.uid, set())
        for key in keys:
            self.queue.add(f"claim:{key}")

    def _add_claim(self, obj: Message) -> None:
        claim = narrow(obj, resource_pb2.ResourceClaim)
        key = object_key(claim)
        owner = owning_pod(claim)
        if owner is not None:
            self._owned[owner[1]].add(key)
            entry = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION, "")
            self._created.pop((owner[1], entry), None)
        self.queue.add(f"claim:{key}")

    def _update_claim(self, old: Message, cur: Message) -> None:
        self._add_claim(cur)

    def _delete_claim(self, obj: Message) -> None:
        claim = narrow(obj, resource_pb2.ResourceClaim)
        owner = owning_pod(claim)
        if owner is not None:
            # Its pod may still need it (deleted by someone else): made again.
            self.queue.add(f"pod:{claim.metadata.namespace}/{owner[0]}")
            keys = self._owned.get(owner[1])
            if keys is not None:
                keys.discard(object_key(claim))
                if not keys:
                    del self._owned[owner[1]]

    def _add_template(self, obj: Message) -> None:
        """Pods that waited for this template get their claims now, not after a backoff."""
        tmpl = narrow(obj, resource_pb2.ResourceClaimTemplate)
        ns, name = tmpl.metadata.namespace, tmpl.metadata.name
        for pod in list(self.pod_informer.store.values()):
            p = narrow(pod, core_pb2.Pod)
            if p.metadata.namespace != ns or not p.spec.resource_claims:
                continue
            if any(e.resource_claim_template_name == name for e in pending_template_entries(p)):
                self.queue.add(f"pod:{object_key(p)}")

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        what, _, obj_key = key.partition(":")
        if what == "pod":
            await self.sync_pod(obj_key)
        elif what == "claim":
            await self.sync_claim(obj_key)
        else:
            log.error("resourceclaim: unknown key %r", key)

    def _find_pod_claim(
        self, pod: core_pb2.Pod, entry: core_pb2.PodResourceClaim
    ) -> resource_pb2.ResourceClaim | None:
        """The claim the pod already controls for `entry` (upstream findPodResourceClaim)."""
        made = self._created.get((pod.metadata.uid, entry.name))
        if made is not None:
            return made
        for key in self._owned.get(pod.metadata.uid, ()):
            claim = narrow_optional(self.claim_informer.store.get(key), resource_pb2.ResourceClaim)
            if claim is None:
                continue
            if claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == entry.name:
                return claim
        return None

    def _claims_to_reserve(self, pod: core_pb2.Pod) -> list[resource_pb2.ResourceClaim]:
        """The allocated claims of a pod bound without the scheduler (spec.nodeName set by
        hand) that are not reserved for it yet: the scheduler reserves the claims of the
        pods it binds, these the controller does (upstream reserveForPod)."""
        if not pod.spec.node_name:
            return []
        lookup = self.claim_informer.store.get
        return [
            claim
            for claim in existing_pod_claims(pod, lookup)  # type: ignore[arg-type]
            if claim.status.HasField("allocation")
            and not is_reserved_for_pod(pod, claim)
            and can_be_reserved(claim)
        ]

    async def sync_pod(self, key: str) -> None:
        """Claims for the pod's template entries, recorded in its status; reservations for
        a pod bound by hand."""
        pod = narrow_optional(self.pod_informer.store.get(key), core_pb2.Pod)
        if pod is None or is_pod_done(pod) or pod.metadata.deletion_timestamp:
            return
        await self._record_claims(key, pod)
        for claim in self._claims_to_reserve(pod):
            updated = narrow(codec.clone(claim), resource_pb2.ResourceClaim)
            updated.status.reserved_for.append(pod_reference(pod))
            # A stale cache (the scheduler reserved it already): Conflict, retried.
            await self.client.update_status(updated)

    def _lost_claims(self, pod: core_pb2.Pod) -> list[core_pb2.PodResourceClaim]:
        """Template entries whose recorded claim the cache does not hold as the pod's (deleted
        by someone, or taken over): upstream makes a new claim for them."""
        recorded = {
            st.name: st.resource_claim_name
            for st in pod.status.resource_claim_statuses
            if st.HasField("resource_claim_name")
        }
        made = {c.metadata.name for (uid, _), c in self._created.items() if uid == pod.metadata.uid}
        lost = []
        for e in pod.spec.resource_claims:
            name = recorded.get(e.name)
            if not e.HasField("resource_claim_template_name") or name is None or name in made:
                continue
            claim = self.claim_informer.store.get(f"{pod.metadata.namespace}/{name}")
            if claim is None or not is_for_pod(pod, claim):  # type: ignore[arg-type]
                lost.append(e)
        return lost

    async def _really_lost(self, pod: core_pb2.Pod, entry: core_pb2.PodResourceClaim) -> bool:
        """The apiserver confirms the recorded claim is gone or not the pod's (the claim
        cache may lag behind the pod cache: never make a second claim on its word)."""
        ref = claim_name(pod, entry)
        assert ref.name is not None
        try:
            claim = await self.client.get(CLAIMS, ref.name, pod.metadata.namespace)
        except NotFoundError:
            return True
        return not is_for_pod(pod, claim)  # type: ignore[arg-type]

    async def _record_claims(self, key: str, pod: core_pb2.Pod) -> None:
        entries = pending_template_entries(pod)
        for entry in self._lost_claims(pod):
            if await self._really_lost(pod, entry):
                log.info("pod %s: the claim of %s is gone; making a new one", key, entry.name)
                entries.append(entry)
        if not entries:
            return
        found: list[tuple[str, str]] = []
        for entry in entries:
            claim = self._find_pod_claim(pod, entry)
            if claim is None:
                tkey = f"{pod.metadata.namespace}/{entry.resource_claim_template_name}"
                template: resource_pb2.ResourceClaimTemplate | None = (
                    self.template_informer.store.get(tkey)  # type: ignore[assignment]
                )
                if template is None:
                    raise NotFoundError(
                        f'pod {key}: resource claim template "{entry.resource_claim_template_name}" not found'
                    )
                claim = await self.client.create(claim_from_template(pod, entry, template))
                self._created[(pod.metadata.uid, entry.name)] = claim
                log.info("pod %s: created claim %s for %s", key, claim.metadata.name, entry.name)
            found.append((entry.name, claim.metadata.name))
        updated = narrow(codec.clone(pod), core_pb2.Pod)
        statuses = {st.name: st for st in updated.status.resource_claim_statuses}
        for name, cname in found:
            if name in statuses:
                statuses[name].resource_claim_name = cname
            else:
                updated.status.resource_claim_statuses.add(name=name, resource_claim_name=cname)
        # Conflict: the pod changed meanwhile; retried from the fresh cache (claims found).
        await self.client.update_status(updated)

    async def _pod_gone_or_replaced(self, namespace: str, name: str, uid: str) -> bool | None:
        """True: no pod of that name and UID exists; False: it exists; None: it exists and is
        done (upstream's three cases, the cache first, then the apiserver)."""
        if uid in self._deleted:
            return True
        pod = narrow_optional(self.pod_informer.store.get(f"{namespace}/{name}"), core_pb2.Pod)
        if pod is None:
            # Maybe too new for the cache: only the apiserver can say it is gone.
            try:
                pod = await self.client.get(PODS, name, namespace)  # type: ignore[assignment]
            except NotFoundError:
                return True
        assert pod is not None
        if pod.metadata.uid != uid:
            return True
        return None if is_pod_done(pod) else False

    async def sync_claim(self, key: str) -> None:
        found = narrow_optional(self.claim_informer.store.get(key), resource_pb2.ResourceClaim)
        if found is None:
            return
        claim = found
        ns, name = split_key(key)
        valid: list[resource_pb2.ResourceClaimConsumerReference] = []
        for ref in claim.status.reserved_for:
            if ref.api_group == "" and ref.resource == "pods":
                if await self._pod_gone_or_replaced(ns, ref.name, ref.uid) is False:
                    valid.append(ref)
                continue
            valid.append(ref)  # another kind of consumer: not ours to judge
        has_finalizer = DELETE_PROTECTION_FINALIZER in claim.metadata.finalizers
        if len(valid) < len(claim.status.reserved_for):
            updated = narrow(codec.clone(claim), resource_pb2.ResourceClaim)
            del updated.status.reserved_for[:]
            updated.status.reserved_for.extend(valid)
            if not valid and has_finalizer:
                # The last consumer is gone: release the devices for the next one. Only on
                # this transition: a claim allocated but not yet reserved is left alone.
                # Only an allocation the scheduler made (it adds the finalizer with it) is
                # ours to clear; any other belongs to whoever wrote it (upstream's
                # builtinAllocation check).
                updated.status.ClearField("allocation")
                updated.status.ClearField("devices")  # the drivers' reports go with it
            claim = await self.client.update_status(updated)
            if has_finalizer and not claim.status.HasField("allocation"):
                await self._remove_finalizer(claim)
        elif has_finalizer and claim.metadata.deletion_timestamp and not valid:
            if claim.status.HasField("allocation"):
                updated = narrow(codec.clone(claim), resource_pb2.ResourceClaim)
                updated.status.ClearField("allocation")
                updated.status.ClearField("devices")
                claim = await self.client.update_status(updated)
            await self._remove_finalizer(claim)
        if valid:
            return
        owner = owning_pod(claim)
        if owner is None:
            return
        verdict = await self._pod_gone_or_replaced(ns, owner[0], owner[1])
        if verdict is False:
            return
        log.info(
            "deleting claim %s: its pod %s is %s", key, owner[0], "gone" if verdict else "done"
        )
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.client.delete(CLAIMS, name, ns, uid=claim.metadata.uid)

    async def _remove_finalizer(self, claim: resource_pb2.ResourceClaim) -> None:
        updated = narrow(codec.clone(claim), resource_pb2.ResourceClaim)
        keep = [f for f in updated.metadata.finalizers if f != DELETE_PROTECTION_FINALIZER]
        del updated.metadata.finalizers[:]
        updated.metadata.finalizers.extend(keep)
        with contextlib.suppress(NotFoundError):
            await self.client.update(updated)


__all__ = [
    "DELETE_PROTECTION_FINALIZER",
    "ResourceClaimConfig",
    "ResourceClaimController",
    "claim_from_template",
    "generate_name",
    "is_pod_done",
    "owning_pod",
]
