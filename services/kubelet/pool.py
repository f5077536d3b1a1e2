"""A node pool: many hollow kubelets in one asyncio process, kwok-style — no task per node
or pod, but one pod watch, one delay queue, one lease loop and one eviction loop for the
whole pool, and every write batched.

    pods watch ──► handlers ──► delay queue (heap of (due, pod, step)) ──► timer loop
                        │                                                     │
                        │      status batcher ◄── pod stages (create/start/exit/evict)
                        │      delete workers ◄── deletion after the grace period
    lease loop ──► lease batcher (every renew interval, all live nodes; leases.py)
    eviction loop ──► the nodes' eviction managers (evictor.py) ──► evict:<message> steps

A pod's stages on its kubelet (upstream phases and container states):

    bound ─creatingDelay─► Pending/ContainerCreating ─startDelay─► sandbox ready:
        init containers one by one (sidecars started and left running), then every app
        container; each container ─runDuration | OOM─► exited ─► restarted (at once or
        after its CrashLoopBackOff back-off) or done, by restartPolicy (containers.py);
        app containers all done for good ─► sidecars stopped ─► Succeeded | Failed
        (phase: upstream's getPhase). Container steps are "c:<index>:<seq>:<action>".
    deletionTimestamp ─grace─► containers stopped ─► object deleted (grace 0, uid-guarded)
    eviction (node pressure) ─grace─► Failed, reason Evicted (the object stays, as upstream)

A killed node (chaos) keeps its state but does nothing: no lease renewals, no status, its
pods' steps are parked until it is revived. Whether a bound pod may start at all is
admission.py's decision; a pod with resource claims waits, Pending, before
ContainerCreating until claimgate.py lets it (its claims allocated and reserved for it),
and one naming a missing ConfigMap or Secret (or key) waits, ContainerCreating or
CreateContainerConfigError, before its sandbox starts until configgate.py lets it; one
whose claims are not Bound (or whose CSI volumes are not attached) waits there too, with
FailedMount events, until volumegate.py lets it.
The nodes' DRA devices (slices.py) and hollow CSI drivers (csinode.py) publish at registration;
the DRA drivers with binding conditions report their devices ready (slices.BindingDriver).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import random
from collections.abc import Iterable
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.claims import is_reserved_for_pod
from services.api.helpers.stages import TemplateError
from services.api.machinery.errors import ApiError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.api.machinery.listoptions import ListOptions
from services.client import Client, Handlers, Informer
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339
from services.kubelet import eviction as ev
from services.kubelet import podstatus
from services.kubelet.admission import admit
from services.kubelet.batcher import Batcher
from services.kubelet.claimgate import REASON_FAILED_PREPARE, unprepared, usable_on
from services.kubelet.configgate import REASON_CONFIG_ERROR, ConfigObjects
from services.kubelet.containers import (
    EXIT_CODE_KILLED,
    FAILED,
    REASON_COMPLETED,
    REASON_CRASH_LOOP,
    REASON_CREATING,
    REASON_ERROR,
    REASON_OOM_KILLED,
    REASON_POD_INITIALIZING,
    SUCCEEDED,
    Backoff,
    ContainerRun,
    crash_loop_message,
    runs_for,
    should_restart,
    terminated_reason,
)
from services.kubelet.csinode import publish_csi
from services.kubelet.evictor import PoolEvictor
from services.kubelet.leases import LEASE_SLOTS as LEASE_SLOTS  # re-exported
from services.kubelet.leases import NodeLeases
from services.kubelet.nodestatus import pod_ip
from services.kubelet.slices import BindingDriver, NodeSlices
from services.kubelet.state import PRESSURE_CONDITIONS, HollowNode, PodState
from services.kubelet.state import PoolConfig as PoolConfig  # re-exported
from services.kubelet.template import NodePlan
from services.kubelet.usage import UsageTable, first_over, resolve_usage, usage_container
from services.kubelet.volumegate import VolumeGate

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
CLAIMS = BY_KIND["ResourceClaim"]


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
            node = HollowNode(i, self.config.first_ordinal + i, plan, ev.EvictionManager(cfg), cfg)
            self.nodes.append(node)
            self.by_name[plan.name] = node
        self.pods: dict[str, PodState] = {}
        self.usage = UsageTable()
        self.status_batcher = Batcher(client, status=True, max_batch=self.config.max_batch)
        self.node_batcher = Batcher(client, status=True, max_batch=self.config.max_batch)
        self.lease_batcher = Batcher(client, status=False, max_batch=self.config.max_batch)
        self.leases = NodeLeases(
            client,
            self.nodes,
            self.clock,
            self.config,
            node_batcher=self.node_batcher,
            lease_batcher=self.lease_batcher,
        )
        self.slices = NodeSlices(
            client, [n.plan for n in self.nodes], max_batch=self.config.max_batch
        )
        #: The hollow drivers' reports on devices with binding conditions (slices.py).
        self.binding = BindingDriver(client, [n.plan for n in self.nodes], self.clock, self.rng)
        #: Allocated ResourceClaims usable on this pool's nodes (the claim gate reads them;
        #: none: an empty store).
        self.claims = Informer(
            client,
            CLAIMS,
            keep=lambda c: usable_on(c, self.by_name),  # type: ignore[arg-type]
        )
        self.claims.add_handlers(
            Handlers(on_add=self._on_claim, on_update=lambda _o, c: self._on_claim(c))
        )
        #: pod uid -> why the pod waits for its claims (Pending until they are ready).
        self.waiting_for_claims: dict[str, str] = {}
        #: The ConfigMaps and Secrets pods name, and the pods (uid -> why) waiting for one.
        self.configs = ConfigObjects(client, self._on_config)
        self.waiting_for_config: dict[str, str] = {}
        #: The pods waiting for their claims' volumes (bound, attached; volumegate.py).
        self.volumes = VolumeGate(
            client,
            self.by_name,
            self.clock,
            resume=self._volumes_ready,
            recheck=lambda name: self._report_in_use(self.by_name[name]),
        )
        self._heap: list[tuple[float, int, str, int, str]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._deletes: asyncio.Queue[PodState] = asyncio.Queue()
        self._tasks: list[asyncio.Task[Any]] = []
        self.informers: list[Informer] = []
        #: Node-pressure eviction of every node (evictor.py).
        self.evictor = PoolEvictor(
            self.nodes,
            self.pods,
            self.usage,
            self.clock,
            post_node_status=self.leases.post_node_status,
            after=self._after,
        )
        #: pod key -> the last failure logged for it (each logged once).
        self._failures: dict[str, str] = {}

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register every node and its lease, then start watching pods."""
        await self.leases.register()
        await self.slices.publish()
        await publish_csi(self.client, [n.plan for n in self.nodes])
        if self.slices.informer is not None:
            self._tasks.append(asyncio.create_task(self.slices.informer.run()))
            self._tasks.append(asyncio.create_task(self.slices.run()))
        self._tasks.append(asyncio.create_task(self.claims.run()))
        self._tasks.extend(
            asyncio.create_task(i.run()) for i in (*self.configs.informers, *self.volumes.informers)
        )
        for b in (self.status_batcher, self.node_batcher, self.lease_batcher):
            self._tasks.append(asyncio.create_task(b.run()))
        # informers retry in wall time: reconnecting is infrastructure, not simulation
        if self.config.watch_per_node:
            self.informers = [
                Informer(
                    self.client, PODS, options=ListOptions(field_selector=f"spec.nodeName={n.name}")
                )
                for n in self.nodes
            ]
        else:
            # One watch of every bound pod; the other pools' pods are dropped as they
            # arrive (nodeName never changes once set), so the store holds ours only.
            self.informers = [
                Informer(
                    self.client,
                    PODS,
                    keep=self._ours,
                    options=ListOptions(field_selector="spec.nodeName!="),
                )
            ]
        handlers = Handlers(
            on_add=self.on_pod,
            on_update=lambda _o, p: self.on_pod(p),
            on_delete=self._on_pod_gone,
        )
        for inf in self.informers:
            inf.add_handlers(handlers)
            self._tasks.append(asyncio.create_task(inf.run()))
        self._tasks.append(asyncio.create_task(self._timer_loop()))
        self._tasks.append(asyncio.create_task(self.leases.run()))
        self._tasks.append(asyncio.create_task(self.evictor.run()))
        self._tasks.extend(
            asyncio.create_task(self._delete_worker()) for _ in range(self.config.workers)
        )
        waited = [*self.informers, self.claims, *self.configs.informers, *self.volumes.informers]
        await asyncio.gather(*(i.synced.wait() for i in waited))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.binding.close()
        await self.volumes.close()

    # ---------------------------------------------------------------------- leases

    def renew_slot(self, slot: int, slots: int) -> None:
        """Renew the leases of the live nodes in `slot` (of `slots`); see NodeLeases."""
        self.leases.renew_slot(slot, slots)

    # ------------------------------------------------------------------------ pods

    def _ours(self, pod: Message) -> bool:
        """Whether the pod is bound to one of this pool's nodes."""
        return pod.spec.node_name in self.by_name  # type: ignore[attr-defined]

    def on_pod(self, pod: core_pb2.Pod) -> None:
        """The pod watch's add and update handler (tests feed pods through it)."""
        try:
            self._pod_seen(pod)
        except Exception as e:  # noqa: BLE001 - one pod's bug must not stop the pool
            self._pod_failed(f"{pod.metadata.namespace}/{pod.metadata.name}", "update", e)

    def _pod_failed(self, key: str, what: str, e: Exception) -> None:
        """Log a pod's failure once per distinct error (its next events retry it)."""
        message = f"{what}: {e!r}"
        if self._failures.get(key) == message:
            return
        self._failures[key] = message
        log.error("pod %s: %s failed", key, what, exc_info=e)

    def _pod_seen(self, pod: core_pb2.Pod) -> None:
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
            if uid in self.waiting_for_claims:
                self._retry_claims(st)
        if pod.metadata.deletion_timestamp and not st.deleting:
            self._begin_deletion(st)
        if pod.spec.volumes:
            self._report_in_use(node)

    def _adopt(self, pod: core_pb2.Pod, node: HollowNode) -> PodState | None:
        """A pod newly seen on one of our nodes: take it over where its status says it is."""
        try:
            job = any(ref.kind == "Job" for ref in pod.metadata.owner_references)
            stages = node.plan.kind.stages.for_pod(pod.metadata.annotations, job=job)
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
            self._track_usage(st, st.started_at)
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
        return admit(st, self.pods)

    def _on_pod_gone(self, pod: core_pb2.Pod) -> None:
        self._failures.pop(f"{pod.metadata.namespace}/{pod.metadata.name}", None)
        self.waiting_for_claims.pop(pod.metadata.uid, None)
        self.waiting_for_config.pop(pod.metadata.uid, None)
        self.volumes.forget(pod.metadata.uid)
        st = self.pods.pop(pod.metadata.uid, None)
        if st is None:
            return
        st.gen += 1
        st.node.pods.discard(st.uid)
        self.usage.remove(st.uid)
        if pod.spec.volumes:
            self._report_in_use(st.node)

    def _begin_deletion(self, st: PodState) -> None:
        self.waiting_for_claims.pop(st.uid, None)
        self.waiting_for_config.pop(st.uid, None)
        self.volumes.forget(st.uid)
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
                    await asyncio.wait_for(self._wake.wait(), wait / self.clock.scale)
                continue
            self.run_due()
            await asyncio.sleep(0)

    def next_due(self) -> float | None:
        """When (the clock's monotonic time) the next queued step falls due."""
        return self._heap[0][0] if self._heap else None

    def run_due(self, limit: int = 2000) -> int:
        """Play the steps due by now (at most `limit`); returns how many were popped."""
        now_m = self.clock.monotonic()
        n = 0
        while self._heap and self._heap[0][0] <= now_m and n < limit:
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
        return n

    # ---------------------------------------------------------------- claim gate

    def _claim_unprepared(self, st: PodState) -> str | None:
        if (
            not st.pod.spec.resource_claims
            and not st.pod.status.extended_resource_claim_status.resource_claim_name
        ):
            return None
        store = self.claims.store
        node = core_pb2.Node()
        node.metadata.name = st.node.name
        node.metadata.labels.update(st.node.plan.labels)
        return unprepared(st.pod, lambda key: store.get(key), node)  # type: ignore[arg-type,return-value]

    def _on_claim(self, obj: Message) -> None:
        claim = narrow(obj, resource_pb2.ResourceClaim)
        self.binding.on_claim(claim)
        # Its consumers (pods, or the pods of a PodGroup it is reserved for) may go on.
        for uid in list(self.waiting_for_claims):
            st = self.pods.get(uid)
            if st is not None and is_reserved_for_pod(st.pod, claim):
                self._retry_claims(st)

    def _retry_claims(self, st: PodState) -> None:
        """A waiting pod whose claims may be ready now: it goes on to ContainerCreating."""
        if st.deleting or st.phase != "Pending":
            self.waiting_for_claims.pop(st.uid, None)
            return
        why = self._claim_unprepared(st)
        if why is not None:
            self.waiting_for_claims[st.uid] = why
            return
        del self.waiting_for_claims[st.uid]
        self._after(st, 0.0, "create")

    # ---------------------------------------------------------------- config gate

    def _config_blocked(self, st: PodState) -> bool:
        """Whether the pod waits for a ConfigMap or Secret (configgate.py); a container
        whose environment cannot be made shows CreateContainerConfigError meanwhile."""
        why = self.configs.blocked(st.pod)
        if why is None:
            self.waiting_for_config.pop(st.uid, None)
            return False
        if st.uid not in self.waiting_for_config:
            log.info("pod %s: %s", st.key, why.message)
        self.waiting_for_config[st.uid] = why.message
        if why.container is not None and st.runs is not None:
            for run in st.runs:
                if run.name == why.container:
                    run.state = {"waiting": {"reason": REASON_CONFIG_ERROR, "message": why.message}}
            self._write_status(st, podstatus.creating(st, self.clock.now()))
        return True

    def _on_config(self, namespace: str) -> None:
        """A ConfigMap or Secret of `namespace` came or changed: its waiting pods retry."""
        for uid in list(self.waiting_for_config):
            st = self.pods.get(uid)
            if st is None or st.deleting or st.phase != "Creating":
                self.waiting_for_config.pop(uid, None)
            elif st.pod.metadata.namespace == namespace and not self._config_blocked(st):
                default = (
                    REASON_POD_INITIALIZING if st.pod.spec.init_containers else REASON_CREATING
                )
                for run in st.runs or []:
                    if run.state.get("waiting", {}).get("reason") == REASON_CONFIG_ERROR:
                        run.state = {"waiting": {"reason": default}}
                if not self.volumes.hold(st.pod, st.node.name):
                    self._sandbox_ready(st)

    def _volumes_ready(self, uid: str) -> None:
        """A pod's volumes may be mounted now: its sandbox starts, unless its config waits."""
        st = self.pods.get(uid)
        if st is None or st.deleting or st.phase != "Creating":
            return
        if not self._config_blocked(st):
            self._sandbox_ready(st)

    def _step(self, st: PodState, step: str) -> None:
        if step == "create":
            why = self._claim_unprepared(st)
            if why is not None:
                # Stays Pending (upstream: FailedPrepareDynamicResources, retried).
                if st.uid not in self.waiting_for_claims:
                    log.info("pod %s: %s: %s", st.key, REASON_FAILED_PREPARE, why)
                self.waiting_for_claims[st.uid] = why
                return
            self._creating(st)
            self._after(st, st.stages.delay(st.stages.start_delay, self.rng), "start")
        elif step == "start":
            if not self._config_blocked(st) and not self.volumes.hold(st.pod, st.node.name):
                self._sandbox_ready(st)
        elif step.startswith("c:"):
            _, index, seq, action = step.split(":")
            assert st.runs is not None
            run = st.runs[int(index)]
            if run.seq == int(seq):
                self._container_step(st, int(index), action)
        elif step == "kill":
            self._deletes.put_nowait(st)
        elif step.startswith("evict:"):
            self._finish(st, "Failed", ev.REASON_EVICTED, step[len("evict:") :], evicted=True)

    # -------------------------------------------------------------- pod statuses

    def _write_status(self, st: PodState, pod: core_pb2.Pod) -> None:
        st.written = pod.status.SerializeToString()
        self.status_batcher.put(pod)

    def _creating(self, st: PodState) -> None:
        st.phase = "Creating"
        st.runs = runs_for(st.pod, st.stages)
        st.usage_run, st.memory_limit = usage_container(st.pod, len(st.pod.spec.init_containers))
        images = st.node.images
        for run in st.runs:  # pulling: the node now holds the image
            if run.image not in images:
                images[run.image] = st.node.plan.kind.image_size(run.image)
        self._write_status(st, podstatus.creating(st, self.clock.now()))

    def _sandbox_ready(self, st: PodState) -> None:
        """The sandbox is up with its IP: init containers start, then the app containers."""
        st.node.ip_seq += 1
        st.ip = pod_ip(st.node.ordinal, st.node.ip_seq)
        st.started_at = self.clock.now()
        self._sync(st)

    def _sync(self, st: PodState) -> None:
        """Start what may start now (computePodActions' order: init containers one by one,
        sidecars left running; then every app container), then write the status with
        upstream's phase; a pod whose app containers are done for good stops its sidecars
        and ends."""
        assert st.runs is not None
        now = self.clock.now()
        if not st.initialized:
            for i, run in enumerate(st.runs):
                if not run.init:
                    continue
                if run.sidecar:
                    if not run.starts:
                        self._start(st, i, now)
                    continue
                if run.succeeded():
                    continue
                if not run.starts:
                    self._start(st, i, now)
                break
            else:
                st.initialized = True
        if st.initialized:
            for i, run in enumerate(st.runs):
                if not run.init and not run.starts:
                    self._start(st, i, now)
        policy = st.pod.spec.restart_policy or "Always"
        app = [r for r in st.runs if not r.init]
        if app and all(
            r.terminated is not None and not should_restart(r, policy, r.terminated["exitCode"])
            for r in app
        ):
            for run in st.runs:  # sidecars stop last (SIGTERM, taken gracefully)
                if run.sidecar and not run.terminated:
                    self._terminate(st, run, now, 0, REASON_COMPLETED)
        pod = podstatus.from_runs(st, now)
        phase = pod.status.phase
        if phase in (SUCCEEDED, FAILED):
            running = [run for run in st.runs if run.running]
            for run in running:  # a failed init container ends the pod: stop the rest
                self._terminate(st, run, now, EXIT_CODE_KILLED, REASON_ERROR)
            if running:
                pod = podstatus.from_runs(st, now, phase)
            st.gen += 1
            self.usage.remove(st.uid)
        st.phase = phase
        self._write_status(st, pod)

    def _start(self, st: PodState, index: int, now: float) -> None:
        """A container (re)starts: running, its exit (or OOM kill) queued."""
        assert st.runs is not None
        run = st.runs[index]
        run.starts += 1
        run.started_at = now
        run.state = {"running": {"startedAt": rfc3339(now)}}
        run.seq += 1
        key = f"c:{index}:{run.seq}:"
        lifetime = run.stages.run_duration
        ends = lifetime > 0 or (run.init and not run.sidecar)
        if index == st.usage_run:
            self._track_usage(st)
            oom = self._oom_after(st)
            if oom is not None and (not ends or oom < lifetime):
                self._after(st, oom, key + "oom")
                return
        if ends:
            self._after(st, st.stages.delay(lifetime, self.rng) if lifetime else 0.0, key + "exit")

    def _oom_after(self, st: PodState) -> float | None:
        model = self.usage.model(st.uid)
        if model is None or st.memory_limit is None:
            return None
        return first_over(model, "memory", st.memory_limit)

    def _terminate(
        self, st: PodState, run: ContainerRun, now: float, code: int, reason: str
    ) -> None:
        index = st.runs.index(run) if st.runs else 0
        run.seq += 1
        run.state = {
            "terminated": {
                "exitCode": code,
                "reason": reason,
                "startedAt": rfc3339(run.started_at),
                "finishedAt": rfc3339(now),
                "containerID": podstatus.container_id(st.uid, index, run.starts),
            }
        }

    def _container_step(self, st: PodState, index: int, action: str) -> None:
        """A container exits (its run is over, or it passed its memory limit), or its
        back-off is over; restartPolicy and the back-off decide what comes next."""
        assert st.runs is not None
        run = st.runs[index]
        now = self.clock.now()
        if run.backoff is None:
            run.backoff = Backoff()
        if action == "restart":
            run.backoff.next(now)
            run.restarts += 1
            self._start(st, index, now)
            self._sync(st)
            return
        if action == "oom":
            code, reason = EXIT_CODE_KILLED, REASON_OOM_KILLED
        else:
            code = run.stages.draw_exit_code(self.rng)
            reason = terminated_reason(code)
        self._terminate(st, run, now, code, reason)
        if index == st.usage_run:
            self.usage.remove(st.uid)
        policy = st.pod.spec.restart_policy or "Always"
        app_done = all(r.terminated is not None for r in st.runs if not r.init)
        if should_restart(run, policy, code) and not (run.sidecar and app_done):
            run.last_state = run.state
            if run.backoff.in_backoff_since(now, now):
                run.state = {
                    "waiting": {
                        "reason": REASON_CRASH_LOOP,
                        "message": crash_loop_message(run.backoff.delay, run.name, st.pod),
                    }
                }
                run.seq += 1
                self._after(st, run.backoff.delay, f"c:{index}:{run.seq}:restart")
            else:
                run.backoff.next(now)
                run.restarts += 1
                self._start(st, index, now)
        self._sync(st)

    def _track_usage(self, st: PodState, started_at: float | None = None) -> None:
        try:
            model = resolve_usage(
                dict(st.pod.metadata.annotations),
                dict(st.pod.metadata.labels),
                st.node.plan.kind.usage_defaults,
            )
        except ValueError as e:
            log.warning("pod %s: %s; it uses nothing", st.key, e)
            return
        at = self.clock.now() if started_at is None else started_at
        self.usage.add(st.uid, st.node.index, model, at)

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
        now = self.clock.now()
        for run in st.runs or ():
            if not run.terminated and run.starts:
                self._terminate(st, run, now, exit_code, terminated_reason(exit_code))
        pod = podstatus.finished(
            st, self.clock.now(), phase, reason, message, exit_code=exit_code, evicted=evicted
        )
        self._write_status(st, pod)
        if st.pod.spec.volumes:
            self._report_in_use(st.node)

    def _report_in_use(self, node: HollowNode) -> None:
        """The node's status.volumesInUse (volumegate.py), posted when it changes (a
        killed node's is posted when it is revived)."""
        pods = (
            st.pod
            for uid in node.pods
            if (st := self.pods.get(uid)) is not None
            and st.phase not in ("Succeeded", "Failed")
            and st.pod.spec.volumes
        )
        in_use = self.volumes.objects.in_use(pods)
        if in_use == list(node.status.volumes_in_use):
            return
        del node.status.volumes_in_use[:]
        node.status.volumes_in_use.extend(in_use)
        if node.alive and node.registered:
            self.leases.post_node_status(node)

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
            except Exception as e:  # noqa: BLE001 - one pod's bug must not stop a worker
                self._pod_failed(st.key, "delete", e)
                self._after(st, 1.0, "kill")

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
                self.leases.renew(node, self.clock.now())
                self.leases.post_node_status(node)
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
            "eviction_ticks": self.evictor.ticks,
            "eviction_tick_seconds": self.evictor.tick_seconds,
            "queued_steps": len(self._heap),
            "waiting_for_claims": len(self.waiting_for_claims),
            "waiting_for_config": len(self.waiting_for_config),
            "waiting_for_volumes": len(self.volumes.waiting),
            "resource_slices": len(self.slices.wanted),
        }
