"""The controller-manager: every controller of kubera in one process, sharing one set of
informers (kube-controller-manager's shape).

    ControllerManagerConfig
        → ControllerManager(client, config)
            controllers built (each registers its informer handlers)
        → start()   (or `await run(stop)`)
            informers started once, waited on until synced
            each controller's run(stop) as a task, until stop
        → stop()    controllers, then informers, stopped

Several controller-manager replicas run (`kubera up --controller-managers N`, one Ray actor
each, actors/controllers.py), and they elect a leader as kube-controller-manager does
(the election key of Lease kube-system/kube-controller-manager in etcd, the Lease itself
published while leading; actors/replica.py). Only the leader runs a ControllerManager:
it builds a fresh one (informers included) at the start of each term and runs it until
the term ends, so a replica that loses its lease stops its controllers, and a standby
that wins starts its own. Every write goes through the replica's fenced client, which
carries the leader's fencing token: the apiserver refuses the writes of a deposed leader
(paused, cut off) after its term. A replica without an election (a single one) runs its
ControllerManager at once. This class knows none of that: it runs the controllers with
the client it is given until it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from google.protobuf.message import Message

from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import LIST_ALL
from services.client import Client, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.cronjob import CronJobConfig, CronJobController
from services.controllers.daemonset import DaemonSetConfig, DaemonSetController
from services.controllers.deployment import DeploymentConfig, DeploymentController
from services.controllers.devicetainteviction import (
    DeviceTaintEvictionConfig,
    DeviceTaintEvictionController,
)
from services.controllers.disruption import DisruptionConfig, DisruptionController
from services.controllers.endpoints import EndpointsConfig, EndpointsController
from services.controllers.endpointslice import EndpointSliceConfig, EndpointSliceController
from services.controllers.garbagecollector import GarbageCollector, GarbageCollectorConfig
from services.controllers.job import JobConfig, JobController
from services.controllers.namespace import NamespaceConfig, NamespaceController
from services.controllers.nodelifecycle import NodeLifecycleConfig, NodeLifecycleController
from services.controllers.podgc import PodGCConfig, PodGCController
from services.controllers.podgroup import PodGroupConfig, PodGroupController
from services.controllers.replicaset import ReplicaSetConfig, ReplicaSetController
from services.controllers.resourceclaim import ResourceClaimConfig, ResourceClaimController
from services.controllers.resourcequota import ResourceQuotaConfig, ResourceQuotaController
from services.controllers.serviceaccount import ServiceAccountConfig, ServiceAccountController
from services.controllers.statefulset import StatefulSetConfig, StatefulSetController
from services.controllers.tainteviction import TaintEvictionConfig, TaintEvictionController
from services.controllers.volume.attachdetach import (
    AttachDetachConfig,
    AttachDetachController,
)
from services.controllers.volume.ephemeral import (
    EphemeralVolumeConfig,
    EphemeralVolumeController,
)
from services.controllers.volume.persistentvolume import (
    PersistentVolumeConfig,
    PersistentVolumeController,
)
from services.controllers.volume.protection import (
    ProtectionConfig,
    PVCProtectionController,
    PVProtectionController,
)
from services.lifecycle import Background

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]


class Controller(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


#: Controller names, in start order; `ControllerManagerConfig.controllers` picks from them.
ALL_CONTROLLERS = (
    "nodelifecycle",
    "tainteviction",
    "replicaset",
    "deployment",
    "disruption",
    "podgc",
    "resourceclaim",
    "devicetainteviction",
    "podgroup",
    "resourcequota",
    "garbagecollector",
    "statefulset",
    "daemonset",
    "job",
    "cronjob",
    "endpoint",
    "endpointslice",
    "serviceaccount",
    "namespace",
    "persistentvolume-binder",
    "pvc-protection",
    "pv-protection",
    "ephemeral-volume",
    "attachdetach",
)


def select_controllers(spec: str) -> tuple[str, ...]:
    """The controllers a kube-controller-manager `--controllers` list names, in start
    order: names to run, `*` for all, `-name` to leave one out (`*,-nodelifecycle`: all but
    node lifecycle; a list without `*` runs only what it names). ValueError naming an
    unknown controller, with the known ones."""
    items = [item.strip() for item in spec.split(",") if item.strip()]
    for item in items:
        name = item.removeprefix("-")
        if item != "*" and name not in ALL_CONTROLLERS:
            raise ValueError(
                f"--controllers: unknown controller {name!r}; known: {', '.join(ALL_CONTROLLERS)}"
            )
    off = {item[1:] for item in items if item.startswith("-")}
    on = set(ALL_CONTROLLERS) if "*" in items else {i for i in items if not i.startswith("-")}
    return tuple(name for name in ALL_CONTROLLERS if name in on and name not in off)


#: How long a controller may take to finish after stop before it is cancelled (seconds).
STOP_GRACE = 10.0


@dataclass(frozen=True)
class ControllerManagerConfig:
    """What the controller-manager runs, and each controller's settings (defaults: every
    controller, each with its defaults)."""

    controllers: tuple[str, ...] = ALL_CONTROLLERS
    """Which controllers run, by name (kube-controller-manager's --controllers, by our
    names; some of ALL_CONTROLLERS)."""

    nodelifecycle: NodeLifecycleConfig = field(default_factory=NodeLifecycleConfig)
    """The node lifecycle controller: node health, NoSchedule / NoExecute taints, zones."""

    tainteviction: TaintEvictionConfig = field(default_factory=TaintEvictionConfig)
    """The taint eviction controller: deletes pods that do not tolerate NoExecute taints."""

    replicaset: ReplicaSetConfig = field(default_factory=ReplicaSetConfig)
    """The ReplicaSet controller: keeps each ReplicaSet's pods at spec.replicas."""

    deployment: DeploymentConfig = field(default_factory=DeploymentConfig)
    """The Deployment controller: rolls pod templates out through ReplicaSets."""

    disruption: DisruptionConfig = field(default_factory=DisruptionConfig)
    """The disruption controller: keeps PodDisruptionBudgets' status for evictions."""

    podgc: PodGCConfig = field(default_factory=PodGCConfig)
    """The pod garbage collector: terminated, orphaned and unscheduled terminating pods."""

    resourceclaim: ResourceClaimConfig = field(default_factory=ResourceClaimConfig)
    """The resourceclaim controller: claims from templates for pods, and their cleanup."""

    devicetainteviction: DeviceTaintEvictionConfig = field(
        default_factory=DeviceTaintEvictionConfig
    )
    """The device taint eviction controller: deletes pods whose allocated devices have
    NoExecute taints their claims do not tolerate."""
    podgroup: PodGroupConfig = field(default_factory=PodGroupConfig)
    """The PodGroup controller: each gang's phase and pod counts (scheduling.x-k8s.io)."""

    resourcequota: ResourceQuotaConfig = field(default_factory=ResourceQuotaConfig)
    """The resource quota controller: each ResourceQuota's status.hard and status.used."""

    garbagecollector: GarbageCollectorConfig = field(default_factory=GarbageCollectorConfig)
    """The garbage collector: dependents deleted or orphaned with their owners (every kind).
    While it runs, the ReplicaSet and Deployment controllers leave cascading to it."""
    statefulset: StatefulSetConfig = field(default_factory=StatefulSetConfig)
    """The StatefulSet controller: ordinals, their claims and ordered rollouts."""

    daemonset: DaemonSetConfig = field(default_factory=DaemonSetConfig)
    """The DaemonSet controller: one daemon pod on every eligible node."""

    job: JobConfig = field(default_factory=JobConfig)
    """The Job controller: runs each Job's pods to completion (batch/v1)."""

    cronjob: CronJobConfig = field(default_factory=CronJobConfig)
    """The CronJob controller: creates Jobs on their schedules (batch/v1)."""

    endpoint: EndpointsConfig = field(default_factory=EndpointsConfig)
    """The endpoints controller: each selecting Service's Endpoints, from its pods."""

    endpointslice: EndpointSliceConfig = field(default_factory=EndpointSliceConfig)
    """The EndpointSlice controller: each selecting Service's slices, from its pods."""

    serviceaccount: ServiceAccountConfig = field(default_factory=ServiceAccountConfig)
    """The service account controller: a `default` ServiceAccount in every namespace."""

    namespace: NamespaceConfig = field(default_factory=NamespaceConfig)
    """The namespace controller: empties a deleted namespace, then releases it."""
    persistentvolume: PersistentVolumeConfig = field(default_factory=PersistentVolumeConfig)
    """The PersistentVolume controller (persistentvolume-binder): binds claims to
    volumes, provisions hollow volumes, reclaims released ones."""

    protection: ProtectionConfig = field(default_factory=ProtectionConfig)
    """The pvc-protection and pv-protection controllers: a claim in use and a bound volume
    keep their finalizer until unused."""

    ephemeral: EphemeralVolumeConfig = field(default_factory=EphemeralVolumeConfig)
    """The ephemeral volume controller (ephemeral-volume): the claims `<pod>-<volume>` of
    pods' generic ephemeral volumes."""

    attachdetach: AttachDetachConfig = field(default_factory=AttachDetachConfig)
    """The attach/detach controller: VolumeAttachments of the CSI volumes pods use on
    their nodes, attached at once for the hollow CSI drivers."""

    def __post_init__(self) -> None:
        unknown = [c for c in self.controllers if c not in ALL_CONTROLLERS]
        if unknown:
            raise ValueError(
                f"controllers: unknown {', '.join(unknown)} (expected some of {', '.join(ALL_CONTROLLERS)})"
            )


def _build(
    name: str,
    client: Client,
    informers: SharedInformers,
    clock: Clock,
    config: ControllerManagerConfig,
) -> Controller:
    if name == "nodelifecycle":
        return NodeLifecycleController(client, informers, config=config.nodelifecycle, clock=clock)
    if name == "tainteviction":
        return TaintEvictionController(client, informers, config=config.tainteviction, clock=clock)
    gc = "garbagecollector" in config.controllers
    if name == "replicaset":
        rs = replace(config.replicaset, cascade_delete=False) if gc else config.replicaset
        return ReplicaSetController(client, informers, config=rs, clock=clock)
    if name == "deployment":
        d = replace(config.deployment, cascade_delete=False) if gc else config.deployment
        return DeploymentController(client, informers, config=d, clock=clock)
    if name == "garbagecollector":
        return GarbageCollector(client, informers, config=config.garbagecollector, clock=clock)
    if name == "disruption":
        return DisruptionController(client, informers, config=config.disruption, clock=clock)
    if name == "resourceclaim":
        return ResourceClaimController(client, informers, config=config.resourceclaim, clock=clock)
    if name == "devicetainteviction":
        return DeviceTaintEvictionController(
            client, informers, config=config.devicetainteviction, clock=clock
        )
    if name == "podgroup":
        return PodGroupController(client, informers, config=config.podgroup, clock=clock)
    if name == "resourcequota":
        return ResourceQuotaController(client, informers, config=config.resourcequota, clock=clock)
    if name == "statefulset":
        ss = replace(config.statefulset, cascade_delete=False) if gc else config.statefulset
        return StatefulSetController(client, informers, config=ss, clock=clock)
    if name == "daemonset":
        ds = replace(config.daemonset, cascade_delete=False) if gc else config.daemonset
        return DaemonSetController(client, informers, config=ds, clock=clock)
    if name == "job":
        return JobController(client, informers, config=config.job, clock=clock)
    if name == "cronjob":
        return CronJobController(client, informers, config=config.cronjob, clock=clock)
    if name == "endpoint":
        return EndpointsController(client, informers, config=config.endpoint, clock=clock)
    if name == "endpointslice":
        return EndpointSliceController(client, informers, config=config.endpointslice, clock=clock)
    if name == "namespace":
        return NamespaceController(client, informers, config=config.namespace, clock=clock)
    if name == "persistentvolume-binder":
        return PersistentVolumeController(
            client, informers, config=config.persistentvolume, clock=clock
        )
    if name == "pvc-protection":
        return PVCProtectionController(client, informers, config=config.protection, clock=clock)
    if name == "pv-protection":
        return PVProtectionController(client, informers, config=config.protection, clock=clock)
    if name == "ephemeral-volume":
        return EphemeralVolumeController(client, informers, config=config.ephemeral, clock=clock)
    if name == "attachdetach":
        return AttachDetachController(client, informers, config=config.attachdetach, clock=clock)
    if name == "serviceaccount":
        return ServiceAccountController(
            client, informers, config=config.serviceaccount, clock=clock
        )
    return PodGCController(client, informers, config=config.podgc, clock=clock)


def pod_update_filter(controllers: Iterable[object]) -> Callable[[Message, Message], bool] | None:
    """Whether any of `controllers` acts on a pod update (each says so with its
    `wants_pod_update`); None, every update dispatched, when one of them does not say.
    The pod informer drops the others before any handler runs (the store still takes
    them): while pods change in ways no controller reads (a status write of a pod
    without owner, in a namespace without budget), the controllers do nothing."""
    wants: list[Callable[[Message, Message], bool]] = []
    for c in controllers:
        w = getattr(c, "wants_pod_update", None)
        if w is None:
            return None
        wants.append(w)

    def any_wants(old: Message, new: Message) -> bool:
        return any(w(old, new) for w in wants)

    return any_wants


class ControllerManager(Background):
    """The configured controllers over one set of shared informers (see the module
    docstring). Run it with `start()` / `stop()`, or `await run(stop)` (one leader term)."""

    _background_name = "controller-manager"

    def __init__(
        self,
        client: Client,
        config: ControllerManagerConfig | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ControllerManagerConfig()
        self.clock = clock or RealClock()
        # informers retry in wall time: reconnecting is infrastructure, not simulation
        self.informers = SharedInformers(client)
        self.controllers: dict[str, Controller] = {
            name: _build(name, client, self.informers, self.clock, self.config)
            for name in self.config.controllers
        }
        pods = self.informers.informers.get((PODS.resource, "", LIST_ALL))
        if pods is not None:
            pods.wants_update = pod_update_filter(self.controllers.values())

    async def run(self, stop: asyncio.Event) -> None:
        """Informers, then every controller, until `stop`; then everything stops."""
        self.informers.start()
        try:
            await self.informers.wait_synced()
            tasks = {
                name: asyncio.create_task(c.run(stop), name=f"controller-{name}")
                for name, c in self.controllers.items()
            }
            done, _ = await asyncio.wait(
                [*tasks.values(), asyncio.create_task(stop.wait())],
                return_when=asyncio.FIRST_COMPLETED,
            )
            for name, t in tasks.items():
                if t in done and not stop.is_set():
                    log.error(
                        "controller %s ended: %r",
                        name,
                        t.exception() if not t.cancelled() else "cancelled",
                    )
            stop.set()
            for t in tasks.values():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(t), STOP_GRACE)
                t.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
        finally:
            await self.informers.stop()


__all__ = [
    "ALL_CONTROLLERS",
    "Controller",
    "ControllerManager",
    "ControllerManagerConfig",
    "pod_update_filter",
]
