"""Which devices are taken: the claims the informer shows allocated, plus the allocations
this scheduler decided but the informer does not show yet (upstream dra_manager.go: the
claim assume cache and inFlightAllocations).

Why it exists: the scheduling cycle is serial but binding cycles run concurrently, and a
claim's allocation is written only in PreBind. Between Reserve and the moment the informer
delivers the written claim, the devices are in use only in this scheduler's memory; without
this record another pod's Filter would give them out again.

A claim's life here, by UID:

    (informer: unallocated) --Reserve--> pending ------PreBind wrote it--> assumed
                                           |  Unreserve / PreBind failed       | informer shows
                                           v                                   v  rv >= assumed rv
                                        dropped                             dropped

Invariants: a claim is pending or assumed, never both; `claim()` answers the assumed copy
while the informer's is older (a lower resourceVersion), so the next cycles see a claim
allocated as soon as PreBind wrote it; `allocated_devices()` counts every allocation once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from protos.kubera.v1 import resource_pb2
from services.api.dra.allocator import DeviceID


def _rv(claim: resource_pb2.ResourceClaim) -> int:
    try:
        return int(claim.metadata.resource_version or 0)
    except ValueError:
        return 0


def allocation_devices(claim: resource_pb2.ResourceClaim) -> Iterable[DeviceID]:
    """The devices a claim's allocation holds exclusively (admin-access results share)."""
    if not claim.status.HasField("allocation"):
        return ()
    return (
        DeviceID(r.driver, r.pool, r.device)
        for r in claim.status.allocation.devices.results
        if not r.admin_access
    )


def lister(source: Any) -> Callable[[], Mapping[str, Any]]:
    """The current store of `source`: an Informer (whose `store` is replaced on relist, so
    it is read anew each time) or a plain mapping (tests)."""
    if hasattr(source, "store"):
        return lambda: source.store  # type: ignore[no-any-return]
    return lambda: source  # type: ignore[no-any-return]


class ClaimTracker:
    """The claims store of the scheduler's ResourceClaim informer, overlaid with this
    scheduler's own allocations (see the module docstring). `claims`: the informer (or a
    `namespace/name -> ResourceClaim` map), read, never written."""

    def __init__(self, claims: Any) -> None:
        self._lister = lister(claims)
        #: uid -> claim with the allocation Reserve chose (not written yet).
        self._pending: dict[str, resource_pb2.ResourceClaim] = {}
        #: uid -> the claim as PreBind wrote it (the informer has not shown it yet).
        self._assumed: dict[str, resource_pb2.ResourceClaim] = {}

    # ------------------------------------------------------------------ reads
    def claim(self, namespace: str, name: str) -> resource_pb2.ResourceClaim | None:
        """The newest claim known: the informer's, or this scheduler's write of it."""
        stored = self._lister().get(f"{namespace}/{name}")
        if stored is None:
            return None
        assumed = self._assumed.get(stored.metadata.uid)
        if assumed is not None and _rv(assumed) > _rv(stored):
            return assumed
        return stored

    def has_pending_allocation(self, uid: str) -> bool:
        return uid in self._pending

    def allocated_devices(self) -> set[DeviceID]:
        """Devices held by allocated claims (informer and assumed) and pending allocations."""
        out: set[DeviceID] = set()
        # An assumed claim counts through its stored one: once deleted, its devices are free.
        for claim in self._lister().values():
            if claim.metadata.uid in self._pending:
                continue
            newest = self.claim(claim.metadata.namespace, claim.metadata.name) or claim
            out.update(allocation_devices(newest))
        for claim in self._pending.values():
            out.update(allocation_devices(claim))
        return out

    # ----------------------------------------------------------------- writes
    def signal_pending(self, claim: resource_pb2.ResourceClaim) -> None:
        """Reserve: `claim` carries the allocation chosen for it."""
        self._assumed.pop(claim.metadata.uid, None)
        self._pending[claim.metadata.uid] = claim

    def remove_pending(self, uid: str) -> resource_pb2.ResourceClaim | None:
        """Unreserve / the end of PreBind: the pending claim, if it was pending."""
        return self._pending.pop(uid, None)

    def assume(self, written: resource_pb2.ResourceClaim) -> None:
        """PreBind wrote `written` (allocation and/or reservation): answer it until the
        informer catches up."""
        self._pending.pop(written.metadata.uid, None)
        stored = self._lister().get(f"{written.metadata.namespace}/{written.metadata.name}")
        if stored is not None and _rv(stored) >= _rv(written):
            return
        self._assumed[written.metadata.uid] = written

    def restore(self, uid: str) -> None:
        """Forget this scheduler's copy of a claim (upstream AssumedClaimRestore)."""
        self._assumed.pop(uid, None)

    def observed(self, claim: resource_pb2.ResourceClaim | None, *, deleted: bool = False) -> None:
        """The informer delivered `claim`: our copy is no longer needed once it is as new."""
        if claim is None:
            return
        uid = claim.metadata.uid
        if deleted:
            self._assumed.pop(uid, None)
            self._pending.pop(uid, None)
            return
        assumed = self._assumed.get(uid)
        if assumed is not None and _rv(claim) >= _rv(assumed):
            del self._assumed[uid]

    def __len__(self) -> int:
        """Claims this scheduler holds a copy of (pending or assumed), for tests and metrics."""
        return len(self._pending) + len(self._assumed)
