"""What every replicated control-plane component shares (kube-scheduler replicas, the
controller-manager's): its own connections to etcd and the apiserver through partition
relays, the chaos control server, its record in etcd, the leader elector with its
fencing token, and the Lease it publishes while it leads.

    component ──relay──▶ etcd        (election key; the elector's storage)
              ──relay──▶ apiserver   (informers, fenced writes, the Lease; one relay per
                                      apiserver replica, the client fails over among them)
    kubera chaos ──gRPC──▶ control   (Partition / Heal / Status: the relays blackhole)

Replica records live at `/kubera/replicas/<namespace>/<lease name>/<identity>` with the
process id and addresses, so `kubera chaos` can find the leader's process from the
election key (whose value is the holder's identity) without asking Ray. A record is
removed on a clean stop; a killed process leaves it behind, and readers skip records
whose process is gone.

A replica's start (connections, servers, warm caches, record) can fail for reasons that
pass: the apiserver or etcd not answering yet, a Ray node still joining. The hosts undo a
failed attempt whole and try again (`start_with_retry`: `StartRetry.attempts` in all, with
exponential backoff, each failure logged), so a replica is either started or not, never
half-started; only when every attempt failed does the start fail (and the supervisor's
next `ensure_started()` begins again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from services.api.helpers.fencing import Fencing
from services.auth.certs import KeyPair, server_credentials
from services.auth.grpcauth import CHAOS_STATUS, admin_only
from services.chaos import Relay, self_report, serve_control
from services.client import Client, join_addresses, parse_addresses
from services.hosts.address import join, listen_hosts
from services.leaderelection import (
    Callbacks,
    LeaderElectionConfig,
    LeaderElectionSettings,
    LeaderElector,
    LeasePublisher,
)
from services.storage import Delete, Put, StorageUnavailableError
from services.storage.etcd import EtcdStorage, EtcdTLS, parse_endpoint
from services.storage.keys import election_key, replica_key

log = logging.getLogger(__name__)
#: Tries of the replica record's write before a start fails (an etcd that did not answer).
REGISTER_ATTEMPTS = 3


@dataclass(frozen=True)
class StartRetry:
    """How often, and how far apart, a replica's start is attempted before it fails."""

    #: Attempts in all (1: no retry).
    attempts: int = 6
    #: Seconds before the second attempt; each later wait is `factor` times the last,
    #: at most `cap` (the defaults wait 0.5, 1, 2, 4 and 8 s: 15.5 s in all).
    initial: float = 0.5
    factor: float = 2.0
    cap: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.initial < 0 or self.factor < 1 or self.cap < 0:
            raise ValueError(f"invalid start retry: {self}")

    def delay(self, failed: int) -> float:
        """Seconds to wait after the `failed`-th failed attempt (1-based)."""
        return float(min(self.cap, self.initial * self.factor ** (failed - 1)))


@dataclass
class StartAttempts:
    """What a host's starts went through, for its health(): attempts made by the last
    start, and the last failure ("" when the last attempt succeeded)."""

    attempts: int = 0
    error: str = ""


async def start_with_retry(
    start: Callable[[], Awaitable[None]],
    undo: Callable[[], Awaitable[None]],
    *,
    what: str,
    retry: StartRetry,
    record: StartAttempts,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """`start()` until it succeeds, `undo()` after every attempt that raised (so the next
    begins afresh), waiting `retry.delay(n)` between; the last failure is raised after
    `retry.attempts`. Cancellation is undone and never retried."""
    record.attempts, record.error = 0, ""
    while True:
        record.attempts += 1
        try:
            await start()
        except Exception as e:  # noqa: BLE001 - any failed start is retried, bounded
            await undo()
            record.error = f"{type(e).__name__}: {e}".splitlines()[0]
            if record.attempts >= retry.attempts:
                log.error(
                    "%s: start failed %d time(s), giving up: %s",
                    what,
                    record.attempts,
                    record.error,
                )
                raise
            delay = retry.delay(record.attempts)
            log.warning(
                "%s: start attempt %d of %d failed (%s); trying again in %.1fs",
                what,
                record.attempts,
                retry.attempts,
                record.error,
                delay,
            )
            await sleep(delay)
        except BaseException:
            await undo()
            raise
        else:
            record.error = ""
            return


def new_identity() -> str:
    """kube-scheduler's shape: hostname_uuid, unique per process incarnation."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def host_leading(replica: Replica | None, task: asyncio.Task[Any] | None) -> bool:
    """Whether a host's component is working: with an election, whether its replica
    leads; without one (shared-state, or a single replica), whether its run is going."""
    if replica is None:
        return False
    if replica.election is None:
        return task is not None and not task.done()
    return replica.leading


class Replica:
    """One replica's connections, chaos control, registration and (optionally) election."""

    def __init__(
        self,
        *,
        component: str,
        etcd: str,
        apiserver: str,
        group: tuple[str, str],
        election: LeaderElectionSettings | None,
        client_timeout: float | None = 30.0,
        host: str = "127.0.0.1",
        token: str = "",
        admin_sha256: str = "",
        etcd_tls: EtcdTLS | None = None,
        apiserver_ca: bytes = b"",
        serving_tls: KeyPair | None = None,
    ) -> None:
        """`token`: the bearer token of its apiserver calls; `admin_sha256`: its chaos
        control is the admin's (but Status); `etcd_tls`: etcd serves TLS; `apiserver_ca`:
        the apiserver serves gRPC over TLS with a certificate this CA signed (the relays
        carry TLS through untouched; the certificate names 127.0.0.1, where they listen);
        `serving_tls`: its chaos control serves TLS with this certificate (None:
        plaintext)."""
        self.component = component
        self.identity = new_identity()
        self.group = group
        self.election = election
        self._etcd = etcd
        self._apiserver = apiserver
        self._client_timeout = client_timeout
        self._token = token
        self._admin_sha256 = admin_sha256
        self._etcd_tls = etcd_tls
        self._apiserver_ca = apiserver_ca
        self.serving_tls = serving_tls
        #: Where the chaos control server listens (see address.py).
        self._host = host
        self.relays: list[Relay] = []
        self.storage: EtcdStorage | None = None
        #: Unfenced client (reads, informers); `writer` carries the token when elected.
        self.client: Client | None = None
        self.writer: Client | None = None
        self.elector: LeaderElector | None = None
        self.publisher: LeasePublisher | None = None
        self._config: LeaderElectionConfig | None = None
        self.control_address = ""
        self._control = None
        self._stop = asyncio.Event()
        self._elector_task: asyncio.Task[None] | None = None
        self.extra: dict[str, Any] = {}
        #: When the record was first written (kept by later writes).
        self._registered_at = 0.0

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        etcd_host, etcd_port = parse_endpoint(self._etcd)
        # Each relay is recorded as soon as it runs, so close() after a failed open() stops
        # it too (a Replica is opened once: a retried start makes a new one).
        etcd_relay = await Relay.start(etcd_host, etcd_port)
        self.relays.append(etcd_relay)
        api_relays: list[Relay] = []
        # one relay per apiserver replica, in the order given (the client's failover order)
        for address in parse_addresses(self._apiserver):
            api_host, _, api_port = address.rpartition(":")
            api_relays.append(await Relay.start(api_host.strip("[]"), int(api_port)))
            self.relays.append(api_relays[-1])
        scheme = "https" if self._etcd_tls is not None else "http"
        self.storage = EtcdStorage(f"{scheme}://{etcd_relay.address}", tls=self._etcd_tls)
        await self.storage.connect()
        self.client = Client(
            join_addresses(r.address for r in api_relays),
            timeout=self._client_timeout,
            token=self._token,
            ca=self._apiserver_ca,
        )
        self.writer = self.client
        if self.election is not None:
            e = self.election
            self._config = e.elector_config(
                identity=self.identity, key=election_key(e.lease_namespace, e.lease_name)
            )
            self.writer = self.client.fenced(self.fencing_token)
            self.publisher = LeasePublisher(
                self.writer, e.lease_namespace, e.lease_name, self.identity
            )
        bind, advertise = listen_hosts(self._host)
        self._control, port = await serve_control(
            self.relays,
            self.identity,
            self.component,
            bind,
            interceptors=admin_only(self._admin_sha256, public=(CHAOS_STATUS,)),
            credentials=server_credentials(self.serving_tls),
        )
        self.control_address = join(advertise, port)

    def fencing_token(self) -> Fencing | None:
        return self.elector.fencing_token if self.elector is not None else None

    async def register(self, **extra: Any) -> None:
        """Write this replica's record (again, with `extra` fields merged in)."""
        assert self.storage is not None
        self.extra.update(extra)
        self._registered_at = self._registered_at or time.time()
        me = self_report()
        record = {
            "identity": self.identity,
            "component": self.component,
            # pid, host, boot_id, pid_ns, start_ticks: whose PID namespace the pid is in
            **{k: me[k] for k in ("pid", "host", "boot_id", "pid_ns", "start_ticks")},
            "control": self.control_address,
            "started": self._registered_at,
            **self.extra,
        }
        key = replica_key(*self.group, self.identity)
        # The record is one idempotent put: an etcd that did not answer in time (a busy
        # machine, an etcd restarting) is asked again before the start fails.
        for attempt in range(REGISTER_ATTEMPTS):
            try:
                await self.storage.txn([], [Put(key, json.dumps(record).encode())])
                return
            except StorageUnavailableError:
                if attempt == REGISTER_ATTEMPTS - 1:
                    raise
                log.warning("registering %s: etcd unavailable, trying again", self.identity)
                await asyncio.sleep(0.5 * 2**attempt)

    def elect(
        self,
        on_started_leading: Callable[[asyncio.Event], Coroutine[Any, Any, None]],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        """Start campaigning (in the background) with these callbacks."""
        assert self.storage is not None and self._config is not None
        publisher = self.publisher
        self.elector = LeaderElector(
            self.storage,
            self._config,
            Callbacks(
                on_started_leading=on_started_leading,
                on_stopped_leading=on_stopped_leading,
                on_transition=publisher.publish if publisher is not None else None,
            ),
        )
        self._elector_task = asyncio.create_task(self.elector.run(self._stop), name="elector")

    @property
    def leading(self) -> bool:
        return self.elector is not None and self.elector.is_leader

    async def close(self) -> None:
        """Release the lease (if held), deregister, close everything."""
        self._stop.set()
        if self._elector_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._elector_task, 15)
        if self.publisher is not None:
            await self.publisher.flush()
            await self.publisher.close()
        if self.storage is not None:
            with contextlib.suppress(Exception):
                await self.storage.txn([], [Delete(replica_key(*self.group, self.identity))])
            with contextlib.suppress(Exception):
                await self.storage.close()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self._control is not None:
            await self._control.stop(0.2)
        for r in self.relays:
            with contextlib.suppress(Exception):
                await r.close()

    def health(self) -> dict[str, object]:
        return {
            **self_report(),  # pid, CPU seconds, RSS bytes, host, boot id, PID namespace
            "identity": self.identity,
            "control": self.control_address,
            "leading": self.leading,
            "fencing": list(self.fencing_token() or ()),
        }
