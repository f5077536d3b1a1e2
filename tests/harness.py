"""One control plane for tests: an apiserver on the in-memory fake or on real etcd, served
over gRPC on loopback, its clients, schedulers, node pools and anything else that runs as
`run(stop)`, all stopped in reverse order when the block ends.

    async with control_plane() as cp:                       # MemoryStorage
        sched = cp.scheduler(SchedulerOptions(seed=7))      # running until the block ends
        await cp.api.create(node)                           # the registry, in process
        pods, _ = await cp.client.list(PODS)                # a client over real gRPC

    async with etcd_store(etcd_server.endpoint) as storage, control_plane(storage) as cp:
        ...                                                 # real etcd, wiped first

What it replaces is the hand-built setup each integration test used to repeat: ApiServer,
`await api.start()`, `serve(api)`, `Client("127.0.0.1:PORT")`, a Scheduler on a task with a
stop event, and the teardown of each in the right order. A test that needs a part of its own
(a recording ApiServer or Client subclass, another clock, a uid source, authentication)
passes it in; nothing else differs from what the component runs in production.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol, TypeVar

import grpc

from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.client import Client
from services.clock import Clock
from services.kubelet.pool import NodePool, PoolConfig
from services.kubelet.template import NodePlan
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler
from services.storage import Delete, Storage
from services.storage.etcd import EtcdStorage
from services.storage.memory import MemoryStorage

#: What the integration tests run the apiserver with: quick bookmarks, the default cache.
TEST_API_CONFIG = ApiServerConfig(bookmark_interval=0.5)

#: The seconds a component gets to return after its stop event is set.
STOP_TIMEOUT = 10.0


class Runnable(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


C = TypeVar("C", bound=Client)


#: Deletes per transaction when wiping (etcd's --max-txn-ops is 1024 as kubera starts it).
WIPE_BATCH = 500


async def wipe(storage: Storage, prefix: str = "/") -> None:
    """Delete every key under `prefix` (a shared etcd starts each test empty), a batch of
    keys a transaction."""
    items, _ = await storage.list(prefix)
    keys = [kv.key for kv in items]
    for start in range(0, len(keys), WIPE_BATCH):
        await storage.txn([], [Delete(k) for k in keys[start : start + WIPE_BATCH]])


@contextlib.asynccontextmanager
async def etcd_store(endpoint: str, *, wipe_prefix: str | None = "/") -> AsyncIterator[EtcdStorage]:
    """An EtcdStorage connected to `endpoint`, every key under `wipe_prefix` deleted first
    (None: none), closed after the block."""
    storage = EtcdStorage(endpoint)
    await storage.connect()
    try:
        if wipe_prefix is not None:
            await wipe(storage, wipe_prefix)
        yield storage
    finally:
        await storage.close()


class ControlPlane:
    """A running apiserver (`api`, in process) behind a gRPC server at `address`, with a
    default `client`; every part added through it stops when the `control_plane` block ends."""

    def __init__(
        self,
        api: ApiServer,
        server: grpc.aio.Server,
        port: int,
        stack: contextlib.AsyncExitStack,
        client_timeout: float | None,
    ) -> None:
        self.api, self.server, self.port = api, server, port
        self.storage = api.storage
        self._stack = stack
        self._client_timeout = client_timeout
        #: Set when the block ends: every `run` component returns then.
        self.stop_event = asyncio.Event()
        self.client: Client = self.new_client()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def new_client(
        self, cls: Callable[..., C] = Client, *, address: str | None = None, **kwargs: Any
    ) -> C:  # type: ignore[assignment]
        """Another client of this apiserver (`cls`: a Client subclass that records calls;
        `address`: another way to it, a relay's), closed when the block ends."""
        kwargs.setdefault("timeout", self._client_timeout)
        client = cls(address or self.address, **kwargs)
        self._stack.push_async_callback(client.close)
        return client

    def run(self, *components: Runnable) -> list[asyncio.Task[None]]:
        """Start each component's `run(stop)` on a task. They are stopped (the event set,
        each awaited for STOP_TIMEOUT seconds) before any client or the server closes; a
        component that crashed fails the block's exit with its exception."""
        tasks = [asyncio.create_task(c.run(self.stop_event)) for c in components]

        async def stop() -> None:
            self.stop_event.set()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(t, STOP_TIMEOUT)

        self._stack.push_async_callback(stop)
        return tasks

    def scheduler(
        self,
        options: SchedulerOptions | None = None,
        *,
        client: Client | None = None,
        start: bool = True,
        **kwargs: Any,
    ) -> Scheduler:
        """A Scheduler on `client` (default: the plane's), running until the block ends
        unless `start` is False (then the test runs or warms it itself). `kwargs`: the
        Scheduler's own (fencing, clock, metrics)."""
        sched = Scheduler(client or self.client, options or SchedulerOptions(seed=7), **kwargs)
        if start:
            self.run(sched)
        return sched

    async def node_pool(
        self,
        plans: Iterable[NodePlan],
        *,
        config: PoolConfig | None = None,
        clock: Clock | None = None,
        client: Client | None = None,
    ) -> NodePool:
        """A started NodePool of hollow kubelets for `plans`, stopped when the block ends."""
        pool = NodePool(client or self.client, plans, config=config, clock=clock)
        await pool.start()
        self._stack.push_async_callback(pool.stop)
        return pool

    def defer(self, callback: Callable[[], Any]) -> None:
        """Call (and await, if it returns an awaitable) `callback` when the block ends,
        before the parts added earlier are stopped."""

        async def call() -> None:
            got = callback()
            if asyncio.iscoroutine(got) or isinstance(got, asyncio.Future):
                await got

        self._stack.push_async_callback(call)


@contextlib.asynccontextmanager
async def control_plane(
    storage: Storage | None = None,
    config: ApiServerConfig | None = None,
    *,
    api: ApiServer | None = None,
    clock: Clock | None = None,
    new_uid: Callable[[], str] | None = None,
    client_timeout: float | None = 10.0,
    port: int = 0,
    **serve_kwargs: Any,
) -> AsyncIterator[ControlPlane]:
    """An apiserver on `storage` (default: a fresh MemoryStorage; the caller owns any other)
    with `config` (default TEST_API_CONFIG), started, served on 127.0.0.1:`port` (0: any
    free port) and stopped after the block. `api`: an ApiServer (subclass) the test built
    itself, used instead of building one. `serve_kwargs`: `serve`'s own (authn,
    credentials, also)."""
    if api is None:
        api = ApiServer(
            storage if storage is not None else MemoryStorage(),
            config or TEST_API_CONFIG,
            clock=clock,
            new_uid=new_uid,
        )
    await api.start()
    try:
        async with served(api, client_timeout=client_timeout, port=port, **serve_kwargs) as cp:
            yield cp
    finally:
        await api.stop()


@contextlib.asynccontextmanager
async def served(
    api: ApiServer, *, client_timeout: float | None = 10.0, port: int = 0, **serve_kwargs: Any
) -> AsyncIterator[ControlPlane]:
    """`api`, which the caller started and stops, served over gRPC for the block: for the
    tests of one registry that also check what crosses the wire."""
    async with contextlib.AsyncExitStack() as stack:
        server, bound = await serve(api, port=port, **serve_kwargs)
        stack.push_async_callback(server.stop, 0.2)
        yield ControlPlane(api, server, bound, stack, client_timeout)
