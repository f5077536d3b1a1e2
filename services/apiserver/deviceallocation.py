"""Device allocation records: the devices shared-state (Omega) schedulers have given to
claims, so that two active schedulers can never give one device to two claims.

Why this module exists: a scheduler allocates devices in PreBind, by writing a
ResourceClaim's status.allocation, before the pod's bind. One elected scheduler decides
from its own view and its writes are fenced (a deposed leader's are refused, see
fencing.py); K active schedulers (Omega) each decide from a lagging view, so the node
allocation records of binds (allocation.py) are not enough: a device is not a node
resource, and a network-attached one is reachable from many nodes. So a claim status
write with `check_allocation` also writes, in the SAME txn, one record per device it
newly allocates exclusively:

    /kubera/deviceallocations/<driver>/<pool>/<device>  ->  {"claim": "ns/name", "uid": "…"}

and compares each record: create_revision == 0 when there is none; mod_revision == the
one read when it names another claim that no longer holds the device (that claim's
key's mod_revision is compared too, so it cannot take the device back meanwhile). A
record naming a claim that still holds the device (read from etcd, exact) refuses the
write with AllocationConflictError; the scheduler's attempt fails, Unreserve runs, and
the pod is retried after backoff (schedule_one.py), by when its informer has brought the
winner's claim. A txn that fails on a record re-reads and decides again.

Exclusive devices are `allocation_devices` (services/api/dra/claims.py): admin-access
results and shares of devices that allow multiple allocations are not recorded (their
consumable capacity is not checked here, see docs/differences.md). Devices the old
claim already held are not checked again, so reservedFor updates cost nothing.

Invariant: a record is written only with the claim status that allocates its device; it
is never deleted, only taken over once etcd shows its claim gone (another UID under the
name, or absent) or no longer holding the device. Stale records are bounded by the
number of devices. Claims allocated without `check_allocation` (an elected scheduler, a
user writing status) write no record: the guarantee is exact among shared-state writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import resource_pb2
from services.api.dra.claims import allocation_devices
from services.api.dra.pools import DeviceID
from services.api.machinery.errors import AllocationConflictError, ConflictError
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import narrow
from services.api.machinery.limits import loads_json
from services.apiserver.objects import MAX_RETRIES
from services.apiserver.store import Store
from services.storage import Compare, Get, KeyValue, Put
from services.storage.keys import device_allocation_key

_CLAIMS = BY_KIND["ResourceClaim"]


@dataclass(frozen=True, slots=True)
class Holder:
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
    def decode(cls, kv: KeyValue) -> Holder | None:
        """The holder; None for a record that does not decode (taken over as stale)."""
        try:
            d = loads_json(kv.value, "the record")
            return cls(str(d["claim"]), str(d["uid"]))
        except (ValueError, TypeError, KeyError):
            return None

    @classmethod
    def of(cls, claim: resource_pb2.ResourceClaim) -> Holder:
        m = claim.metadata
        return cls(f"{m.namespace}/{m.name}", m.uid)


def record_key(d: DeviceID) -> str:
    return device_allocation_key(d.driver, d.pool, d.device)


def new_devices(new: resource_pb2.ResourceClaim, old: resource_pb2.ResourceClaim) -> list[DeviceID]:
    """The devices `new` holds exclusively that `old` did not (in a stable order)."""
    had = set(allocation_devices(old))
    return sorted({d for d in allocation_devices(new) if d not in had})


async def guard(
    store: Store, claim: resource_pb2.ResourceClaim, devices: Sequence[DeviceID]
) -> tuple[list[Compare], list[Put]]:
    """The compares and puts that record `devices` for `claim` in its status write;
    AllocationConflictError when another claim holds one of them."""
    if not devices:
        return [], []
    keys = [record_key(d) for d in devices]
    records = (await store.storage.txn([], [Get(k) for k in keys])).gets
    me = Holder.of(claim)
    holders = {kv.key: Holder.decode(kv) for kv in records if kv is not None}
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
        if held is not None and d in _holds(held, holder.uid):
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


def _holds(kv: KeyValue, uid: str) -> set[DeviceID]:
    claim = resource_pb2.ResourceClaim()
    try:
        claim.ParseFromString(kv.value)
    except Exception:  # noqa: BLE001 - an undecodable holder holds nothing we can prove
        return set()
    if claim.metadata.uid != uid:
        return set()
    return set(allocation_devices(claim))


async def write_status(store: Store, kind: Kind, new: Message, kv: KeyValue) -> Message:
    """Write a ResourceClaim's status `new` over `kv` with the records of the devices it
    newly allocates; a txn that fails on a record (not on the claim) is decided again."""
    claim = narrow(new, resource_pb2.ResourceClaim)
    devices = new_devices(claim, narrow(store.decode(kind, kv), resource_pb2.ResourceClaim))
    for _ in range(MAX_RETRIES):
        compares, ops = await guard(store, claim, devices)
        try:
            return await store.write(kind, new, kv, compares=compares, ops=ops)
        except ConflictError:
            if not compares:
                raise
            current = await store.storage.get(kv.key)
            if current is None or current.mod_revision != kv.mod_revision:
                raise  # the claim itself changed: the writer's conflict
    raise AllocationConflictError(
        f'resourceclaim "{Holder.of(claim).claim}": its devices\' allocation records kept '
        "changing; try again"
    )
