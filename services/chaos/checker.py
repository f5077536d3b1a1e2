"""The safety checker: etcd's MVCC history of a run in, a verdict out.

Why this module exists: chaos (killed, paused and partitioned leaders, etcd restarts)
must not make the control plane unsafe, and the one witness every component writes
through is etcd. Replaying its history revision by revision, the checker proves five
properties of the run (DESIGN.md "Chaos + checker"):

1. double-bind: a pod UID is bound at most once: spec.nodeName goes from "" to a node at
   most once (or is set at creation) and never from one node to another.
2. overcommit: at every revision, the requests (the scheduler's `pod_requests`) of the
   live, non-terminal pods bound to an existing node fit its status.allocatable, for cpu,
   memory, ephemeral-storage, each requested extended resource and the pod count. A node
   is reported when a resource goes over, not again while it stays over.
3. binds by the leader of record: every bind (a pod update taking spec.nodeName from ""
   to a node) carries the `kubera.io/bound-by` annotation, and what it names held at
   that revision: a fenced token ``<election key>@<create_revision>`` whose key existed
   with that create_revision (before or within the bind's txn), or an allocation key
   written by the same revision (shared-state mode). Reported as stale-leader-bind,
   allocation-bind and unfenced-bind (the last one allowed with `allow_unfenced`).
4. lost-pod: at the end, every pod that exists and is not being deleted is bound or
   carries PodScheduled=False with a reason.
5. double-allocation: a DRA device is held by at most one ResourceClaim at every
   revision (the exclusive devices of status.allocation), and the shares of a device
   that allows multiple allocations never consume more than its capacity
   (services/chaos/devices.py).

A pod or node value that does not decode is a finding of its own, corrupt-object (its key
and revision): the checker cannot prove anything of it, so the verdict fails, and the
replay goes on with the key's last good state (as the apiserver's watch cache does).

It is pure logic, no I/O: feed `Checker.apply(revision, events)` in revision order (all
events of one revision in one call, as the txn wrote them), then `finish()`. The work per
event is constant: pods and nodes are decoded once per event, a pod's requests are summed
when it starts counting against a node (so an in-place resize is not followed), and only
the nodes a revision touched are checked, so runs with 10k+ pods and a million events stay
linear (about 10 µs per event). Reading the history is services/chaos/history.py; the
verdict's types (Verdict, Violation, Counts, PodRef) are services/chaos/verdict.py.

State per pod (keyed by etcd key; a new UID at the same key is a new pod):

    absent --PUT--> unbound --PUT nodeName "" -> X (a bind)--> bound
    absent --PUT with nodeName X (created bound, not a bind)--> bound
    bound --PUT phase Succeeded/Failed--> terminal
    any --DELETE--> absent

A pod counts against its node while it is bound and not terminal, including while it is
being deleted (deletionTimestamp set): its containers may still run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.helpers.fencing import BOUND_BY, parse_bound_by
from services.api.helpers.resources import CPU, EPHEMERAL, MEMORY, PODS, Resource, pod_requests
from services.api.machinery.errors import CorruptObjectError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow_optional
from services.apiserver import decode
from services.chaos.devices import CLAIM_PREFIX, DOUBLE_ALLOCATION, SLICE_PREFIX, DeviceLedger
from services.chaos.verdict import Counts, PodRef, Verdict, Violation
from services.storage import Event
from services.storage.keys import ALLOCATIONS_PREFIX, ELECTION_PREFIX

POD_PREFIX = BY_KIND["Pod"].prefix()
NODE_PREFIX = BY_KIND["Node"].prefix()

DOUBLE_BIND = "double-bind"
OVERCOMMIT = "overcommit"
STALE_LEADER_BIND = "stale-leader-bind"
ALLOCATION_BIND = "allocation-bind"
UNFENCED_BIND = "unfenced-bind"
LOST_POD = "lost-pod"
CORRUPT_OBJECT = "corrupt-object"
#: Every violation kind, in the order of the five properties above, then corrupt values.
CHECKS = (
    DOUBLE_BIND,
    OVERCOMMIT,
    STALE_LEADER_BIND,
    ALLOCATION_BIND,
    UNFENCED_BIND,
    LOST_POD,
    DOUBLE_ALLOCATION,
    CORRUPT_OBJECT,
)

TERMINAL_PHASES = ("Succeeded", "Failed")
#: How many pods one violation names at most (an overcommitted node may hold thousands).
_NAMED_PODS = 5

_POD = BY_KIND["Pod"]
_NODE = BY_KIND["Node"]
_CLAIM = BY_KIND["ResourceClaim"]
_SLICE = BY_KIND["ResourceSlice"]


# ------------------------------------------------------------------ state


@dataclass(slots=True)
class _Pod:
    ref: PodRef
    node: str = ""
    terminal: bool = False
    deleting: bool = False
    #: PodScheduled=False's reason ("" when the condition is absent or not False).
    unschedulable_reason: str = ""
    mod_revision: int = 0
    #: The node it counts against ("" while it does not) and the requests it counts.
    counted_on: str = ""
    requests: Resource | None = None


@dataclass(slots=True)
class _Node:
    name: str
    exists: bool = False
    #: Whether it ever existed (for the node count).
    seen: bool = False
    allocatable: Resource = field(default_factory=Resource)
    allocatable_src: dict[str, str] = field(default_factory=dict)
    requested: Resource = field(default_factory=Resource)
    #: UID -> pod, for the pods counting against this node.
    pods: dict[str, PodRef] = field(default_factory=dict)
    #: Resources over allocatable at the last check (reported when they newly appear).
    over: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Term:
    create_revision: int
    holder: str


def _fmt(resource: str, value: int) -> str:
    return f"{value}m" if resource == CPU else str(value)


def _over(node: _Node) -> dict[str, tuple[int, int]]:
    """resource -> (requested, allocatable) for every resource the node's pods exceed."""
    r, a = node.requested, node.allocatable
    out: dict[str, tuple[int, int]] = {}
    if len(node.pods) > a.allowed_pod_number:
        out[PODS] = (len(node.pods), a.allowed_pod_number)
    for name, req, alloc in (
        (CPU, r.milli_cpu, a.milli_cpu),
        (MEMORY, r.memory, a.memory),
        (EPHEMERAL, r.ephemeral_storage, a.ephemeral_storage),
    ):
        if req > 0 and req > alloc:
            out[name] = (req, alloc)
    for name, req in r.scalar.items():
        if req > 0 and req > a.scalar.get(name, 0):
            out[name] = (req, a.scalar.get(name, 0))
    return out


def scheduled_or_explained(pod: core_pb2.Pod) -> bool:
    """Bound, being deleted, or PodScheduled=False with a reason: not lost."""
    return bool(pod.spec.node_name or pod.metadata.deletion_timestamp or _unschedulable(pod))


def _unschedulable(pod: core_pb2.Pod) -> str:
    for c in pod.status.conditions:
        if c.type == "PodScheduled":
            return c.reason if c.status == "False" else ""
    return ""


class Checker:
    """Consumes a run's history revision by revision; `finish()` gives the verdict."""

    def __init__(self, *, allow_unfenced: bool = False, max_violations: int = 1000) -> None:
        self.allow_unfenced = allow_unfenced
        self.max_violations = max_violations
        self.counts = Counts()
        self.violations: list[Violation] = []
        self.violation_counts = dict.fromkeys(CHECKS, 0)
        self._pods: dict[str, _Pod] = {}
        self._nodes: dict[str, _Node] = {}
        self._elections: dict[str, _Term] = {}
        #: (election key, create_revision) -> holder: who held each term.
        self._holders: dict[tuple[str, int], str] = {}
        #: UID -> the first node it got, and the revision: a UID is placed only once.
        self._first_node: dict[str, tuple[str, int]] = {}
        self._devices = DeviceLedger(
            lambda check, message, key, revisions: self._violate(
                check, message, key=key, revisions=revisions
            )
        )
        self._finished = False
        # The revision being applied: its events, the election keys as they were before
        # it, the allocation keys it wrote, the nodes it touched and the pods it added.
        self._rev = 0
        self._rev_events: Sequence[Event] = ()
        self._elections_before: dict[str, _Term | None] = {}
        self._allocations: set[str] = set()
        self._touched: dict[str, list[PodRef]] = {}
        self._created_nodes: set[str] = set()

    # ------------------------------------------------------------- feeding

    def apply(self, revision: int, events: Sequence[Event]) -> None:
        """All events of one revision (one txn), in the order etcd applied them."""
        if self._finished:
            raise RuntimeError("checker already finished")
        if revision <= self.counts.last_revision:
            raise ValueError(
                f"revision {revision} applied after {self.counts.last_revision}: "
                "history must be fed in increasing revision order"
            )
        c = self.counts
        c.first_revision = c.first_revision or revision
        c.last_revision = revision
        c.revisions += 1
        c.events += len(events)
        self._rev = revision
        self._rev_events = events
        self._elections_before = {}
        self._allocations = set()
        self._touched = {}
        self._created_nodes = set()
        for e in events:
            key = e.kv.key
            if key.startswith(ELECTION_PREFIX) and key not in self._elections_before:
                self._elections_before[key] = self._elections.get(key)
            elif key.startswith(ALLOCATIONS_PREFIX) and e.type == "PUT":
                self._allocations.add(key)
        claims: list[tuple[str, Any]] = []
        slices: list[tuple[str, Any]] = []
        for e in events:
            key = e.kv.key
            if key.startswith(POD_PREFIX):
                self._pod_event(e)
            elif key.startswith(NODE_PREFIX):
                self._node_event(e)
            elif key.startswith(ELECTION_PREFIX):
                self._election_event(e)
            elif key.startswith(CLAIM_PREFIX):
                claim = None if e.type == "DELETE" else self._decode(_CLAIM, e)
                if claim is not None or e.type == "DELETE":
                    claims.append((key, claim))
            elif key.startswith(SLICE_PREFIX):
                rs = None if e.type == "DELETE" else self._decode(_SLICE, e)
                if rs is not None or e.type == "DELETE":
                    slices.append((key, rs))
        for name, added in self._touched.items():
            self._check_node(self._nodes[name], added)
        if slices:
            self._devices.apply_slices(slices)
        if claims:
            self._devices.apply(revision, claims)
            c.device_allocations = self._devices.allocations

    def finish(self) -> Verdict:
        """The lost-pod check over the final state, and the verdict."""
        if not self._finished:
            self._finished = True
            for p in self._pods.values():
                self.counts.pods_at_end += 1
                if p.node:
                    self.counts.pods_bound_at_end += 1
                elif not p.deleting and not p.unschedulable_reason:
                    self._violate(
                        LOST_POD,
                        f"pod {p.ref} is unbound at the end of the run (last changed at "
                        f"revision {p.mod_revision}) and has no PodScheduled=False reason: "
                        "it was neither scheduled nor reported unschedulable",
                        pods=(p.ref,),
                        revision=p.mod_revision,
                    )
        return Verdict(
            self.counts, self.violations, dict(self.violation_counts), self.allow_unfenced
        )

    # ---------------------------------------------------------------- pods

    def _pod_event(self, e: Event) -> None:
        key = e.kv.key
        old = self._pods.get(key)
        if e.type == "DELETE":
            if old is not None:
                self._remove_pod(key, old)
            return
        pod = narrow_optional(self._decode(_POD, e), core_pb2.Pod)
        if pod is None:
            return
        meta = pod.metadata
        if old is not None and old.ref.uid != meta.uid:
            self._remove_pod(key, old)  # replaced under the same name: a new pod
            old = None
        node = pod.spec.node_name
        if old is None:
            p = _Pod(PodRef(meta.namespace, meta.name, meta.uid))
            self._pods[key] = p
            self.counts.pods_created += 1
        else:
            p = old
        if node and node != p.node:
            self._placed(p, pod, node, bind=old is not None)
        p.node = node
        p.terminal = pod.status.phase in TERMINAL_PHASES
        p.deleting = bool(meta.deletion_timestamp)
        p.unschedulable_reason = _unschedulable(pod)
        p.mod_revision = self._rev
        self._recount(p, pod)

    def _placed(self, p: _Pod, pod: core_pb2.Pod, node: str, *, bind: bool) -> None:
        """The pod got `node`: by a bind (an update from ""), or created on it."""
        first = self._first_node.get(p.ref.uid)
        if first is not None:
            was = f"moved from node {p.node}" if p.node else "after being unbound"
            self._violate(
                DOUBLE_BIND,
                f"pod {p.ref} was bound to node {first[0]} at revision {first[1]} "
                f"and bound again to node {node} ({was}) at revision {self._rev}",
                pods=(p.ref,),
                node=node,
                revisions=(first[1], self._rev),
            )
            return
        self._first_node[p.ref.uid] = (node, self._rev)
        if bind:
            self._bind(p, pod, node)

    def _remove_pod(self, key: str, p: _Pod) -> None:
        del self._pods[key]
        self.counts.pods_deleted += 1
        self._uncount(p)

    def _recount(self, p: _Pod, pod: core_pb2.Pod) -> None:
        want = p.node if p.node and not p.terminal else ""
        if want == p.counted_on:
            return
        self._uncount(p)
        if want:
            p.requests = pod_requests(pod)
            p.counted_on = want
            n = self._node(want)
            n.requested.add(p.requests)
            n.pods[p.ref.uid] = p.ref
            self._touched.setdefault(want, []).append(p.ref)

    def _uncount(self, p: _Pod) -> None:
        if p.counted_on and p.requests is not None:
            n = self._nodes[p.counted_on]
            n.requested.sub(p.requests)
            n.pods.pop(p.ref.uid, None)
            self._touched.setdefault(n.name, [])
        p.counted_on, p.requests = "", None

    # --------------------------------------------------------------- binds

    def _bind(self, p: _Pod, pod: core_pb2.Pod, node: str) -> None:
        c = self.counts
        c.binds += 1
        annotation = pod.metadata.annotations.get(BOUND_BY, "")
        mode, key, token = parse_bound_by(annotation)
        what = f"pod {p.ref} was bound to node {node} at revision {self._rev}"
        if mode == "fenced":
            c.binds_fenced += 1
            if token in self._valid_tokens(key):
                holder = self._holders.get((key, token), "?")
                c.binds_by_holder[holder] = c.binds_by_holder.get(holder, 0) + 1
                return
            self._violate(
                STALE_LEADER_BIND,
                f"{what} with fencing token {key}@{token}"
                f"{self._term_words(key, token)}, but {self._held_words(key)}",
                pods=(p.ref,),
                node=node,
                revisions=(self._rev, token),
            )
        elif mode == "allocation":
            c.binds_allocation += 1
            if key not in self._allocations:
                self._violate(
                    ALLOCATION_BIND,
                    f"{what} under allocation {key}, but that revision did not write {key}",
                    pods=(p.ref,),
                    node=node,
                )
        else:
            c.binds_unfenced += 1
            if not self.allow_unfenced:
                why = (
                    f"an unreadable {BOUND_BY} annotation {annotation!r}"
                    if annotation
                    else f"no {BOUND_BY} annotation"
                )
                self._violate(
                    UNFENCED_BIND,
                    f"{what} with {why}: an unfenced bind, not proven to come from the "
                    "leader of record",
                    pods=(p.ref,),
                    node=node,
                )

    def _valid_tokens(self, key: str) -> set[int]:
        """create_revisions `key` had at this revision: before the txn, or put within it."""
        if key not in self._elections_before:
            cur = self._elections.get(key)
            return {cur.create_revision} if cur else set()
        before = self._elections_before[key]
        tokens = {before.create_revision} if before else set()
        tokens.update(
            e.kv.create_revision for e in self._rev_events if e.type == "PUT" and e.kv.key == key
        )
        return tokens

    def _term_words(self, key: str, token: int) -> str:
        holder = self._holders.get((key, token))
        return f" (the term of {holder})" if holder else " (a term this history never saw)"

    def _held_words(self, key: str) -> str:
        if key in self._elections_before:
            term = self._elections_before[key]
        else:
            term = self._elections.get(key)
        if term is None:
            return "at that revision nobody held the election key"
        return (
            f"at that revision the key was held by {term.holder} since revision "
            f"{term.create_revision}"
        )

    # --------------------------------------------------------------- nodes

    def _node(self, name: str) -> _Node:
        n = self._nodes.get(name)
        if n is None:
            n = self._nodes[name] = _Node(name)
        return n

    def _node_event(self, e: Event) -> None:
        name = e.kv.key[len(NODE_PREFIX) :]
        n = self._node(name)
        if e.type == "DELETE":
            n.exists = False
            n.over = frozenset()
            return
        node = narrow_optional(self._decode(_NODE, e), core_pb2.Node)
        if node is None:
            return
        if not n.seen:
            n.seen = True
            self.counts.nodes += 1
        alloc = node.status.allocatable
        if not n.exists:
            self._created_nodes.add(name)
        if not n.exists or alloc != n.allocatable_src:
            n.allocatable_src = dict(alloc)
            n.allocatable = Resource.from_list(alloc)
            self._touched.setdefault(name, [])
        n.exists = True

    def _check_node(self, n: _Node, added: list[PodRef]) -> None:
        if not n.exists:
            return
        over = _over(n)
        new = set(over) - n.over
        n.over = frozenset(over)
        if not new:
            return
        detail = ", ".join(
            f"{r} requested {_fmt(r, req)} > allocatable {_fmt(r, alloc)}"
            for r, (req, alloc) in sorted(over.items())
        )
        if added:
            cause = "after binding " + ", ".join(str(p) for p in added[:_NAMED_PODS])
            named = tuple(added[:_NAMED_PODS])
        else:
            cause = (
                "when it was created with pods already bound to it"
                if n.name in self._created_nodes
                else "when its allocatable changed"
            )
            named = tuple(list(n.pods.values())[:_NAMED_PODS])
        self._violate(
            OVERCOMMIT,
            f"node {n.name} is overcommitted at revision {self._rev} {cause}: {detail} "
            f"({len(n.pods)} pods count against it)",
            pods=named,
            node=n.name,
        )

    # ----------------------------------------------------------- elections

    def _election_event(self, e: Event) -> None:
        key = e.kv.key
        if e.type == "DELETE":
            self._elections.pop(key, None)
            return
        cur = self._elections.get(key)
        holder = e.kv.value.decode(errors="replace")
        if cur is None or cur.create_revision != e.kv.create_revision:
            terms = self.counts.leader_terms
            terms[key] = terms.get(key, 0) + 1
        self._elections[key] = _Term(e.kv.create_revision, holder)
        self._holders[(key, e.kv.create_revision)] = holder

    # ------------------------------------------------------------- decoding

    def _decode(self, kind: Any, e: Event) -> Any:
        """The event's object, or None after a corrupt-object finding naming its key."""
        try:
            return decode(kind, e.kv)
        except CorruptObjectError:
            self._violate(
                CORRUPT_OBJECT,
                f"corrupt object: key {e.kv.key} was written at revision {self._rev} with a "
                f"value that does not decode as {kind.message.DESCRIPTOR.full_name}; nothing "
                "is proven of it, the check goes on with its last good state",
                key=e.kv.key,
            )
            return None

    # ---------------------------------------------------------- violations

    def _violate(
        self,
        check: str,
        message: str,
        *,
        pods: tuple[PodRef, ...] = (),
        node: str = "",
        revision: int = 0,
        revisions: tuple[int, ...] = (),
        key: str = "",
    ) -> None:
        self.violation_counts[check] += 1
        if len(self.violations) < self.max_violations:
            rev = revision or self._rev
            self.violations.append(
                Violation(check, rev, message, pods, node, revisions or (rev,), key)
            )


def check(
    history: Iterable[tuple[int, Sequence[Event]]],
    *,
    allow_unfenced: bool = False,
    max_violations: int = 1000,
) -> Verdict:
    """Run the checker over (revision, events) pairs in revision order."""
    checker = Checker(allow_unfenced=allow_unfenced, max_violations=max_violations)
    for revision, events in history:
        checker.apply(revision, events)
    return checker.finish()
