"""The service account controller (upstream pkg/controller/serviceaccount,
serviceaccounts_controller.go): every active namespace has a ServiceAccount named
`default`.

A namespace added or updated, or one of the managed accounts deleted, queues the
namespace; a sync creates each managed account the namespace lacks. A namespace that is
not Active (Terminating) is skipped, and a create refused because the namespace is going
or gone is not an error, as upstream. The tokens upstream's token controller once added
are not modelled (bound tokens have replaced them since 1.24).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, service_pb2
from services.api.helpers.wellknown import DEFAULT_SERVICE_ACCOUNT
from services.api.machinery.errors import AlreadyExistsError, ForbiddenError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import wait_synced
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

NAMESPACES, SERVICE_ACCOUNTS = BY_KIND["Namespace"], BY_KIND["ServiceAccount"]


@dataclass
class ServiceAccountConfig(WorkerSettings):
    """Settings of the service account controller."""

    workers: int = 1
    """Namespaces synced at once (--concurrent-serviceaccount-syncs)."""

    service_accounts: tuple[str, ...] = field(default=(DEFAULT_SERVICE_ACCOUNT,))
    """The accounts every namespace gets (upstream's ServiceAccounts option)."""


class ServiceAccountController:
    """Creates the managed service accounts of every active namespace."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ServiceAccountConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ServiceAccountConfig()
        self.clock = clock or RealClock()
        self.ns_informer = informers.get(NAMESPACES)
        self.sa_informer = informers.get(SERVICE_ACCOUNTS)
        self.queue: WorkQueue[str] = controller_queue(
            "serviceaccount",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.ns_informer.add_handlers(
            Handlers(self._ns_changed, lambda _o, n: self._ns_changed(n), None)
        )
        self.sa_informer.add_handlers(Handlers(None, None, self._sa_deleted))

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, self.ns_informer.synced, self.sa_informer.synced):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="serviceaccount",
                )
        finally:
            self.queue.shutdown()

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """No pod matters here."""
        return False

    def _ns_changed(self, ns: Message) -> None:
        self.queue.add(ns.metadata.name)  # type: ignore[attr-defined]

    def _sa_deleted(self, sa: Message) -> None:
        meta = sa.metadata  # type: ignore[attr-defined]
        if meta.name in self.config.service_accounts:
            self.queue.add(meta.namespace)

    async def sync(self, namespace: str) -> None:
        ns: core_pb2.Namespace | None = self.ns_informer.store.get(namespace)  # type: ignore[assignment]
        if ns is None or ns.status.phase != "Active" or ns.metadata.deletion_timestamp:
            return
        for name in self.config.service_accounts:
            if f"{namespace}/{name}" in self.sa_informer.store:
                continue
            sa = service_pb2.ServiceAccount(api_version="v1", kind="ServiceAccount")
            sa.metadata.name, sa.metadata.namespace = name, namespace
            # Already made (the cache is behind), or the namespace is going or gone.
            with contextlib.suppress(AlreadyExistsError, ForbiddenError, NotFoundError):
                await self.client.create(sa)


__all__ = ["DEFAULT_SERVICE_ACCOUNT", "ServiceAccountConfig", "ServiceAccountController"]
