"""The Score extension point's runner (upstream frameworkImpl.RunScorePlugins).

Per plugin: Score (or `score_batch(state, pod_info, nodes) -> (scores, Status)` when the
plugin has it), NormalizeScore, a [0, 100] check, times the plugin's weight; the total is
the sum. Plugins whose PreScore returned Skip are left out; an Error raises FrameworkError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    NormalizeScorePlugin,
    ScorePlugin,
)
from services.scheduler.framework.status import FrameworkError, Status, plugin_error
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo


def run_score(
    plugins: Sequence[tuple[str, Any]],
    weights: Mapping[str, int],
    state: CycleState,
    pod_info: PodInfo,
    nodes: Sequence[NodeInfo],
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(node -> total weighted score, plugin -> node -> its weighted score)."""
    totals = {ni.name: 0 for ni in nodes}
    by_plugin: dict[str, dict[str, int]] = {}
    for name, plugin in plugins:
        if name in state.skip_score_plugins:
            continue
        raw = score_one(name, plugin, state, pod_info, nodes)
        weight = weights.get(name, 1)
        weighted: dict[str, int] = {}
        for ni, score in zip(nodes, raw, strict=True):
            if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                raise FrameworkError(
                    Status.as_error(
                        ValueError(
                            f"plugin {name!r} returns an invalid score {score}, it "
                            f"should in the range of [{MIN_NODE_SCORE}, "
                            f"{MAX_NODE_SCORE}] after normalizing"
                        ),
                        plugin=name,
                    )
                )
            w = int(score) * weight
            weighted[ni.name] = w
            totals[ni.name] += w
        by_plugin[name] = weighted
    return totals, by_plugin


def score_one(
    name: str,
    plugin: Any,
    state: CycleState,
    pod_info: PodInfo,
    nodes: Sequence[NodeInfo],
) -> list[int]:
    """One plugin's normalized (unweighted) scores, one per node."""
    batch = getattr(plugin, "score_batch", None)
    try:
        if callable(batch):
            raw, st = batch(state, pod_info, nodes)
            if not st.is_success():
                raise FrameworkError(plugin_error(name, f"plugin {name!r} failed", st))
            scores = [int(s) for s in raw]
            if len(scores) != len(nodes):
                raise RuntimeError(
                    f"score_batch returned {len(scores)} scores for {len(nodes)} nodes"
                )
        else:
            sp: ScorePlugin = plugin
            scores = []
            for ni in nodes:
                s, st = sp.score(state, pod_info, ni)
                if not st.is_success():
                    raise FrameworkError(plugin_error(name, f"plugin {name!r} failed", st))
                scores.append(s)
        if isinstance(plugin, NormalizeScorePlugin):
            node_scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, scores, strict=True)]
            st = plugin.normalize_score(state, pod_info, node_scores)
            if not st.is_success():
                raise FrameworkError(
                    plugin_error(name, f"running Normalize on Score plugin {name!r}", st)
                )
            scores = [ns.score for ns in node_scores]
    except FrameworkError:
        raise
    except Exception as e:  # noqa: BLE001
        raise FrameworkError(Status.as_error(e, plugin=name)) from e
    return scores
