"""The resourceclaim controller (upstream pkg/controller/resourceclaim): the claims pods
make from ResourceClaimTemplates, and the end of every claim's use.

Two kinds of keys share one queue:

    "pod:<ns>/<name>"    a pod with resourceClaimTemplateName entries and no claim recorded
                         for some of them: find the claim it owns for the entry (one made
                         before a crash) or create one from the template, then record all
                         of them in status.resourceClaimStatuses (one UpdateStatus). A pod
                         bound without the scheduler (nodeName set by hand) also gets its
                         allocated claims reserved for it.
    "podgroup:<ns>/<name>"  a PodGroup (scheduling.k8s.io) with resourceClaimTemplateName
                         entries and no claim recorded for some of them: the same for the
                         group (a claim "<group>-<entry>-…" owned by the PodGroup, recorded
                         in the group's status.resourceClaimStatuses).
    "claim:<ns>/<name>"  drop status.reservedFor entries of pods that are gone, replaced
                         (other UID) or done, and of PodGroups that are gone; on the
                         transition to "no reservation" clear the allocation (deallocate)
                         if the scheduler made it (the delete-protection finalizer says
                         so); a claim made for a pod that is done or gone, or for a
                         PodGroup that is gone, is deleted.

PodGroup claims (DRAWorkloadResourceClaims; services/api/dra/claims.py): a pod's template
entry that matches an entry of its PodGroup gets no claim of its own: the group's claim is
recorded in the pod's status once the group's is (a pod waits while its PodGroup is not
known, or its claim not made yet; the group's update brings it back). A pod bound by hand
reserves such a claim for its PodGroup, not for itself. A PodGroup's reservation is held
until the PodGroup is gone: its pods finishing do not release it.

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

from protos.kubera.v1 import core_pb2, resource_pb2, schedulingv1beta1_pb2
from services.api.dra.claims import (
    POD_CLAIM_NAME_ANNOTATION,
    ClaimNotCreatedError,
    can_be_reserved,
    claim_name,
    existing_pod_claims,
    is_for_pod,
    is_pod_group_reference,
    is_reserved_for_pod,
    pod_group_claim_name,
    pod_group_entry,
    pod_group_reference,
    pod_reference,
)
from services.api.machinery import codec
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP, Kind
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
POD_GROUPS = BY_KIND[SCHEDULING_POD_GROUP]
PodGroup = schedulingv1beta1_pb2.SchedulingPodGroup
#: A pod's or a PodGroup's claim entry (both have name and resourceClaimTemplateName).
Entry = core_pb2.PodResourceClaim | schedulingv1beta1_pb2.PodGroupResourceClaim

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


def owning_pod_group(claim: resource_pb2.ResourceClaim) -> tuple[str, str] | None:
    """(name, uid) of the PodGroup that controls the claim, if one does."""
    ref = controller_of(claim)
    if ref is None or ref.kind != POD_GROUPS.kind or ref.api_version != POD_GROUPS.api_version:
        return None
    return ref.name, ref.uid


def _owner_uid(claim: resource_pb2.ResourceClaim) -> str | None:
    owner = owning_pod(claim) or owning_pod_group(claim)
    return owner[1] if owner is not None else None


def pending_template_entries(obj: core_pb2.Pod | PodGroup) -> list[Entry]:
    """The template entries of a pod (or PodGroup) for which no claim is recorded in its
    status yet."""
    recorded = {s.name for s in obj.status.resource_claim_statuses}
    return [
        e
        for e in obj.spec.resource_claims
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
    owner: core_pb2.Pod | PodGroup,
    entry: Entry,
    template: resource_pb2.ResourceClaimTemplate,
    owner_kind: Kind = PODS,
) -> resource_pb2.ResourceClaim:
    """The claim for one entry of a pod (or of a PodGroup, `owner_kind` POD_GROUPS): named
    by the apiserver from "<owner>-<entry>-", the template's labels and annotations plus
    the pod-claim-name annotation, its spec, controlled by the owner."""
    claim = resource_pb2.ResourceClaim(api_version=CLAIMS.api_version, kind=CLAIMS.kind)
    claim.metadata.namespace = owner.metadata.namespace
    claim.metadata.generate_name = generate_name(owner.metadata.name, entry.name)
    claim.metadata.labels.update(template.spec.metadata.labels)
    claim.metadata.annotations.update(template.spec.metadata.annotations)
    claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] = entry.name
    claim.metadata.owner_references.append(new_controller_ref(owner, owner_kind))
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
    """Claims from templates for pods and PodGroups, and the cleanup of claims (see the
    module docstring)."""

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
        self.group_informer = informers.get(POD_GROUPS)
        self.queue: WorkQueue[str] = controller_queue(
            "resource_claim",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        #: pod (or PodGroup) UID -> keys of the claims it controls (upstream's
        #: claimPodOwnerIndex).
        self._owned: dict[str, set[str]] = defaultdict(set)
        #: (owner UID, entry) -> claim created here and not yet seen by the informer.
        self._created: dict[tuple[str, str], resource_pb2.ResourceClaim] = {}
        #: UIDs of pods seen deleted, newest last (upstream's deletedObjects LRU): their
        #: reservations go without asking the apiserver.
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))
        self.claim_informer.add_handlers(
            Handlers(self._add_claim, self._update_claim, self._delete_claim)
        )
        self.template_informer.add_handlers(Handlers(on_add=self._add_template))
        self.group_informer.add_handlers(
            Handlers(self._add_group, self._update_group, self._delete_group)
        )

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop,
                self.pod_informer.synced,
                self.claim_informer.synced,
                self.template_informer.synced,
                self.group_informer.synced,
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
        owner = _owner_uid(claim)
        if owner is not None:
            self._owned[owner].add(key)
            entry = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION, "")
            self._created.pop((owner, entry), None)
        self.queue.add(f"claim:{key}")

    def _update_claim(self, old: Message, cur: Message) -> None:
        self._add_claim(cur)

    def _delete_claim(self, obj: Message) -> None:
        claim = narrow(obj, resource_pb2.ResourceClaim)
        pod, group = owning_pod(claim), owning_pod_group(claim)
        owner = pod or group
        if owner is None:
            return
        # Its pod (or PodGroup) may still need it (deleted by someone else): made again.
        self.queue.add(f"{'pod' if pod else 'podgroup'}:{claim.metadata.namespace}/{owner[0]}")
        keys = self._owned.get(owner[1])
        if keys is not None:
            keys.discard(object_key(claim))
            if not keys:
                del self._owned[owner[1]]

    def _add_template(self, obj: Message) -> None:
        """Pods and PodGroups that waited for this template get their claims now, not after
        a backoff."""
        tmpl = narrow(obj, resource_pb2.ResourceClaimTemplate)
        ns, name = tmpl.metadata.namespace, tmpl.metadata.name
        for what, informer in (("pod", self.pod_informer), ("podgroup", self.group_informer)):
            for o in list(informer.store.values()):
                if o.metadata.namespace != ns or not o.spec.resource_claims:  # type: ignore[attr-defined]
                    continue
                pending = pending_template_entries(o)  # type: ignore[arg-type]
                if any(e.resource_claim_template_name == name for e in pending):
                    self.queue.add(f"{what}:{object_key(o)}")

    def _add_group(self, obj: Message) -> None:
        self._group_changed(narrow(obj, PodGroup))

    def _update_group(self, old: Message, cur: Message) -> None:
        self._group_changed(narrow(cur, PodGroup))

    def _group_changed(self, pg: PodGroup) -> None:
        if not pg.spec.resource_claims or pg.metadata.deletion_timestamp:
            return
        if pending_template_entries(pg) or self._lost_claims(pg):
            self.queue.add(f"podgroup:{object_key(pg)}")
        # Its pods that wait for the group (its claims, or the group itself) go on.
        for o in list(self.pod_informer.store.values()):
            pod = narrow(o, core_pb2.Pod)
            if (
                pod.metadata.namespace == pg.metadata.namespace
                and pod.spec.scheduling_group.pod_group_name == pg.metadata.name
                and pending_template_entries(pod)
            ):
                self.queue.add(f"pod:{object_key(pod)}")

    def _delete_group(self, obj: Message) -> None:
        """The claims reserved for the PodGroup, or made for it, are looked at again."""
        pg = narrow(obj, PodGroup)
        uid = pg.metadata.uid
        keys = set(self._owned.get(uid, set()))
        for key, o in list(self.claim_informer.store.items()):
            claim = narrow(o, resource_pb2.ResourceClaim)
            if any(r.uid == uid for r in claim.status.reserved_for):
                keys.add(key)
        for key in keys:
            self.queue.add(f"claim:{key}")
        for k in [k for k in self._created if k[0] == uid]:
            del self._created[k]

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        what, _, obj_key = key.partition(":")
        if what == "pod":
            await self.sync_pod(obj_key)
        elif what == "podgroup":
            await self.sync_pod_group(obj_key)
        elif what == "claim":
            await self.sync_claim(obj_key)
        else:
            log.error("resourceclaim: unknown key %r", key)

    def _find_owned_claim(self, owner_uid: str, entry: str) -> resource_pb2.ResourceClaim | None:
        """The claim a pod (or PodGroup) already controls for `entry` (upstream
        findPodResourceClaim)."""
        made = self._created.get((owner_uid, entry))
        if made is not None:
            return made
        for key in self._owned.get(owner_uid, ()):
            claim = narrow_optional(self.claim_informer.store.get(key), resource_pb2.ResourceClaim)
            if claim is None:
                continue
            if claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == entry:
                return claim
        return None

    def _pod_group(self, pod: core_pb2.Pod) -> PodGroup | None:
        group = pod.spec.scheduling_group.pod_group_name
        if not group:
            return None
        return narrow_optional(
            self.group_informer.store.get(f"{pod.metadata.namespace}/{group}"), PodGroup
        )

    def _consumer(
        self, pod: core_pb2.Pod, claim: resource_pb2.ResourceClaim
    ) -> resource_pb2.ResourceClaimConsumerReference:
        """Whom the pod's use of `claim` reserves it for: the pod's PodGroup when one of the
        pod's entries that names the claim is the group's, else the pod."""
        pg = self._pod_group(pod)
        if pg is not None:
            for entry in pod.spec.resource_claims:
                if (
                    pod_group_entry(pg, entry) is not None
                    and pod_group_claim_name(pg, entry.name) == claim.metadata.name
                ):
                    return pod_group_reference(pg)
        return pod_reference(pod)

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
            updated.status.reserved_for.append(self._consumer(pod, claim))
            # A stale cache (the scheduler reserved it already): Conflict, retried.
            await self.client.update_status(updated)

    async def sync_pod_group(self, key: str) -> None:
        """Claims for the PodGroup's template entries, recorded in its status."""
        pg = narrow_optional(self.group_informer.store.get(key), PodGroup)
        if pg is None or pg.metadata.deletion_timestamp:
            return
        await self._record_claims(key, pg, POD_GROUPS)

    def _lost_claims(self, obj: core_pb2.Pod | PodGroup) -> list[Entry]:
        """Template entries whose recorded claim the cache does not hold as the pod's (or
        the PodGroup's): deleted by someone, or taken over; upstream makes a new claim."""
        recorded = {
            st.name: st.resource_claim_name
            for st in obj.status.resource_claim_statuses
            if st.HasField("resource_claim_name")
        }
        uid = obj.metadata.uid
        made = {c.metadata.name for (u, _), c in self._created.items() if u == uid}
        lost: list[Entry] = []
        for e in obj.spec.resource_claims:
            name = recorded.get(e.name)
            if not e.HasField("resource_claim_template_name") or name is None or name in made:
                continue
            claim = self.claim_informer.store.get(f"{obj.metadata.namespace}/{name}")
            if claim is None or not self._is_for(obj, claim):  # type: ignore[arg-type]
                lost.append(e)
        return lost

    @staticmethod
    def _is_for(obj: core_pb2.Pod | PodGroup, claim: resource_pb2.ResourceClaim) -> bool:
        if isinstance(obj, core_pb2.Pod):
            return is_for_pod(obj, claim)
        return any(
            r.uid == obj.metadata.uid and r.controller for r in claim.metadata.owner_references
        )

    async def _really_lost(self, obj: core_pb2.Pod | PodGroup, name: str) -> bool:
        """The apiserver confirms the recorded claim `name` is gone or not the owner's (the
        claim cache may lag behind: never make a second claim on its word)."""
        try:
            claim = await self.client.get(CLAIMS, name, obj.metadata.namespace)
        except NotFoundError:
            return True
        return not self._is_for(obj, claim)  # type: ignore[arg-type]

    async def _record_claims(
        self, key: str, obj: core_pb2.Pod | PodGroup, kind: Kind = PODS
    ) -> None:
        """Claims for the template entries of a pod (`kind` PODS) or a PodGroup, recorded in
        its status.resourceClaimStatuses with one UpdateStatus. A pod's entry that is its
        PodGroup's records the group's claim (made by the group's sync)."""
        entries = pending_template_entries(obj)
        recorded = {st.name: st.resource_claim_name for st in obj.status.resource_claim_statuses}
        for entry in self._lost_claims(obj):
            if await self._really_lost(obj, recorded[entry.name]):
                log.info("%s: the claim of %s is gone; making a new one", key, entry.name)
                entries.append(entry)
        if not entries:
            return
        pg = self._pod_group(obj) if isinstance(obj, core_pb2.Pod) else None
        if (
            isinstance(obj, core_pb2.Pod)
            and obj.spec.scheduling_group.pod_group_name
            and pg is None
        ):
            # Which entries are the group's is not known yet (the group's arrival brings the
            # pod back); upstream's scheduler holds such a pod back as well.
            return
        found: list[tuple[str, str]] = []
        for entry in entries:
            if pg is not None and pod_group_entry(pg, entry) is not None:  # type: ignore[arg-type]
                shared = pod_group_claim_name(pg, entry.name)
                if shared is not None:
                    found.append((entry.name, shared))
                continue  # the group's claim is not made yet: the group's update brings it
            claim = self._find_owned_claim(obj.metadata.uid, entry.name)
            if claim is None:
                tkey = f"{obj.metadata.namespace}/{entry.resource_claim_template_name}"
                template: resource_pb2.ResourceClaimTemplate | None = (
                    self.template_informer.store.get(tkey)  # type: ignore[assignment]
                )
                if template is None:
                    raise NotFoundError(
                        f'{key}: resource claim template "{entry.resource_claim_template_name}" not found'
                    )
                claim = await self.client.create(claim_from_template(obj, entry, template, kind))
                self._created[(obj.metadata.uid, entry.name)] = claim
                log.info("%s: created claim %s for %s", key, claim.metadata.name, entry.name)
            found.append((entry.name, claim.metadata.name))
        if not found:
            return
        updated = codec.clone(obj)
        statuses = {st.name: st for st in updated.status.resource_claim_statuses}  # type: ignore[attr-defined]
        for name, cname in found:
            if name in statuses:
                statuses[name].resource_claim_name = cname
            else:
                updated.status.resource_claim_statuses.add(name=name, resource_claim_name=cname)  # type: ignore[attr-defined]
        # Conflict: the object changed meanwhile; retried from the fresh cache (claims found).
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

    async def _group_gone(self, namespace: str, name: str, uid: str) -> bool:
        """No PodGroup of that name and UID exists (the cache first, then the apiserver)."""
        pg = self.group_informer.store.get(f"{namespace}/{name}")
        if pg is None:
            try:
                pg = await self.client.get(POD_GROUPS, name, namespace)
            except NotFoundError:
                return True
        return bool(pg.metadata.uid != uid)  # type: ignore[attr-defined]

    async def _still_used(self, ns: str, ref: resource_pb2.ResourceClaimConsumerReference) -> bool:
        if ref.api_group == "" and ref.resource == "pods":
            return await self._pod_gone_or_replaced(ns, ref.name, ref.uid) is False
        if is_pod_group_reference(ref):
            return not await self._group_gone(ns, ref.name, ref.uid)
        return True  # another kind of consumer: not ours to judge

    async def sync_claim(self, key: str) -> None:
        found = narrow_optional(self.claim_informer.store.get(key), resource_pb2.ResourceClaim)
        if found is None:
            return
        claim = found
        ns, name = split_key(key)
        valid = [ref for ref in claim.status.reserved_for if await self._still_used(ns, ref)]
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
        group = owning_pod_group(claim)
        if group is not None:
            if await self._group_gone(ns, group[0], group[1]):
                log.info("deleting claim %s: its PodGroup %s is gone", key, group[0])
                with contextlib.suppress(NotFoundError, ConflictError):
                    await self.client.delete(CLAIMS, name, ns, uid=claim.metadata.uid)
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
    "owning_pod_group",
]
