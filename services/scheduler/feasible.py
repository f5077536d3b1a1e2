"""Finding the feasible nodes of one scheduling cycle, over snapshot rows (upstream
schedule_one.go findNodesThatPassFilters).

Candidates are int64 rows of the snapshot (indexes into `snapshot.list()`): those a
PreFilterResult allows, or all. They are filtered in chunks from a rotating start until
numFeasibleNodesToFind feasible nodes are found (percentageOfNodesToScore); a node only
counts once it also fits with the pods nominated there (queue/nomination.py). An Error of any
node filtered aborts the attempt (FilterError). For a pod whose verdicts depend only on
the pod and the node, the equivalence cache (cache/equivalence.py) answers for the rows whose
NodeInfo generation is unchanged since the verdict was computed.

Status objects are made for rejected nodes only; feasible ones are just rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.scheduler import config as config_mod
from services.scheduler.cache import equivalence
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.queue import nomination

#: The fewest rows filtered in one go (a chunk is max(wanted, MIN_CHUNK)).
MIN_CHUNK = 64


class FilterError(Exception):
    """A Filter plugin answered Error (or raised) for some node: the attempt is an Error."""

    def __init__(self, status: Status) -> None:
        self.status = status
        where = f"running Filter plugin {status.plugin!r}: " if status.plugin else ""
        super().__init__(where + status.message)


@dataclass
class Feasible:
    #: The feasible rows, in the order they were found.
    rows: np.ndarray
    #: Node name -> Status of every node found infeasible (in the order they were filtered).
    statuses: dict[str, Status]
    #: Candidates looked at (the rotating start moves on by this many).
    processed: int


def find_feasible(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    snapshot: Snapshot,
    pre_result: PreFilterResult | None,
    *,
    percentage: int | None,
    start: int,
    nominator: Nominator,
    known: equivalence.Verdicts | None,
    eq: equivalence.EquivalenceCache | None,
) -> Feasible:
    """Filter the candidates from position `start` (mod their number) until
    numFeasibleNodesToFind(`percentage`, number of candidates) feasible ones are found.
    `known`: the pod's equivalence verdicts, None when they may not be reused."""
    nodes = snapshot.list()
    statuses: dict[str, Status] = {}
    if pre_result is not None and pre_result.node_names is not None:
        candidates = snapshot.rows_of(pre_result.node_names)
        if len(candidates) < len(nodes):
            outside = np.ones(len(nodes), dtype=bool)
            outside[candidates] = False
            st = Status.unresolvable("node(s) didn't satisfy plugin(s) [PreFilter]")
            for r in np.flatnonzero(outside).tolist():
                statuses[nodes[r].name] = st
    else:
        candidates = np.arange(len(nodes), dtype=np.int64)
    total = len(candidates)
    if total == 0:
        return Feasible(candidates, statuses, 0)
    want = config_mod.num_feasible_nodes_to_find(percentage, total)
    first = start % total
    ordered = np.concatenate((candidates[first:], candidates[:first])) if first else candidates
    found: list[np.ndarray] = []
    n_found = 0
    processed = 0
    chunk = max(want, MIN_CHUNK)
    while processed < total and n_found < want:
        batch = ordered[processed : processed + chunk]
        ok, rejected = _filter(fwk, state, pi, snapshot, batch, known, eq)
        for j in sorted(rejected):
            if rejected[j].code == Code.ERROR:
                # upstream findNodesThatPassFilters: an Error aborts the attempt
                raise FilterError(rejected[j])
        passed = np.flatnonzero(ok)
        if len(nominator):
            passed = _with_nominated(
                fwk, state, pi, snapshot, batch, passed, rejected, nominator, want - n_found
            )
        take = passed[: want - n_found]
        # Candidates up to the last one taken count as processed (all of them when the chunk
        # did not complete the wanted number).
        seen = int(take[-1]) + 1 if n_found + len(take) >= want else len(batch)
        for j in sorted(rejected):
            if j < seen:
                statuses[nodes[batch[j]].name] = rejected[j]
        found.append(batch[take])
        n_found += len(take)
        processed += seen
    rows = np.concatenate(found) if found else candidates[:0]
    return Feasible(rows, statuses, processed)


def _with_nominated(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    snapshot: Snapshot,
    batch: np.ndarray,
    passed: np.ndarray,
    rejected: dict[int, Status],
    nominator: Nominator,
    wanted: int,
) -> np.ndarray:
    """The positions of `passed` that also fit with the pods nominated there, checked in
    order until `wanted` are found; the others get their Status in `rejected`."""
    nodes = snapshot.list()
    out: list[int] = []
    for j in passed.tolist():
        if len(out) >= wanted:
            break
        st = nomination.with_nominated_pods(fwk, state, pi, nodes[batch[j]], nominator)
        if st.code == Code.ERROR:
            raise FilterError(st)
        if st.code == Code.SUCCESS:
            out.append(j)
        else:
            rejected[j] = st
    return np.array(out, dtype=np.int64)


def _filter(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    snapshot: Snapshot,
    batch: np.ndarray,
    known: equivalence.Verdicts | None,
    eq: equivalence.EquivalenceCache | None,
) -> tuple[np.ndarray, dict[int, Status]]:
    """run_filter_rows, answering from the equivalence verdicts where a row's generation is
    the one its verdict was computed at."""
    if known is None or eq is None:
        return fwk.run_filter_rows(state, pi, snapshot, batch)
    row_gen = snapshot.row_gen
    hit = known.hits(batch, row_gen)
    n_hit = int(np.count_nonzero(hit))
    eq.hits += n_hit
    eq.misses += len(batch) - n_hit
    verdict = np.where(hit, known.verdict[batch], 0)
    ok = verdict == 0
    rejected: dict[int, Status] = {}
    for j in np.flatnonzero(~ok).tolist():
        rejected[j] = known.statuses[verdict[j]]
    if n_hit < len(batch):
        todo = np.flatnonzero(~hit)
        fresh_ok, fresh = fwk.run_filter_rows(state, pi, snapshot, batch[todo])
        known.store(batch[todo], row_gen, fresh_ok, fresh)
        ok[todo] = fresh_ok
        where = todo.tolist()
        for k, st in fresh.items():
            rejected[where[k]] = st
    return ok, rejected
