"""The holder of an election, published as a coordination.k8s.io/v1 Lease so users (and
`kubera get leases -n kube-system`) see who leads, since when, and how often it changed.

The etcd key is the truth the elector and the fencing run on; the Lease is its public
face, kept current by the leader: written when it acquires, on every renewal, and emptied
(holderIdentity unset, leaseDurationSeconds 1, as client-go does) when it releases. The
leader writes under its fencing token, so a deposed leader cannot overwrite its
successor's Lease; the release is written unfenced (the term is already over) and only
while the Lease still names the releasing holder.

leaseTransitions follows client-go: it goes up by one whenever the Lease is taken by a
holder other than the one it names (a standby taking over, or the first holder after a
release), and is kept on renewals.

Writes are coalesced: callbacks only record the newest state, one task writes it, so a
slow apiserver delays the Lease but never the elector.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from protos.kubera.v1 import coordination_pb2
from services.api.machinery.errors import ApiError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from services.clock import rfc3339_micro
from services.leaderelection.config import LeaderElectionRecord

log = logging.getLogger(__name__)

LEASE = BY_KIND["Lease"]


class LeasePublisher:
    """`publish(record)` is the elector's on_transition callback."""

    def __init__(self, client: Client, namespace: str, name: str, identity: str) -> None:
        #: Writes while leading: carries the leader's token if `client` is fenced.
        self._client = client
        #: The release write, made after the term has ended.
        self._unfenced = client.fenced(None)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._pending: LeaderElectionRecord | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: The last record written (for tests and health).
        self.written: LeaderElectionRecord | None = None

    def publish(self, record: LeaderElectionRecord) -> None:
        self._pending = record
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def flush(self, timeout: float = 5.0) -> None:
        """Wait until what was published so far is written (or given up)."""
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _run(self) -> None:
        while self._wake.is_set():
            self._wake.clear()
            record = self._pending
            if record is None:
                return
            try:
                await self._write(record)
                self.written = record
            except ApiError as e:
                # A stale leader's write refused, or a race with the next holder: the
                # newer holder's write wins, which is what the Lease should show.
                log.info(
                    "%s: Lease %s/%s not written: %s", self.identity, self.namespace, self.name, e
                )
            except Exception as e:  # noqa: BLE001 - apiserver unreachable: next change retries
                log.warning(
                    "%s: Lease %s/%s not written: %s", self.identity, self.namespace, self.name, e
                )

    async def _write(self, record: LeaderElectionRecord) -> None:
        releasing = not record.holder
        client = self._unfenced if releasing else self._client
        for _ in range(3):
            try:
                current: coordination_pb2.Lease | None = await client.get(
                    LEASE, self.name, self.namespace
                )  # type: ignore[assignment]
            except NotFoundError:
                current = None
            if releasing and (current is None or current.spec.holder_identity != self.identity):
                return  # someone else holds it now (or nobody ever did): nothing to clear
            lease = current if current is not None else LEASE.new()
            assert isinstance(lease, coordination_pb2.Lease)
            lease.metadata.name, lease.metadata.namespace = self.name, self.namespace
            self._fill(lease.spec, record, current)
            try:
                if current is None:
                    await client.create(lease)
                else:
                    await client.update(lease)
                return
            except ConflictError:
                continue  # changed under us: read again

    @staticmethod
    def _fill(
        spec: coordination_pb2.LeaseSpec,
        record: LeaderElectionRecord,
        current: coordination_pb2.Lease | None,
    ) -> None:
        old = current.spec if current is not None else None
        if not record.holder:
            spec.ClearField("holder_identity")
            spec.lease_duration_seconds = 1
            spec.renew_time = rfc3339_micro(record.renew_time)
            return
        taken = old is None or old.holder_identity != record.holder
        transitions = old.lease_transitions if old is not None else 0
        if taken and old is not None:
            transitions += 1
        spec.holder_identity = record.holder
        spec.lease_duration_seconds = record.lease_duration_seconds
        if taken or not spec.acquire_time:
            spec.acquire_time = rfc3339_micro(record.acquire_time)
        spec.renew_time = rfc3339_micro(record.renew_time)
        spec.lease_transitions = transitions
