"""PodTopologySpread's Score (upstream podtopologyspread/scoring.go): ScheduleAnyway
constraints, over the nodes that passed Filter.

    raw(node) = round(sum over constraints of count(domain) * log(#domains + 2) + maxSkew - 1)

#domains being the candidate nodes' distinct values (for kubernetes.io/hostname the number of
candidate nodes); counts come from every node in the cluster. NormalizeScore reverses it:
100 * (max + min - raw) / max, nodes missing a key score 0, all-zero raw scores give 100.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.wellknown import LABEL_HOSTNAME
from services.scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from services.scheduler.framework.types import NodeInfo
from services.scheduler.plugins.podtopologyspread.common import (
    Constraint,
    NodeEligibility,
    keys_present,
)


class PreScoreState:
    __slots__ = ("constraints", "ignored", "counts", "weights", "row_ignored")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        #: Candidate nodes missing some topology key: they score 0.
        self.ignored: set[str] = set()
        #: Per soft constraint: domain value -> matching pods (not for hostname: per node).
        self.counts: list[dict[str, int]] = []
        #: Per soft constraint: log(#domains + 2).
        self.weights: list[float] = []
        #: The rows the last score_rows scored that are ignored, for normalize_rows.
        self.row_ignored: npt.NDArray[np.bool_] | None = None

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore


def fill_pre_score_state(
    s: PreScoreState,
    pod: core_pb2.Pod,
    nodes: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    require_all: bool,
) -> None:
    """Count the soft constraints' (`s.constraints`) domains over the candidate `nodes` and
    their matching pods over `all_nodes`. `require_all`: nodes missing a key are ignored."""
    s.counts = [{} for _ in s.constraints]
    sizes = [0] * len(s.constraints)
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.metadata.labels
        if require_all and not keys_present(labels, s.constraints):
            s.ignored.add(node.metadata.name)
            continue
        for i, c in enumerate(s.constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue  # counted per node in Score
            value = labels.get(c.topology_key, "")
            if value not in s.counts[i]:
                s.counts[i][value] = 0
                sizes[i] += 1
    for i, c in enumerate(s.constraints):
        size = len(nodes) - len(s.ignored) if c.topology_key == LABEL_HOSTNAME else sizes[i]
        s.weights.append(math.log(size + 2))

    eligibility = NodeEligibility(pod)
    namespace = pod.metadata.namespace
    for ni in all_nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.metadata.labels
        if require_all and not keys_present(labels, s.constraints):
            continue
        for i, c in enumerate(s.constraints):
            if not eligibility.ok(c, node):
                continue
            value = labels.get(c.topology_key, "")
            if value not in s.counts[i]:
                continue  # not a candidate's domain (and hostname: counted in Score)
            s.counts[i][value] += sum(1 for p in ni.pods if c.counts(p.pod, namespace))


def score_node(s: PreScoreState, namespace: str, node: core_pb2.Node, node_info: NodeInfo) -> int:
    """The raw score of `node` (not one of `s.ignored`) for a pod of `namespace`."""
    labels = node.metadata.labels
    total = 0.0
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            cnt = sum(1 for p in node_info.pods if c.counts(p.pod, namespace))
        else:
            cnt = s.counts[i].get(value, 0)
        total += cnt * s.weights[i] + (c.max_skew - 1)
    return math.floor(total + 0.5)  # Go math.Round (total >= 0)


def normalize(s: PreScoreState, scores: list[NodeScore]) -> None:
    """NormalizeScore, in place: reversed, ignored nodes 0, all-zero raw scores 100."""
    valid = [ns.score for ns in scores if ns.name not in s.ignored]
    lo = min(valid, default=0)
    hi = max(valid, default=0)
    for ns in scores:
        if ns.name in s.ignored:
            ns.score = 0
        elif hi == 0:
            ns.score = MAX_NODE_SCORE
        else:
            ns.score = MAX_NODE_SCORE * (hi + lo - ns.score) // hi
