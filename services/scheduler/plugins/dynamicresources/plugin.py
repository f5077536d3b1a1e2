"""DynamicResources: a pod's ResourceClaims are allocated before it is bound (upstream
plugins/dynamicresources, DRA as GA in 1.34, structured parameters only).

    PreEnqueue   every claim the pod names exists (a template's claim: made, and owned by
                 the pod), none is being deleted; else the pod waits, gated
    PreFilter    gather the claims (Skip without any); an allocated claim must still take
                 the pod (reservedFor < 256) and restricts nodes to its nodeSelector; an
                 unallocated one must not be in flight for another pod, and its classes
                 must exist; the Allocator is set up once for all nodes
    Filter       allocated claims: the node matches the allocation's nodeSelector;
                 unallocated ones: the Allocator finds devices on the node (kept per node)
    Score        prefer the node where a prioritized list got an earlier alternative
                 (scoring.py; NormalizeScore scales the best to 100)
    PostFilter   deallocate an allocated claim that kept the pod off nodes (its nodeSelector,
                 or its binding failed or timed out) and nobody else uses (reservedFor
                 empty, or only this pod): allocation, reservedFor and devices cleared
    Reserve      the chosen node's allocations become pending in the ClaimTracker, so no
                 other pod's Filter can take those devices
    Unreserve    drop the pending allocations; take the pod out of reservedFor where PreBind
                 already wrote it (the allocation stays: the resourceclaim controller
                 deallocates a claim nobody reserves)
    PreBind      write status.allocation (after adding the finalizer; allocationTimestamp
                 set at Reserve when a device has binding conditions) and append the pod to
                 status.reservedFor, resourceVersion-checked, refreshed and retried on
                 conflict; then wait for the devices' binding conditions (bindingconditions.py)

PodGroup claims (DRAWorkloadResourceClaims; claims.py): a claim a pod names through an
entry of its scheduling.k8s.io PodGroup is reserved for the PodGroup by its first pod; the
others find it reserved and write nothing, so any number share it. Meanwhile siblings
take the first pod's pending allocation as allocated (gang.py).

Extended resources backed by DRA (DRAExtendedResource): a claim the plugin makes for the
pod's extended resources that a DeviceClass maps joins the pod's claims at every extension
point (extended.py).

Every rejection is UnschedulableAndUnresolvable, as upstream's statusUnschedulable: so
DefaultPreemption never picks a node where the pod's claims cannot be allocated, and
evicting victims never frees devices (their claims stay allocated until the controller
deallocates them).

Differences from upstream: the Allocator runs synchronously, so FilterTimeout cannot cut a
search short; a node whose search took longer than FilterTimeout is rejected afterwards
("timed out trying to allocate devices") so slow searches show up and are not retried by
Reserve. Unreserve's reservation removal is a status update (get, edit, update with the
resourceVersion, retried on conflict) run in the background, where upstream sends a
strategic-merge patch. Claim writes are fenced like binds (a deposed leader's fail); in
shared-state mode they carry check_allocation, so the apiserver's device records refuse
a device, or more of a device's capacity, that another replica gave first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import claims as dra_claims
from services.api.dra.allocator import (
    AllocationError,
    Allocator,
    DeviceCache,
    FailedOnNode,
    Unfit,
)
from services.api.dra.bindingconditions import has_binding_conditions
from services.api.dra.taints import TaintRules
from services.api.features import (
    DRA_EXTENDED_RESOURCE,
    DRA_PRIORITIZED_LIST,
    FeatureGates,
    binding_and_status,
    enabled,
)
from services.api.helpers.nodeaffinity import NodeSelector, NodeSelectorError
from services.api.machinery.kinds import SCHEDULING_POD_GROUP
from services.clock import RealClock, rfc3339
from services.scheduler.cache.snapshot import Int64Array
from services.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    NodeScore,
    PostFilterResult,
    PreFilterResult,
)
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.dynamicresources import (
    bindclaim,
    bindingconditions,
    gang,
    hints,
    scoring,
    unreserve,
)
from services.scheduler.plugins.dynamicresources import extended as extres
from services.scheduler.plugins.dynamicresources.args import Args
from services.scheduler.plugins.dynamicresources.bindclaim import FINALIZER
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker, lister
from services.scheduler.plugins.helpers import default_normalize_rows, default_normalize_score

NAME = "DynamicResources"
STATE_KEY = NAME

ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_IN_USE = "resourceclaim in use"
ERR_TIMEOUT = "timed out trying to allocate devices"

log = logging.getLogger("services.scheduler.scheduler")

#: Allocator(claims, allocated, classes, slices, admin_namespaces): how Filter searches.
AllocatorFactory = Callable[..., Any]


@dataclass
class _ClaimInfo:
    #: The allocation's nodeSelector (allocated claims with one only).
    available_on: NodeSelector | None = None
    #: Set by Reserve, written by PreBind.
    allocation: resource_pb2.AllocationResult | None = None
    #: The claim is a gang sibling's pending allocation, taken as allocated (see
    #: DynamicResources._gang_pending): PreBind waits for the sibling to write it.
    borrowed: bool = False


@dataclass
class _State:
    """One attempt's claims (1:1 with the pod's resolved entries). Shared, not copied, by
    CycleState.clone (upstream stateData.Clone returns itself): preemption's dry runs see
    the same Filter results."""

    claims: list[resource_pb2.ResourceClaim] = field(default_factory=list)
    infos: list[_ClaimInfo] = field(default_factory=list)
    #: The claims to allocate (unallocated ones), in the Allocator's order.
    to_allocate: list[resource_pb2.ResourceClaim] = field(default_factory=list)
    allocator: Any = None
    #: Filter's allocations per node name (Reserve takes the chosen node's).
    node_allocations: dict[str, list[resource_pb2.AllocationResult]] = field(default_factory=dict)
    #: Indexes of allocated claims whose nodeSelector rejected some node (for PostFilter).
    unavailable: set[int] = field(default_factory=set)
    #: The pod's extended resource claim (DRAExtendedResource), when it has one.
    ext: extres.ExtendedClaim | None = None
    #: How PreFilter built `allocator`, for the Allocators with a node's extended claim.
    allocator_args: dict[str, Any] = field(default_factory=dict)
    ext_allocators: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    #: claim uid -> the PodGroup reference PreBind reserves the claim for (the pod's
    #: entries that are its PodGroup's); claims not here are reserved for the pod.
    consumers: dict[str, resource_pb2.ResourceClaimConsumerReference] = field(default_factory=dict)

    def clone(self) -> _State:
        return self


class _NotSchedulable(Exception):
    """A claim the pod names is missing, not the pod's or being deleted (upstream's
    foreachPodResourceClaim errors); the message is upstream's."""


def _key(claim: resource_pb2.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def _single_nodes(sel: core_pb2.NodeSelector) -> frozenset[str] | None:
    """The node names a nodeSelector allows when every term is only `metadata.name In
    [...]` (what the allocator writes for node-local devices); None: not that shape."""
    names: set[str] = set()
    for term in sel.node_selector_terms:
        if term.match_expressions or len(term.match_fields) != 1:
            return None
        f = term.match_fields[0]
        if f.key != "metadata.name" or f.operator != "In":
            return None
        names.update(f.values)
    return frozenset(names) if sel.node_selector_terms else None


class DynamicResources:
    """PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve, PreBind and
    EnqueueExtensions."""

    name = NAME

    def __init__(
        self,
        args: Args,
        *,
        claims: Any,
        slices: Any,
        classes: Any,
        rules: Any = None,
        client: Any = None,
        handle: Any = None,
        allocator_factory: AllocatorFactory = Allocator,
        tracker: ClaimTracker | None = None,
        on_restore: Callable[[Any, Any], None] | None = None,
        gates: FeatureGates | None = None,
        pod_groups: Any = None,
    ) -> None:
        """`claims`, `slices`, `classes`: the informers (or, in tests, their stores: keys
        "ns/name" and "name"); an informer's store is read anew each time (a relist replaces it).
        `client`: the scheduler's Client (PreBind, PostFilter, Unreserve write claims).
        `handle`: for the clock and namespace labels (admin access). `allocator_factory`:
        the Allocator class, or a fake in unit tests. `on_restore(pending, current)`: how
        an allocation dropped by Unreserve is announced to the queue (a claim update).
        `gates`: feature gate overrides (services/api/features.py; None: the defaults),
        for the plugin (binding conditions) and its Allocators. `pod_groups`: the
        scheduling.k8s.io PodGroup informer (or store), whose resourceClaims the pods share."""
        self.args = args
        self.gates = gates
        #: upstream's DeviceBindingAndStatus: binding conditions are honoured
        self.extended_resources = enabled(gates, DRA_EXTENDED_RESOURCE)
        self.binding_conditions = binding_and_status(gates)
        #: DRAPrioritizedList: Score prefers the nodes where firstAvailable got an earlier
        #: alternative (off: every node scores 0)
        self.prioritized_list = enabled(gates, DRA_PRIORITIZED_LIST)
        self._slices = lister(slices)
        self._classes = lister(classes)
        self._pod_groups = lister(pod_groups if pod_groups is not None else {})
        #: drataints: the DeviceTaintRules, whose taints the allocator adds to the devices.
        self._rules = lister(rules) if rules is not None else None
        self._client = client
        self._handle = handle
        #: Shared-state mode: PreBind's claim writes check services/apiserver/allocation.py.
        self._check_allocation = bool(getattr(handle, "shared_state", False))
        self._allocator_factory = allocator_factory
        self._on_restore = on_restore
        self.tracker = tracker if tracker is not None else ClaimTracker(claims)
        #: Parsed slices and selector verdicts, kept across cycles (pruned to the listed
        #: slices at each PreFilter that allocates).
        self.device_cache = DeviceCache()
        #: Unreserve's background writes (kept so they are not collected; see drain()).
        self._tasks: set[asyncio.Task[None]] = set()
        #: claim uid -> (namespace/PodGroup, pending claim) for allocations Reserve made for
        #: a gang pod; its siblings sharing the claim take it as allocated (review finding 1:
        #: refusing them would make Coscheduling reject the whole gang, forever).
        #: Invariant: an entry exists only while the tracker holds that pending allocation.
        self._gang_pending: dict[str, tuple[str, resource_pb2.ResourceClaim]] = {}

    # ------------------------------------------------------------- lookups
    def _foreach_claim(
        self, pod: core_pb2.Pod, cb: Callable[[resource_pb2.ResourceClaim], None] | None = None
    ) -> None:
        """upstream foreachPodResourceClaim: raises _NotSchedulable."""
        ns, name = pod.metadata.namespace, pod.metadata.name
        for entry in pod.spec.resource_claims:
            try:
                ref = dra_claims.claim_name(pod, entry)
            except dra_claims.ClaimNotCreatedError:
                raise _NotSchedulable(f'pod "{ns}/{name}": ResourceClaim not created yet') from None
            except ValueError:
                raise _NotSchedulable(
                    f'pod "{ns}/{name}", spec.resourceClaim "{entry.name}": '
                    "none of the supported fields are set"
                ) from None
            if ref.name is None:
                continue  # the controller decided no claim is needed
            claim = self.tracker.claim(ns, ref.name)
            if claim is None:
                raise _NotSchedulable(f'resourceclaim.resource.k8s.io "{ref.name}" not found')
            if claim.metadata.deletion_timestamp:
                raise _NotSchedulable(f'resourceclaim "{ref.name}" is being deleted')
            if ref.check_owner and not dra_claims.is_for_pod(pod, claim):
                raise _NotSchedulable(
                    f"ResourceClaim {ns}/{ref.name} was not created for pod {ns}/{name} "
                    "(pod is not owner)"
                )
            if cb is not None:
                cb(claim)

    def _admin_namespaces(self, namespace: str) -> frozenset[str]:
        snapshot = self._handle.snapshot() if self._handle is not None else None
        labels = snapshot.namespace_labels(namespace) if snapshot is not None else None
        if labels and labels.get(dra_claims.ADMIN_ACCESS_NAMESPACE_LABEL) == "true":
            return frozenset([namespace])
        return frozenset()

    def _now(self) -> float:
        return self._clock().now()

    # ---------------------------------------------------------- PreEnqueue
    def pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        if not pod.spec.resource_claims:
            return Status.success()
        try:
            self._foreach_claim(pod)
        except _NotSchedulable as e:
            return Status.unresolvable(str(e), plugin=NAME)
        return Status.success()

    # ----------------------------------------------------------- PreFilter
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        extended = None
        if self.extended_resources and pod_info.requests.scalar:
            extended = extres.pre_filter(
                pod, pod_info.requests.scalar, self._classes(), lambda: self.tracker.all_claims()
            )
        if not pod.spec.resource_claims and extended is None:
            # Most pods: nothing to write; Filter is skipped, Reserve and PreBind find no state.
            return None, Status.skip(NAME)
        s = _State(ext=extended)
        state.write(STATE_KEY, s)
        claims: list[resource_pb2.ResourceClaim] = []
        try:
            self._foreach_claim(pod, claims.append)
        except _NotSchedulable as e:
            return None, Status.unresolvable(str(e), plugin=NAME)
        if not claims and extended is None:
            return None, Status.skip(NAME)
        # Two entries may name one claim: it is allocated (and reserved) once.
        unique: dict[str, resource_pb2.ResourceClaim] = {}
        for c in claims:
            unique.setdefault(c.metadata.uid, c)
        claims = list(unique.values())
        s.infos = [_ClaimInfo() for _ in claims]
        s.consumers = gang.group_consumers(self._pod_groups(), pod, claims)
        allowed: frozenset[str] | None = None
        for i, claim in enumerate(claims):
            if claim.status.HasField("allocation"):
                if not dra_claims.can_be_reserved(claim) and not dra_claims.is_reserved_for_pod(
                    pod, claim
                ):
                    return None, Status.unresolvable(ERR_IN_USE, plugin=NAME)
                alloc = claim.status.allocation
                if alloc.HasField("node_selector"):
                    try:
                        s.infos[i].available_on = NodeSelector.strict(alloc.node_selector)
                    except NodeSelectorError as e:
                        return None, Status.as_error(e, plugin=NAME)
                    names = _single_nodes(alloc.node_selector)
                    if names is not None:
                        allowed = names if allowed is None else allowed & names
                continue
            sibling = gang.sibling_allocation(self._gang_pending, self.tracker, pod, claim)
            if sibling is not None:
                claims[i] = sibling
                s.infos[i].borrowed = True
                s.infos[i].available_on = NodeSelector.strict(
                    sibling.status.allocation.node_selector
                )
                names = _single_nodes(sibling.status.allocation.node_selector)
                if names is not None:
                    allowed = names if allowed is None else allowed & names
                continue
            if self.tracker.has_pending_allocation(claim.metadata.uid):
                return None, Status.unresolvable(
                    f"resource claim {_key(claim)} is in the process of being allocated",
                    plugin=NAME,
                )
            for request in claim.spec.devices.requests:
                alternatives = (
                    [
                        (f"{request.name}/{sub.name}", sub.device_class_name)
                        for sub in request.first_available
                    ]
                    if request.first_available
                    else [(request.name, request.exactly.device_class_name)]
                )
                for req_name, class_name in alternatives:
                    if not class_name:
                        return None, Status.as_error(
                            ValueError(f"request {req_name}: unsupported request type"), NAME
                        )
                    if class_name not in self._classes():
                        return None, Status.unresolvable(
                            f"request {req_name}: device class {class_name} does not exist",
                            plugin=NAME,
                        )
            s.to_allocate.append(claim)
        s.claims = claims
        if s.to_allocate or (extended is not None and not extended.stale):
            slices = list(self._slices().values())
            self.device_cache.prune(slices)
            rules = TaintRules(self._rules().values()) if self._rules is not None else None
            s.allocator_args = dict(
                allocated=self.tracker.allocated_devices(),
                consumed=self.tracker.consumed_capacity(),
                classes=dict(self._classes()),
                slices=slices,
                admin_namespaces=self._admin_namespaces(pod.metadata.namespace),
                cache=self.device_cache,
                **({"taint_rules": rules} if rules else {}),
                gates=self.gates,
            )
        if s.to_allocate:
            s.allocator = self._allocator_factory(claims=list(s.to_allocate), **s.allocator_args)
        result = PreFilterResult(allowed) if allowed is not None else None
        return result, Status.success()

    # -------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.as_error(KeyError(f"{NAME}: PreFilter did not run"), NAME)
        node = node_info.node
        if node is None:
            return Status.as_error(RuntimeError("node not found"), NAME)
        node_claim = None
        if s.ext is not None:
            rejected, node_claim = s.ext.for_node(node_info)
            if rejected is not None:
                return rejected
        if not s.claims and node_claim is None:
            return Status.success()
        unavailable = [
            i
            for i, info in enumerate(s.infos)
            if info.available_on is not None and not info.available_on.match(node)
        ]
        if self.binding_conditions:
            # An allocated claim whose binding failed or timed out: PostFilter may
            # deallocate it so that other devices can be tried.
            now = self._now()
            unavailable += [
                i
                for i, claim in enumerate(s.claims)
                if i not in unavailable
                and claim.status.HasField("allocation")
                and not s.infos[i].borrowed
                and bindingconditions.unavailable(claim, now, self.args.binding_timeout)
            ]
        allocations: list[resource_pb2.AllocationResult] | None = None
        allocator, to_allocate = s.allocator, s.to_allocate
        if node_claim is not None:
            # This node's variant of the extended resource claim, allocated last.
            to_allocate = [*s.to_allocate, node_claim.claim]
            allocator = s.ext_allocators.get(node_claim.key)
            if allocator is None:
                allocator = self._allocator_factory(claims=to_allocate, **s.allocator_args)
                s.ext_allocators[node_claim.key] = allocator
        if allocator is not None:
            start = self._now()
            try:
                got = allocator.allocate(node)
            except FailedOnNode as e:
                # Only this node (invalid pools): other nodes may still do, as upstream.
                return Status.unresolvable(str(e), plugin=NAME)
            except AllocationError as e:
                # A broken claim or class, not a fit problem: abort the attempt (retried).
                return Status.as_error(e, NAME)
            timeout = self.args.filter_timeout
            if timeout > 0 and self._now() - start > timeout:
                return Status.unresolvable(ERR_TIMEOUT, plugin=NAME)
            if isinstance(got, Unfit):
                return Status.unresolvable(_unfit_reason(got), plugin=NAME)
            if len(got) != len(to_allocate):
                names = ", ".join(_key(c) for c in to_allocate)
                return Status.unresolvable(f"{ERR_CANNOT_ALLOCATE}: {names}", plugin=NAME)
            if node_claim is not None:
                node_claim.allocation = got[-1]
                got = got[:-1]
            allocations = got
        if unavailable:
            s.unavailable.update(unavailable)
            return Status.unresolvable(ERR_NOT_AVAILABLE, plugin=NAME)
        if allocations is not None:
            s.node_allocations[node_info.name] = allocations
        return Status.success()

    # ---------------------------------------------------------- PostFilter
    async def post_filter(
        self, state: CycleState, pod_info: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        pod = pod_info.pod
        s: _State | None = state.get(STATE_KEY)
        if s is not None and s.ext is not None and s.ext.stale:
            # A claim of an earlier attempt: deleted, and tried anew when it is gone.
            try:
                await extres.delete(self._client, s.ext.claim, FINALIZER)
            except Exception as e:  # noqa: BLE001 - reported as the attempt's error
                return None, Status.as_error(e, NAME)
            return None, Status.unschedulable("deletion of ResourceClaim completed", plugin=NAME)
        if not pod.spec.resource_claims and (s is None or s.ext is None):
            return None, Status.unschedulable(plugin=NAME)
        if s is None:
            return None, Status.as_error(KeyError(f"{NAME}: PreFilter did not run"), NAME)
        if not s.claims and s.ext is None:
            return None, Status.unschedulable("no new claims to deallocate", plugin=NAME)
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            if s.infos[i].borrowed:
                continue  # not written yet: nothing to deallocate
            reserved = claim.status.reserved_for
            if len(reserved) == 0 or (len(reserved) == 1 and reserved[0].uid == pod.metadata.uid):
                fresh = resource_pb2.ResourceClaim()
                fresh.CopyFrom(claim)
                fresh.status.ClearField("allocation")
                del fresh.status.reserved_for[:]
                del fresh.status.devices[:]
                try:
                    await self._client.update_status(fresh)
                except Exception as e:  # noqa: BLE001 - reported as the attempt's error
                    return None, Status.as_error(e, NAME)
                return None, Status.unschedulable(
                    "deallocation of ResourceClaim completed", plugin=NAME
                )
        return None, Status.unschedulable("still not schedulable", plugin=NAME)

    # --------------------------------------------------------------- Score
    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        """scoring.py: points for the prioritized-list alternatives used on the node."""
        s: _State | None = state.get(STATE_KEY)
        if not self.prioritized_list or s is None:  # None: a pod without claims
            return 0, Status.success()
        allocations = s.node_allocations.get(node_info.name)
        if not s.claims or allocations is None:
            return 0, Status.success()  # nothing allocated on this node in this cycle
        try:
            points = scoring.compute_score(s.claims, s.to_allocate, allocations)
        except ValueError as e:
            return 0, Status.as_error(e, NAME)
        return points, Status.success()

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> Int64Array | None:
        """Zeros at once for the many pods with nothing to score (None: score per node)."""
        s: _State | None = state.get(STATE_KEY)
        if self.prioritized_list and s is not None and s.node_allocations:
            return None
        return np.zeros(len(rows), dtype=np.int64)

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: Int64Array
    ) -> Int64Array:
        return default_normalize_rows(scores, MAX_NODE_SCORE, False)

    # ------------------------------------------------------------- Reserve
    def reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.success()
        node_claim = s.ext.nodes.get(node_name) if s.ext is not None else None
        if s.ext is not None and node_claim is not None:
            self.tracker.signal_pending(extres.pending(s.ext, node_claim, FINALIZER))
        if not s.claims or not s.to_allocate:
            return Status.success()
        allocations = s.node_allocations.get(node_name)
        if allocations is None:
            return Status.as_error(RuntimeError("claim allocation not found for node"), NAME)
        if len(allocations) != len(s.to_allocate):
            return Status.as_error(
                RuntimeError(
                    f"internal error, have {len(allocations)} allocations, "
                    f"{len(s.to_allocate)} claims to allocate"
                ),
                NAME,
            )
        for claim, allocation in zip(s.to_allocate, allocations, strict=True):
            index = next(i for i, c in enumerate(s.claims) if c is claim)
            if self.binding_conditions and any(
                r.binding_conditions for r in allocation.devices.results
            ):
                # bindingTimeout counts from here (upstream stamps at PreBind's write).
                stamped = resource_pb2.AllocationResult()
                stamped.CopyFrom(allocation)
                stamped.allocation_timestamp = rfc3339(self._now())
                allocation = stamped
            s.infos[index].allocation = allocation
            pending = resource_pb2.ResourceClaim()
            pending.CopyFrom(claim)
            if FINALIZER not in pending.metadata.finalizers:
                pending.metadata.finalizers.append(FINALIZER)
            pending.status.allocation.CopyFrom(allocation)
            self.tracker.signal_pending(pending)
            group = gang.group_key(pod_info.pod)
            if group:
                self._gang_pending[claim.metadata.uid] = (group, pending)
        return Status.success()

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(STATE_KEY)
        if s is not None and s.ext is not None:
            if s.ext.pending_uid:
                self.tracker.remove_pending(s.ext.pending_uid)
                s.ext.pending_uid = ""
            if s.ext.created is not None:
                # Written to the apiserver by PreBind: deleted, not to be left behind.
                self._spawn(extres.delete(self._client, s.ext.created, FINALIZER))
                s.ext.created = None
        if s is None or not s.claims:
            return
        pod = pod_info.pod
        for i, claim in enumerate(s.claims):
            if s.infos[i].borrowed:
                continue  # the sibling's allocation: its own Unreserve drops it
            self._gang_pending.pop(claim.metadata.uid, None)
            pending = self.tracker.remove_pending(claim.metadata.uid)
            if pending is not None:
                self.tracker.restore(claim.metadata.uid)
                # Its devices are free again: pods that waited for them or for this claim
                # ("in the process of being allocated") get their claim-update event, as
                # upstream's assume cache announces a restore.
                current = self.tracker.claim(claim.metadata.namespace, claim.metadata.name)
                if self._on_restore is not None and current is not None:
                    self._on_restore(pending, current)
            if claim.status.HasField("allocation") and dra_claims.is_reserved_for(
                pod.metadata.uid, claim
            ):
                # Until the informer shows the removal, the claim counts as not reserved for
                # the pod, so a quick retry's PreBind writes the reservation again.
                self.tracker.mark_unreserving(claim.metadata.uid, pod.metadata.uid)
                self._spawn(unreserve.remove_reservation(self.tracker, self._client, claim, pod))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for Unreserve's background writes (tests; shutdown)."""
        while self._tasks:
            with contextlib.suppress(Exception):
                await asyncio.gather(*list(self._tasks))

    # ------------------------------------------------------------- PreBind
    def pre_bind_pre_flight(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Skip for a pod without claims; Success when PreBind has claims to handle
        (upstream's PreBindPreFlight)."""
        s: _State | None = state.get(STATE_KEY)
        if s is not None and s.ext is not None and s.ext.nodes.get(node_name) is not None:
            return Status.success()  # draext: the extended resource claim to write
        return Status.success() if s is not None and s.claims else Status.skip()

    async def pre_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.success()
        pod = pod_info.pod
        if s.ext is not None and s.ext.nodes.get(node_name) is not None:
            try:
                await self._bind_extended(s.ext, pod, node_name)
            except Exception as e:  # noqa: BLE001 - the attempt fails; Unreserve follows
                return Status.as_error(e, NAME)
        for i, claim in enumerate(s.claims):
            if dra_claims.is_reserved_for_pod(pod, claim):
                continue
            try:
                if s.infos[i].borrowed:
                    claim = await gang.sibling_written(self.tracker, claim)
                    s.claims[i] = claim
                    s.infos[i].borrowed = False
                    if dra_claims.is_reserved_for_pod(pod, claim):
                        continue  # written for the pod's PodGroup by its sibling
                s.claims[i] = await self._bind_claim(
                    claim, s.infos[i].allocation, pod, s.consumers.get(claim.metadata.uid)
                )
            except Exception as e:  # noqa: BLE001 - the attempt fails; Unreserve follows
                return Status.as_error(e, NAME)
        if not self.binding_conditions or not has_binding_conditions(s.claims):
            return Status.success()
        failed = await bindingconditions.pre_bind_wait(
            lambda: self._current(s.claims),
            clock=self._clock(),
            timeout=self.args.binding_timeout,
            client=self._client,
            pod=pod,
            node_name=node_name,
            component=getattr(self._handle, "profile_name", "") or "default-scheduler",
        )
        return Status.success() if failed is None else Status.as_error(failed, NAME)

    async def _bind_extended(
        self, extended: extres.ExtendedClaim, pod: core_pb2.Pod, node_name: str
    ) -> None:
        """The extended resource claim: created, allocated and reserved for the pod; then
        the pod's status.extendedResourceClaimStatus names it."""
        node_claim = extended.nodes[node_name]
        assert node_claim is not None
        created = await extres.create(self._client, node_claim)
        extended.created = created
        written = await self._bind_claim(created, node_claim.allocation, pod)
        self.tracker.remove_pending(extended.pending_uid)
        extended.pending_uid = ""
        extended.created = written
        # Kept in `created`: an Unreserve after a later failure (another plugin's PreBind,
        # the bind) deletes the claim, as upstream's does once it has a real name.
        await extres.patch_pod_status(self._client, pod, written.metadata.name, node_claim)

    def _current(
        self, claims: Sequence[resource_pb2.ResourceClaim]
    ) -> list[resource_pb2.ResourceClaim]:
        """The claims as the tracker sees them now (a deleted one as last known)."""
        out = []
        for c in claims:
            got = self.tracker.claim(c.metadata.namespace, c.metadata.name)
            out.append(got if got is not None else c)
        return out

    def _clock(self) -> Any:
        clock = getattr(self._handle, "clock", None)
        return clock if clock is not None else RealClock()

    async def _bind_claim(
        self,
        claim: resource_pb2.ResourceClaim,
        allocation: resource_pb2.AllocationResult | None,
        pod: core_pb2.Pod,
        consumer: resource_pb2.ResourceClaimConsumerReference | None = None,
    ) -> resource_pb2.ResourceClaim:
        def written(claim: resource_pb2.ResourceClaim) -> None:
            if allocation is not None:
                self._gang_pending.pop(claim.metadata.uid, None)

        return await bindclaim.bind_claim(
            self._client,
            self.tracker,
            claim,
            allocation,
            pod,
            on_written=written,
            check_allocation=self._check_allocation,
            consumer=consumer,
        )

    # ----------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return hints.events(
            self.is_schedulable_after_claim_change,
            self.is_schedulable_after_pod_change,
            extended_resources=self.extended_resources,
        )

    def _claims_or_none(self, pod: core_pb2.Pod) -> list[resource_pb2.ResourceClaim] | None:
        found: list[resource_pb2.ResourceClaim] = []
        try:
            self._foreach_claim(pod, found.append)
        except _NotSchedulable:
            return None
        return found

    def is_schedulable_after_claim_change(
        self, pod: core_pb2.Pod, old: Any, new: Any
    ) -> QueueingHint:
        return hints.after_claim_change(pod, old, new, self._claims_or_none)

    def is_schedulable_after_pod_change(
        self, pod: core_pb2.Pod, old: Any, new: Any
    ) -> QueueingHint:
        return hints.after_pod_change(pod, old, new, self._claims_or_none)


def _unfit_reason(unfit: Unfit) -> str:
    """Filter's reason: upstream's "cannot allocate all claims", naming the claim and why."""
    claim = f'resourceclaim "{unfit.claim}"'
    detail = unfit.reason if unfit.claim in unfit.reason else f"{claim}: {unfit.reason}"
    return f"{ERR_CANNOT_ALLOCATE}: {detail}"


def new(args: Args | None, handle: Any) -> DynamicResources:
    """The factory: the scheduler's informers of claims, slices and classes are the listers;
    claim events also tell the tracker when the informer caught up with our writes."""
    informer = getattr(handle, "informer", None)
    if informer is None:
        # A handle without informers (framework unit tests): no claims, slices or classes
        # exist for this plugin, so pods without claims pass and pods with claims wait.
        return DynamicResources(args or Args(), claims={}, slices={}, classes={}, handle=handle)
    claims = informer("ResourceClaim")
    slices = informer("ResourceSlice")
    classes = informer("DeviceClass")
    rules = informer("DeviceTaintRule")
    pod_groups = informer(SCHEDULING_POD_GROUP)

    def announce(old: Any, new: Any) -> None:
        # The claim informer's handlers: the scheduler's turns it into the queue's
        # ClusterEvent("ResourceClaim", UPDATE); the tracker's ignores an older object.
        for h in list(claims.handlers):
            if h.on_update is not None:
                h.on_update(old, new)

    # Every profile's instance shares one tracker (upstream's SharedDRAManager): a device
    # one profile's Reserve took is in flight for the others too.
    shared = getattr(handle, "shared", None)
    tracker = shared("DynamicResources.tracker", lambda: ClaimTracker(claims)) if shared else None
    plugin = DynamicResources(
        args or Args(),
        claims=claims,
        slices=slices,
        classes=classes,
        rules=rules,
        client=getattr(handle, "client", None),
        handle=handle,
        tracker=tracker,
        on_restore=announce,
        pod_groups=pod_groups,
    )
    # The tracker registered its own handlers on the claim informer (device counts, and
    # dropping its copies once the informer caught up with our writes).
    return plugin
