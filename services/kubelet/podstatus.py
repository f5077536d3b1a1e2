"""The pod statuses a hollow kubelet writes at each stage — ContainerCreating, Running,
terminated (Succeeded, Failed, Evicted, rejected) — in upstream's shape: phase, conditions,
startTime, hostIP/hostIPs/podIP/podIPs and containerStatuses. Pure: the pool decides when."""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.helpers.conditions import update_pod_condition
from services.clock import rfc3339
from services.kubelet.containers import ContainerRun, get_phase
from services.kubelet.nodestatus import node_ip
from services.kubelet.state import PodState

#: Reasons of a terminated pod that the kubelet writes into status.reason/message.
#: Eviction's "Evicted" and admission's "Evicted"/"OutOf<resource>".
TERMINAL_REASON_PREFIXES = ("Evicted", "OutOf")


def status_base(st: PodState) -> core_pb2.Pod:
    """The next status write for the pod: what this kubelet wrote last (or the pod's
    status when nothing yet), plus conditions others added since (DisruptionTarget from
    taint eviction, PodScheduled) and the claims the resourceclaim controller recorded."""
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name = st.pod.metadata.name
    pod.metadata.namespace = st.pod.metadata.namespace
    pod.metadata.uid = st.uid
    if st.written is None:
        pod.status.CopyFrom(st.pod.status)
    else:
        pod.status.ParseFromString(st.written)
        ours = {c.type for c in pod.status.conditions}
        for c in st.pod.status.conditions:
            if c.type not in ours:
                pod.status.conditions.add().CopyFrom(c)
        # resourceClaimStatuses are the resourceclaim controller's: never written back older
        if st.pod.status.resource_claim_statuses:
            del pod.status.resource_claim_statuses[:]
            pod.status.resource_claim_statuses.extend(st.pod.status.resource_claim_statuses)
    pod.status.host_ip = node_ip(st.node.ordinal)
    del pod.status.host_ips[:]
    pod.status.host_ips.add(ip=pod.status.host_ip)
    return pod


def _container_statuses(
    st: PodState, state: dict[str, Any], *, ready: bool
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


def _run_status(st: PodState, i: int, run: ContainerRun) -> core_pb2.ContainerStatus:
    cs = core_pb2.ContainerStatus(
        name=run.name,
        image=run.image,
        image_id=f"hollow://{run.image}",
        container_id=container_id(st.uid, i, run.starts) if run.starts else "",
        ready=run.running,
        started=run.running,
        restart_count=run.restarts,
    )
    cs.state.update(run.state)
    if run.last_state:
        cs.last_state.update(run.last_state)
    return cs


def container_id(uid: str, index: int, start: int) -> str:
    """The ID of a container's `start`-th run (each restart is a new container)."""
    return f"kubera://{uid[:12]}-{index}-{start}"


def from_runs(st: PodState, now: float, phase: str | None = None) -> core_pb2.Pod:
    """The status of a pod whose containers run (or ran): the init and app container
    statuses, the phase upstream's getPhase gives them (unless `phase` is forced) and the
    conditions, as upstream's generateAPIPodStatus writes them."""
    assert st.runs is not None
    pod = status_base(st)
    s = pod.status
    init = [(i, r) for i, r in enumerate(st.runs) if r.init]
    app = [(i, r) for i, r in enumerate(st.runs) if not r.init]
    del s.init_container_statuses[:]
    if init:
        s.init_container_statuses.extend([_run_status(st, i, r) for i, r in init])
    del s.container_statuses[:]
    s.container_statuses.extend([_run_status(st, i, r) for i, r in app])
    if phase is None:
        if not init and all(r.running for _, r in app):
            phase = "Running"  # getPhase's answer, without reading the statuses back
        else:
            phase = get_phase(
                st.pod.spec,
                [*s.init_container_statuses, *s.container_statuses],
                pod_has_initialized=any(r.starts for _, r in app),
            )
    s.phase = phase
    if st.ip:
        s.pod_ip = st.ip
        del s.pod_ips[:]
        s.pod_ips.add(ip=st.ip)
    update_pod_condition(s, "PodReadyToStartContainers", "True", now)
    incomplete = [r.name for _, r in init if not (r.running if r.sidecar else r.succeeded())]
    if st.initialized or not incomplete:
        update_pod_condition(s, "Initialized", "True", now)
    else:
        update_pod_condition(
            s,
            "Initialized",
            "False",
            now,
            reason="ContainersNotInitialized",
            message=f"containers with incomplete status: [{' '.join(incomplete)}]",
        )
    if phase in ("Succeeded", "Failed"):
        for cond in ("Ready", "ContainersReady"):
            update_pod_condition(
                s, cond, "False", now, reason="PodFailed" if phase == "Failed" else "PodCompleted"
            )
    else:
        unready = [r.name for _, r in app if not r.running]
        unready += [r.name for _, r in init if r.sidecar and not r.running]
        if unready:
            message = f"containers with unready status: [{' '.join(unready)}]"
            for cond in ("Ready", "ContainersReady"):
                update_pod_condition(
                    s, cond, "False", now, reason="ContainersNotReady", message=message
                )
        else:
            for cond in ("ContainersReady", "Ready"):
                update_pod_condition(s, cond, "True", now)
    return pod


def creating(st: PodState, now: float) -> core_pb2.Pod:
    pod = status_base(st)
    s = pod.status
    s.phase = "Pending"
    s.start_time = s.start_time or rfc3339(now)
    if not any(c.type == "PodScheduled" for c in s.conditions):
        # bound by nodeName, never through a scheduler: the kubelet reports it (upstream)
        update_pod_condition(s, "PodScheduled", "True", now)
    update_pod_condition(s, "PodReadyToStartContainers", "False", now)
    runs = st.runs or []
    init = [(i, r) for i, r in enumerate(runs) if r.init]
    if init:
        names = " ".join(r.name for _, r in init)
        update_pod_condition(
            s,
            "Initialized",
            "False",
            now,
            reason="ContainersNotInitialized",
            message=f"containers with incomplete status: [{names}]",
        )
    else:
        update_pod_condition(s, "Initialized", "True", now)
    app = [r.name for r in runs if not r.init] or [c.name for c in st.pod.spec.containers]
    message = f"containers with unready status: [{' '.join(app)}]"
    update_pod_condition(s, "Ready", "False", now, reason="ContainersNotReady", message=message)
    update_pod_condition(
        s, "ContainersReady", "False", now, reason="ContainersNotReady", message=message
    )
    del s.init_container_statuses[:]
    if init:
        s.init_container_statuses.extend([_run_status(st, i, r) for i, r in init])
    del s.container_statuses[:]
    if runs:
        s.container_statuses.extend(
            [_run_status(st, i, r) for i, r in enumerate(runs) if not r.init]
        )
    else:
        s.container_statuses.extend(
            _container_statuses(st, {"waiting": {"reason": "ContainerCreating"}}, ready=False)
        )
    return pod


def running(st: PodState, now: float, ip: str) -> core_pb2.Pod:
    pod = status_base(st)
    s = pod.status
    s.phase = "Running"
    s.pod_ip = ip
    del s.pod_ips[:]
    s.pod_ips.add(ip=ip)
    for cond in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
        update_pod_condition(s, cond, "True", now)
    del s.container_statuses[:]
    s.container_statuses.extend(
        _container_statuses(st, {"running": {"startedAt": rfc3339(now)}}, ready=True)
    )
    return pod


def finished(
    st: PodState,
    now: float,
    phase: str,
    reason: str,
    message: str,
    *,
    exit_code: int,
    evicted: bool,
) -> core_pb2.Pod:
    """A terminal status: Succeeded or Failed, with the kubelet's reason when it ended the
    pod itself (eviction, admission), DisruptionTarget when evicted."""
    pod = status_base(st)
    s = pod.status
    s.phase = phase
    if reason.startswith(TERMINAL_REASON_PREFIXES):
        s.reason, s.message = reason, message
    for cond in ("Ready", "ContainersReady"):
        update_pod_condition(
            s, cond, "False", now, reason="PodFailed" if phase == "Failed" else "PodCompleted"
        )
    if evicted:
        update_pod_condition(s, "DisruptionTarget", "True", now, reason="TerminationByKubelet")
    del s.container_statuses[:]
    if st.runs is not None and s.start_time:
        del s.init_container_statuses[:]
        for i, r in enumerate(st.runs):
            (s.init_container_statuses if r.init else s.container_statuses).append(
                _run_status(st, i, r)
            )
    elif s.start_time:  # containers ran (not rejected at admission)
        term = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Error" if exit_code else "Completed",
                "finishedAt": rfc3339(now),
            }
        }
        s.container_statuses.extend(_container_statuses(st, term, ready=False))
    return pod
