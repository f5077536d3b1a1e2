"""The Score extension point's runner (upstream frameworkImpl.RunScorePlugins).

Per plugin: Score (as `score_rows` over snapshot rows when the plugin has it and a snapshot
is given, else `score_batch(state, pod_info, nodes) -> (scores, Status)`, else `score` per
node), NormalizeScore (`normalize_rows` when the plugin has it), a [0, 100] check, times
the plugin's weight; the total is the sum. Plugins whose PreScore returned Skip are left
out; an Error raises FrameworkError. Scores travel as int64 arrays aligned with the rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from services.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    ScorePlugin,
)
from services.scheduler.framework.status import Code, FrameworkError, Status, plugin_error
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo


def run_score(
    plugins: Sequence[tuple[str, Any]],
    weights: Mapping[str, int],
    state: CycleState,
    pod_info: PodInfo,
    nodes: Sequence[NodeInfo],
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(node -> total weighted score, plugin -> node -> its weighted score): run_score_rows
    over the list, without row methods."""
    rows = np.arange(len(nodes), dtype=np.int64)
    totals, by_plugin = run_score_rows(plugins, weights, state, pod_info, None, rows, nodes)
    names = [ni.name for ni in nodes]
    return (
        dict(zip(names, totals.tolist(), strict=True)),
        {p: dict(zip(names, s.tolist(), strict=True)) for p, s in by_plugin.items()},
    )


def run_score_rows(
    plugins: Sequence[tuple[str, Any]],
    weights: Mapping[str, int],
    state: CycleState,
    pod_info: PodInfo,
    snapshot: Any,
    rows: np.ndarray,
    nodes: Sequence[NodeInfo],
    raw_out: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(total weighted score per row, plugin -> its weighted score per row), int64 arrays
    aligned with `rows`; `nodes` are the NodeInfos of `rows` (for plugins scored per node).
    `snapshot` None: no plugin is asked for `score_rows`. `raw_out`: filled with each
    plugin's scores before NormalizeScore (int64, aligned with `rows`; a plugin whose raw
    scores do not fit int64 is left out), for `run_normalize_rows` to normalize again over
    fewer rows (opportunistic batching, scheduler/batching.py)."""
    totals = np.zeros(len(rows), dtype=np.int64)
    by_plugin: dict[str, np.ndarray] = {}
    for name, plugin in plugins:
        if name in state.skip_score_plugins:
            continue
        raw = raw_one(name, plugin, state, pod_info, snapshot, rows, nodes)
        if raw_out is not None:
            with contextlib.suppress(OverflowError):
                raw_out[name] = np.array(raw, dtype=np.int64).reshape(len(rows))
        by_plugin[name] = _weighted(name, plugin, weights, state, pod_info, raw, rows, nodes)
        totals += by_plugin[name]
    return totals, by_plugin


def run_normalize_rows(
    plugins: Sequence[tuple[str, Any]],
    weights: Mapping[str, int],
    state: CycleState,
    pod_info: PodInfo,
    raw: Mapping[str, np.ndarray],
    rows: np.ndarray,
    nodes: Sequence[NodeInfo],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """run_score_rows from raw scores already known (`raw`: plugin -> its scores before
    NormalizeScore, aligned with `rows`): NormalizeScore over these rows, the check, the
    weights. The plugins are those of `raw`, in the profile's order."""
    totals = np.zeros(len(rows), dtype=np.int64)
    by_plugin: dict[str, np.ndarray] = {}
    for name, plugin in plugins:
        scores = raw.get(name)
        if scores is None:
            continue
        by_plugin[name] = _weighted(
            name, plugin, weights, state, pod_info, scores.copy(), rows, nodes
        )
        totals += by_plugin[name]
    return totals, by_plugin


def _weighted(
    name: str,
    plugin: Any,
    weights: Mapping[str, int],
    state: CycleState,
    pod_info: PodInfo,
    raw: np.ndarray | list[Any],
    rows: np.ndarray,
    nodes: Sequence[NodeInfo],
) -> np.ndarray:
    """One plugin's raw scores normalized, checked and weighted."""
    scores = _checked(name, normalized_one(name, plugin, state, pod_info, raw, rows, nodes))
    weighted: np.ndarray = scores * weights.get(name, 1)
    return weighted


def _invalid(name: str, score: int) -> FrameworkError:
    return FrameworkError(
        Status.as_error(
            ValueError(
                f"plugin {name!r} returns an invalid score {score}, it "
                f"should in the range of [{MIN_NODE_SCORE}, "
                f"{MAX_NODE_SCORE}] after normalizing"
            ),
            plugin=name,
        )
    )


def _checked(name: str, scores: np.ndarray | list[Any]) -> np.ndarray:
    """The scores as int64, each in [MIN_NODE_SCORE, MAX_NODE_SCORE]; else the first one
    outside is the plugin's Error."""
    if isinstance(scores, np.ndarray):
        bad = (scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)
        if bad.any():
            raise _invalid(name, int(scores[int(np.argmax(bad))]))
        return scores
    # Python values (scored per node) may lie beyond int64: checked before converting.
    for s in scores:
        if not MIN_NODE_SCORE <= s <= MAX_NODE_SCORE:
            raise _invalid(name, s)
    return np.array([int(s) for s in scores], dtype=np.int64).reshape(len(scores))


def raw_one(
    name: str,
    plugin: Any,
    state: CycleState,
    pod_info: PodInfo,
    snapshot: Any,
    rows: np.ndarray,
    nodes: Sequence[NodeInfo],
) -> np.ndarray | list[Any]:
    """One plugin's Score, before NormalizeScore, aligned with `rows`."""
    try:
        scores: np.ndarray | list[Any] | None = None
        by_rows = getattr(plugin, "score_rows", None) if snapshot is not None else None
        if by_rows is not None:
            raw = by_rows(state, pod_info, snapshot, rows)
            if raw is not None:
                scores = np.asarray(raw, dtype=np.int64)
                if scores.shape != rows.shape:
                    raise RuntimeError(f"score_rows returned {scores.shape} for {len(rows)} rows")
        if scores is None:
            scores = _score_nodes(name, plugin, state, pod_info, nodes)
    except FrameworkError:
        raise
    except Exception as e:  # noqa: BLE001
        raise FrameworkError(Status.as_error(e, plugin=name)) from e
    return scores


def normalized_one(
    name: str,
    plugin: Any,
    state: CycleState,
    pod_info: PodInfo,
    scores: np.ndarray | list[Any],
    rows: np.ndarray,
    nodes: Sequence[NodeInfo],
) -> np.ndarray | list[Any]:
    """`scores` (one plugin's raw scores) after its NormalizeScore, if it has one."""
    try:
        normalize = getattr(plugin, "normalize_score", None)
        if normalize is not None:  # a NormalizeScorePlugin (without isinstance: per cycle)
            by_rows = getattr(plugin, "normalize_rows", None)
            if by_rows is not None:
                arr = scores if isinstance(scores, np.ndarray) else np.array(scores, np.int64)
                scores = np.asarray(by_rows(state, pod_info, arr), dtype=np.int64)
                if scores.shape != rows.shape:
                    raise RuntimeError(
                        f"normalize_rows returned {scores.shape} for {len(rows)} rows"
                    )
            else:
                values = scores.tolist() if isinstance(scores, np.ndarray) else scores
                node_scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, values, strict=True)]
                st = normalize(state, pod_info, node_scores)
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


def _score_nodes(
    name: str, plugin: Any, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
) -> list[Any]:
    batch = getattr(plugin, "score_batch", None)
    if callable(batch):
        raw, st = batch(state, pod_info, nodes)
        if not st.is_success():
            raise FrameworkError(plugin_error(name, f"plugin {name!r} failed", st))
        scores = [int(s) for s in raw]
        if len(scores) != len(nodes):
            raise RuntimeError(f"score_batch returned {len(scores)} scores for {len(nodes)} nodes")
        return scores
    sp: ScorePlugin = plugin
    scores = []
    for ni in nodes:
        s, st = sp.score(state, pod_info, ni)
        if st.code != Code.SUCCESS:
            raise FrameworkError(plugin_error(name, f"plugin {name!r} failed", st))
        scores.append(s)
    return scores
