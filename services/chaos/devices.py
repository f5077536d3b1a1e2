"""The checker's fifth property: no device is given to two claims at once.

Why this module exists: DRA devices are allocated in ResourceClaims' status.allocation,
written by the scheduler's PreBind before the bind, so neither the double-bind nor the
overcommit check sees them. A deposed leader (fenced, services/apiserver/fencing.py) or
two shared-state replicas (the device allocation records,
services/apiserver/allocation.py) must never give one device to two claims; this
ledger proves it from etcd's history, as the node checks prove it for cpu and memory.

A claim holds the devices `allocation_devices` names (services/api/dra/claims.py): the
exclusive ones; admin-access results and shares of devices that allow multiple
allocations hold nothing. A device is held from the revision a claim's status gains it
until the revision the claim loses it (deallocated, deleted, or replaced by another UID
under its name). All releases of one revision (one txn) count before its acquisitions,
so a txn that moves a device from one claim to another is not a double allocation.

    free --claim gains it--> held by C --C loses it--> free
    held by C --claim D gains it--> double-allocation (reported; D is the holder after)

Shares (DRAConsumableCapacity): a device that allows multiple allocations is held by many
claims at once, each a share consuming part of its capacity (`allocation_shares`). The
ledger keeps every claim's shares and every device's capacity as its ResourceSlice
publishes it; at a revision where a claim gains a share, what all shares of that device
consume is summed per capacity, and more than the capacity is a double-allocation too
(the device's capacity given twice), reported once when it starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from protos.kubera.v1 import resource_pb2
from services.api.dra.capacity import Amounts
from services.api.dra.claims import allocation_devices, allocation_shares
from services.api.dra.counters import amount
from services.api.dra.pools import DeviceID
from services.api.machinery.kinds import BY_KIND

CLAIM_PREFIX = BY_KIND["ResourceClaim"].prefix()
SLICE_PREFIX = BY_KIND["ResourceSlice"].prefix()
DOUBLE_ALLOCATION = "double-allocation"


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"resourceclaim {self.namespace}/{self.name} (uid {self.uid})"


@dataclass(slots=True)
class _Held:
    claim: ClaimRef
    since: int


#: (check, message, key, revisions): how the ledger reports a violation to the checker.
Report = Callable[[str, str, str, tuple[int, ...]], None]


class DeviceLedger:
    """Who holds each device, revision by revision."""

    def __init__(self, report: Report) -> None:
        self._report = report
        #: claim key -> (the claim, the devices it holds)
        self._claims: dict[str, tuple[ClaimRef, frozenset[DeviceID]]] = {}
        self._held: dict[DeviceID, _Held] = {}
        #: Device grants seen (a device newly held by a claim exclusively).
        self.allocations = 0
        #: device -> its capacity, from the ResourceSlices; slice key -> its devices.
        self._capacity: dict[DeviceID, Amounts] = {}
        self._slices: dict[str, list[DeviceID]] = {}
        #: device -> claim key -> (the claim, shareID -> consumed capacity)
        self._shares: dict[DeviceID, dict[str, tuple[ClaimRef, dict[str, dict[str, str]]]]] = {}
        #: claim key -> the devices it holds shares of
        self._claim_shares: dict[str, set[DeviceID]] = {}
        #: (device, capacity) overcommitted now (reported when it began).
        self._over: set[tuple[DeviceID, str]] = set()

    def apply_slices(
        self, changes: Sequence[tuple[str, resource_pb2.ResourceSlice | None]]
    ) -> None:
        """One revision's ResourceSlice events: the capacities of their devices."""
        for key, rs in changes:
            for d in self._slices.pop(key, []):
                self._capacity.pop(d, None)
            if rs is None:
                continue
            devices = []
            for dev in rs.spec.devices:
                d = DeviceID(rs.spec.driver, rs.spec.pool.name, dev.name)
                self._capacity[d] = {n: amount(c.value) for n, c in dev.capacity.items()}
                devices.append(d)
            self._slices[key] = devices

    def apply(
        self, revision: int, changes: Sequence[tuple[str, resource_pb2.ResourceClaim | None]]
    ) -> None:
        """One revision's claim events, in order: (key, the claim as put, or None when
        deleted)."""
        gains: list[tuple[str, ClaimRef, frozenset[DeviceID]]] = []
        shared = self._apply_shares(changes)
        for key, claim in changes:
            old, held = self._claims.get(key, (None, frozenset[DeviceID]()))
            ref, now = None, frozenset[DeviceID]()
            if claim is not None:
                m = claim.metadata
                ref, now = (
                    ClaimRef(m.namespace, m.name, m.uid),
                    frozenset(allocation_devices(claim)),
                )
            keep = held & now if ref == old else frozenset[DeviceID]()
            for d in held - keep:
                self._release(d, old)
            if ref is None:
                self._claims.pop(key, None)
                continue
            self._claims[key] = (ref, keep)
            if now - keep:
                gains.append((key, ref, now - keep))
        for key, ref, devices in gains:
            for d in sorted(devices):
                self._acquire(d, ref, revision)
            self._claims[key] = (ref, self._claims[key][1] | devices)
        for d, ref in sorted(shared.items()):
            self._check_capacity(d, ref, revision)

    def _apply_shares(
        self, changes: Sequence[tuple[str, resource_pb2.ResourceClaim | None]]
    ) -> dict[DeviceID, ClaimRef]:
        """Take the revision's shares in; the devices a claim gained a share of, and the
        last such claim."""
        gained: dict[DeviceID, ClaimRef] = {}
        for key, claim in changes:
            now = allocation_shares(claim) if claim is not None else {}
            ref = None
            if claim is not None:
                m = claim.metadata
                ref = ClaimRef(m.namespace, m.name, m.uid)
            for d in self._claim_shares.pop(key, set()):
                held = self._shares[d]
                if d not in now or held[key][0] != ref:
                    del held[key]
                    if not held:
                        del self._shares[d]
            if now:
                self._claim_shares[key] = set(now)
            for d, shares in now.items():
                assert ref is not None
                before = self._shares.get(d, {}).get(key)
                had = set(before[1]) if before is not None and before[0] == ref else set()
                self._shares.setdefault(d, {})[key] = (ref, shares)
                if set(shares) - had:
                    gained[d] = ref
        return gained

    def _check_capacity(self, d: DeviceID, ref: ClaimRef, revision: int) -> None:
        capacity = self._capacity.get(d)
        used: dict[str, Decimal] = {}
        for _, shares in self._shares.get(d, {}).values():
            for consumed in shares.values():
                for name, q in consumed.items():
                    used[name] = used.get(name, Decimal(0)) + amount(q)
        for name in sorted(set(used) | {n for dd, n in self._over if dd == d}):
            over = capacity is not None and name in capacity and used.get(name, 0) > capacity[name]
            if not over:
                self._over.discard((d, name))
            elif (d, name) not in self._over:
                self._over.add((d, name))
                assert capacity is not None
                self._report(
                    DOUBLE_ALLOCATION,
                    f"device {d}'s capacity {name} ({capacity[name]}) was overcommitted at "
                    f"revision {revision}: its shares consume {used[name]} after {ref} took one",
                    CLAIM_PREFIX + f"{ref.namespace}/{ref.name}",
                    (revision,),
                )

    def _release(self, d: DeviceID, ref: ClaimRef | None) -> None:
        h = self._held.get(d)
        if h is not None and h.claim == ref:
            del self._held[d]

    def _acquire(self, d: DeviceID, ref: ClaimRef, revision: int) -> None:
        self.allocations += 1
        h = self._held.get(d)
        if h is not None and h.claim != ref:
            self._report(
                DOUBLE_ALLOCATION,
                f"device {d} was allocated to {ref} at revision {revision} while {h.claim} "
                f"held it (since revision {h.since}): one device given to two claims",
                CLAIM_PREFIX + f"{ref.namespace}/{ref.name}",
                (h.since, revision),
            )
        self._held[d] = _Held(ref, revision)
