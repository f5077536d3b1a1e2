"""The containers of a pod on a hollow kubelet: what each one is doing, whether it restarts,
its CrashLoopBackOff, and the pod phase that follows — upstream kubelet's rules, pure (the
pool decides when, with its delay queue; these functions take `now`).

A container's life (state / lastState as upstream writes them):

    waiting ContainerCreating|PodInitializing ─start─► running ─exit(code)─► terminated
        terminated ─restart allowed, not in back-off─► running (restartCount + 1,
                                                       lastState = the terminated state)
        terminated ─restart allowed, in back-off─► waiting CrashLoopBackOff ─back-off─► running

Restarts: app containers by the pod's restartPolicy (Always; OnFailure on a non-zero code;
Never); regular init containers on a non-zero code unless the policy is Never (then the
pod fails); sidecars (init containers with restartPolicy Always) always, until the app
containers are done. The back-off is kubelet's flowcontrol.Backoff keyed per container:
10 s initial (backOffPeriod), doubled on each back-off restart up to 300 s
(MaxContainerBackOff), forgotten when the last update is more than 2 × 300 s old — so a
container that ran 10 minutes restarts at once. The first restart after a long run is
immediate (no entry yet), the next waits 10 s, then 20 s, 40 s, … 5 min.

`get_phase` is upstream's getPhase (pkg/kubelet/kubelet_pods.go) with the
ContainerRestartRules gate off (its default), on the statuses as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.helpers.stages import ContainerStages

#: kubelet's backOffPeriod and MaxContainerBackOff (pkg/kubelet/kubelet.go), seconds.
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0

REASON_CRASH_LOOP = "CrashLoopBackOff"
REASON_OOM_KILLED = "OOMKilled"
REASON_ERROR = "Error"
REASON_COMPLETED = "Completed"
REASON_CREATING = "ContainerCreating"
REASON_POD_INITIALIZING = "PodInitializing"
#: A container killed by a signal (SIGKILL: OOM, eviction, a stop past the grace period).
EXIT_CODE_KILLED = 137

PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"


def is_sidecar(c: core_pb2.Container) -> bool:
    """An init container with restartPolicy Always (podutil.IsRestartableInitContainer)."""
    return c.restart_policy == "Always"


def terminated_reason(exit_code: int) -> str:
    return REASON_COMPLETED if exit_code == 0 else REASON_ERROR


@dataclass(slots=True)
class Backoff:
    """flowcontrol.Backoff for one container (client-go util/flowcontrol/backoff.go)."""

    delay: float = 0.0  # 0: no entry
    updated: float = 0.0

    def _expired(self, now: float) -> bool:
        return now - self.updated > 2 * BACKOFF_MAX

    def in_backoff_since(self, event: float, now: float) -> bool:
        """IsInBackOffSince: the entry lives and `event` is younger than its delay."""
        if not self.delay or self._expired(now):
            return False
        return now - event < self.delay

    def next(self, now: float) -> None:
        """Next: a fresh entry at the initial delay, or the delay doubled up to the max."""
        if not self.delay or self._expired(now):
            self.delay = BACKOFF_INITIAL
        else:
            self.delay = min(self.delay * 2, BACKOFF_MAX)
        self.updated = now


@dataclass(slots=True)
class ContainerRun:
    """One container of a pod on its kubelet."""

    name: str
    image: str
    #: In spec.initContainers (a sidecar too).
    init: bool
    sidecar: bool
    stages: ContainerStages
    #: The state and lastState as written: {"waiting": {...}} | {"running": ...} | ...
    state: dict[str, Any] = field(default_factory=dict)
    last_state: dict[str, Any] = field(default_factory=dict)
    restarts: int = 0
    #: How many times it ever started (its container IDs count them).
    starts: int = 0
    started_at: float = 0.0
    #: Its CrashLoopBackOff entry, made at its first exit.
    backoff: Backoff | None = None
    #: Bumped to forget this container's queued steps.
    seq: int = 0

    @property
    def running(self) -> bool:
        return "running" in self.state

    @property
    def terminated(self) -> dict[str, Any] | None:
        return self.state.get("terminated")

    def succeeded(self) -> bool:
        t = self.terminated
        return t is not None and t.get("exitCode", 0) == 0


def runs_for(pod: core_pb2.Pod, stages: Any) -> list[ContainerRun]:
    """The containers of `pod`, init containers first (their order is the start order)."""
    init = [
        ContainerRun(c.name, c.image, True, is_sidecar(c), stages.for_container(c.name))
        for c in pod.spec.init_containers
    ]
    # convertToAPIContainerStatuses' default: PodInitializing for every container of a
    # pod with init containers (init containers included), else ContainerCreating
    default = REASON_POD_INITIALIZING if pod.spec.init_containers else REASON_CREATING
    for r in init:
        r.state = {"waiting": {"reason": default}}
    app = [
        ContainerRun(
            c.name,
            c.image,
            False,
            False,
            stages.for_container(c.name),
            state={"waiting": {"reason": default}},
        )
        for c in pod.spec.containers
    ]
    return init + app


def should_restart(run: ContainerRun, restart_policy: str, exit_code: int) -> bool:
    """Whether a container that exited with `exit_code` is started again
    (kuberuntime's ShouldContainerBeRestarted, init containers as in computeInitContainerActions)."""
    if run.sidecar:
        return True
    policy = restart_policy or "Always"
    if run.init:
        return exit_code != 0 and policy != "Never"
    if policy == "Always":
        return True
    return policy == "OnFailure" and exit_code != 0


def crash_loop_message(delay: float, container: str, pod: core_pb2.Pod) -> str:
    """The waiting message of a container in back-off, as kuberuntime's doBackOff writes it."""
    return (
        f"back-off {go_duration(delay)} restarting failed container={container} "
        f"pod={pod.metadata.name}_{pod.metadata.namespace}({pod.metadata.uid})"
    )


def go_duration(seconds: float) -> str:
    """time.Duration.String() for whole seconds: 10s, 1m20s, 5m0s."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s}s"
    h, m = divmod(m, 60)
    return f"{h}h{m}m{s}s"


# ------------------------------------------------------------------------- phase


def get_phase(
    spec: core_pb2.PodSpec,
    statuses: Iterable[core_pb2.ContainerStatus],
    *,
    pod_is_terminal: bool = False,
    pod_has_initialized: bool = False,
) -> str:
    """Upstream's getPhase: the pod phase from its containers' statuses (init and app,
    looked up by name), the ContainerRestartRules gate off."""
    by_name: Mapping[str, core_pb2.ContainerStatus] = {s.name: s for s in statuses}

    def has(st: Any, key: str) -> bool:
        return key in st.fields if st is not None else False

    pending_restartable_init = pending_regular_init = failed_init = 0
    for c in spec.init_containers:
        if is_sidecar(c):
            continue
        cs = by_name.get(c.name)
        if cs is None or has(cs.state, "running"):
            pending_regular_init += 1
        elif has(cs.state, "terminated"):
            if _exit_code(cs.state, "terminated") != 0:
                failed_init += 1
        elif has(cs.state, "waiting"):
            if has(cs.last_state, "terminated"):
                if _exit_code(cs.last_state, "terminated") != 0:
                    failed_init += 1
            else:
                pending_regular_init += 1
        else:
            pending_regular_init += 1

    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.init_containers:
        if not is_sidecar(c):
            continue
        cs = by_name.get(c.name)
        if cs is None:
            unknown += 1
        elif has(cs.state, "running"):
            if not cs.started:
                pending_restartable_init += 1
            running += 1
        elif has(cs.state, "terminated"):
            pass
        elif has(cs.state, "waiting"):
            if not has(cs.last_state, "terminated"):
                pending_restartable_init += 1
                waiting += 1
        else:
            pending_restartable_init += 1
            unknown += 1

    for c in spec.containers:
        cs = by_name.get(c.name)
        if cs is None:
            unknown += 1
        elif has(cs.state, "running"):
            running += 1
        elif has(cs.state, "terminated"):
            stopped += 1
            if _exit_code(cs.state, "terminated") == 0:
                succeeded += 1
        elif has(cs.state, "waiting"):
            if has(cs.last_state, "terminated"):
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1

    policy = spec.restart_policy or "Always"
    if failed_init > 0 and policy == "Never":
        return FAILED
    if pending_regular_init > 0 or (pending_restartable_init > 0 and not pod_has_initialized):
        return PENDING
    if waiting > 0:
        return PENDING
    if running > 0 and unknown == 0:
        return RUNNING
    if running == 0 and stopped > 0 and unknown == 0:
        if pod_is_terminal:
            return SUCCEEDED if stopped == succeeded else FAILED
        if policy == "Always":
            return RUNNING
        if stopped == succeeded:
            return SUCCEEDED
        if policy == "Never":
            return FAILED
        return RUNNING
    return PENDING


def _exit_code(state: Any, key: str) -> int:
    inner = state.fields[key].struct_value
    return int(inner.fields["exitCode"].number_value) if "exitCode" in inner.fields else 0
