"""A node pool: many hollow kubelets in one asyncio process, kwok-style — no task per node
or pod, but one pod watch, one delay queue, one lease loop and one eviction loop for the
whole pool, and every write batched.

    pods watch ──► handlers ──► delay queue (heap of (due, pod, step)) ──► timer loop
                        │                                                     │
                        │      status batcher ◄── pod stages (create/start/exit/evict)
                        │      delete workers ◄── deletion after the grace period
    lease loop ──► lease batcher (every renew interval, all live nodes in one go)
    eviction loop ──► usage totals for all nodes at once (numpy) ──► the managers of the
                      nodes near a threshold ──► conditions, image GC, one eviction each

A pod's stages on its kubelet (upstream phases and container states):

    bound ─creatingDelay─► Pending/ContainerCreating ─startDelay─► Running ─runDuration─►
        Succeeded | Failed (restartPolicy Never/OnFailure) or restarted (Always)
    deletionTimestamp ─grace─► containers stopped ─► object deleted (grace 0, uid-guarded)
    eviction (node pressure) ─grace─► Failed, reason Evicted (the object stays, as upstream)

A killed node (chaos) keeps its state but does nothing: no lease renewals, no status, its
pods' steps are parked until it is revived.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protos.kubera.v1 import coordination_pb2, core_pb2
from services.api import codec
from services.api.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from services.api.kinds import BY_KIND
from services.client import Client
from services.client.informer import Handlers, Informer
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339, rfc3339_micro
from services.kubelet import eviction as ev
from services.kubelet.batcher import Batcher
from services.kubelet.template import NodePlan, Stages, TemplateError
from services.kubelet.usage import UsageTable, resolve_usage
from services.scheduler.framework.types import pod_requests

log = logging.getLogger(__name__)

PODS, NODES, LEASES = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Lease"]
LEASE_NAMESPACE = "kube-node-lease"
KUBELET_VERSION = "v1.31.0-kubera"
PRESSURE_CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure")
_CONDITION_WORDS = {
    # condition: (reason when False, message when False, reason when True, message when True)
    "MemoryPressure": (
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
    ),
    "DiskPressure": (
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
        "KubeletHasDiskPressure",
        "kubelet has disk pressure",
    ),
    "PIDPressure": (
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
        "KubeletHasInsufficientPID",
        "kubelet has insufficient PID available",
    ),
}
MEMORY_PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"
DISK_PRESSURE_TAINT = "node.kubernetes.io/disk-pressure"


@dataclass(frozen=True)
class PoolConfig:
    """How a pool runs its kubelets. Durations are simulated seconds."""

    #: The pool's name (its actor's name; the holder of nothing, just for logs).
    name: str = "pool-0"
    #: Node leases: their duration and how often they are renewed (upstream: 40 s and
    #: a quarter of it).
    lease_duration_seconds: int = 40
    lease_renew_interval: float = 10.0
    #: How often the Ready heartbeat is posted to node status when nothing changed
    #: (upstream nodeStatusReportFrequency).
    node_status_report_frequency: float = 300.0
    #: One pod watch per node (realistic apiserver load) instead of one per pool.
    watch_per_node: bool = False
    #: Workers deleting pods whose grace period is over (RPCs in flight at once).
    workers: int = 16
    #: Largest BatchUpdate call.
    max_batch: int = 500
    seed: int | None = None
    #: The cluster-wide number of this pool's first node (node and pod IPs derive from it).
    first_ordinal: int = 0

    def __post_init__(self) -> None:
        if self.lease_duration_seconds <= 0:
            raise ValueError("lease_duration_seconds must be positive")
        if not 0 < self.lease_renew_interval < self.lease_duration_seconds:
            raise ValueError("lease_renew_interval must be positive and below the lease duration")
        if self.workers < 1 or self.max_batch < 1:
            raise ValueError("workers and max_batch must be at least 1")


@dataclass
class HollowNode:
    index: int
    plan: NodePlan
    manager: ev.EvictionManager
    eviction: ev.EvictionConfig
    alive: bool = True
    registered: bool = False
    status: core_pb2.NodeStatus = field(default_factory=core_pb2.NodeStatus)
    conditions: dict[str, bool] = field(
        default_factory=lambda: dict.fromkeys(PRESSURE_CONDITIONS, False)
    )
    #: image name → size in bytes (what the node has pulled)
    images: dict[str, int] = field(default_factory=dict)
    pods: set[str] = field(default_factory=set)
    #: node-level usage added on purpose (experiments: a runaway system daemon)
    extra: dict[str, int] = field(default_factory=dict)
    last_status_post: float = 0.0
    lease_renewed: float = 0.0
    parked: list[tuple[str, int, str]] = field(default_factory=list)
    ip_seq: int = 0
    evictions: int = 0

    @property
    def name(self) -> str:
        return self.plan.name


@dataclass
class PodState:
    uid: str
    pod: core_pb2.Pod
    node: HollowNode
    stages: Stages
    phase: str = "Pending"  # the kubelet's own: Pending, Creating, Running, Succeeded, Failed
    #: bumped whenever queued steps must be forgotten (deletion, eviction)
    gen: int = 0
    started_at: float = 0.0
    restarts: int = 0
    deleting: bool = False
    evicted: bool = False
    #: The status this kubelet last wrote: the base of its next write, so a step that
    #: runs before the watch has shown the previous one loses nothing.
    written: core_pb2.PodStatus | None = None

    @property
    def key(self) -> str:
        return f"{self.pod.metadata.namespace}/{self.pod.metadata.name}"


class NodePool:
    """Runs `plans` as hollow kubelets against the apiserver behind `client`."""

    def __init__(
        self,
        client: Client,
        plans: Iterable[NodePlan],
        *,
        config: PoolConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or PoolConfig()
        self.clock = clock or RealClock()
        self.rng = random.Random(self.config.seed)
        self.nodes: list[HollowNode] = []
        self.by_name: dict[str, HollowNode] = {}
        for i, plan in enumerate(plans):
            cfg = ev.EvictionConfig.from_dict(plan.kind.eviction)
            node = HollowNode(i, plan, ev.EvictionManager(cfg), cfg)
            self.nodes.append(node)
            self.by_name[plan.name] = node
        self.pods: dict[str, PodState] = {}
        self.usage = UsageTable()
        self.status_batcher = Batcher(client, status=True, max_batch=self.config.max_batch)
        self.node_batcher = Batcher(client, status=True, max_batch=self.config.max_batch)
        self.lease_batcher = Batcher(client, status=False, max_batch=self.config.max_batch)
        self._heap: list[tuple[float, int, str, int, str]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._deletes: asyncio.Queue[PodState] = asyncio.Queue()
        self._tasks: list[asyncio.Task[Any]] = []
        self.informers: list[Informer] = []
        self.eviction_ticks = 0
        self.eviction_tick_seconds = 0.0
        self._watermarks = self._build_watermarks()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register every node and its lease, then start watching pods."""
        await self._register(self.nodes)
        for b in (self.status_batcher, self.node_batcher, self.lease_batcher):
            self._tasks.append(asyncio.create_task(b.run()))
        if self.config.watch_per_node:
            self.informers = [
                Informer(self.client, PODS, field_selector=f"spec.nodeName={n.name}")
                for n in self.nodes
            ]
        else:
            self.informers = [Informer(self.client, PODS, field_selector="spec.nodeName!=")]
        # informers retry in wall time: reconnecting is infrastructure, not simulation
        handlers = Handlers(
            on_add=self._on_pod,
            on_update=lambda _o, p: self._on_pod(p),
            on_delete=self._on_pod_gone,
        )
        for inf in self.informers:
            inf.add_handlers(handlers)
            self._tasks.append(asyncio.create_task(inf.run()))
        self._tasks.append(asyncio.create_task(self._timer_loop()))
        self._tasks.append(asyncio.create_task(self._lease_loop()))
        self._tasks.append(asyncio.create_task(self._eviction_loop()))
        self._tasks.extend(
            asyncio.create_task(self._delete_worker()) for _ in range(self.config.workers)
        )
        await asyncio.gather(*(i.synced.wait() for i in self.informers))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    # --------------------------------------------------------------- registration

    def _node_object(self, node: HollowNode) -> core_pb2.Node:
        plan, kind = node.plan, node.plan.kind
        now = rfc3339(self.clock.now())
        doc = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": plan.name,
                "labels": plan.labels,
                "annotations": {
                    "kubera.io/node-pool": self.config.name,
                    "kubera.io/node-kind": kind.name,
                },
            },
            "spec": {"taints": kind.taints},
            "status": {
                "capacity": kind.capacity,
                "allocatable": kind.allocatable,
                "addresses": [
                    {
                        "type": "InternalIP",
                        "address": _node_ip(self.config.first_ordinal + node.index),
                    },
                    {"type": "Hostname", "address": plan.name},
                ],
                "nodeInfo": {
                    "kubeletVersion": KUBELET_VERSION,
                    "kubeProxyVersion": KUBELET_VERSION,
                    "containerRuntimeVersion": "kubera://hollow",
                    "osImage": "kubera hollow node",
                    "kernelVersion": "hollow",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "machineID": plan.name,
                },
                "phase": "Running",
            },
        }
        obj: core_pb2.Node = codec.decode(doc, validate="strict").obj  # type: ignore[assignment]
        node.status.CopyFrom(obj.status)
        self._set_conditions(node, now)
        obj.status.CopyFrom(node.status)
        return obj

    def _set_conditions(self, node: HollowNode, now: str) -> None:
        """Write the kubelet's conditions into `node.status` (Ready last, as upstream)."""
        old = {c.type: c for c in node.status.conditions}
        del node.status.conditions[:]
        for cond in PRESSURE_CONDITIONS:
            on = node.conditions[cond]
            words = _CONDITION_WORDS[cond]
            reason, message = (words[2], words[3]) if on else (words[0], words[1])
            self._condition(
                node, old.get(cond), cond, "True" if on else "False", reason, message, now
            )
        self._condition(
            node,
            old.get("Ready"),
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
            now,
        )

    @staticmethod
    def _condition(
        node: HollowNode,
        old: core_pb2.NodeCondition | None,
        type_: str,
        status: str,
        reason: str,
        message: str,
        now: str,
    ) -> None:
        c = node.status.conditions.add(
            type=type_, status=status, reason=reason, message=message, last_heartbeat_time=now
        )
        c.last_transition_time = (
            old.last_transition_time if old is not None and old.status == status else now
        )

    async def _register(self, nodes: list[HollowNode]) -> None:
        now = self.clock.now()
        objs = [self._node_object(n) for n in nodes]
        for start in range(0, len(objs), self.config.max_batch):
            chunk = objs[start : start + self.config.max_batch]
            results = await self.client.batch_create(chunk)
            for obj, r in zip(chunk, results, strict=True):
                if isinstance(r.error, AlreadyExistsError):
                    self.node_batcher.put(obj)  # a node of ours from before: post our status
                elif r.error is not None:
                    raise r.error
        leases = [self._lease(n, now) for n in nodes]
        for start in range(0, len(leases), self.config.max_batch):
            chunk = leases[start : start + self.config.max_batch]
            results = await self.client.batch_create(chunk)
            for lease, r in zip(chunk, results, strict=True):
                if isinstance(r.error, AlreadyExistsError):
                    self.lease_batcher.put(lease)
                elif r.error is not None:
                    raise r.error
        for n in nodes:
            n.registered = True
            n.last_status_post = now
            n.lease_renewed = now

    def _lease(self, node: HollowNode, now: float) -> coordination_pb2.Lease:
        lease = coordination_pb2.Lease(api_version="coordination.k8s.io/v1", kind="Lease")
        lease.metadata.name = node.name
        lease.metadata.namespace = LEASE_NAMESPACE
        lease.spec.holder_identity = node.name
        lease.spec.lease_duration_seconds = self.config.lease_duration_seconds
        lease.spec.renew_time = rfc3339_micro(now)
        return lease

    # ---------------------------------------------------------------------- leases

    async def _lease_loop(self) -> None:
        while True:
            await self.clock.sleep(self.config.lease_renew_interval)
            now = self.clock.now()
            report = self.config.node_status_report_frequency
            for n in self.nodes:
                if not n.alive:
                    continue
                self.lease_batcher.put(self._lease(n, now))
                n.lease_renewed = now
                if now - n.last_status_post >= report:
                    self._post_node_status(n)

    def _post_node_status(self, node: HollowNode) -> None:
        node.last_status_post = self.clock.now()
        self._set_conditions(node, rfc3339(node.last_status_post))
        obj = core_pb2.Node(api_version="v1", kind="Node")
        obj.metadata.name = node.name
        obj.status.CopyFrom(node.status)
        self.node_batcher.put(obj)

    # ------------------------------------------------------------------------ pods

    def _on_pod(self, pod: core_pb2.Pod) -> None:
        node = self.by_name.get(pod.spec.node_name)
        if node is None:
            return
        uid = pod.metadata.uid
        st = self.pods.get(uid)
        if st is None:
            st = self._adopt(pod, node)
            if st is None:
                return
        else:
            st.pod = pod
        if pod.metadata.deletion_timestamp and not st.deleting:
            self._begin_deletion(st)

    def _adopt(self, pod: core_pb2.Pod, node: HollowNode) -> PodState | None:
        """A pod newly seen on one of our nodes: take it over where its status says it is."""
        try:
            stages = node.plan.kind.stages.for_pod(pod.metadata.annotations)
        except TemplateError as e:
            log.warning(
                "pod %s/%s: %s; using the node's stages",
                pod.metadata.namespace,
                pod.metadata.name,
                e,
            )
            stages = node.plan.kind.stages
        st = PodState(pod.metadata.uid, pod, node, stages)
        self.pods[st.uid] = st
        node.pods.add(st.uid)
        phase = pod.status.phase
        if phase in ("Succeeded", "Failed"):
            st.phase = phase
            return st
        if phase == "Running":  # ours from before a restart: keep it running
            st.phase = "Running"
            st.started_at = (
                parse_rfc3339(pod.status.start_time) if pod.status.start_time else self.clock.now()
            )
            self._track_usage(st)
            return st
        if pod.metadata.deletion_timestamp:
            return st
        rejected = self._admit(st)
        if rejected is not None:
            reason, message = rejected
            self._finish(st, "Failed", reason, message)
            return st
        self._after(st, stages.delay(stages.creating_delay, self.rng), "create")
        return st

    def _admit(self, st: PodState) -> tuple[str, str] | None:
        """The kubelet's admission: pressure conditions, then resources (upstream's
        eviction admit handler and the predicate admit handler)."""
        node, pod = st.node, st.pod
        tolerates = any(
            (t.key == MEMORY_PRESSURE_TAINT or (not t.key and t.operator == "Exists"))
            and t.effect in ("", "NoSchedule")
            for t in pod.spec.tolerations
        )
        ok, reason, message = ev.admit(
            pod.status.qos_class or "BestEffort", tolerates, node.conditions
        )
        if not ok:
            return reason, message
        want = pod_requests(pod)
        alloc = node.plan.kind.allocatable
        used_cpu = used_mem = 0
        count = 0
        for uid in node.pods:
            other = self.pods.get(uid)
            if other is None or other is st or other.phase in ("Succeeded", "Failed"):
                continue
            r = pod_requests(other.pod)
            used_cpu += r.milli_cpu
            used_mem += r.memory
            count += 1
        cap_cpu = _milli(alloc.get("cpu", "0"))
        cap_mem = _int(alloc.get("memory", "0"))
        cap_pods = _int(alloc.get("pods", "110"))
        if count + 1 > cap_pods:
            return (
                "OutOfpods",
                f"Node didn't have enough resource: pods, requested: 1, used: {count}, capacity: {cap_pods}",
            )
        if want.milli_cpu and used_cpu + want.milli_cpu > cap_cpu:
            return (
                "OutOfcpu",
                f"Pod was rejected: Node didn't have enough resource: cpu, requested: {want.milli_cpu}, used: {used_cpu}, capacity: {cap_cpu}",
            )
        if want.memory and used_mem + want.memory > cap_mem:
            return (
                "OutOfmemory",
                f"Pod was rejected: Node didn't have enough resource: memory, requested: {want.memory}, used: {used_mem}, capacity: {cap_mem}",
            )
        return None

    def _on_pod_gone(self, pod: core_pb2.Pod) -> None:
        st = self.pods.pop(pod.metadata.uid, None)
        if st is None:
            return
        st.gen += 1
        st.node.pods.discard(st.uid)
        self.usage.remove(st.uid)

    def _begin_deletion(self, st: PodState) -> None:
        st.deleting = True
        st.gen += 1
        grace = float(st.pod.metadata.deletion_grace_period_seconds)
        if st.phase in ("Pending", "Creating", "Succeeded", "Failed"):
            grace = 0.0  # nothing running to stop
        self._after(st, grace, "kill")

    # ----------------------------------------------------------------- delay queue

    def _after(self, st: PodState, delay: float, step: str) -> None:
        due = self.clock.monotonic() + max(0.0, delay)
        first = not self._heap or due < self._heap[0][0]
        heapq.heappush(self._heap, (due, next(self._seq), st.uid, st.gen, step))
        if first:
            self._wake.set()

    async def _timer_loop(self) -> None:
        while True:
            if not self._heap:
                self._wake.clear()
                await self._wake.wait()
                continue
            wait = self._heap[0][0] - self.clock.monotonic()
            if wait > 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait / _scale(self.clock))
                continue
            now_m = self.clock.monotonic()
            n = 0
            while self._heap and self._heap[0][0] <= now_m and n < 2000:
                _, _, uid, gen, step = heapq.heappop(self._heap)
                n += 1
                st = self.pods.get(uid)
                if st is None or st.gen != gen:
                    continue
                if not st.node.alive:
                    st.node.parked.append((uid, gen, step))
                    continue
                try:
                    self._step(st, step)
                except Exception:  # noqa: BLE001 - one pod's bug must not stop the pool
                    log.exception("pod %s: step %s failed", st.key, step)
            await asyncio.sleep(0)

    def _step(self, st: PodState, step: str) -> None:
        if step == "create":
            self._creating(st)
            self._after(st, st.stages.delay(st.stages.start_delay, self.rng), "start")
        elif step == "start":
            self._running(st)
            if st.stages.run_duration > 0:
                self._after(st, st.stages.delay(st.stages.run_duration, self.rng), "exit")
        elif step == "exit":
            self._exit(st)
        elif step == "kill":
            self._deletes.put_nowait(st)
        elif step.startswith("evict:"):
            self._finish(st, "Failed", ev.REASON_EVICTED, step[len("evict:") :], evicted=True)

    # -------------------------------------------------------------- pod statuses

    def _status_base(self, st: PodState) -> core_pb2.Pod:
        """The next status write for the pod: what this kubelet wrote last (or the pod's
        status when nothing yet), plus conditions others added since (DisruptionTarget
        from taint eviction, PodScheduled)."""
        pod = core_pb2.Pod(api_version="v1", kind="Pod")
        pod.metadata.name = st.pod.metadata.name
        pod.metadata.namespace = st.pod.metadata.namespace
        pod.metadata.uid = st.uid
        if st.written is None:
            pod.status.CopyFrom(st.pod.status)
        else:
            pod.status.CopyFrom(st.written)
            ours = {c.type for c in st.written.conditions}
            for c in st.pod.status.conditions:
                if c.type not in ours:
                    pod.status.conditions.add().CopyFrom(c)
        pod.status.host_ip = _node_ip(self.config.first_ordinal + st.node.index)
        return pod

    def _write_status(self, st: PodState, pod: core_pb2.Pod) -> None:
        st.written = core_pb2.PodStatus()
        st.written.CopyFrom(pod.status)
        self.status_batcher.put(pod)

    def _container_statuses(
        self, st: PodState, state: dict[str, Any], *, ready: bool
    ) -> list[core_pb2.ContainerStatus]:
        out = []
        for i, c in enumerate(st.pod.spec.containers):
            cs = core_pb2.ContainerStatus(
                name=c.name,
                image=c.image,
                image_id=f"hollow://{c.image}",
                container_id=f"kubera://{st.uid[:12]}-{i}" if "waiting" not in state else "",
                ready=ready,
                started="running" in state,
                restart_count=st.restarts,
            )
            cs.state.update(state)
            out.append(cs)
        return out

    def _set_pod_condition(
        self, pod: core_pb2.Pod, type_: str, status: str, now: str, reason: str = ""
    ) -> None:
        for c in pod.status.conditions:
            if c.type == type_:
                if c.status != status:
                    c.status, c.last_transition_time = status, now
                c.reason = reason
                return
        pod.status.conditions.add(
            type=type_, status=status, last_transition_time=now, reason=reason
        )

    def _creating(self, st: PodState) -> None:
        st.phase = "Creating"
        now = rfc3339(self.clock.now())
        for c in st.pod.spec.containers:  # pulling: the node now holds the image
            st.node.images.setdefault(c.image, st.node.plan.kind.image_size(c.image))
        pod = self._status_base(st)
        pod.status.phase = "Pending"
        pod.status.start_time = pod.status.start_time or now
        if not any(c.type == "PodScheduled" for c in pod.status.conditions):
            # bound by nodeName, never through a scheduler: the kubelet reports it (upstream)
            self._set_pod_condition(pod, "PodScheduled", "True", now)
        self._set_pod_condition(pod, "PodReadyToStartContainers", "False", now)
        self._set_pod_condition(pod, "Initialized", "True", now)
        self._set_pod_condition(pod, "Ready", "False", now, "ContainersNotReady")
        self._set_pod_condition(pod, "ContainersReady", "False", now, "ContainersNotReady")
        del pod.status.container_statuses[:]
        pod.status.container_statuses.extend(
            self._container_statuses(st, {"waiting": {"reason": "ContainerCreating"}}, ready=False)
        )
        self._write_status(st, pod)

    def _running(self, st: PodState) -> None:
        st.phase = "Running"
        now_f = self.clock.now()
        now = rfc3339(now_f)
        st.started_at = now_f
        node = st.node
        node.ip_seq += 1
        pod = self._status_base(st)
        pod.status.phase = "Running"
        ip = _pod_ip(self.config.first_ordinal + node.index, node.ip_seq)
        pod.status.pod_ip = ip
        del pod.status.pod_ips[:]
        pod.status.pod_ips.add(ip=ip)
        for cond in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
            self._set_pod_condition(pod, cond, "True", now)
        del pod.status.container_statuses[:]
        pod.status.container_statuses.extend(
            self._container_statuses(st, {"running": {"startedAt": now}}, ready=True)
        )
        self._write_status(st, pod)
        self._track_usage(st)

    def _track_usage(self, st: PodState) -> None:
        try:
            model = resolve_usage(
                dict(st.pod.metadata.annotations),
                dict(st.pod.metadata.labels),
                st.node.plan.kind.usage_defaults,
            )
        except ValueError as e:
            log.warning("pod %s: %s; it uses nothing", st.key, e)
            return
        self.usage.add(st.uid, st.node.index, model, st.started_at)

    def _exit(self, st: PodState) -> None:
        failed = self.rng.random() < st.stages.failure_rate
        policy = st.pod.spec.restart_policy or "Always"
        if policy == "Always" or (policy == "OnFailure" and failed):
            st.restarts += 1
            self.usage.remove(st.uid)
            self._running(st)  # restarted at once (no CrashLoopBackOff modelled)
            if st.stages.run_duration > 0:
                self._after(st, st.stages.delay(st.stages.run_duration, self.rng), "exit")
            return
        if failed:
            self._finish(st, "Failed", "Error", "", exit_code=1)
        else:
            self._finish(st, "Succeeded", "Completed", "", exit_code=0)

    def _finish(
        self,
        st: PodState,
        phase: str,
        reason: str,
        message: str,
        *,
        exit_code: int = 137,
        evicted: bool = False,
    ) -> None:
        """The pod's containers are done for good: a terminal phase, usage gone."""
        st.phase = phase
        st.gen += 1
        st.evicted = evicted
        self.usage.remove(st.uid)
        now = rfc3339(self.clock.now())
        pod = self._status_base(st)
        pod.status.phase = phase
        if evicted or reason.startswith("OutOf") or reason == ev.REASON_EVICTED:
            pod.status.reason, pod.status.message = reason, message
        for cond in ("Ready", "ContainersReady"):
            self._set_pod_condition(
                pod, cond, "False", now, "PodFailed" if phase == "Failed" else "PodCompleted"
            )
        if evicted:
            self._set_pod_condition(pod, "DisruptionTarget", "True", now, "TerminationByKubelet")
        del pod.status.container_statuses[:]
        if st.phase != "Pending" and pod.status.start_time:
            term = {
                "terminated": {
                    "exitCode": exit_code,
                    "reason": "Error" if exit_code else "Completed",
                    "finishedAt": now,
                }
            }
            pod.status.container_statuses.extend(self._container_statuses(st, term, ready=False))
        self._write_status(st, pod)

    async def _delete_worker(self) -> None:
        while True:
            st = await self._deletes.get()
            if self.pods.get(st.uid) is not st:
                continue
            await self.status_batcher.drained()
            try:
                await self.client.delete(
                    PODS,
                    st.pod.metadata.name,
                    st.pod.metadata.namespace,
                    grace_period_seconds=0,
                    uid=st.uid,
                )
            except (NotFoundError, ConflictError):
                pass
            except ApiError as e:
                log.warning("pod %s: delete failed: %s; retrying", st.key, e)
                self._after(st, 1.0, "kill")

    # -------------------------------------------------------------------- eviction

    def _build_watermarks(self) -> dict[str, np.ndarray]:
        """Per signal and node, the available amount below which the node's eviction
        manager has something to decide (its largest threshold plus minimum reclaim)."""
        marks: dict[str, np.ndarray] = {}
        for n in self.nodes:
            caps = self._capacities(n)
            for th in n.eviction.thresholds():
                cap = caps.get(th.signal)
                if cap is None:
                    continue
                arr = marks.setdefault(th.signal, np.zeros(len(self.nodes)))
                arr[n.index] = max(arr[n.index], th.amount(cap) + th.reclaim_amount(cap))
        return marks

    @staticmethod
    def _capacities(n: HollowNode) -> dict[str, int]:
        d = n.plan.kind.disk
        caps = {
            ev.MEMORY_AVAILABLE: _int(n.plan.kind.capacity.get("memory", "0")),
            ev.NODEFS_AVAILABLE: d.nodefs,
            ev.NODEFS_INODES_FREE: d.nodefs_inodes,
            ev.PID_AVAILABLE: d.pid_max,
        }
        caps[ev.IMAGEFS_AVAILABLE] = d.imagefs or d.nodefs
        caps[ev.IMAGEFS_INODES_FREE] = d.imagefs_inodes or d.nodefs_inodes
        return caps

    async def _eviction_loop(self) -> None:
        period = min((n.eviction.monitoring_period for n in self.nodes), default=10.0)
        while True:
            await self.clock.sleep(period)
            t0 = asyncio.get_running_loop().time()
            try:
                self.eviction_tick()
            except Exception:  # noqa: BLE001
                log.exception("eviction tick failed")
            self.eviction_ticks += 1
            self.eviction_tick_seconds = asyncio.get_running_loop().time() - t0
            await asyncio.sleep(0)

    def node_totals(self, now: float) -> dict[str, np.ndarray]:
        """Usage per node (pods + system + images + injected), one array per resource."""
        n = len(self.nodes)
        totals = {
            r: np.zeros(n) for r in ("memory", "ephemeral-storage", "inodes", "pids", "images")
        }
        for r, arr in self.usage.node_totals(now).items():
            if r in totals:
                totals[r][: len(arr)] += arr[:n]
        for node in self.nodes:
            i = node.index
            for r, v in node.plan.kind.system.items():
                totals[r][i] += v
            for r, v in node.extra.items():
                if r in totals:
                    totals[r][i] += v
            totals["images"][i] = sum(node.images.values())
        return totals

    def eviction_tick(self) -> None:
        """One monitoring period for every live node: observe all at once, then let the
        managers of the nodes near a threshold (or under pressure) decide."""
        now = self.clock.now()
        t = self.node_totals(now)
        avail = self._available(t)
        near = np.zeros(len(self.nodes), dtype=bool)
        for signal, mark in self._watermarks.items():
            a = avail.get(signal)
            if a is not None:
                near |= a < mark
        for node in self.nodes:
            if not node.alive or not node.registered:
                continue
            if not near[node.index] and not any(node.conditions.values()) and node.manager.idle():
                continue
            self._synchronize(node, now, t)

    def _available(self, t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        caps = (
            {
                s: np.array([self._capacities(n)[s] for n in self.nodes], dtype=float)
                for s in self._capacities(self.nodes[0])
            }
            if self.nodes
            else {}
        )
        if not caps:
            return {}
        separate = np.array([bool(n.plan.kind.disk.imagefs) for n in self.nodes])
        image_inodes = t["images"] / _IMAGE_BYTES_PER_INODE
        nodefs_used = t["ephemeral-storage"] + np.where(separate, 0, t["images"])
        nodefs_inodes = t["inodes"] + np.where(separate, 0, image_inodes)
        return {
            ev.MEMORY_AVAILABLE: caps[ev.MEMORY_AVAILABLE] - t["memory"],
            ev.NODEFS_AVAILABLE: caps[ev.NODEFS_AVAILABLE] - nodefs_used,
            ev.NODEFS_INODES_FREE: caps[ev.NODEFS_INODES_FREE] - nodefs_inodes,
            ev.IMAGEFS_AVAILABLE: np.where(
                separate,
                caps[ev.IMAGEFS_AVAILABLE] - t["images"],
                caps[ev.NODEFS_AVAILABLE] - nodefs_used,
            ),
            ev.IMAGEFS_INODES_FREE: np.where(
                separate,
                caps[ev.IMAGEFS_INODES_FREE] - image_inodes,
                caps[ev.NODEFS_INODES_FREE] - nodefs_inodes,
            ),
            ev.PID_AVAILABLE: caps[ev.PID_AVAILABLE] - t["pids"],
        }

    def _synchronize(self, node: HollowNode, now: float, t: dict[str, np.ndarray]) -> None:
        i = node.index
        kind = node.plan.kind
        d = kind.disk
        stats = ev.NodeStats(
            memory_capacity=_int(kind.capacity.get("memory", "0")),
            memory_working_set=int(t["memory"][i]),
            nodefs_capacity=d.nodefs,
            nodefs_available=d.nodefs
            - int(t["ephemeral-storage"][i])
            - (0 if d.imagefs else int(t["images"][i])),
            nodefs_inodes=d.nodefs_inodes,
            nodefs_inodes_free=d.nodefs_inodes
            - int(t["inodes"][i])
            - (0 if d.imagefs else int(t["images"][i] / _IMAGE_BYTES_PER_INODE)),
            imagefs_separate=bool(d.imagefs),
            imagefs_capacity=d.imagefs or d.nodefs,
            imagefs_available=(d.imagefs - int(t["images"][i])) if d.imagefs else 0,
            imagefs_inodes=d.imagefs_inodes,
            imagefs_inodes_free=(d.imagefs_inodes - int(t["images"][i] / _IMAGE_BYTES_PER_INODE))
            if d.imagefs
            else 0,
            pid_max=d.pid_max,
            pids_used=int(t["pids"][i]),
        )
        pods = []
        in_use: set[str] = set()
        for uid in node.pods:
            st = self.pods.get(uid)
            if st is None or st.phase not in ("Running", "Creating") or st.evicted:
                continue
            for c in st.pod.spec.containers:
                in_use.add(c.image)
            if st.phase != "Running":
                continue
            u = self.usage.pod_usage(uid, now)
            req = pod_requests(st.pod)
            pods.append(
                ev.PodStats(
                    key=uid,
                    uid=uid,
                    priority=st.pod.spec.priority,
                    qos=st.pod.status.qos_class or "BestEffort",
                    memory_request=req.memory,
                    ephemeral_storage_request=req.ephemeral_storage,
                    memory=int(u.get("memory", 0)),
                    ephemeral_storage=int(u.get("ephemeral-storage", 0)),
                    inodes=int(u.get("inodes", 0)),
                    pids=int(u.get("pids", 0)),
                    termination_grace_period_seconds=int(
                        st.pod.spec.termination_grace_period_seconds or 30
                    ),
                    containers=[c.name for c in st.pod.spec.containers],
                )
            )
        images = [
            ev.ImageStats(name, size, name in in_use, inodes=size // _IMAGE_BYTES_PER_INODE)
            for name, size in node.images.items()
        ]
        decision = node.manager.synchronize(now, stats, pods, images)
        for name in decision.images_to_delete:
            node.images.pop(name, None)
        if decision.conditions != node.conditions:
            node.conditions = dict(decision.conditions)
            self._post_node_status(node)
        for uid, grace, message, _signal in decision.evict:
            st = self.pods.get(uid)
            if st is None or st.evicted:
                continue
            st.evicted = True
            st.gen += 1
            node.evictions += 1
            self.usage.remove(uid)  # the kill starts now; usage is reclaimed with it
            self._after(st, float(grace), "evict:" + message)

    # ---------------------------------------------------------------- chaos, stats

    def set_alive(self, names: Iterable[str], alive: bool) -> tuple[list[str], list[str]]:
        """Kill (stop heartbeats and pod progress) or revive nodes; returns the names
        changed and those this pool does not run."""
        changed, unknown = [], []
        for name in names:
            node = self.by_name.get(name)
            if node is None:
                unknown.append(name)
                continue
            if node.alive == alive:
                continue
            node.alive = alive
            changed.append(name)
            if alive:
                now = self.clock.now()
                self.lease_batcher.put(self._lease(node, now))
                node.lease_renewed = now
                self._post_node_status(node)
                parked, node.parked = node.parked, []
                for uid, gen, step in parked:
                    st = self.pods.get(uid)
                    if st is not None and st.gen == gen:
                        heapq.heappush(
                            self._heap, (self.clock.monotonic(), next(self._seq), uid, gen, step)
                        )
                self._wake.set()
        return changed, unknown

    def inject(self, names: Iterable[str], usage: dict[str, int]) -> list[str]:
        """Set node-level extra usage (e.g. a runaway system daemon) on these nodes."""
        done = []
        for name in names:
            node = self.by_name.get(name)
            if node is not None:
                node.extra = dict(usage)
                done.append(name)
        return done

    def stats(self) -> dict[str, Any]:
        phases: dict[str, int] = {}
        for st in self.pods.values():
            phases[st.phase] = phases.get(st.phase, 0) + 1
        now = self.clock.now()
        alive = [n for n in self.nodes if n.alive]
        return {
            "name": self.config.name,
            "nodes": len(self.nodes),
            "alive": len(alive),
            "pods": phases,
            "pressure": {
                c: sum(1 for n in self.nodes if n.conditions[c]) for c in PRESSURE_CONDITIONS
            },
            "evictions": sum(n.evictions for n in self.nodes),
            "max_lease_age": max((now - n.lease_renewed for n in alive), default=0.0),
            "status_writes": self.status_batcher.written,
            "status_calls": self.status_batcher.calls,
            "lease_writes": self.lease_batcher.written,
            "eviction_ticks": self.eviction_ticks,
            "eviction_tick_seconds": self.eviction_tick_seconds,
            "queued_steps": len(self._heap),
        }


_IMAGE_BYTES_PER_INODE = 64 * 1024


def _scale(clock: Clock) -> float:
    return float(getattr(clock, "scale", 1.0))


def _node_ip(ordinal: int) -> str:
    """10.0.0.0/9 by node: up to 8 M nodes."""
    return f"10.{(ordinal >> 16) & 0x7F}.{(ordinal >> 8) & 0xFF}.{ordinal & 0xFF}"


def _pod_ip(ordinal: int, seq: int) -> str:
    """A /24-sized slice of 10.128.0.0/9 per node (upstream podCIDR-like), reused mod 254."""
    return f"10.{128 + ((ordinal >> 8) & 0x7F)}.{ordinal & 0xFF}.{seq % 254 + 1}"


def _int(text: str) -> int:
    from services.api.quantity import parse_quantity

    return parse_quantity(text).int_value()


def _milli(text: str) -> int:
    from services.api.quantity import parse_quantity

    return parse_quantity(text).milli_value()
