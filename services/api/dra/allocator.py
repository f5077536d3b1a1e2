"""Structured allocation: which of a node's devices satisfy a pod's claims (upstream
k8s.io/dynamic-resource-allocation/structured, the stable allocator for resource.k8s.io/v1:
allocator.go; which pools reach a node is services/api/dra/pools.py).

The scheduler's DynamicResources plugin asks, for every (pod, node) in Filter, whether the
pod's unallocated claims can get devices on that node, and at Reserve takes the answer as
the claims' status.allocation. The rules, as upstream:

* Pools (pools.py). A slice reaches the node by spec.nodeName == node, a nodeSelector
  matching the node, or allNodes. Per (driver, pool) only the reaching slices of the newest
  generation count. A pool with fewer slices at that generation than resourceSliceCount is
  *incomplete*, one with a device name twice is *invalid*: ExactCount requests skip both
  (other pools may still do), an All request on either is an AllocationError naming the
  pool. If nothing fits and an invalid pool was seen, the Unfit says so. Pools with a
  device that has binding conditions are searched last (bindingconditions.py).
* Requests. `exactly`: the class must exist; a device is *selectable* when every class
  selector and every request selector is true. ExactCount takes `count` (default 1) devices,
  All every selectable device of the node (at least one; all must be free).
  `firstAvailable`: the subrequests are tried in order, the first that can be allocated
  wins and results name "request/subrequest". adminAccess needs the claim's namespace in
  `admin_namespaces`; such a request may take devices in use (but not one device twice in
  one claim), and its results carry adminAccess=true.
* Constraints. matchAttribute: every device allocated for the named requests (none named:
  all requests; "req" also covers its subrequests, "req/sub" only that one) has the
  attribute with one value; a device without it cannot serve them.
* A device serves at most one non-admin request among all claims being allocated, never
  one in `allocated`. A claim gets at most 32 devices (AllocationResultsMaxSize).
* Search. Claims in order, requests in order, devices in listing order (pools by first
  appearance, slices, devices): depth-first, a choice that leaves a later device, request
  or claim unsatisfiable is undone and the next candidate tried. The first full solution
  is the answer. Unlike upstream (which tries every order of the devices of one request),
  the devices of one request are chosen as a combination (each pick after the previous in
  listing order): the state after picking a set is the same whatever the order, so this
  finds the same first solution with fewer steps.
* Results. One AllocationResult per claim: devices.results (request, driver, pool, device,
  adminAccess when set); config: each class's configs once (source FromClass, the requests
  that used the class), then the claim's configs that name an allocated request or
  subrequest, or none (FromClaim); a config that applies to every request of the claim
  lists no requests; a device's bindingConditions and bindingFailureConditions are
  copied. nodeSelector: for a device of a node-local slice, or one with bindsToNode,
  matchFields metadata.name In [node]; otherwise the single terms of nodeSelector slices merged;
  allNodes only: none.

Differences from upstream: Unfit names the claim and the request the search could not get
past (upstream only says "cannot allocate all claims"); device taints, partitionable
devices and consumable capacity are not modelled (they are alpha/beta fields the protos
leave out).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import bindingconditions
from services.api.dra.cel import CELCompileError, CELRuntimeError, Selector, compile_selector
from services.api.dra.pools import DeviceCache, DeviceID, Pool, PoolDevice, SliceIndex
from services.api.helpers.nodeaffinity import OBJECT_NAME_FIELD

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "AllocationError",
    "Allocator",
    "DeviceCache",
    "DeviceID",
    "Unfit",
]

#: Most devices one claim's allocation may hold (upstream AllocationResultsMaxSize).
ALLOCATION_RESULTS_MAX_SIZE = 32
EXACT_COUNT = "ExactCount"
ALL = "All"
SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


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
        "all_devices",
        "candidates",
    )

    def __init__(self, spec: _Spec) -> None:
        self.claim, self.base, self.sub, self.cls = spec.claim, spec.base, spec.sub, spec.cls
        self.name = f"{spec.base}/{spec.sub}" if spec.sub else spec.base
        self.class_selectors, self.selectors = spec.class_selectors, spec.selectors
        self.count, self.admin, self.key = spec.exact, spec.admin, spec.key
        self.all_devices: list[PoolDevice] | None = None  # allocationMode All: exactly these
        self.candidates: list[PoolDevice] | None = None  # selectable, computed on first need

    def describe(self) -> str:
        return f'claim {self.claim}, request "{self.name}"'


def _request_name(claim: resource_pb2.ResourceClaim, request: str) -> str:
    return f'claim {claim.metadata.namespace}/{claim.metadata.name}, request "{request}"'


class _MatchAttribute:
    """One matchAttribute constraint of a claim while searching: the value the devices
    added so far share, and how many there are (only the count is needed to undo)."""

    __slots__ = ("requests", "attribute", "value", "n")

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute
        self.value: tuple[str, object] | None = None
        self.n = 0

    def applies(self, r: _Request) -> bool:
        return (
            not self.requests
            or r.base in self.requests
            or (bool(r.sub) and r.name in self.requests)
        )

    def add(self, r: _Request, d: PoolDevice) -> bool:
        if not self.applies(r):
            return True
        value = _attribute(d, self.attribute)
        if value is None:
            return False
        if self.n == 0:
            self.value = value
        elif value[0] == "" or value != self.value:
            return False
        self.n += 1
        return True

    def remove(self, r: _Request) -> None:
        if self.applies(r):
            self.n -= 1


def _attribute(d: PoolDevice, name: str) -> tuple[str, object] | None:
    """The device's value of a fully qualified attribute ("domain/name"; an attribute
    written without domain in the slice belongs to the driver's domain), as (kind, value);
    kind "" when no value is set."""
    attrs = d.device.attributes
    attr = attrs.get(name)
    if attr is None:
        domain, _, short = name.partition("/")
        if not short or domain != d.id.driver:
            return None
        attr = attrs.get(short)
        if attr is None:
            return None
    for kind in ("string", "int", "bool", "version"):
        if attr.HasField(kind):
            return kind, getattr(attr, kind)
    return "", None


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
    #: Devices with binding conditions may be picked (upstream DeviceBindingAndStatus:
    #: DRADeviceBindingConditions and DRAResourceClaimDeviceStatus, features.py).
    binding_conditions: bool = True
    _index: SliceIndex | None = field(default=None, init=False, repr=False)
    _specs: list[list[list[_Spec]]] | None = field(default=None, init=False, repr=False)
    #: Device placements tried by all allocate() calls so far (the search's work).
    steps: int = field(default=0, init=False)

    def allocate(self, node: core_pb2.Node) -> list[resource_pb2.AllocationResult] | Unfit:
        """One AllocationResult per claim, in order (nodeSelector set to the node for
        node-local devices), or why not. Raises AllocationError."""
        if self._index is None:
            cache = self.cache if self.cache is not None else DeviceCache()
            self._index = cache.index(self.slices)
        if self._specs is None:
            self._specs = [_specs(c, self.classes, self.admin_namespaces) for c in self.claims]
        pools = bindingconditions.ordered(self._index.pools(node))
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
        # plans[c][r]: the alternatives of request r of claim c (one unless firstAvailable)
        self.plans: list[list[list[_Request]]] = []
        self.constraints: list[list[_MatchAttribute]] = []
        for claim, claim_specs in zip(self.claims, specs, strict=True):
            self.plans.append(self._plan(claim, claim_specs))
            self.constraints.append(self._constraints(claim))
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[tuple[PoolDevice, _Request]]] = [[] for _ in self.claims]
        self.chosen: list[list[int]] = [[0] * len(p) for p in self.plans]
        self.frontier = (0, 0)  # the furthest (claim, request) the search reached
        self.steps = 0  # device placements tried (upstream NumAllocateOneInvocations)

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
                d for p in self.pools for d in p.devices() if self._offered(d) and _selectable(r, d)
            ]
            r.count = len(r.all_devices)
        return r

    def _constraints(self, claim: resource_pb2.ResourceClaim) -> list[_MatchAttribute]:
        out = []
        for i, c in enumerate(claim.spec.devices.constraints):
            if not c.HasField("match_attribute"):
                raise AllocationError(
                    f"claim {_key(claim)}, constraint #{i}: empty constraint "
                    "(unsupported constraint type?)"
                )
            out.append(_MatchAttribute(c.requests, c.match_attribute))
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

    def _take(self, c: int, req: _Request, d: PoolDevice, *, must: bool) -> bool:
        holders = self.allocating.get(d.id)
        if req.admin:
            if holders and c in holders:
                return False
        elif holders or d.id in self.alloc.allocated:
            return False
        added: list[_MatchAttribute] = []
        for con in self.constraints[c]:
            if not con.add(req, d):
                if must:
                    raise AllocationError(
                        f"{req.describe()}: cannot add device {d.id} because a claim "
                        "constraint would not be satisfied"
                    )
                for done in added:
                    done.remove(req)
                return False
            added.append(con)
        self.allocating.setdefault(d.id, set()).add(c)
        self.results[c].append((d, req))
        return True

    def _give_back(self, c: int, req: _Request, d: PoolDevice) -> None:
        for con in self.constraints[c]:
            con.remove(req)
        self.allocating[d.id].discard(c)
        self.results[c].pop()

    # --------------------------------------------------------------- answers

    def _result(self, c: int) -> resource_pb2.AllocationResult:
        claim = self.claims[c]
        out = resource_pb2.AllocationResult()
        for d, req in self.results[c]:
            res = out.devices.results.add(
                request=req.name, driver=d.id.driver, pool=d.id.pool, device=d.id.device
            )
            if req.admin:
                res.admin_access = True
            if self.alloc.binding_conditions:
                bindingconditions.copy_to_result(res, d.device)
        chosen = [alts[self.chosen[c][r]] for r, alts in enumerate(self.plans[c])]
        by_class: dict[str, list[resource_pb2.DeviceAllocationConfiguration]] = {}
        for req in chosen:
            name = req.cls.metadata.name
            if name in by_class:
                for cfg in by_class[name]:
                    cfg.requests.append(req.name)
                continue
            by_class[name] = []
            for cc in req.cls.spec.config:
                cfg = out.devices.config.add(source=SOURCE_CLASS, requests=[req.name])
                cfg.opaque.CopyFrom(cc.opaque)
                by_class[name].append(cfg)
        names = {req.base for req in chosen} | {req.name for req in chosen}
        for cc in claim.spec.devices.config:
            if not cc.requests or names.intersection(cc.requests):
                cfg = out.devices.config.add(source=SOURCE_CLAIM, requests=cc.requests)
                cfg.opaque.CopyFrom(cc.opaque)
        for cfg in out.devices.config:
            if len(cfg.requests) == len(chosen):
                del cfg.requests[:]
        selector = self._node_selector(c, self.node)
        if selector is not None:
            out.node_selector.CopyFrom(selector)
        return out

    def _node_selector(self, c: int, node: str) -> core_pb2.NodeSelector | None:
        term = core_pb2.NodeSelectorTerm()
        for d, _ in self.results[c]:
            s = d.slice
            if s.node_name or bindingconditions.binds_to_node(d):
                # One node-local device, or one binding to the node, ties the whole
                # allocation to the node.
                local = core_pb2.NodeSelectorTerm()
                local.match_fields.add(key=OBJECT_NAME_FIELD, operator="In", values=[node])
                return core_pb2.NodeSelector(node_selector_terms=[local])
            if s.node_selector is None:
                continue
            terms = s.msg.spec.node_selector.node_selector_terms
            if len(terms) > 1:
                raise AllocationError(
                    f"claim {self.results[c][0][1].claim}: unsupported ResourceSlice "
                    f"nodeSelector with {len(terms)} terms (slice {s.msg.metadata.name})"
                )
            for t in terms:
                _merge(t.match_fields, term.match_fields)
                _merge(t.match_expressions, term.match_expressions)
        if term.match_fields or term.match_expressions:
            return core_pb2.NodeSelector(node_selector_terms=[term])
        return None

    def _unfit(self) -> Unfit:
        c, r = self.frontier
        claim = self.claims[c]
        alts = self.plans[c][r]
        why = "; ".join(self._why(c, req) for req in alts)
        if len(alts) > 1:
            why = f"no subrequest can be allocated ({why})"
        reason = f"{_request_name(claim, claim.spec.devices.requests[r].name)}: {why}"
        invalid = [f"{p} ({p.invalid})" for p in self.pools if p.invalid]
        if invalid:
            reason += f"; invalid resource pools were encountered: {', '.join(invalid)}"
        return Unfit(_key(claim), reason)

    def _why(self, c: int, req: _Request) -> str:
        """Why `req` could not be satisfied in the search, judged on its own."""
        label = f"{req.sub}: " if req.sub else ""
        kind = f'of class "{req.cls.metadata.name}"'
        if req.all_devices is not None:
            matching = req.all_devices
            if not matching:
                return f"{label}no device {kind} matches"
            busy = sum(1 for d in matching if d.id in self.alloc.allocated)
            if busy and not req.admin:
                return f"{label}asks for all {len(matching)} devices {kind}, {busy} in use"
            return f"{label}all {len(matching)} devices {kind} cannot be allocated together"
        matching = self.candidates(req)
        if not matching:
            return f"{label}no device {kind} matches"
        free = sum(1 for d in matching if req.admin or d.id not in self.alloc.allocated)
        if free < req.count:
            return (
                f"{label}needs {req.count} device(s) {kind}, {free} of {len(matching)} "
                "matching are free"
            )
        if self.constraints[c]:
            attrs = ", ".join(sorted({m.attribute for m in self.constraints[c]}))
            return (
                f"{label}{len(matching)} matching devices {kind}, but not {req.count} that "
                f"satisfy the claim's constraints (matchAttribute {attrs}) together with "
                "the other requests"
            )
        return f"{label}the matching devices {kind} are taken by other requests"


# ----------------------------------------------------------------------------- requests, checked


def _specs(
    claim: resource_pb2.ResourceClaim,
    classes: Mapping[str, resource_pb2.DeviceClass],
    admin_namespaces: frozenset[str],
) -> list[list[_Spec]]:
    """Per request of the claim its alternatives (one unless firstAvailable), checked:
    the class exists, selectors compile, the mode is known, admin access is allowed."""
    out: list[list[_Spec]] = []
    for req in claim.spec.devices.requests:
        if req.first_available:
            out.append(
                [
                    _spec(claim, req.name, sub.name, sub, False, classes, admin_namespaces)
                    for sub in req.first_available
                ]
            )
        elif req.HasField("exactly"):
            ex = req.exactly
            admin = ex.HasField("admin_access") and ex.admin_access
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


def _merge(
    src: Sequence[core_pb2.NodeSelectorRequirement],
    dst: Sequence[core_pb2.NodeSelectorRequirement],
) -> None:
    """Append to `dst` (a repeated field) the requirements of `src` it lacks."""
    for req in src:
        if not any(
            e.key == req.key and e.operator == req.operator and set(e.values) == set(req.values)
            for e in dst
        ):
            dst.add().CopyFrom(req)  # type: ignore[attr-defined]
