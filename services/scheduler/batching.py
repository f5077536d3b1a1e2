"""Opportunistic batching: the next pod of the same scheduling signature reuses the last
cycle's Filter and Score work (upstream 1.35, KEP-5598, framework/runtime/batch.go; the
OpportunisticBatching gate, beta and on by default since 1.35).

    cycle k (ordinary)    PreFilter → Filter every candidate → PreScore → Score → host c
                          store: the signature, the feasible rows, each Score plugin's
                          scores before NormalizeScore, every row's NodeInfo generation
    cycle k+1 (batched)   PreFilter → Filter only the rows whose NodeInfo changed since
                          (c among them; all must now reject the pod) → PreScore →
                          NormalizeScore of the stored scores over the rows still feasible
                          → host, with the same tie-break draw as an ordinary cycle

When a stored batch may be used, as upstream decides it (GetNodeHint/batchStateCompatible),
each failed test counted in `scheduler_batch_cache_flushed_total{reason}`:
  - there is one, stored by a pod of this profile in the cycle just before (pod_skipped: a
    pod of another profile, or one that failed, came between; upstream's pod_failed is
    never counted, as there: a failed pod stores nothing);
  - the pod has no nominated node (pod_nominated);
  - the pod's signature is the one stored (pod_incompatible; a pod without one, because a
    plugin of its profile cannot sign it, never matches);
  - it is younger than MAX_BATCH_AGE (expired);
  - the node the last pod went to still exists (node_missing) and now rejects this pod
    (node_not_full: upstream cannot tell where the used node would rank again).
A cycle that stores nothing usable says why: empty_list (no other feasible node),
pod_not_batchable (no signature). Pods placed from a batch count as
`scheduler_batch_attempts_total{result="hint_used"}`, the others as "no_hint".

Deliberate difference (exactness): upstream hands out the next node of the stored ranking
and accepts that it is not always the node an ordinary cycle would pick. kubera's batched
cycle gives the same node as an ordinary one would, or none (reason `not_exact`):
  - only when the ordinary cycle filters every candidate (fewer than 100 nodes, or
    percentageOfNodesToScore 100): with sampling it would look at another window of nodes;
  - every row changed since the store is filtered again and must reject the pod (upstream
    checks the last chosen node only): a changed node that still fits would need new scores;
  - the scores are normalized again without the rows taken (normalization is over the
    feasible nodes), and the host is drawn among ties as `_select_host` does;
  - no nominated pods anywhere, no pod with (anti-)affinity terms in the cluster when the
    profile runs InterPodAffinity, and the same PreFilter result and PreScore skips.

A pod's signature (upstream framework.SignPod + each plugin's SignPod) is its scheduler
name and one fragment per PreFilter, Filter, PreScore and Score plugin of its profile;
SIGNERS holds the in-tree plugins' (out-of-tree ones may define `sign_pod(pod_info)`), and
a profile with a plugin that has none never batches. A signer answers None when the pod's
outcome depends on more than the pod and the node (topology spread, pod affinity, claims,
volumes, gangs), as upstream's refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.api.dra.extended import is_dra_extended_resource_name
from services.api.helpers.podgroups import POD_GROUP_LABEL
from services.api.helpers.podvolumes import has_scheduling_volumes
from services.clock import Clock
from services.scheduler import config as config_mod
from services.scheduler.cache import equivalence
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.feasible import Feasible
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo

#: A batch older than this is not used (upstream maxBatchAge).
MAX_BATCH_AGE = 0.5

#: scheduler_batch_attempts_total{result}
NO_HINT = "no_hint"
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"

#: scheduler_batch_cache_flushed_total{reason}: upstream's, and kubera's NOT_EXACT.
POD_FAILED = "pod_failed"
POD_SKIPPED = "pod_skipped"
NODE_MISSING = "node_missing"
NODE_NOT_FULL = "node_not_full"
EMPTY_LIST = "empty_list"
EXPIRED = "expired"
POD_INCOMPATIBLE = "pod_incompatible"
POD_NOT_BATCHABLE = "pod_not_batchable"
POD_NOMINATED = "pod_nominated"
NOT_EXACT = "not_exact"

#: (plugin, pod) -> the plugin's fragment of the pod's signature; None: it cannot sign it.
Signer = Callable[[Any, PodInfo], bytes | None]


def _node_local(plugin: Any, pi: PodInfo) -> bytes | None:
    """What the node-local plugins read of a pod (equivalence.signature: nodeName,
    nodeSelector, node affinity, tolerations, overhead, containers' requests and ports)."""
    return equivalence.pod_signature(pi)


def _resources(plugin: Any, pi: PodInfo) -> bytes | None:
    # Upstream's Fit refuses to sign with DRAExtendedResource on; kubera refuses only pods
    # asking for an extended resource a DeviceClass may map (given by DRA, not the node).
    if any(is_dra_extended_resource_name(n) for n in pi.requests.scalar):
        return None
    return equivalence.pod_signature(pi)


def _without_volumes(plugin: Any, pi: PodInfo) -> bytes | None:
    return None if has_scheduling_volumes(pi.pod) else b""


def _topology_spread(plugin: Any, pi: PodInfo) -> bytes | None:
    if pi.pod.spec.topology_spread_constraints or getattr(plugin, "default_constraints", None):
        return None
    return b""


def _pod_affinity(plugin: Any, pi: PodInfo) -> bytes | None:
    return None if pi.has_affinity() else b""


def _claims(plugin: Any, pi: PodInfo) -> bytes | None:
    if pi.pod.spec.resource_claims or _resources(plugin, pi) is None:
        return None
    return b""


def _whole_spec(plugin: Any, pi: PodInfo) -> bytes | None:
    return pi.spec_bytes


def _gang(plugin: Any, pi: PodInfo) -> bytes | None:
    spec = pi.pod.spec
    return None if spec.scheduling_group.pod_group_name or spec.HasField("workload_ref") else b""


def _pod_group(plugin: Any, pi: PodInfo) -> bytes | None:
    return None if POD_GROUP_LABEL in pi.pod.metadata.labels else b""


#: The in-tree plugins that run at PreFilter, Filter, PreScore or Score, and how each signs.
SIGNERS: dict[str, Signer] = {
    "NodeName": _node_local,
    "NodeUnschedulable": _node_local,
    "TaintToleration": _node_local,
    "NodeAffinity": _node_local,
    "NodePorts": _node_local,
    "NodeResourcesFit": _resources,
    "NodeResourcesBalancedAllocation": _resources,
    "VolumeRestrictions": _without_volumes,
    "NodeVolumeLimits": _without_volumes,
    "VolumeZone": _without_volumes,
    "VolumeBinding": _without_volumes,
    "PodTopologySpread": _topology_spread,
    "InterPodAffinity": _pod_affinity,
    "DynamicResources": _claims,
    "NodeDeclaredFeatures": _whole_spec,
    "GangScheduling": _gang,
    "Coscheduling": _pod_group,
}

#: The extension points whose plugins must sign (upstream computeBatchablePlugins).
SIGNED_POINTS = ("preFilter", "filter", "preScore", "score")


def profile_signers(fwk: Framework) -> list[tuple[str, Any, Signer]] | None:
    """(name, plugin, signer) of every plugin the profile runs at SIGNED_POINTS, once each;
    None when one of them cannot sign (the profile never batches)."""
    out: list[tuple[str, Any, Signer]] = []
    listed = fwk.list_plugins()
    seen: set[str] = set()
    for point in SIGNED_POINTS:
        for name in listed.get(point, ()):
            if name in seen:
                continue
            seen.add(name)
            plugin = fwk.plugins[name]
            own = getattr(plugin, "sign_pod", None)
            signer = SIGNERS.get(name)
            if callable(own):
                signer = _own_signer
            if signer is None:
                return None
            out.append((name, plugin, signer))
    return out


def _own_signer(plugin: Any, pi: PodInfo) -> bytes | None:
    fragment: bytes | None = plugin.sign_pod(pi)
    return fragment


@dataclass
class Batched:
    """A batched cycle's outcome: what `find_feasible` would have found, and, with more
    than one feasible row, the scores `run_score_rows` would have given (totals, per plugin)."""

    found: Feasible
    scores: tuple[np.ndarray, dict[str, np.ndarray]] | None = None
    infos: Sequence[NodeInfo] = ()


@dataclass
class Lookup:
    """What `OpportunisticBatch.hint` answered: the pod's signature and the batched
    outcome (None: run the ordinary cycle)."""

    signature: bytes | None
    batched: Batched | None = None


@dataclass
class _Stored:
    """One ordinary cycle's results, per snapshot row (valid for its layout)."""

    signature: bytes
    layout: int
    #: The candidate rows (PreFilter's nodes, or all), ascending; and PreFilter's names.
    candidates: np.ndarray
    pre_nodes: frozenset[str] | None
    #: The NodeInfo generation each row's verdict was taken at.
    gens: np.ndarray
    #: Rows feasible at `gens` and not taken (upstream's sorted list of other nodes).
    feasible: np.ndarray
    #: Score plugin -> its raw scores per row (meaningful for feasible rows).
    raw: dict[str, np.ndarray]
    #: Node -> Status of each infeasible node (those outside PreFilter's result too).
    statuses: dict[str, Status]
    created: float


class OpportunisticBatch:
    """One profile's batch (upstream keeps one per framework)."""

    def __init__(self, fwk: Framework, clock: Clock, metrics: Any = None) -> None:
        self.profile = fwk.profile_name
        self._clock = clock
        self._metrics = metrics
        #: The counters' children by result or reason (their names never collide).
        self._children: dict[str, Any] = {}
        self._signers = profile_signers(fwk)
        self._affinity_matters = "InterPodAffinity" in fwk.plugins
        self.state: _Stored | None = None
        self.last_cycle = -2
        self.last_chosen = ""
        self.succeeded = False
        #: Pods placed from a batch (upstream's batchedPods, read by its tests).
        self.batched_pods = 0

    # ---------------------------------------------------------------- signature
    def signature(self, pi: PodInfo) -> bytes | None:
        """The pod's signature in this profile; None: it cannot be batched."""
        if self._signers is None:
            return None
        parts = [pi.pod.spec.scheduler_name.encode()]
        for name, plugin, signer in self._signers:
            fragment = signer(plugin, pi)
            if fragment is None:
                return None
            parts.append(name.encode() + b"=" + fragment)
        return b"\0".join(parts)

    # ---------------------------------------------------------------- the hint
    def hint(
        self,
        fwk: Framework,
        state: CycleState,
        pi: PodInfo,
        snapshot: Snapshot,
        pre_result: PreFilterResult | None,
        *,
        cycle: int,
        start: int,
        percentage: int | None,
        nominator: Nominator,
    ) -> Lookup:
        """The pod's signature and, when the stored batch may be used, the batched outcome."""
        sig = self.signature(pi)
        batched = None
        if self._compatible(pi, sig, cycle):
            if len(nominator):
                self._flush(NOT_EXACT)  # nominated pods count on nodes as verdicts were taken
            else:
                batched = self._refresh(fwk, state, pi, snapshot, pre_result, start, percentage)
        if batched is None:
            self._attempt(NO_HINT)
        return Lookup(sig, batched)

    def _compatible(self, pi: PodInfo, sig: bytes | None, cycle: int) -> bool:
        """upstream batchStateCompatible's checks before the node's."""
        s = self.state
        if s is None or not s.feasible.any():
            return False
        if cycle != self.last_cycle + 1:
            return self._flush(POD_SKIPPED)
        if not self.succeeded:
            return self._flush(POD_FAILED)
        if pi.pod.status.nominated_node_name:
            return self._flush(POD_NOMINATED)
        if sig is None or sig != s.signature:
            return self._flush(POD_INCOMPATIBLE)
        if self._clock.monotonic() > s.created + MAX_BATCH_AGE:
            return self._flush(EXPIRED)
        return True

    def _refresh(
        self,
        fwk: Framework,
        state: CycleState,
        pi: PodInfo,
        snap: Snapshot,
        pre_result: PreFilterResult | None,
        start: int,
        percentage: int | None,
    ) -> Batched | None:
        """The node checks, kubera's exactness checks, and the batched outcome."""
        s = self.state
        assert s is not None
        if snap.get(self.last_chosen) is None:
            self._flush(NODE_MISSING)
            return None
        total = len(s.candidates)
        if (
            s.layout != snap.layout_version
            or len(s.gens) != snap.num_nodes()
            or _pre_nodes(pre_result) != s.pre_nodes
            or config_mod.num_feasible_nodes_to_find(percentage, total) < total
            or (self._affinity_matters and snap.have_pods_with_affinity())
        ):
            self._flush(NOT_EXACT)
            return None
        row_gen = snap.row_gen
        chosen = snap.index_of(self.last_chosen)
        changed = s.candidates[row_gen[s.candidates] != s.gens[s.candidates]]
        check = np.union1d(changed, np.array([chosen], dtype=np.int64))
        ok, rejected = fwk.run_filter_rows(state, pi, snap, check)
        if any(st.code == Code.ERROR for st in rejected.values()):
            self._flush(NOT_EXACT)  # the ordinary cycle reports the Error
            return None
        if ok[int(np.searchsorted(check, chosen))]:
            self._flush(NODE_NOT_FULL)
            return None
        if ok.any():
            self._flush(NOT_EXACT)  # a changed node still fits: its scores are unknown
            return None
        nodes = snap.list()
        s.gens[check] = row_gen[check]
        s.feasible[check] = False
        for j, st in rejected.items():
            s.statuses[nodes[int(check[j])].name] = st
        first = start % total
        ordered = (
            np.concatenate((s.candidates[first:], s.candidates[:first])) if first else s.candidates
        )
        rows = ordered[s.feasible[ordered]]
        if not len(rows):
            self._flush(EMPTY_LIST)
            return None
        found = Feasible(rows, dict(s.statuses), total)
        if len(rows) == 1:
            return Batched(found)
        infos = snap.infos(rows)
        st = fwk.run_pre_score(state, pi, infos)
        scored = set(fwk.list_plugins().get("score", ())) - state.skip_score_plugins
        if not st.is_success() or scored != set(s.raw):
            self._flush(NOT_EXACT)
            return None
        raw = {p: scores[rows] for p, scores in s.raw.items()}
        return Batched(found, fwk.run_normalize_rows(state, pi, raw, rows, infos), infos)

    # ---------------------------------------------------------------- storing
    def store(
        self,
        lookup: Lookup,
        *,
        cycle: int,
        chosen: str,
        snapshot: Snapshot | None = None,
        pre_result: PreFilterResult | None = None,
        found: Feasible | None = None,
        raw: Mapping[str, np.ndarray] | None = None,
        nominator: Nominator | None = None,
        percentage: int | None = None,
    ) -> None:
        """upstream StoreScheduleResults: the pod goes to `chosen`; an ordinary cycle
        (`found`: its feasible rows, `raw`: its scores before NormalizeScore) seeds the
        next batch, unless it sampled the nodes (`percentage`) or nominated pods or pods
        with affinity terms may change verdicts."""
        self.last_cycle, self.last_chosen, self.succeeded = cycle, chosen, True
        if lookup.batched is not None:
            self._attempt(HINT_USED)
            self.batched_pods += 1
            if self.state is not None and snapshot is not None:
                # Popped, as upstream's list: the next pod checks it as the last chosen.
                self.state.feasible[snapshot.index_of(chosen)] = False
            return
        self.state = None
        if found is None or len(found.rows) < 2 or snapshot is None:
            self._flush(EMPTY_LIST)  # upstream: before the signature is looked at
            return
        if lookup.signature is None:
            self._flush(POD_NOT_BATCHABLE)
            return
        if (
            raw is None
            or (nominator is not None and len(nominator))
            or (self._affinity_matters and snapshot.have_pods_with_affinity())
        ):
            self._flush(NOT_EXACT)
            return
        n = snapshot.num_nodes()
        pre_nodes = _pre_nodes(pre_result)
        candidates = (
            snapshot.rows_of(pre_nodes) if pre_nodes is not None else np.arange(n, dtype=np.int64)
        )
        total = len(candidates)
        if config_mod.num_feasible_nodes_to_find(percentage, total) < total:
            self._flush(NOT_EXACT)  # sampled: the next ordinary cycle looks at other nodes
            return
        feasible = np.zeros(n, dtype=bool)
        feasible[found.rows] = True
        feasible[snapshot.index_of(chosen)] = False  # the next pod checks it again
        full: dict[str, np.ndarray] = {}
        for plugin, scores in raw.items():
            full[plugin] = np.zeros(n, dtype=np.int64)
            full[plugin][found.rows] = scores
        self.state = _Stored(
            signature=lookup.signature,
            layout=snapshot.layout_version,
            candidates=candidates,
            pre_nodes=pre_nodes,
            gens=snapshot.row_gen.copy(),
            feasible=feasible,
            raw=full,
            statuses=dict(found.statuses),
            created=self._clock.monotonic(),
        )

    # ---------------------------------------------------------------- metrics
    def _flush(self, reason: str) -> bool:
        if self._metrics is not None:
            child = self._children.get(reason)
            if child is None:
                child = self._metrics.batch_cache_flushed_total.labels(
                    profile=self.profile, reason=reason
                )
                self._children[reason] = child
            child.inc()
        return False

    def _attempt(self, result: str) -> None:
        if self._metrics is not None:
            child = self._children.get(result)
            if child is None:
                child = self._metrics.batch_attempts_total.labels(
                    profile=self.profile, result=result
                )
                self._children[result] = child
            child.inc()


def _pre_nodes(pre_result: PreFilterResult | None) -> frozenset[str] | None:
    if pre_result is None or pre_result.node_names is None:
        return None
    return frozenset(pre_result.node_names)


class Batching:
    """Every profile's batch, made when the profile first schedules."""

    def __init__(self, clock: Clock, metrics: Any) -> None:
        self._clock = clock
        self._metrics = metrics
        self._batches: dict[str, OpportunisticBatch] = {}

    def of(self, fwk: Framework) -> OpportunisticBatch:
        batch = self._batches.get(fwk.profile_name)
        if batch is None:
            batch = OpportunisticBatch(fwk, self._clock, self._metrics)
            self._batches[fwk.profile_name] = batch
        return batch

    @property
    def batched_pods(self) -> int:
        """Pods placed from a batch, all profiles."""
        return sum(b.batched_pods for b in self._batches.values())
