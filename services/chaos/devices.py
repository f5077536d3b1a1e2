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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from protos.kubera.v1 import resource_pb2
from services.api.dra.claims import allocation_devices
from services.api.dra.pools import DeviceID
from services.api.machinery.kinds import BY_KIND

CLAIM_PREFIX = BY_KIND["ResourceClaim"].prefix()
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
        #: Device grants seen (a device newly held by a claim).
        self.allocations = 0

    def apply(
        self, revision: int, changes: Sequence[tuple[str, resource_pb2.ResourceClaim | None]]
    ) -> None:
        """One revision's claim events, in order: (key, the claim as put, or None when
        deleted)."""
        gains: list[tuple[str, ClaimRef, frozenset[DeviceID]]] = []
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
