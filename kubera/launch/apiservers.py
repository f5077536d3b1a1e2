"""The apiserver replicas the supervisor starts (`kubera up --apiservers K`): K active-active
apiserver actors on one etcd, each with its own watch cache and port, as kube-apiserver
replicas behind a load balancer. Writes are etcd transactions, fenced per write and checked
against the allocation records in the same transaction, so any replica serves any write;
reads and watches come from the replica's own watch cache, whose resourceVersions are
etcd's revisions, valid at every replica.

    replica 0 "apiserver"     the first control-plane node (the head when it is one)
    replica i "apiserver-i"   round the control-plane nodes, as scheduler replicas go

Components get every replica's address, rotated so that component j dials replica
j mod K first (services/client/endpoints.py: a client moves to the next address when its
replica is unreachable). The context's `apiserver` is the whole list (the CLI fails over
too); `apiserver_pid` is replica 0's process, and `apiservers` names each replica's.

A killed replica comes back as the single apiserver always did: Ray re-creates the actor
(`max_restarts=-1`) and `revive()` starts it again on the port of its first start, so the
address every component holds stays right.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubera.launch import procs
from kubera.launch.context import Context
from services.client import join_addresses, rotated

#: A restarted apiserver: another ensure_started is sent when the newest has been in flight
#: this long (seconds), up to this many at once. A call to a live apiserver returns in
#: milliseconds; one sent just before a kill is stuck until Ray gives up on the dead
#: process (about a second), while a call sent once Ray knows it is restarting runs the
#: moment the new process is up.
REVIVE_RETRY = 0.25
REVIVE_INFLIGHT = 5
#: Tries of a replica's first start before `kubera up` fails.
START_ATTEMPTS = 3


def replica_name(index: int) -> str:
    """Replica 0 keeps the single apiserver's name (`kubera chaos kill-apiserver`, the
    components table and scripts know it)."""
    return "apiserver" if index == 0 else f"apiserver-{index}"


@dataclass
class ApiServerReplica:
    name: str
    actor: Any  # the Ray actor handle (dynamic)
    #: The port its first start bound; a restarted one binds it again.
    port: int = 0
    address: str = ""
    #: Its HTTP API ("http(s)://host:port", "" when not served) and that port.
    http_address: str = ""
    http_port: int = 0
    pid: int = 0
    start_ticks: int = 0
    #: ensure_started calls in flight: (monotonic time sent, object ref).
    pending: list[tuple[float, Any]] = field(default_factory=list)


class ApiServerReplicas:
    """The replicas, their addresses, and bringing back a killed one."""

    def __init__(self) -> None:
        self.items: list[ApiServerReplica] = []

    def start(
        self,
        count: int,
        spawn: Callable[[str, dict[str, Any]], Any],
        placement: Callable[[int], dict[str, Any]],
        timeout: float = 120,
    ) -> None:
        """`count` replicas, started at once: `spawn(name, options)` makes the actor;
        `placement(i)` is replica i's Ray options."""

        if count < 1:
            raise ValueError(f"--apiservers must be at least 1, got {count}")
        self.items = [
            ApiServerReplica(replica_name(i), spawn(replica_name(i), placement(i)))
            for i in range(count)
        ]
        healths = [self._first_start(r, timeout) for r in self._started_all(timeout)]
        for r, h in zip(self.items, healths, strict=True):
            r.address = str(h["address"])
            r.port = int(r.address.rpartition(":")[2])
            r.http_address = str(h.get("http_address") or "")
            r.http_port = int(r.http_address.rpartition(":")[2]) if r.http_address else 0
            r.pid = int(h["pid"])
            r.start_ticks = int(h.get("start_ticks", 0))

    def _started_all(self, timeout: float) -> list[ApiServerReplica]:
        """Every replica's first ensure_started sent at once (they start in parallel)."""
        for r in self.items:
            r.pending = [(time.monotonic(), r.actor.ensure_started.remote())]
        return self.items

    @staticmethod
    def _first_start(r: ApiServerReplica, timeout: float) -> dict[str, Any]:
        """The replica's health once started. A start that failed (etcd slow to answer
        while K replicas fill their watch caches at once) is tried again, up to
        START_ATTEMPTS times in all (ensure_started is idempotent)."""
        import ray

        deadline = time.monotonic() + timeout
        for attempt in range(1, START_ATTEMPTS + 1):
            ref = r.pending.pop()[1] if r.pending else r.actor.ensure_started.remote()
            try:
                health: dict[str, Any] = ray.get(ref, timeout=max(1.0, deadline - time.monotonic()))
                return health
            except ray.exceptions.RayTaskError:
                if attempt == START_ATTEMPTS or time.monotonic() >= deadline:
                    raise
                print(f"{r.name}: start failed (attempt {attempt}); trying again", flush=True)
        raise AssertionError("not reached: the last attempt returns or raises")

    @property
    def address(self) -> str:
        """Every replica's address, replica 0 first (the context's `apiserver`)."""
        return join_addresses(r.address for r in self.items)

    def for_component(self, index: int) -> str:
        """The address list handed to the index-th component: replica index mod K first."""
        return join_addresses(rotated([r.address for r in self.items], index))

    @property
    def first(self) -> ApiServerReplica:
        return self.items[0]

    def records(self) -> list[dict[str, Any]]:
        """What the context keeps of each replica (`Context.apiservers`)."""
        return [{"name": r.name, "address": r.address, "pid": r.pid} for r in self.items]

    def revive(self, ctx: Context | None) -> None:
        """ensure_started(first port) on each replica: a call to a re-created actor starts
        it (Ray holds calls to a restarting actor until it is back); a new process id is
        recorded in `ctx` for `kubera chaos`. Normally one call per replica is in flight;
        one sent just before a kill can take a while to fail, so after REVIVE_RETRY seconds
        another is sent beside it (at most REVIVE_INFLIGHT; ensure_started is idempotent)."""
        import ray

        for r in self.items:
            for sent, ref in list(r.pending):
                done, _ = ray.wait([ref], timeout=0)
                if not done:
                    continue
                r.pending.remove((sent, ref))
                try:
                    health = ray.get(ref)
                except Exception:  # noqa: BLE001 - died again or failed to bind: next call retries
                    continue
                if isinstance(health, dict):
                    self._restarted(r, health, ctx)
            now = time.monotonic()
            newest = max((sent for sent, _ in r.pending), default=-REVIVE_RETRY)
            if not r.pending or (len(r.pending) < REVIVE_INFLIGHT and now - newest >= REVIVE_RETRY):
                r.pending.append((now, r.actor.ensure_started.remote(r.port, r.http_port)))

    def _restarted(self, r: ApiServerReplica, health: dict[str, Any], ctx: Context | None) -> None:
        pid = int(health["pid"])
        if pid == r.pid:
            return
        start_ticks = int(health.get("start_ticks", 0)) or procs.start_time(pid)
        print(
            f"{r.name} restarted: pid {pid} serving {r.address} "
            f"(its start took {float(health.get('start_seconds', 0)):.2f}s)",
            flush=True,
        )
        old = r.pid
        r.pid, r.start_ticks = pid, start_ticks
        r.address = str(health.get("address") or r.address)  # another node's, if it moved
        if ctx is None:
            return
        ctx.started.pop(str(old), None)
        ctx.started[str(pid)] = start_ticks
        if r is self.first:
            ctx.apiserver_pid = pid
        ctx.apiservers = self.records()
        ctx.save()

    def stop(self) -> None:
        """Each replica's stop(), all at once, then its actor."""
        import ray

        refs = []
        for r in self.items:
            with contextlib.suppress(Exception):
                refs.append(r.actor.stop.remote())
        with contextlib.suppress(Exception):
            ray.wait(refs, num_returns=len(refs), timeout=10)
        for r in self.items:
            with contextlib.suppress(Exception):
                ray.kill(r.actor)
