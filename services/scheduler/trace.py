"""Decision traces: every scheduling attempt, recorded outside the pod object.

A trace says which plugins rejected how many nodes for which reason (with a bounded sample
of node names per reason, so it stays small at thousands of nodes), the top-scoring nodes
with each plugin's score, and the outcome. `kubera explain pod` prints them. The
FailedScheduling message is built here too, worded as kube-scheduler words it.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.scheduler.framework.status import Status

NODE_SAMPLE = 20
ATTEMPTS_PER_POD = 10
MAX_PODS = 50_000


@dataclass
class Rejection:
    plugin: str
    reason: str
    count: int = 0
    #: Up to NODE_SAMPLE of the node names, in the order they were rejected.
    nodes: list[str] = field(default_factory=list)


@dataclass
class ScoredNode:
    node: str
    total: int
    by_plugin: dict[str, int]


@dataclass
class Attempt:
    pod: str
    uid: str
    profile: str
    cycle: int
    time: float
    #: scheduled | unschedulable | error
    result: str = ""
    node: str = ""
    message: str = ""
    nodes_total: int = 0
    nodes_evaluated: int = 0
    nodes_feasible: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    top_scores: list[ScoredNode] = field(default_factory=list)
    duration_s: float = 0.0
    #: The preemption attempt's decision (preemption.Decision), when PostFilter preempted.
    preemption: Any = None

    def record_rejections(self, statuses: Mapping[str, Status]) -> None:
        by_key: dict[tuple[str, str], Rejection] = {}
        for node, st in statuses.items():
            for reason in st.reasons or (str(st),):
                r = by_key.get((st.plugin, reason))
                if r is None:
                    r = by_key[(st.plugin, reason)] = Rejection(st.plugin, reason)
                r.count += 1
                if len(r.nodes) < NODE_SAMPLE:
                    r.nodes.append(node)
        self.rejections = sorted(by_key.values(), key=lambda r: (-r.count, r.plugin, r.reason))


class TraceStore:
    """The latest ATTEMPTS_PER_POD attempts of up to MAX_PODS pods (least recently tried go first)."""

    def __init__(self, *, per_pod: int = ATTEMPTS_PER_POD, max_pods: int = MAX_PODS) -> None:
        self._per_pod = per_pod
        self._max_pods = max_pods
        self._by_pod: OrderedDict[str, deque[Attempt]] = OrderedDict()

    def add(self, attempt: Attempt) -> None:
        q = self._by_pod.pop(attempt.pod, None)
        if q is None:
            q = deque(maxlen=self._per_pod)
        q.append(attempt)
        self._by_pod[attempt.pod] = q
        while len(self._by_pod) > self._max_pods:
            self._by_pod.popitem(last=False)

    def get(self, pod_key: str) -> list[Attempt]:
        return list(self._by_pod.get(pod_key, ()))

    def __len__(self) -> int:
        return len(self._by_pod)


def unschedulable_message(
    num_all_nodes: int,
    statuses: Mapping[str, Status],
    *,
    pre_filter_msg: str = "",
    post_filter_msg: str = "",
) -> str:
    """kube-scheduler's FitError text: "0/6 nodes are available: 1 node(s) had untolerated
    taint(s), 4 node(s) didn't match pod anti-affinity rules." — each reason
    counted over nodes, "<count> <reason>" sorted as strings."""
    msg = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        counts: Counter[str] = Counter()
        for st in statuses.values():
            for reason in st.reasons:
                counts[reason] += 1
        if counts:
            msg += " " + ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items())) + "."
    if post_filter_msg:
        msg += f" {post_filter_msg}" if post_filter_msg.endswith(".") else f" {post_filter_msg}."
    return msg
