"""Structured allocation: which of a node's devices satisfy a pod's claims (upstream
k8s.io/dynamic-resource-allocation/structured, the experimental allocator, which has the
newest semantics: allocator_experimental.go; which pools reach a node is
services/api/dra/pools.py, the claim constraints constraints.py).

The scheduler's DynamicResources plugin asks, for every (pod, node) in Filter, whether the
pod's unallocated claims can get devices on that node, and at Reserve takes the answer as
the claims' status.allocation. The rules, as upstream:

* Pools (pools.py). A slice reaches the node by spec.nodeName == node, a nodeSelector
  matching the node, or allNodes. Per (driver, pool) only the reaching slices of the newest
  generation count; a pool may span nodes (its resourceSliceCount counts the slices of all
  of them). A pool with fewer slices at that generation than resourceSliceCount, counting
  every node's, is *incomplete*; a newer generation elsewhere makes it obsolete (left out);
  a complete one with a device name twice is *invalid*. ExactCount requests skip
  incomplete and invalid pools (other pools may still do), an All request on either is an
  AllocationError naming the pool. If nothing fits and an invalid pool was seen, allocate
  raises FailedOnNode ("invalid resource pools were encountered", upstream
  ErrFailedAllocationOnNode): this node fails, other nodes may still do. Pools with a
  device that has binding conditions are searched last (bindingconditions.py).
* Features (services/api/features.py, `gates`): with DRAPrioritizedList off a request
  with firstAvailable is an AllocationError, with DRAAdminAccess off one asking for admin
  access; DRAListTypeAttributes (off by default) makes constraints compare values as sets;
  with DRADeviceBindingConditions or DRAResourceClaimDeviceStatus off a device with
  binding conditions is never picked; partitionable devices, consumable capacity: below.
* Requests. `exactly`: the class must exist; a device is *selectable* when every class
  selector and every request selector is true. ExactCount takes `count` (default 1) devices,
  All every selectable device of the node (at least one; all must be free).
  `firstAvailable`: the subrequests are tried in order, the first that can be allocated
  wins and results name "request/subrequest". adminAccess needs the claim's namespace in
  `admin_namespaces`; such a request may take devices in use (but not one device twice in
  one claim), and its results carry adminAccess=true.
* Constraints (constraints.py). matchAttribute: every device allocated for the named
  requests (none named: all requests; "req" also covers its subrequests, "req/sub" only
  that one) has the attribute with one value (or, list-type attributes on, one element in
  common); a device without it cannot serve them.
* A device serves at most one non-admin request among all claims being allocated, never
  one in `allocated` (unless it allows multiple allocations: see below). A claim gets at
  most 32 devices (AllocationResultsMaxSize).
* Search. Claims in order, requests in order, devices in pool order (pools by driver and
  name, slices by name, devices in slice order): depth-first, a choice that leaves a later
  device, request or claim unsatisfiable is undone and the next candidate tried. The first
  full solution is the answer. Unlike upstream (which tries every order of the devices of one request),
  the devices of one request are chosen as a combination (each pick after the previous in
  listing order): the state after picking a set is the same whatever the order, so this
  finds the same first solution with fewer steps.
* Results. One AllocationResult per claim: devices.results (request, driver, pool, device,
  adminAccess when set); config: each class's configs once (source FromClass, the requests
  that used the class), then the claim's configs that name an allocated request or
  subrequest, or none (FromClaim); a config that covers every request of the claim (by its
  name or its chosen subrequest's) lists no requests; a device's bindingConditions and
  bindingFailureConditions are copied. nodeSelector: for a node-local device (its slice's
  or its own nodeName), or one with bindsToNode, matchFields metadata.name In [node];
  otherwise the single terms of nodeSelector slices merged; allNodes only: none.
* Partitionable devices (counters.py, DRAPartitionableDevices): a device consuming its
  pool's shared counters is taken only while they cover it. Consumable capacity
  (capacity.py, DRAConsumableCapacity): a device that allows multiple allocations serves
  any number of requests (a share each: shareID, consumedCapacity) while its capacity
  lasts; distinctAttribute: the devices of the named requests differ in the attribute.

* Taints (taints.py). A device whose NoSchedule or NoExecute taint (its slice's, or a
  DeviceTaintRule's selecting it) the request does not tolerate is never taken, admin access
  or not; an All request on such a device fails. Results copy the request's tolerations.

Differences from upstream: Unfit names the claim and the request the search could not get
past (upstream only says "cannot allocate all claims").

Speed: an Allocator indexes the slices by node on first use and caches which devices each
request can select, so one Allocator per pod serves every node of a Filter pass. A
DeviceCache kept by the caller across cycles (pass the same one to every Allocator) also
keeps, per ResourceSlice message, its parsed form and each selector's verdict per device
(CEL is the expensive part), and the index itself while the listing is unchanged.
Measured (scripts/bench_allocator.py): ~30 µs per allocate() of 1 GPU out of 8 with a warm
cache, ~0.3 ms to set up an Allocator over 5,000 unchanged slices, ~5 ms when one changed.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import NamedTuple

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api import features
from services.api.dra import bindingconditions, capacity, counters, results
from services.api.dra.cel import CELCompileError, CELRuntimeError, Selector, compile_selector
from services.api.dra.constraints import DistinctAttribute, MatchAttribute
from services.api.dra.pools import DeviceCache, DeviceID, Pool, PoolDevice, SliceIndex
from services.api.dra.taints import TaintRules, allocatable, device_taints

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocationError",
    "Allocator",
    "DeviceCache",
    "DeviceID",
    "FailedOnNode",
    "Unfit",
]

#: Most devices one claim's allocation may hold (upstream AllocationResultsMaxSize).
ALLOCATION_RESULTS_MAX_SIZE = 32
EXACT_COUNT = "ExactCount"
ALL = "All"


class _Outcome(enum.Enum):
    """A step of the search: a full solution below it, none, or none because the claim
    would exceed ALLOCATION_RESULTS_MAX_SIZE (upstream errAllocationResultMaxSizeExceeded)."""

    OK = "ok"
    FAIL = "fail"
    EXCEEDED = "exceeded"


_OK, _FAIL, _EXCEEDED = _Outcome.OK, _Outcome.FAIL, _Outcome.EXCEEDED


@dataclass(frozen=True)
class Unfit:
    """Why the claims cannot be allocated on a node; `claim` is "namespace/name" and
    `reason` names it (for Filter's status and `kubera explain`)."""

    claim: str
    reason: str


class AllocationError(Exception):
    """Not a fit problem but a broken input (a class that does not exist, a selector that
    fails at runtime): the pod is unschedulable until something changes. Message names
    the claim and request."""


class FailedOnNode(AllocationError):
    """Allocation failed on this node for good, but other nodes may do (upstream
    ErrFailedAllocationOnNode): the scheduler reports the node unschedulable with this
    message instead of aborting the attempt. Raised when nothing fits and one of the
    node's pools is invalid."""


#: upstream's message for FailedOnNode with invalid pools.
ERR_INVALID_POOLS = "invalid resource pools were encountered"


# ----------------------------------------------------------------------------- requests


class _Spec(NamedTuple):
    """A request with `exactly`, or one subrequest of a firstAvailable request, checked
    and compiled once per Allocator (nothing here depends on the node)."""

    claim: str  # "namespace/name"
    base: str  # the request's name
    sub: str  # the subrequest's name, "" for an exact request
    cls: resource_pb2.DeviceClass
    class_selectors: tuple[Selector, ...]
    selectors: tuple[Selector, ...]
    exact: int  # ExactCount's count; 0 with All
    all_mode: bool
    admin: bool
    key: tuple[str, ...]  # every selector's expression, the class's first: verdicts' key
    tolerations: tuple[resource_pb2.DeviceToleration, ...] = ()
    capacity: capacity.Amounts | None = None  # dracounters: capacity.requests


class _Request:
    """A _Spec on one node: with All, its devices there; the selectable devices once
    computed."""

    __slots__ = (
        "claim",
        "base",
        "sub",
        "name",
        "cls",
        "class_selectors",
        "selectors",
        "count",
        "admin",
        "key",
        "tolerations",
        "all_devices",
        "candidates",
        "capacity",
    )

    def __init__(self, spec: _Spec) -> None:
        self.claim, self.base, self.sub, self.cls = spec.claim, spec.base, spec.sub, spec.cls
        self.name = f"{spec.base}/{spec.sub}" if spec.sub else spec.base
        self.class_selectors, self.selectors = spec.class_selectors, spec.selectors
        self.count, self.admin, self.key = spec.exact, spec.admin, spec.key
        self.tolerations = spec.tolerations
        self.capacity = spec.capacity
        self.all_devices: list[PoolDevice] | None = None  # allocationMode All: exactly these
        self.candidates: list[PoolDevice] | None = None  # selectable, computed on first need

    def describe(self) -> str:
        return f'claim {self.claim}, request "{self.name}"'


def _request_name(claim: resource_pb2.ResourceClaim, request: str) -> str:
    return f'claim {claim.metadata.namespace}/{claim.metadata.name}, request "{request}"'


# ----------------------------------------------------------------------------- allocator


@dataclass
class Allocator:
    """Allocates `claims` (not yet allocated) together on one node at a time.

    `allocated`: devices in use (by allocated claims and in-flight allocations) that
    cannot be given again (admin-access requests ignore this). `classes` by name;
    `slices`: every ResourceSlice in the cluster (the allocator picks those reaching the
    node, the newest generation of each pool). `admin_namespaces`: namespaces labelled
    resource.kubernetes.io/admin-access=true. `cache`: parsed slices and selector verdicts
    to share with other Allocators (see DeviceCache); a private one when not given.
    `taint_rules`: the DeviceTaintRules, whose taints count as the devices' own (with the
    DRADeviceTaints gate on, the default; off, taints are ignored and results carry no
    tolerations).

    One Allocator answers for any number of nodes; on first use it checks and compiles the
    claims' requests (AllocationError) and indexes `slices`, so the inputs must not change
    while it is used.
    """

    claims: Sequence[resource_pb2.ResourceClaim]
    allocated: frozenset[DeviceID] | set[DeviceID]
    classes: Mapping[str, resource_pb2.DeviceClass]
    slices: Sequence[resource_pb2.ResourceSlice]
    admin_namespaces: frozenset[str] = frozenset()
    cache: DeviceCache | None = None
    #: Feature gate overrides (services/api/features.py); None: upstream's defaults.
    gates: features.FeatureGates | None = None
    taint_rules: TaintRules | None = None
    #: consumable capacity: per device with shares in use (devices that allow multiple
    #: allocations), what those shares consume together (upstream AggregatedCapacity)
    consumed: Mapping[DeviceID, Mapping[str, Decimal]] = field(default_factory=dict)
    #: a new share's shareID (a random UID; tests give a fixed one)
    share_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()), repr=False)
    _index: SliceIndex | None = field(default=None, init=False, repr=False)
    #: per pool, its counters less what the devices in use consume (counters.py)
    _counters: dict[tuple[str, str], counters.Amounts] = field(
        default_factory=dict, init=False, repr=False
    )
    _specs: list[list[list[_Spec]]] | None = field(default=None, init=False, repr=False)
    #: Device placements tried by all allocate() calls so far (the search's work).
    steps: int = field(default=0, init=False)
    #: Gates read once (with the specs); binding_conditions: upstream's
    #: DeviceBindingAndStatus (devices with binding conditions may be picked).
    partitionable: bool = field(default=True, init=False, repr=False)
    consumable: bool = field(default=True, init=False, repr=False)
    device_taints: bool = field(default=True, init=False, repr=False)
    binding_conditions: bool = field(default=True, init=False, repr=False)

    def allocate(self, node: core_pb2.Node) -> list[resource_pb2.AllocationResult] | Unfit:
        """One AllocationResult per claim, in order (nodeSelector set to the node for
        node-local devices), or why not. Raises AllocationError."""
        if self._index is None:
            cache = self.cache if self.cache is not None else DeviceCache()
            self._index = cache.index(self.slices)
        if self._specs is None:
            self.partitionable = features.enabled(self.gates, features.DRA_PARTITIONABLE_DEVICES)
            self.consumable = features.enabled(self.gates, features.DRA_CONSUMABLE_CAPACITY)
            self.device_taints = features.enabled(self.gates, features.DRA_DEVICE_TAINTS)
            self._specs = [
                _specs(c, self.classes, self.admin_namespaces, self.gates) for c in self.claims
            ]
            self.binding_conditions = features.binding_and_status(self.gates)
        pools = bindingconditions.ordered(self._index.pools(node, partitionable=self.partitionable))
        search = _Search(self, self._specs, pools, node.metadata.name)
        try:
            return search.run()
        finally:
            self.steps += search.steps


class _Search:
    """One allocate() call: the request plans, the devices being allocated and the partial
    results. Invariants: `allocating[id]` holds the indices of the claims that took the
    device in the current partial solution, `results[c]` its devices for claim c in pick
    order, and each constraint's count equals the devices in `results` it applies to."""

    def __init__(
        self, alloc: Allocator, specs: list[list[list[_Spec]]], pools: list[Pool], node: str
    ) -> None:
        self.alloc = alloc
        self.node = node
        self.pools = pools
        self.usable = [p for p in pools if not p.incomplete and not p.invalid]
        self.claims = list(alloc.claims)
        self.partitionable, self.consumable = alloc.partitionable, alloc.consumable
        # Consumable capacity: per device that allows multiple allocations, what the shares
        # being allocated consume and how many there are; per result, its share's use
        # (None: a dedicated device) and whether it took the device's counters.
        self.sharing: dict[DeviceID, tuple[int, dict[str, Decimal]]] = {}
        self.shares: list[list[tuple[capacity.Amounts | None, bool]]] = [[] for _ in self.claims]
        # plans[c][r]: the alternatives of request r of claim c (one unless firstAvailable)
        self.plans: list[list[list[_Request]]] = []
        self.constraints: list[list[MatchAttribute]] = []
        self.list_attributes = features.enabled(alloc.gates, features.DRA_LIST_TYPE_ATTRIBUTES)
        for claim, claim_specs in zip(self.claims, specs, strict=True):
            self.plans.append(self._plan(claim, claim_specs))
            self.constraints.append(self._constraints(claim))
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[tuple[PoolDevice, _Request]]] = [[] for _ in self.claims]
        self.chosen: list[list[int]] = [[0] * len(p) for p in self.plans]
        self.frontier = (0, 0)  # the furthest (claim, request) the search reached
        self.steps = 0  # device placements tried (upstream NumAllocateOneInvocations)
        self._counters: counters.Counters | None = None  # made when a device consumes some

    @property
    def counters(self) -> counters.Counters:
        """The pools' shared counters, what is left of them (kept by the Allocator) and
        what this search's devices consume."""
        if self._counters is None:
            alloc, by_key = self.alloc, {p.key: p for p in self.pools}
            self._counters = counters.Counters(
                alloc._counters,
                lambda key: counters.left_over(
                    by_key[key].counter_sets,
                    (
                        (d.device, d.id in alloc.allocated or d.id in alloc.consumed)
                        for d in by_key[key].all_devices()
                    ),
                ),
            )
        return self._counters

    # --------------------------------------------------------------- preparation

    def _plan(
        self, claim: resource_pb2.ResourceClaim, specs: list[list[_Spec]]
    ) -> list[list[_Request]]:
        plan = [[self._request(spec) for spec in alts] for alts in specs]
        least = sum(min(r.count for r in alts) for alts in plan)
        if least > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {_key(claim)}: number of requested devices {least} exceeds the "
                f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        return plan

    def _request(self, spec: _Spec) -> _Request:
        r = _Request(spec)
        if spec.all_mode:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"{r.describe()}: asks for all devices, but resource pool {pool} is "
                        "currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"{r.describe()}: asks for all devices, but resource pool {pool} is "
                        f"currently invalid ({pool.invalid})"
                    )
            r.all_devices = [
                d
                for p in self.pools
                for d in p.devices()
                if self._offered(d) and _selectable(r, d) and self._capacity_fits(r, d) is not None
            ]
            r.count = len(r.all_devices)
        return r

    def _constraints(self, claim: resource_pb2.ResourceClaim) -> list[MatchAttribute]:
        out: list[MatchAttribute] = []
        for i, c in enumerate(claim.spec.devices.constraints):
            if c.HasField("match_attribute"):
                out.append(MatchAttribute(c.requests, c.match_attribute, sets=self.list_attributes))
            elif c.HasField("distinct_attribute") and self.consumable:
                out.append(
                    DistinctAttribute(c.requests, c.distinct_attribute, sets=self.list_attributes)
                )
            else:
                raise AllocationError(
                    f"claim {_key(claim)}, constraint #{i}: empty constraint "
                    "(unsupported constraint type?)"
                )
        return out

    def candidates(self, r: _Request) -> list[PoolDevice]:
        if r.candidates is None:
            r.candidates = [
                d
                for p in self.usable
                for d in p.devices()
                if self._offered(d) and _selectable(r, d)
            ]
        return r.candidates

    def _offered(self, d: PoolDevice) -> bool:
        return bindingconditions.offered(d, self.alloc.binding_conditions)

    # --------------------------------------------------------------- search

    def run(self) -> list[resource_pb2.AllocationResult] | Unfit:
        outcome = self._claim(0)
        if outcome is _OK:
            return [self._result(c) for c in range(len(self.claims))]
        if outcome is _EXCEEDED:  # only claim 0's can come up this far
            raise AllocationError(
                f"claim {_key(self.claims[0])}: number of requested devices exceeds the "
                f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        if any(p.invalid for p in self.pools):
            # Skipped while searching (another pool may do); now that none did, say why.
            raise FailedOnNode(ERR_INVALID_POOLS)
        return self._unfit()

    def _claim(self, c: int) -> _Outcome:
        return _OK if c == len(self.claims) else self._requests(c, 0)

    def _requests(self, c: int, r: int) -> _Outcome:
        if r == len(self.plans[c]):
            outcome = self._claim(c + 1)
            # The next claim's size limit is its own: here it is a plain failure, and
            # another choice in this claim may still do.
            return _FAIL if outcome is _EXCEEDED else outcome
        self.frontier = max(self.frontier, (c, r))
        all_exceeded = True
        for i, req in enumerate(self.plans[c][r]):
            outcome = self._devices(c, r, req, 0, 0)
            if outcome is _EXCEEDED:
                continue  # a later alternative may need fewer devices
            all_exceeded = False
            if outcome is _OK:
                self.chosen[c][r] = i
                return _OK
        return _EXCEEDED if all_exceeded else _FAIL

    def _devices(self, c: int, r: int, req: _Request, n: int, start: int) -> _Outcome:
        """Pick device n of `req` (of request r of claim c) from candidates[start:].
        _EXCEEDED: the claim cannot stay within the size limit whatever this request's
        devices are, so no other candidate is tried (upstream's aggressive backtracking)."""
        self.steps += 1
        if req.all_devices is not None and not req.all_devices:
            return _FAIL  # All needs at least one device
        if n == req.count:
            return self._requests(c, r + 1)
        if len(self.results[c]) + req.count - n > ALLOCATION_RESULTS_MAX_SIZE:
            return _EXCEEDED
        if req.all_devices is not None:
            d = req.all_devices[n]
            if not self._take(c, req, d, must=True):
                return _FAIL
            outcome = self._devices(c, r, req, n + 1, 0)
            if outcome is not _OK:
                self._give_back(c, req, d)
            return outcome
        cands = self.candidates(req)
        for i in range(start, len(cands)):
            d = cands[i]
            if not self._take(c, req, d, must=False):
                continue
            outcome = self._devices(c, r, req, n + 1, i + 1)
            if outcome is _OK:
                return _OK
            self._give_back(c, req, d)
            if outcome is _EXCEEDED:
                return _EXCEEDED
        return _FAIL

    def tainted(self, req: _Request, d: PoolDevice) -> bool:
        """The device has a NoSchedule/NoExecute taint the request does not tolerate."""
        if not self.alloc.device_taints:
            return False
        if not d.device.taints and not self.alloc.taint_rules:
            return False
        taints = device_taints(d.device, d.id.driver, d.id.pool, self.alloc.taint_rules)
        return not allocatable(taints, req.tolerations)

    def _take(self, c: int, req: _Request, d: PoolDevice, *, must: bool) -> bool:
        if self.tainted(req, d):
            return False  # upstream: not allocatable, even for All (no error)
        multi = self.consumable and d.multi
        holders = self.allocating.get(d.id)
        if req.admin:
            if not multi and holders and c in holders:
                return False
        elif holders or d.id in self.alloc.allocated:
            return False
        use = self._capacity_fits(req, d)
        if use is None:
            return False
        # A shared device's counters are consumed by its first share only.
        counted = bool(d.consumes) and not (
            multi and (d.id in self.alloc.consumed or d.id in self.sharing)
        )
        if counted and not self._take_counters(d):
            return False
        added: list[MatchAttribute] = []
        for con in self.constraints[c]:
            if not con.add(req.base, req.sub, d):
                if counted:
                    self.counters.give_back((d.id.driver, d.id.pool), d.consumes)
                if must:
                    raise AllocationError(
                        f"{req.describe()}: cannot add device {d.id} because a claim "
                        "constraint would not be satisfied"
                    )
                for done in added:
                    done.remove(req.base, req.sub)
                return False
            added.append(con)
        if multi:
            n, total = self.sharing.get(d.id, (0, {}))
            capacity.add(total, use)
            self.sharing[d.id] = (n + 1, total)
        else:
            self.allocating.setdefault(d.id, set()).add(c)
        self.results[c].append((d, req))
        self.shares[c].append((use if multi else None, counted))
        return True

    def _capacity_fits(self, req: _Request, d: PoolDevice) -> capacity.Amounts | None:
        """What `req` consumes of the device's capacities beside the shares in use and
        those being allocated (capacity.py); None when it does not fit."""
        if not self.consumable or (
            req.capacity is None and d.plain and d.id not in self.alloc.consumed
        ):
            return {}  # a dedicated device, all of it, no policy: nothing to check
        sharing = self.sharing.get(d.id)
        return capacity.fitting(
            req.capacity, d.device, self.alloc.consumed.get(d.id), sharing[1] if sharing else None
        )

    def _take_counters(self, d: PoolDevice) -> bool:
        """A device that consumes counters: only with partitionable devices on, and only
        while its pool's counters cover it and every device taken so far."""
        return self.partitionable and self.counters.take((d.id.driver, d.id.pool), d.consumes)

    def _give_back(self, c: int, req: _Request, d: PoolDevice) -> None:
        use, counted = self.shares[c].pop()
        if counted:
            self.counters.give_back((d.id.driver, d.id.pool), d.consumes)
        for con in self.constraints[c]:
            con.remove(req.base, req.sub)
        if use is None:
            self.allocating[d.id].discard(c)
        else:
            n, total = self.sharing[d.id]
            capacity.add(total, use, -1)
            if n == 1:
                del self.sharing[d.id]
            else:
                self.sharing[d.id] = (n - 1, total)
        self.results[c].pop()

    # --------------------------------------------------------------- answers

    def _result(self, c: int) -> resource_pb2.AllocationResult:
        chosen = [alts[self.chosen[c][r]] for r, alts in enumerate(self.plans[c])]
        picks = [
            results.Pick(d, req, use)
            for (d, req), (use, _) in zip(self.results[c], self.shares[c], strict=True)
        ]
        alloc = self.alloc
        try:
            return results.allocation_result(
                self.claims[c],
                picks,
                chosen,
                self.node,
                share_id=alloc.share_id,
                tolerations=alloc.device_taints,
                binding_conditions=alloc.binding_conditions,
            )
        except results.UnsupportedNodeSelector as e:
            raise AllocationError(str(e)) from e

    def _unfit(self) -> Unfit:
        c, r = self.frontier
        claim = self.claims[c]
        alts = self.plans[c][r]
        why = "; ".join(self._why(c, req) for req in alts)
        if len(alts) > 1:
            why = f"no subrequest can be allocated ({why})"
        reason = f"{_request_name(claim, claim.spec.devices.requests[r].name)}: {why}"
        return Unfit(_key(claim), reason)

    def _why(self, c: int, req: _Request) -> str:
        return results.why(
            req,
            req.all_devices if req.all_devices is not None else self.candidates(req),
            all_mode=req.all_devices is not None,
            tainted=lambda d: self.tainted(req, d),
            allocated=self.alloc.allocated,
            consumable=self.consumable,
            constrained=sorted({m.attribute for m in self.constraints[c]}),
        )


# ----------------------------------------------------------------------------- requests, checked


def _specs(
    claim: resource_pb2.ResourceClaim,
    classes: Mapping[str, resource_pb2.DeviceClass],
    admin_namespaces: frozenset[str],
    gates: features.FeatureGates | None,
) -> list[list[_Spec]]:
    """Per request of the claim its alternatives (one unless firstAvailable), checked:
    the features it uses are on, the class exists, selectors compile, the mode is known,
    admin access is allowed."""
    out: list[list[_Spec]] = []
    for req in claim.spec.devices.requests:
        if not features.enabled(gates, features.DRA_CONSUMABLE_CAPACITY) and (
            why := capacity.gated(req)
        ):
            raise AllocationError(f"claim {claim.metadata.name}, {why}")
        if req.first_available:
            if not features.enabled(gates, features.DRA_PRIORITIZED_LIST):
                raise AllocationError(
                    f"{_request_name(claim, req.name)}: has subrequests, but the "
                    f"{features.DRA_PRIORITIZED_LIST} feature is disabled"
                )
            out.append(
                [
                    _spec(claim, req.name, sub.name, sub, False, classes, admin_namespaces)
                    for sub in req.first_available
                ]
            )
        elif req.HasField("exactly"):
            ex = req.exactly
            admin = ex.HasField("admin_access") and ex.admin_access
            if admin and not features.enabled(gates, features.DRA_ADMIN_ACCESS):
                raise AllocationError(
                    f"{_request_name(claim, req.name)}: admin access is requested, but the "
                    "feature is disabled"
                )
            out.append([_spec(claim, req.name, "", ex, admin, classes, admin_namespaces)])
        else:
            raise AllocationError(
                f"{_request_name(claim, req.name)}: neither exactly nor firstAvailable "
                "(unsupported request type?)"
            )
    return out


def _spec(
    claim: resource_pb2.ResourceClaim,
    base: str,
    sub: str,
    spec: resource_pb2.ExactDeviceRequest | resource_pb2.DeviceSubRequest,
    admin: bool,
    classes: Mapping[str, resource_pb2.DeviceClass],
    admin_namespaces: frozenset[str],
) -> _Spec:
    what = _request_name(claim, f"{base}/{sub}" if sub else base)
    if admin and claim.metadata.namespace not in admin_namespaces:
        raise AllocationError(
            f"{what}: admin access to devices requires the namespace "
            f'"{claim.metadata.namespace}" to be labelled '
            "resource.kubernetes.io/admin-access=true"
        )
    if not spec.device_class_name:
        raise AllocationError(f"{what}: missing device class name")
    cls = classes.get(spec.device_class_name)
    if cls is None:
        raise AllocationError(f'{what}: device class "{spec.device_class_name}" does not exist')
    mode = spec.allocation_mode or EXACT_COUNT
    if mode not in (EXACT_COUNT, ALL):
        raise AllocationError(f"{what}: unsupported count mode {mode}")
    class_selectors = _compile(cls.spec.selectors, f'class "{cls.metadata.name}"')
    selectors = _compile(spec.selectors, what)
    return _Spec(
        claim=_key(claim),
        base=base,
        sub=sub,
        cls=cls,
        class_selectors=class_selectors,
        selectors=selectors,
        exact=(spec.count or 1) if mode == EXACT_COUNT else 0,
        all_mode=mode == ALL,
        admin=admin,
        key=tuple(x.expression for x in (*class_selectors, *selectors)),
        tolerations=tuple(spec.tolerations),
        capacity=capacity.requests(spec),
    )


# ----------------------------------------------------------------------------- helpers


def _key(claim: resource_pb2.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def _compile(selectors: Sequence[resource_pb2.DeviceSelector], owner: str) -> tuple[Selector, ...]:
    out = []
    for i, sel in enumerate(selectors):
        if not sel.HasField("cel"):
            raise AllocationError(
                f"{owner}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
        try:
            out.append(compile_selector(sel.cel.expression))
        except CELCompileError as err:
            raise AllocationError(f"{owner}, selector #{i}: CEL compile error: {err}") from err
    return tuple(out)


def _selectable(r: _Request, d: PoolDevice) -> bool:
    """Every class selector and every request selector is true for the device. Verdicts
    are kept on the device per expression and per request's whole selector list."""
    verdict = d.verdicts.get(r.key)
    if verdict is None:
        verdict = d.verdicts[r.key] = _evaluate(r, d)
    return verdict


def _evaluate(r: _Request, d: PoolDevice) -> bool:
    for owner, selectors in ((None, r.class_selectors), (r, r.selectors)):
        for i, sel in enumerate(selectors):
            verdict = d.verdicts.get(sel.expression)
            if verdict is None:
                try:
                    verdict = sel.matches(d.id.driver, d.device)
                except CELRuntimeError as err:
                    who = f'class "{r.cls.metadata.name}"' if owner is None else r.describe()
                    raise AllocationError(
                        f"{who}: selector #{i} on device {d.id}: CEL runtime error: {err}"
                    ) from err
                d.verdicts[sel.expression] = verdict
            if not verdict:
                return False
    return True
