"""The apiserver's registry: `ApiServer`, the one object the gRPC edge (server.py) calls.

Why this module exists: it is the facade, and only composes. The guarded txn, encoding,
kind and namespace resolution, validation and the update write are the
:class:`~services.apiserver.store.Store` (upstream's generic registry store); each verb is
a module of plain functions taking that Store (not mixins, and none imports this
module back, so each one's dependencies stay visible at the call):

* ``create``: admission, the namespace guard, the create txn;
* ``update``: what an update may change, and merge patch (with ``allocation``, the
  device allocation records of shared-state claim writes);
* ``read``: get, list (corrupt values left out with a warning) and watch;
* ``deletion``: graceful deletion, finalizers, a namespace turned Terminating;
* ``binding``: the pods/binding subresource and its fencing token (with ``allocation``,
  the node allocation records of shared-state binds), and ``bindbatch``, many binds in
  few txns with a single bind's outcome each;
* ``eviction``: the pods/eviction subresource against PodDisruptionBudgets;
* ``batch``: batch create and batch update, ~100 objects per txn;
* ``admission_reads``: what admission reads, from the watch caches;
* ``objects``: small object rules (selectors, finalizers, status, merge patch, errors).

`ApiServer(storage, config)` takes an :class:`~services.apiserver.config.ApiServerConfig`.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, policy_pb2, scheduling_pb2, service_pb2
from services.api.helpers.fencing import Fencing
from services.api.helpers.volumes import default_storage_class
from services.api.machinery.errors import AlreadyExistsError, InvalidError
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from services.api.machinery.listoptions import LIST_ALL, ListOptions
from services.apiserver import (
    admission,
    batch,
    bindbatch,
    binding,
    create,
    deletion,
    eviction,
    read,
    update,
)
from services.apiserver.batch import BatchResult
from services.apiserver.bindbatch import BindOutcome
from services.apiserver.binding import BindItem
from services.apiserver.config import ApiServerConfig
from services.apiserver.objects import meta as _meta
from services.apiserver.read import Listed
from services.apiserver.store import Store
from services.apiserver.watchcache import Entry, WatchCache
from services.clock import Clock, RealClock
from services.storage import Storage

__all__ = [
    "ApiServer",
    "ApiServerConfig",
    "BatchResult",
    "BindItem",
    "BindOutcome",
    "Fencing",
    "Listed",
]


class ApiServer:
    """kube-apiserver's registry over a `Storage`. Start it, then call its methods.

    `clock` and `new_uid` are collaborators tests replace (the time stamped on objects,
    the uid given to each new one). `wall` paces the watch caches (bookmarks, the wait for
    a resourceVersion, etcd retries), real-time mechanisms that stay on the wall clock
    under the time scale (services/clock.py); it defaults to `clock`."""

    def __init__(
        self,
        storage: Storage,
        config: ApiServerConfig | None = None,
        *,
        clock: Clock | None = None,
        new_uid: Callable[[], str] | None = None,
        wall: Clock | None = None,
    ) -> None:
        self.config = config = config or ApiServerConfig()
        self.storage = storage
        self.clock = clock or RealClock()
        self.caches = {
            k.resource: WatchCache(
                k,
                storage,
                capacity=config.watch_cache_capacity,
                clock=wall or self.clock,
                too_large_wait=config.resource_version_wait,
            )
            for k in KINDS
        }
        #: What every verb writes through (the guarded txn, encoding, kinds, namespaces).
        self.store = Store(
            storage,
            self.caches,
            clock=self.clock,
            new_uid=new_uid or (lambda: str(uuid.uuid4())),
            service_network=config.service_network,
            disable_admission_plugins=config.disable_admission_plugins,
        )

    # ----------------------------------------------------------- lifecycle

    async def start(self) -> None:
        fresh = False
        for name in admission.INITIAL_NAMESPACES:
            ns = BY_KIND["Namespace"].new()
            _meta(ns).name = name
            created = await self._create_if_absent(ns)
            fresh = fresh or (created and name == "default")
        for name, value in admission.SYSTEM_PRIORITY_CLASSES.items():
            pc = scheduling_pb2.PriorityClass(
                value=value,
                description="Used for system critical pods that must not be moved from their current node.",
            )
            _meta(pc).name = name
            await self._create_if_absent(pc, system=True)
        await self._create_kubernetes_service()
        if fresh and self.config.default_storage_class:
            # once, on a new cluster (as kind applies its class once): a class the user
            # deletes stays deleted when an apiserver restarts
            await self._create_if_absent(default_storage_class(self.config.default_storage_class))
        await asyncio.gather(*(c.start() for c in self.caches.values()))

    async def _create_kubernetes_service(self) -> None:
        """The `default/kubernetes` service every cluster has, on the service range's
        first IP (upstream's controlplane controller; kubera writes no endpoints for it)."""
        kind = BY_KIND["Service"]
        if await self.get_or_none(kind, "default", "kubernetes") is not None:
            return
        svc = service_pb2.Service(
            spec=service_pb2.ServiceSpec(
                ports=[
                    service_pb2.ServicePort(
                        name="https", port=443, protocol="TCP", target_port="6443"
                    )
                ],
                cluster_ip=self.config.service_network.first_ip(),
            )
        )
        svc.metadata.name, svc.metadata.namespace = "kubernetes", "default"
        svc.metadata.labels.update({"component": "apiserver", "provider": "kubernetes"})
        # Another replica starting at once may have made it (or be making it).
        with contextlib.suppress(AlreadyExistsError, InvalidError):
            await self.create(svc)

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.caches.values()))

    async def _create_if_absent(self, obj: Message, *, system: bool = False) -> bool:
        """Whether this call made it (False: it existed)."""
        try:
            await self.create(obj, system=system)
        except AlreadyExistsError:
            return False
        return True

    async def fresh_cache(self, kind: Kind) -> WatchCache | None:
        """The kind's watch cache once it has seen this server's latest write of the kind;
        None if it has not started or does not catch up within a few seconds."""
        return await self.store.fresh_cache(kind)

    async def get_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None:
        return await self.store.get_or_none(kind, namespace, name)

    # -------------------------------------------------------------- create

    async def create(self, obj: Message, *, dry_run: bool = False, system: bool = False) -> Message:
        return await create.create(self.store, obj, dry_run=dry_run, system=system)

    async def batch_create(self, objs: Sequence[Message]) -> list[BatchResult]:
        """Create many objects: validated one by one, written ~100 per etcd txn (see batch)."""
        return await batch.batch_create(self.store, objs)

    # ----------------------------------------------------------- get / list

    async def get(self, kind: Kind, namespace: str, name: str) -> Message:
        return await read.get(self.store, kind, namespace, name)

    async def list(
        self, kind: Kind, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> tuple[list[Message], int]:
        """The matching objects and the revision; corrupt values are left out (see
        `list_objects` for the warnings naming them)."""
        listed = await self.list_objects(kind, namespace, options)
        return listed.items, listed.revision

    async def list_objects(
        self, kind: Kind, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> Listed:
        """The matching objects, the revision, and a warning naming each corrupt key
        left out (see read.list_objects)."""
        return await read.list_objects(self.store, kind, namespace, options)

    async def list_page(
        self,
        kind: Kind,
        namespace: str,
        options: ListOptions,
        *,
        revision: int = 0,
        after: str = "",
    ) -> read.Page:
        """A page of `options.limit` objects of a consistent paged list (the HTTP API's
        limit/continue, `revision` and `after` decoded from its token; see read)."""
        return await read.list_page(
            self.store, kind, namespace, options, revision=revision, after=after
        )

    # --------------------------------------------------------------- update

    async def update(
        self,
        obj: Message,
        *,
        status: bool = False,
        dry_run: bool = False,
        check_allocation: bool = False,
    ) -> Message:
        """`check_allocation`: see update.update (a shared-state scheduler's claim status)."""
        return await update.update(
            self.store, obj, status=status, dry_run=dry_run, check_allocation=check_allocation
        )

    async def batch_update(
        self, objs: Sequence[Message], *, status: bool = False
    ) -> builtins.list[BatchResult]:
        """Update many objects of one kind, ~100 per etcd txn (see batch)."""
        return await batch.batch_update(self.store, objs, status=status)

    async def update_status(self, obj: Message, *, check_allocation: bool = False) -> Message:
        return await self.update(obj, status=True, check_allocation=check_allocation)

    async def finalize(self, obj: Message, *, dry_run: bool = False) -> Message:
        """The namespaces/finalize subresource: a namespace's spec.finalizers as sent."""
        return await update.finalize(self.store, obj, dry_run=dry_run)

    async def patch(
        self, kind: Kind, namespace: str, name: str, merge_patch: str, *, status: bool = False
    ) -> Message:
        """A JSON merge patch (RFC 7386), retried on conflict like GuaranteedUpdate."""
        return await update.patch(self.store, kind, namespace, name, merge_patch, status=status)

    # --------------------------------------------------------------- delete

    def admit_delete(
        self,
        kind: Kind,
        name: str,
        grace_period_seconds: int | None = None,
        propagation_policy: str = "",
    ) -> None:
        """Raise what a delete of `name` would be refused with before reading anything
        (deletion.admit_delete); nothing when it may go ahead."""
        deletion.admit_delete(kind, name, grace_period_seconds, propagation_policy)

    async def delete(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str = "",
        resource_version: str = "",
        ignore_store_read_error: bool = False,
        propagation_policy: str = "",
    ) -> Message:
        """Kubernetes' graceful deletion (see deletion); `propagation_policy` Orphan or
        Foreground holds the object for the garbage collector. `ignore_store_read_error`:
        upstream's ignoreStoreReadErrorWithClusterBreakingPotential, the unsafe removal of
        a key whose value does not decode."""
        return await deletion.delete(
            self.store,
            kind,
            namespace,
            name,
            grace_period_seconds=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
            ignore_store_read_error=ignore_store_read_error,
            propagation_policy=propagation_policy,
        )

    async def evict(self, request: policy_pb2.Eviction) -> core_pb2.Pod:
        """The pods/eviction subresource: delete the pod unless its PodDisruptionBudget
        forbids it, spending the budget in the same txn (see eviction)."""
        return await eviction.evict(self.store, request)

    # ----------------------------------------------------------------- bind

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        resource_version: str = "",
        uid: str = "",
        fencing: Fencing | None = None,
        check_allocation: bool = False,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Message:
        """Set spec.nodeName in one txn that also proves the pod is still unbound at the
        version read and, with `fencing`, that the caller's election key still exists with
        the create_revision it won it at; with `check_allocation`, that the pod fits the
        node's allocation record (shared-state scheduling; see allocation). `annotations`
        and `labels`: the Binding object's (see binding)."""
        return await binding.bind(
            self.store,
            namespace,
            name,
            node_name,
            resource_version=resource_version,
            uid=uid,
            fencing=fencing,
            check_allocation=check_allocation,
            annotations=annotations,
            labels=labels,
        )

    async def bind_batch(self, items: Sequence[BindItem]) -> builtins.list[BindOutcome]:
        """Many binds in few txns, each with the outcome its single `bind` would have
        (see bindbatch); outcomes in order. A batch of one is a single `bind`: the same
        path, and no round of batching for the client that had nothing to gather."""
        if len(items) == 1:
            it = items[0]
            try:
                pod = await self.bind(
                    it.namespace,
                    it.name,
                    it.node_name,
                    resource_version=it.resource_version,
                    uid=it.uid,
                    fencing=it.fencing,
                    check_allocation=it.check_allocation,
                    annotations=it.annotations,
                    labels=it.labels,
                )
            except Exception as e:  # noqa: BLE001 - reported as this item's outcome
                return [BindOutcome(None, e)]
            return [BindOutcome(pod, None)]
        return await bindbatch.bind_batch(self.store, items)

    # ---------------------------------------------------------------- watch

    def _bookmarks(self, options: ListOptions) -> float | None:
        """How often a watch with `options` gets a BOOKMARK (None: never)."""
        return self.config.bookmark_interval if options.allow_bookmarks else None

    async def watch(
        self, kind: Kind, *, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> AsyncIterator[tuple[str, Entry]]:
        async for item in read.watch(
            self.store,
            kind,
            namespace=namespace,
            options=options,
            bookmark_interval=self._bookmarks(options),
        ):
            yield item

    async def watch_batches(
        self, kind: Kind, *, namespace: str = "", options: ListOptions = LIST_ALL
    ) -> AsyncIterator[builtins.list[tuple[str, Entry]]]:
        """`watch`'s events, several at a time, never splitting a revision."""
        async with contextlib.aclosing(
            read.watch_batches(
                self.store,
                kind,
                namespace=namespace,
                options=options,
                bookmark_interval=self._bookmarks(options),
            )
        ) as batches:
            async for events in batches:
                yield events
