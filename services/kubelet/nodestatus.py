"""What a hollow kubelet writes about its node: the Node it registers, the conditions it
reports (upstream's reasons and messages) and its Lease in kube-node-lease."""

from __future__ import annotations

import uuid

from protos.kubera.v1 import coordination_pb2, core_pb2
from services.api import features
from services.api.machinery import codec
from services.api.machinery.kubeobject import narrow
from services.api.nodedeclaredfeatures import NodeConfiguration, discover
from services.clock import rfc3339, rfc3339_micro
from services.kubelet.state import PRESSURE_CONDITIONS, HollowNode
from services.kubelet.template import NodeKind

LEASE_NAMESPACE = "kube-node-lease"
KUBELET_VERSION = "v1.31.0-kubera"
#: condition → (reason, message) when False, and when True (upstream's kubelet words)
CONDITION_WORDS = {
    "MemoryPressure": (
        ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
    ),
    "DiskPressure": (
        ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("KubeletHasDiskPressure", "kubelet has disk pressure"),
    ),
    "PIDPressure": (
        ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
    ),
}
READY_WORDS = ("KubeletReady", "kubelet is posting ready status")


def node_ip(ordinal: int) -> str:
    """10.0.0.0/9 by node: up to 8 M nodes."""
    return f"10.{(ordinal >> 16) & 0x7F}.{(ordinal >> 8) & 0xFF}.{ordinal & 0xFF}"


def pod_ip(ordinal: int, seq: int) -> str:
    """A /24-sized slice of 10.128.0.0/9 per node (upstream podCIDR-like), reused mod 254."""
    return f"10.{128 + ((ordinal >> 8) & 0x7F)}.{ordinal & 0xFF}.{seq % 254 + 1}"


def set_conditions(node: HollowNode, now: float) -> None:
    """Write the kubelet's conditions into `node.status` (Ready last, as upstream); a
    condition's lastTransitionTime moves only when its status does."""
    stamp = rfc3339(now)
    old = {c.type: c for c in node.status.conditions}
    del node.status.conditions[:]
    wanted = [
        (cond, node.conditions[cond], *CONDITION_WORDS[cond][node.conditions[cond]])
        for cond in PRESSURE_CONDITIONS
    ]
    for type_, on, reason, message in [*wanted, ("Ready", True, *READY_WORDS)]:
        status = "True" if on else "False"
        prev = old.get(type_)
        node.status.conditions.add(
            type=type_,
            status=status,
            reason=reason,
            message=message,
            last_heartbeat_time=stamp,
            last_transition_time=(
                prev.last_transition_time if prev is not None and prev.status == status else stamp
            ),
        )


def declared_features(kind: NodeKind, gates: features.FeatureGates | None = None) -> list[str]:
    """The node's status.declaredFeatures: none with the NodeDeclaredFeatures gate off
    (the kubelet then writes none), else its kind's list or those discovered from its
    cpuManagerPolicy, as the kubelet discovers them from its configuration."""
    if not features.enabled(gates, features.NODE_DECLARED_FEATURES):
        return []
    if kind.declared_features is not None:
        return list(kind.declared_features)
    return discover(NodeConfiguration(cpu_manager_policy=kind.cpu_manager_policy))


def node_object(node: HollowNode, pool_name: str, now: float) -> core_pb2.Node:
    """The Node a kubelet registers (its status kept in `node.status` from then on)."""
    plan, kind = node.plan, node.plan.kind
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": plan.name,
            "labels": plan.labels,
            "annotations": {"kubera.io/node-pool": pool_name, "kubera.io/node-kind": kind.name},
        },
        "spec": {"taints": kind.taints},
        "status": {
            "capacity": kind.capacity,
            "allocatable": kind.allocatable,
            "addresses": [
                {"type": "InternalIP", "address": node_ip(node.ordinal)},
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
                # What a kubelet reads off its machine; clients (the official Python
                # client among them) require both, as upstream never leaves them out.
                "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, plan.name)),
                "bootID": str(uuid.uuid4()),
            },
            "phase": "Running",
            "declaredFeatures": declared_features(kind),
        },
    }
    obj = narrow(codec.decode(doc, validate="strict").obj, core_pb2.Node)
    node.status.CopyFrom(obj.status)
    set_conditions(node, now)
    obj.status.CopyFrom(node.status)
    return obj


def node_status_object(node: HollowNode, now: float) -> core_pb2.Node:
    """A status write for the node: its conditions refreshed at `now`."""
    set_conditions(node, now)
    obj = core_pb2.Node(api_version="v1", kind="Node")
    obj.metadata.name = node.name
    obj.status.CopyFrom(node.status)
    return obj


def lease_object(node: HollowNode, duration_seconds: int, now: float) -> coordination_pb2.Lease:
    lease = coordination_pb2.Lease(api_version="coordination.k8s.io/v1", kind="Lease")
    lease.metadata.name = node.name
    lease.metadata.namespace = LEASE_NAMESPACE
    lease.spec.holder_identity = node.name
    lease.spec.lease_duration_seconds = duration_seconds
    lease.spec.renew_time = rfc3339_micro(now)
    return lease
