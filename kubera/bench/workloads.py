"""scheduler_perf's workloads as `kubera bench scheduling-basic` runs them: for each, the
node and pod templates, the shapes upstream measures at 5,000 nodes and its thresholds.

Everything here is taken from kubernetes/kubernetes test/integration/scheduler_perf
(Apache-2.0); each workload names its file and commit. tests/experiment/data/scheduler_perf/
holds copies of the misc and affinity configs and most templates.

- basic: SchedulingBasic (misc/performance-config.yaml @008b365): node-default.yaml nodes,
  pod-default.yaml pods (100m / 500Mi requests and limits). 5000Nodes_10000Pods: 5,000 /
  1,000 / 10,000, threshold 680; 5000Nodes_50000Pods: 5,000 / 5,000 / 50,000, threshold 810.
- topology-spread: TopologySpreading (topology_spreading/performance-config.yaml @0537710):
  nodes labelled topology.kubernetes.io/zone from moon-1, moon-2, moon-3 (upstream's
  labelNodePrepareStrategy; here node i gets moon-(i mod 3 + 1), equal shares), initial
  pod-default.yaml pods, measured pod-with-topology-spreading.yaml pods (maxSkew 5 over zones,
  DoNotSchedule, color=blue). 5000Nodes_5000Pods: 5,000 / 5,000 / 5,000, threshold 460.
- anti-affinity: SchedulingPodAntiAffinity (affinity/performance-config.yaml @1bd6a8f):
  pod-with-pod-anti-affinity.yaml pods (required anti-affinity to color=green on
  kubernetes.io/hostname, namespaces sched-1 and sched-0), the initial ones in sched-0, the
  measured in sched-1. 5000Nodes_2000Pods: 5,000 / 1,000 / 2,000, threshold 60.
- node-affinity: SchedulingNodeAffinity (same file): every node labelled zone1, pods from
  pod-with-node-affinity.yaml (required zone In [zone1, zone2]). 5000Nodes_10000Pods:
  5,000 / 5,000 / 10,000, threshold 220.
- unschedulable: Unschedulable (misc @008b365): pod-default.yaml pods, and during the measured
  phase a churn that creates a pod-high-priority-large-cpu.yaml pod (9 CPUs, priority 10: fits
  no 4-CPU node) every 200 ms. 5kNodes/100Init/10kPods: 5,000 / 100 / 10,000, threshold 590.
- mixed-churn: SchedulingWithMixedChurn (misc @008b365): no initial pods; during the measured
  phase a churn in recreate mode with number 1, every 1,000 ms: create (next tick: delete) a
  churn/node-default.yaml node (pods capacity 0) and a pod-high-priority-large-cpu.yaml pod.
  Upstream also recreates a churn/service-default.yaml Service: kubera has no Service kind,
  so that object is left out. 5000Nodes_10000Pods: 5,000 / 0 / 10,000, threshold 710.
- preemption: PreemptionBasic (misc @008b365, pod-low-priority.yaml and default_preemption's
  pod-high-priority.yaml): 4 low-priority 900m pods per node, then high-priority 3970m pods
  that must preempt. Upstream's 5000Nodes case sets no threshold.

Deliberate differences: every node carries kubernetes.io/hostname (as a kubelet sets it;
upstream's API-created nodes have only the labels of their prepare strategy), and allocatable
equal to capacity (upstream's apiserver has no kubelet either; kubera's scheduler reads
allocatable). Pod priority comes from a PriorityClass (kubera's Priority admission refuses a
spec.priority of its own, as upstream's does; scheduler_perf's test apiserver runs without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
#: PriorityClasses the workloads use: preemption's preemptors, the large-CPU churn pods.
HIGH_PRIORITY_CLASS = "bench-high-priority"
PRIORITY_10_CLASS = "bench-priority-10"
PRIORITY_CLASSES = {HIGH_PRIORITY_CLASS: 10000, PRIORITY_10_CLASS: 10}


@dataclass(frozen=True)
class UpstreamCase:
    """One scheduler_perf workload with a threshold (pods/s) at 5,000 nodes."""

    name: str
    nodes: int
    init_pods: int
    pods: int
    threshold: int | None


@dataclass(frozen=True)
class Churn:
    """scheduler_perf's churn op: `mode` create (one more object each tick) or recreate
    (create, next tick delete, …); `kinds` what each tick makes."""

    mode: str
    interval_s: float
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Workload:
    name: str
    upstream: str
    #: The first case gives the default shape.
    cases: tuple[UpstreamCase, ...]
    #: Node i's zone label: None, or the values assigned round-robin.
    zones: tuple[str, ...] = ()
    init_template: str = "default"
    measured_template: str = "default"
    init_namespace: str = "default"
    measured_namespace: str = "default"
    churn: Churn | None = None
    #: Start the cluster without a controller-manager (scheduler_perf runs none).
    no_controllers: bool = False

    @property
    def default(self) -> UpstreamCase:
        return self.cases[0]

    def case_for(self, nodes: int, init_pods: int, pods: int) -> UpstreamCase | None:
        """The upstream case of exactly this shape (its threshold applies), else None."""
        for c in self.cases:
            if (c.nodes, c.init_pods, c.pods) == (nodes, init_pods, pods):
                return c
        return None

    def namespaces(self) -> list[str]:
        return sorted({self.init_namespace, self.measured_namespace} - {"default"})


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "basic",
            "SchedulingBasic",
            (
                UpstreamCase("5000Nodes_10000Pods", 5000, 1000, 10000, 680),
                UpstreamCase("5000Nodes_50000Pods", 5000, 5000, 50000, 810),
            ),
        ),
        Workload(
            "topology-spread",
            "TopologySpreading",
            (UpstreamCase("5000Nodes_5000Pods", 5000, 5000, 5000, 460),),
            zones=("moon-1", "moon-2", "moon-3"),
            measured_template="topology-spread",
        ),
        Workload(
            "anti-affinity",
            "SchedulingPodAntiAffinity",
            (UpstreamCase("5000Nodes_2000Pods", 5000, 1000, 2000, 60),),
            init_template="anti-affinity",
            measured_template="anti-affinity",
            init_namespace="sched-0",
            measured_namespace="sched-1",
        ),
        Workload(
            "node-affinity",
            "SchedulingNodeAffinity",
            (UpstreamCase("5000Nodes_10000Pods", 5000, 5000, 10000, 220),),
            zones=("zone1",),
            init_template="node-affinity",
            measured_template="node-affinity",
        ),
        Workload(
            "unschedulable",
            "Unschedulable",
            (UpstreamCase("5kNodes/100Init/10kPods", 5000, 100, 10000, 590),),
            churn=Churn("create", 0.2, ("large-cpu-pod",)),
        ),
        Workload(
            "mixed-churn",
            "SchedulingWithMixedChurn",
            (UpstreamCase("5000Nodes_10000Pods", 5000, 0, 10000, 710),),
            churn=Churn("recreate", 1.0, ("churn-node", "large-cpu-pod")),
        ),
        Workload(
            "preemption",
            "PreemptionBasic",
            (UpstreamCase("5000Nodes", 5000, 20000, 5000, None),),
            init_template="low-priority",
            measured_template="high-priority",
            # The bench's nodes have no kubelet, and preemption runs longer than the node
            # monitor grace period: the node lifecycle controller would taint them.
            no_controllers=True,
        ),
    )
}


def default_shape(w: Workload, nodes: int) -> tuple[int, int]:
    """(initial pods, measured pods) when not given: the default case's, scaled to `nodes`
    for preemption (4 low-priority pods and 1 preemptor per node fill it exactly)."""
    if w.name == "preemption":
        return 4 * nodes, nodes
    return w.default.init_pods, w.default.pods


def node(i: int, w: Workload) -> Any:
    """scheduler_perf's node-default.yaml: 4 CPUs, 32Gi, 110 pods, Ready."""
    from protos.kubera.v1 import core_pb2

    name = f"node-{i}"
    labels = {HOSTNAME: name}
    if w.zones:
        labels[ZONE] = w.zones[i % len(w.zones)]
    res = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return json_format.ParseDict(
        {
            "metadata": {"name": name, "labels": labels},
            "status": {
                "capacity": res,
                "allocatable": res,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        core_pb2.Node(),
    )


def churn_node(name: str) -> Any:
    """churn/node-default.yaml: a Ready node that admits no pod (pods capacity 0)."""
    from protos.kubera.v1 import core_pb2

    res = {"pods": "0"}
    return json_format.ParseDict(
        {
            "metadata": {"name": name, "labels": {HOSTNAME: name}},
            "status": {
                "capacity": res,
                "allocatable": res,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        core_pb2.Node(),
    )


def _resources(cpu: str, *, limits: bool = True) -> dict[str, Any]:
    r = {"cpu": cpu, "memory": "500Mi"}
    return {"requests": r, "limits": dict(r)} if limits else {"requests": r}


def pod(name: str, template: str, group: str, namespace: str = "default") -> Any:
    """A pod of one of scheduler_perf's templates (see the module docstring), labelled
    group=<group> so the bench can watch its binds."""
    from protos.kubera.v1 import core_pb2

    labels = {"group": group}
    container: dict[str, Any] = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10.1",
        "ports": [{"containerPort": 80}],
        "resources": _resources("100m"),
    }
    spec: dict[str, Any] = {"containers": [container]}
    if template == "default":
        pass
    elif template == "topology-spread":
        labels["color"] = "blue"
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    elif template == "anti-affinity":
        labels["color"] = "green"
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": HOSTNAME,
                        "namespaces": ["sched-1", "sched-0"],
                    }
                ]
            }
        }
    elif template == "node-affinity":
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
                            ]
                        }
                    ]
                }
            }
        }
    elif template == "low-priority":
        spec["terminationGracePeriodSeconds"] = 0
        container["resources"] = _resources("900m")
    elif template == "high-priority":
        container["resources"] = _resources("3970m")
        spec["priorityClassName"] = HIGH_PRIORITY_CLASS
    elif template == "large-cpu":
        container["resources"] = _resources("9", limits=False)
        spec["priorityClassName"] = PRIORITY_10_CLASS
    else:
        raise ValueError(f"unknown pod template {template!r}")
    return json_format.ParseDict(
        {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec},
        core_pb2.Pod(),
    )
