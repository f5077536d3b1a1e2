"""Allocation records: what shared-state (Omega) binds have put on each node, so that
several active schedulers can never overcommit one; and which claim holds each device
shared-state claim writes allocated, so that they never give one device twice (Devices,
below).

Why this module exists: with one scheduler, its cache is the only placer and fit is decided
there. With K active schedulers sharing the cluster state (Omega), each decides from its
own lagging view, so the apiserver decides whether a placement still fits, atomically with
the bind. A bind with `check_allocation` reads the node's record (its key is
`allocation_key(node name)`, services/storage/keys.py), decides fit from it and the Node's
status.allocatable, and writes the bound pod and the grown record in ONE txn that compares
both mod_revisions (create_revision == 0 when there is no record yet). A concurrent bind to the same node moves the record and fails the
txn; the caller reads again and re-decides: it still binds if it still fits (Omega's
fine-grained conflict detection), else AllocationConflictError.

The record's value (JSON; cpu in millicores, everything else in base units):

    {"pods": [{"uid": "…", "pod": "ns/name", "rev": 1234,
               "requests": {"cpu": 500, "memory": 1073741824}}, …]}

Invariant: the record never under-counts, however far the apiserver's watch cache lags.
* An entry is added only by the bind txn that binds its pod (exact).
* An entry is dropped only when its pod is known to be gone or terminal, both final states:
  from the pods watch cache (cheap; "gone" — absent, or another UID under the name — counts
  only once the cache has reached `rev`, the pod's mod_revision when the entry was written,
  so a cache that has not yet seen the pod cannot drop it), and, before a bind is refused,
  from etcd itself (exact), so a lagging cache can delay a drop but never cause a refusal.
* Pods placed on the node some other way (a fenced bind, a pod created with spec.nodeName)
  are adopted from the watch cache's spec.nodeName index at each bind; that also seeds a new
  record. Those are as fresh as the cache: the guarantee is exact for pods bound through
  check_allocation binds, best-effort for pods that bypass them.

Node allocatable is read in the same revision as the record but not compared in the txn:
node status changes every heartbeat, and allocatable itself rarely does.

Fit is NodeResourcesFit's arithmetic on `pod_requests` (services/api/helpers/resources.py,
which the kubelet admits with too, so the three never disagree): the pod count, cpu, memory,
ephemeral-storage and every extended resource against status.allocatable.

Devices. A scheduler allocates devices in PreBind, by writing a ResourceClaim's
status.allocation before the pod's bind. An elected scheduler's writes are fenced (a
deposed leader's are refused, fencing.py); K shared-state schedulers each decide from a
lagging view, and a device is no node resource (a network-attached one serves many
nodes), so the node records cannot cover it. A claim status write with
`check_allocation` (`write_claim_status`) also writes, in the SAME txn, one record per
device it newly holds exclusively (`allocation_devices`: admin-access results hold
none; shares of devices that allow multiple allocations are Shares, below):

    /kubera/deviceallocations/<driver>/<pool>/<device>  ->  {"claim": "ns/name", "uid": "…"}

comparing each record: create_revision == 0 when there is none, else its mod_revision as
read. A record naming another claim that still holds the device (read from etcd, exact)
refuses the write with AllocationConflictError: the scheduler's attempt fails, Unreserve
runs, and the pod is retried after backoff, by when the informer has brought the winner's
claim. A record whose claim is gone (absent, another UID) or no longer holds the device
is taken over, comparing that claim's mod_revision too, so it cannot take the device back
meanwhile. A txn that fails on a record (not on the claim) reads again and re-decides.
Devices the old claim already held are not checked again: reservedFor updates cost
nothing.

Invariant: a device record is written only with the claim status that allocates its
device, and never deleted, only taken over; stale records are bounded by the number of
devices. Claims allocated without `check_allocation` (an elected scheduler, a user
writing status) write no record: the guarantee is exact among shared-state writes.

Shares (DRAConsumableCapacity). A device that allows multiple allocations is given to
many claims, each a share (a result with a shareID) consuming part of its capacity
(consumedCapacity). Its record, at the same key, lists the shares recorded for it:

    {"shares": [{"claim": "ns/name", "uid": "…", "share": "<shareID>",
                 "consumed": {"memory": "4Gi"}}, …]}

A claim status write with `check_allocation` that gains a share of a device reads the
record, keeps the shares of other claims that still hold them (their claims read from
etcd, exact; a share whose claim is gone or dropped it is forgotten) plus every share of
the device the new status holds, and sums what they consume per capacity: over the
device's capacity (its ResourceSlice, from the watch cache) the write is refused with
AllocationConflictError, else the record is written in the same txn, compared on its
mod_revision. So two replicas never overcommit a device's capacity among shared-state
writes; a device no ResourceSlice publishes refuses the share (the scheduler saw a
slice this apiserver has not: retried).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.capacity import Amounts
from services.api.dra.claims import allocation_devices, allocation_shares
from services.api.dra.counters import amount
from services.api.dra.pools import DeviceID
from services.api.helpers.resources import CPU, EPHEMERAL, MEMORY, PODS, Resource, pod_requests
from services.api.machinery.errors import (
    AllocationConflictError,
    ConflictError,
    CorruptObjectError,
)
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.limits import loads_json
from services.apiserver.objects import MAX_RETRIES
from services.apiserver.store import Store
from services.apiserver.watchcache import WatchCache
from services.storage import Compare, Get, KeyValue, Put, Storage
from services.storage.keys import allocation_key, device_allocation_key

#: The pods watch cache's index that lists the pods bound to a node.
NODE_INDEX = "spec.nodeName"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
#: etcd refuses a txn of more than 128 operations (--max-txn-ops); reads go in chunks.
_READ_CHUNK = 100

_PODS = BY_KIND["Pod"]
_NODES = BY_KIND["Node"]


# ----------------------------------------------------------------------------- the record


def _requests_to_json(r: Resource) -> dict[str, int]:
    out = {CPU: r.milli_cpu, MEMORY: r.memory, EPHEMERAL: r.ephemeral_storage, **r.scalar}
    return {k: v for k, v in out.items() if v}


def _requests_from_json(d: dict[str, int]) -> Resource:
    scalar = {k: int(v) for k, v in d.items() if k not in (CPU, MEMORY, EPHEMERAL)}
    return Resource(
        milli_cpu=int(d.get(CPU, 0)),
        memory=int(d.get(MEMORY, 0)),
        ephemeral_storage=int(d.get(EPHEMERAL, 0)),
        scalar=scalar,
    )


@dataclass(frozen=True, slots=True)
class Allocated:
    """One pod the record counts on its node."""

    uid: str
    #: namespace/name
    pod: str
    #: The pod's mod_revision when it was counted: the watch cache must have reached it
    #: before the pod's absence there means it is gone.
    rev: int
    requests: Resource

    @property
    def key(self) -> str:
        namespace, _, name = self.pod.partition("/")
        return _PODS.key(namespace, name)

    def to_json(self) -> dict:
        return {
            "uid": self.uid,
            "pod": self.pod,
            "rev": self.rev,
            "requests": _requests_to_json(self.requests),
        }

    @classmethod
    def from_json(cls, d: dict) -> Allocated:
        return cls(d["uid"], d["pod"], int(d["rev"]), _requests_from_json(d.get("requests", {})))

    @classmethod
    def of(cls, pod: core_pb2.Pod, rev: int) -> Allocated:
        m = pod.metadata
        return cls(m.uid, f"{m.namespace}/{m.name}", rev, pod_requests(pod))


def decode_record(kv: KeyValue | None) -> list[Allocated]:
    """The record's pods; CorruptObjectError naming the key when it does not decode."""
    if kv is None:
        return []
    try:
        return [Allocated.from_json(d) for d in loads_json(kv.value, "the record")["pods"]]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise CorruptObjectError(
            f"corrupt object: key {kv.key} (revision {kv.mod_revision}): allocation record "
            f"not decodable: {e}"
        ) from None


def encode_record(pods: Sequence[Allocated]) -> bytes:
    return json.dumps({"pods": [p.to_json() for p in pods]}, separators=(",", ":")).encode()


def allocated(pods: Sequence[Allocated]) -> Resource:
    total = Resource()
    for p in pods:
        total.add(p.requests)
    return total


# -------------------------------------------------------------------------------- fit


@dataclass(frozen=True, slots=True)
class Shortfall:
    resource: str
    requested: int
    allocated: int
    allocatable: int

    def __str__(self) -> str:
        unit = "m" if self.resource == CPU else ""
        return (
            f"{self.resource}: requested {self.requested}{unit}, allocated "
            f"{self.allocated}{unit}, allocatable {self.allocatable}{unit}"
        )


def shortfalls(
    request: Resource, pods: Sequence[Allocated], allocatable: Resource
) -> list[Shortfall]:
    """What the node lacks for one more pod requesting `request` (NodeResourcesFit's rule:
    each requested amount must be at most allocatable - allocated; the pod count always)."""
    used = allocated(pods)
    out: list[Shortfall] = []
    if len(pods) + 1 > allocatable.allowed_pod_number:
        out.append(Shortfall(PODS, 1, len(pods), allocatable.allowed_pod_number))
    names = [CPU, MEMORY, EPHEMERAL, *sorted(request.scalar)]
    for name in names:
        want = request.get(name)
        if want > 0 and want > allocatable.get(name) - used.get(name):
            out.append(Shortfall(name, want, used.get(name), allocatable.get(name)))
    return out


# ------------------------------------------------------------------------ pruning


def _node_of(pod: Message) -> str:
    return pod.spec.node_name  # type: ignore[attr-defined,no-any-return]


def pods_cache(store: Store) -> WatchCache:
    """The pods watch cache, with its spec.nodeName index (added on first use)."""
    cache = store.caches[_PODS.resource]
    cache.add_index(NODE_INDEX, _node_of)
    return cache


def prune_cached(cache: WatchCache, pods: Sequence[Allocated]) -> list[Allocated]:
    """`pods` without those the watch cache shows gone or terminal (see the invariant)."""
    if not cache.started:
        return list(pods)
    out = []
    for p in pods:
        entry = cache.store.get(p.key)
        if entry is not None and object_meta(entry.obj).uid == p.uid:
            if entry.obj.status.phase not in TERMINAL_PHASES:  # type: ignore[attr-defined]
                out.append(p)
        elif cache.revision < p.rev:
            out.append(p)  # the cache has not seen this pod yet: nothing is known
    return out


def adopt_cached(cache: WatchCache, node_name: str, pods: list[Allocated]) -> None:
    """Add the live pods the watch cache shows on the node that the record lacks."""
    if not cache.started:
        return
    have = {p.uid for p in pods}
    for key in cache.by_index(NODE_INDEX, node_name):
        pod = narrow(cache.store[key].obj, core_pb2.Pod)
        if pod.metadata.uid not in have and pod.status.phase not in TERMINAL_PHASES:
            pods.append(Allocated.of(pod, int(pod.metadata.resource_version)))


async def prune_stored(storage: Storage, pods: Sequence[Allocated]) -> list[Allocated]:
    """`pods` without those etcd shows gone or terminal: exact as of the read."""
    chunks = [pods[i : i + _READ_CHUNK] for i in range(0, len(pods), _READ_CHUNK)]
    results = await asyncio.gather(
        *(storage.txn([], [Get(p.key) for p in chunk]) for chunk in chunks)
    )
    out = []
    for chunk, res in zip(chunks, results, strict=True):
        for p, kv in zip(chunk, res.gets, strict=True):
            if kv is None:
                continue
            pod = core_pb2.Pod()
            pod.ParseFromString(kv.value)
            if pod.metadata.uid == p.uid and pod.status.phase not in TERMINAL_PHASES:
                out.append(p)
    return out


# ------------------------------------------------------------------------ the bind's part


async def read(store: Store, pod_key: str, node_name: str) -> tuple[KeyValue | None, ...]:
    """The pod, the node's record and the Node, read at one revision."""
    res = await store.storage.txn(
        [], [Get(pod_key), Get(allocation_key(node_name)), Get(_NODES.key("", node_name))]
    )
    return res.gets


@dataclass(frozen=True, slots=True)
class Guard:
    """What the bind txn adds: the record's compare and its new value."""

    compare: Compare
    put: Put
    pods: tuple[Allocated, ...]


async def admit(
    store: Store,
    pod: core_pb2.Pod,
    pod_rev: int,
    node_name: str,
    record_kv: KeyValue | None,
    node_kv: KeyValue | None,
) -> Guard:
    """The record's compare and put for binding `pod` (read at `pod_rev`) to `node_name`;
    raises AllocationConflictError when it does not fit."""
    who = f"pod {pod.metadata.namespace}/{pod.metadata.name}"
    if node_kv is None:
        raise AllocationConflictError(
            f'{who} cannot be allocated on node "{node_name}": the node does not exist'
        )
    node = core_pb2.Node()
    node.ParseFromString(node_kv.value)
    capacity = Resource.from_list(node.status.allocatable)
    request = pod_requests(pod)
    cache = pods_cache(store)
    pods = prune_cached(cache, decode_record(record_kv))
    adopt_cached(cache, node_name, pods)
    short = shortfalls(request, pods, capacity)
    if short and pods:
        # The cache may not have seen a deletion or a terminal phase yet: ask etcd before
        # refusing, so a lagging cache never costs a bind that fits.
        pods = await prune_stored(store.storage, pods)
        short = shortfalls(request, pods, capacity)
    if short:
        raise AllocationConflictError(
            f'{who} does not fit node "{node_name}" any more (another scheduler allocated '
            f"it first): " + "; ".join(map(str, short))
        )
    pods.append(Allocated.of(pod, pod_rev))
    key = allocation_key(node_name)
    compare = (
        Compare(key, "mod", "==", record_kv.mod_revision)
        if record_kv is not None
        else Compare(key, "create", "==", 0)
    )
    return Guard(compare, Put(key, encode_record(pods)), tuple(pods))


# ----------------------------------------------------------------- one bind per node


class _NodeLocks:
    """Binds to one node through one apiserver take turns, so they do not fail each other's
    txns; the txn's compare still guards against other apiservers."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, node_name: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(node_name, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[node_name] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[node_name]
            if users == 1:
                del self._locks[node_name]
            else:
                self._locks[node_name] = (lock, users - 1)


_LOCKS: weakref.WeakKeyDictionary[Store, _NodeLocks] = weakref.WeakKeyDictionary()


def node_lock(store: Store, node_name: str) -> contextlib.AbstractAsyncContextManager[None]:
    locks = _LOCKS.get(store)
    if locks is None:
        locks = _LOCKS[store] = _NodeLocks()
    return locks.hold(node_name)


# ------------------------------------------------------------------------ devices

_CLAIMS = BY_KIND["ResourceClaim"]


@dataclass(frozen=True, slots=True)
class DeviceHolder:
    """Who a device's record names."""

    claim: str  # namespace/name
    uid: str

    @property
    def key(self) -> str:
        namespace, _, name = self.claim.partition("/")
        return _CLAIMS.key(namespace, name)

    def encode(self) -> bytes:
        return json.dumps({"claim": self.claim, "uid": self.uid}, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, kv: KeyValue) -> DeviceHolder | None:
        """The holder; None for a record that does not decode (taken over as stale)."""
        try:
            d = loads_json(kv.value, "the record")
            return cls(str(d["claim"]), str(d["uid"]))
        except (ValueError, TypeError, KeyError):
            return None

    @classmethod
    def of(cls, claim: resource_pb2.ResourceClaim) -> DeviceHolder:
        m = claim.metadata
        return cls(f"{m.namespace}/{m.name}", m.uid)


def device_record_key(d: DeviceID) -> str:
    return device_allocation_key(d.driver, d.pool, d.device)


def new_devices(new: resource_pb2.ResourceClaim, old: resource_pb2.ResourceClaim) -> list[DeviceID]:
    """The devices `new` holds exclusively that `old` did not (in a stable order)."""
    had = set(allocation_devices(old))
    return sorted({d for d in allocation_devices(new) if d not in had})


async def device_guard(
    store: Store, claim: resource_pb2.ResourceClaim, devices: Sequence[DeviceID]
) -> tuple[list[Compare], list[Put]]:
    """The compares and puts that record `devices` for `claim` in its status write;
    AllocationConflictError when another claim holds one of them."""
    if not devices:
        return [], []
    keys = [device_record_key(d) for d in devices]
    records = (await store.storage.txn([], [Get(k) for k in keys])).gets
    me = DeviceHolder.of(claim)
    holders = {kv.key: DeviceHolder.decode(kv) for kv in records if kv is not None}
    others = sorted({h.key for h in holders.values() if h is not None and h.uid != me.uid})
    current: dict[str, KeyValue | None] = {}
    if others:
        got = (await store.storage.txn([], [Get(k) for k in others])).gets
        current = dict(zip(others, got, strict=True))
    compares: list[Compare] = []
    for d, key, kv in zip(devices, keys, records, strict=True):
        if kv is None:
            compares.append(Compare(key, "create", "==", 0))
            continue
        compares.append(Compare(key, "mod", "==", kv.mod_revision))
        holder = holders[key]
        if holder is None or holder.uid == me.uid:
            continue
        held = current[holder.key]
        if held is not None and d in _claim_holds(held, holder.uid):
            raise AllocationConflictError(
                f'resourceclaim "{me.claim}" cannot be allocated device {d}: resourceclaim '
                f'"{holder.claim}" holds it (another scheduler allocated it first)'
            )
        # Stale: the holder must stay as read until our write lands.
        compares.append(
            Compare(holder.key, "mod", "==", held.mod_revision)
            if held is not None
            else Compare(holder.key, "create", "==", 0)
        )
    return compares, [Put(k, me.encode()) for k in keys]


def _claim_holds(kv: KeyValue, uid: str) -> set[DeviceID]:
    claim = resource_pb2.ResourceClaim()
    try:
        claim.ParseFromString(kv.value)
    except Exception:  # noqa: BLE001 - an undecodable holder holds nothing we can prove
        return set()
    if claim.metadata.uid != uid:
        return set()
    return set(allocation_devices(claim))


# ------------------------------------------------------------------------ shares

_SLICES = BY_KIND["ResourceSlice"]
#: The ResourceSlices watch cache's index by "driver/pool".
POOL_INDEX = "driver/pool"


def new_share_devices(
    new: resource_pb2.ResourceClaim, old: resource_pb2.ResourceClaim
) -> list[DeviceID]:
    """The devices of which `new` holds a share `old` did not (in a stable order)."""
    had = allocation_shares(old)
    return sorted(
        d for d, shares in allocation_shares(new).items() if set(shares) - set(had.get(d, {}))
    )


def _pool_of(obj: Message) -> str:
    rs = narrow(obj, resource_pb2.ResourceSlice)
    return f"{rs.spec.driver}/{rs.spec.pool.name}"


async def device_capacity(store: Store, d: DeviceID) -> Amounts | None:
    """The device's capacity as its ResourceSlice publishes it (None: no slice has it),
    from the watch cache, else from etcd."""
    cache = await store.fresh_cache(_SLICES)
    if cache is not None:
        cache.add_index(POOL_INDEX, _pool_of)
        slices = [cache.store[k].obj for k in cache.by_index(POOL_INDEX, f"{d.driver}/{d.pool}")]
    else:
        kvs, _ = await store.storage.list(_SLICES.prefix())
        slices = [store.decode(_SLICES, kv) for kv in kvs]
    for obj in slices:
        rs = narrow(obj, resource_pb2.ResourceSlice)
        if rs.spec.driver != d.driver or rs.spec.pool.name != d.pool:
            continue
        for dev in rs.spec.devices:
            if dev.name == d.device:
                return {name: amount(c.value) for name, c in dev.capacity.items()}
    return None


def _decode_shares(kv: KeyValue | None) -> list[dict[str, Any]]:
    """A device record's shares; none for no record, an exclusive one or one that does
    not decode (stale: taken over)."""
    if kv is None:
        return []
    try:
        shares = loads_json(kv.value, "the record")["shares"]
        return [s for s in shares if isinstance(s, dict) and {"claim", "uid", "share"} <= set(s)]
    except (ValueError, TypeError, KeyError):
        return []


async def _live_shares(
    store: Store, d: DeviceID, shares: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The recorded shares whose claim (same UID) still holds them, read from etcd."""
    keys = sorted({DeviceHolder(str(s["claim"]), str(s["uid"])).key for s in shares})
    got = (await store.storage.txn([], [Get(k) for k in keys])).gets if keys else []
    held: dict[tuple[str, str], set[str]] = {}
    for key, kv in zip(keys, got, strict=True):
        if kv is None:
            continue
        claim = resource_pb2.ResourceClaim()
        try:
            claim.ParseFromString(kv.value)
        except Exception:  # noqa: BLE001 - an undecodable holder holds nothing we can prove
            continue
        held[(key, claim.metadata.uid)] = set(allocation_shares(claim).get(d, {}))
    return [
        s
        for s in shares
        if str(s["share"])
        in held.get((DeviceHolder(str(s["claim"]), str(s["uid"])).key, str(s["uid"])), set())
    ]


async def share_guard(
    store: Store, claim: resource_pb2.ResourceClaim, devices: Sequence[DeviceID]
) -> tuple[list[Compare], list[Put]]:
    """The compares and puts that record the claim's shares of `devices` in its status
    write; AllocationConflictError when they would take more of a device's capacity than
    it has, with the shares other claims hold."""
    if not devices:
        return [], []
    me = DeviceHolder.of(claim)
    mine = allocation_shares(claim)
    keys = [device_record_key(d) for d in devices]
    records = (await store.storage.txn([], [Get(k) for k in keys])).gets
    compares: list[Compare] = []
    puts: list[Put] = []
    for d, key, kv in zip(devices, keys, records, strict=True):
        capacity = await device_capacity(store, d)
        if capacity is None:
            raise AllocationConflictError(
                f'resourceclaim "{me.claim}" cannot be allocated a share of device {d}: no '
                "ResourceSlice publishes it"
            )
        others = [s for s in _decode_shares(kv) if s["uid"] != me.uid]
        kept = await _live_shares(store, d, others) + [
            {"claim": me.claim, "uid": me.uid, "share": sid, "consumed": consumed}
            for sid, consumed in sorted(mine[d].items())
        ]
        used: dict[str, Decimal] = {}
        for s in kept:
            for name, q in dict(s.get("consumed") or {}).items():
                used[name] = used.get(name, Decimal(0)) + amount(str(q))
        for name, total in sorted(used.items()):
            if name in capacity and total > capacity[name]:
                raise AllocationConflictError(
                    f'resourceclaim "{me.claim}" cannot be allocated a share of device {d}: '
                    f"its shares would consume {total} of capacity {name}, which is "
                    f"{capacity[name]} (another scheduler allocated shares first)"
                )
        compares.append(
            Compare(key, "create", "==", 0)
            if kv is None
            else Compare(key, "mod", "==", kv.mod_revision)
        )
        puts.append(Put(key, json.dumps({"shares": kept}, separators=(",", ":")).encode()))
    return compares, puts


async def write_claim_status(store: Store, kind: Kind, new: Message, kv: KeyValue) -> Message:
    """Write a ResourceClaim's status `new` over `kv` with the records of the devices it
    newly allocates (exclusively, or a share of); a txn that fails on a record (not on the
    claim) is decided again."""
    claim = narrow(new, resource_pb2.ResourceClaim)
    old = narrow(store.decode(kind, kv), resource_pb2.ResourceClaim)
    devices = new_devices(claim, old)
    shared = new_share_devices(claim, old)
    for _ in range(MAX_RETRIES):
        compares, ops = await device_guard(store, claim, devices)
        share_compares, share_ops = await share_guard(store, claim, shared)
        compares, ops = compares + share_compares, ops + share_ops
        try:
            return await store.write(kind, new, kv, compares=compares, ops=ops)
        except ConflictError:
            if not compares:
                raise
            current = await store.storage.get(kv.key)
            if current is None or current.mod_revision != kv.mod_revision:
                raise  # the claim itself changed: the writer's conflict
    raise AllocationConflictError(
        f'resourceclaim "{DeviceHolder.of(claim).claim}": its devices\' allocation records kept '
        "changing; try again"
    )
