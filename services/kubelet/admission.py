"""A hollow kubelet's pod admission (upstream's eviction and predicate admit handlers):
whether a pod newly bound to a node may start there, from the node's pressure conditions
and the requests of the pods it already runs. Pure: it reads the pool's state, changes
nothing (pool.py fails a rejected pod)."""

from __future__ import annotations

from collections.abc import Mapping

from protos.kubera.v1 import core_pb2
from services.api.helpers.resources import pod_requests
from services.api.helpers.taints import tolerations_tolerate_taint
from services.api.machinery.quantity import parse_quantity
from services.kubelet import eviction as ev
from services.kubelet.state import PodState

MEMORY_PRESSURE_TAINT = core_pb2.Taint(
    key=ev.CONDITION_TAINTS[ev.MEMORY_PRESSURE], effect="NoSchedule"
)


def admit(st: PodState, pods: Mapping[str, PodState]) -> tuple[str, str] | None:
    """The kubelet's admission: pressure conditions, then resources (upstream's
    eviction admit handler and the predicate admit handler). `pods` are the pool's pods
    by UID (those of `st`'s node count); None admits, else (reason, message)."""
    node, pod = st.node, st.pod
    tolerates = tolerations_tolerate_taint(pod.spec.tolerations, MEMORY_PRESSURE_TAINT)
    ok, reason, message = ev.admit(pod.status.qos_class or "BestEffort", tolerates, node.conditions)
    if not ok:
        return reason, message
    want = pod_requests(pod)
    used_cpu = used_mem = count = 0
    for uid in node.pods:
        other = pods.get(uid)
        if other is None or other is st or other.phase in ("Succeeded", "Failed"):
            continue
        r = pod_requests(other.pod)
        used_cpu += r.milli_cpu
        used_mem += r.memory
        count += 1
    alloc = node.plan.kind.allocatable
    cap_pods = parse_quantity(alloc.get("pods", "110")).int_value()
    if count + 1 > cap_pods:
        return (
            "OutOfpods",
            f"Node didn't have enough resource: pods, requested: 1, used: {count}, capacity: {cap_pods}",
        )
    for name, wanted, used, cap in (
        ("cpu", want.milli_cpu, used_cpu, parse_quantity(alloc.get("cpu", "0")).milli_value()),
        ("memory", want.memory, used_mem, parse_quantity(alloc.get("memory", "0")).int_value()),
    ):
        if wanted and used + wanted > cap:
            return (
                f"OutOf{name}",
                f"Pod was rejected: Node didn't have enough resource: {name}, requested: {wanted}, used: {used}, capacity: {cap}",
            )
    return None
