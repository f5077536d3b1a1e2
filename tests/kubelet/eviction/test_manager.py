"""The per-node eviction manager across passes (upstream synchronize): one eviction per
pass, grace periods of soft thresholds, the pressure transition period, minimum reclaim,
image GC before evicting, grace periods given to pods, critical pods, waiting for the
evicted pod's cleanup, and the admission rule under pressure."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.kubelet import eviction as ev
from services.kubelet.eviction import (
    Decision,
    EvictionConfig,
    EvictionManager,
    ImageStats,
    NodeStats,
    PodStats,
)

Mi, Gi = 2**20, 2**30
NO_PRESSURE = {"MemoryPressure": False, "DiskPressure": False, "PIDPressure": False}


def node(
    *,
    mem_free: int = 4 * Gi,
    nodefs_free: int = 50 * Gi,
    imagefs_free: int | None = None,
    inodes_free: int = 500_000,
    pids_used: int = 100,
    time: float | None = None,
) -> NodeStats:
    """An 8Gi node with a 100Gi nodefs (1M inodes), optionally a 100Gi imagefs."""
    return NodeStats(
        memory_capacity=8 * Gi,
        memory_working_set=8 * Gi - mem_free,
        nodefs_capacity=100 * Gi,
        nodefs_available=nodefs_free,
        nodefs_inodes=1_000_000,
        nodefs_inodes_free=inodes_free,
        imagefs_separate=imagefs_free is not None,
        imagefs_capacity=100 * Gi,
        imagefs_available=imagefs_free or 0,
        imagefs_inodes=1_000_000,
        imagefs_inodes_free=1_000_000,
        pid_max=4096,
        pids_used=pids_used,
        time=time,
    )


def pod(key: str, **kw: object) -> PodStats:
    kw.setdefault("memory", 100 * Mi)
    return PodStats(key=key, uid=key, **kw)  # type: ignore[arg-type]


def evicted(d: Decision) -> list[str]:
    return [e.pod_key for e in d.evict]


def manager(d: dict[str, object] | None = None) -> EvictionManager:
    return EvictionManager(EvictionConfig.from_dict(d))


SOFT_MEMORY = {
    "evictionHard": {"memory.available": "100Mi"},
    "evictionSoft": {"memory.available": "1Gi"},
    "evictionSoftGracePeriod": {"memory.available": "1m"},
    "evictionMaxPodGracePeriod": 20,
}


# ========================================================================= basics


def test_no_threshold_met_decides_nothing_and_never_looks_at_pods() -> None:
    def pods() -> Sequence[PodStats]:
        raise AssertionError("pods were listed without pressure")

    d = EvictionManager().synchronize(0.0, node(), pods)
    assert d.conditions == NO_PRESSURE
    assert (d.evict, d.images_to_delete, d.thresholds_met, d.reclaim_signal) == ((), (), (), None)
    assert d.observations[ev.MEMORY_AVAILABLE] == ev.Observation(4 * Gi, 8 * Gi)


def test_hard_memory_threshold_evicts_one_pod_at_once_with_the_immediate_grace() -> None:
    m = EvictionManager()
    pods = [pod("ns/fine", memory_request=Gi, memory=Gi), pod("ns/hog", memory=3 * Gi)]
    d = m.synchronize(0.0, node(mem_free=50 * Mi), pods)
    assert d.conditions == {**NO_PRESSURE, "MemoryPressure": True}
    assert d.reclaim_signal == ev.MEMORY_AVAILABLE
    (e,) = d.evict
    assert (e.pod_key, e.grace_seconds, e.signal) == ("ns/hog", 0, ev.MEMORY_AVAILABLE)
    assert e.message.startswith(
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
    )
    assert d.eviction_annotations["starved_resource"] == "memory"


def test_at_most_one_pod_is_evicted_per_pass() -> None:
    pods = [pod(f"ns/p{i}", memory=Gi) for i in range(20)]
    d = EvictionManager().synchronize(0.0, node(mem_free=Mi), pods)
    assert evicted(d) == ["ns/p0"]


def test_no_active_pods_means_no_eviction_but_pressure() -> None:
    d = EvictionManager().synchronize(0.0, node(mem_free=Mi), [])
    assert d.evict == ()
    assert d.conditions["MemoryPressure"]


def test_pods_callable_is_called_once_when_ranking_is_needed() -> None:
    calls = []

    def pods() -> Sequence[PodStats]:
        calls.append(1)
        return [pod("ns/a")]

    d = EvictionManager().synchronize(0.0, node(mem_free=Mi), pods)
    assert evicted(d) == ["ns/a"]
    assert calls == [1]


# ============================================================= soft thresholds


def test_soft_threshold_sets_the_condition_at_once_and_evicts_after_its_grace() -> None:
    m = manager(SOFT_MEMORY)
    pods = [pod("ns/a", memory=Gi)]
    low = node(mem_free=512 * Mi)  # below the 1Gi soft threshold, above the 100Mi hard one
    first = m.synchronize(0.0, low, pods)
    assert first.conditions["MemoryPressure"]
    assert first.evict == ()
    assert [t.signal for t in first.thresholds_observed] == [ev.MEMORY_AVAILABLE]
    assert first.thresholds_met == ()
    assert m.synchronize(59.9, low, pods).evict == ()
    d = m.synchronize(60.0, low, pods)  # met continuously for exactly the grace period
    assert evicted(d) == ["ns/a"]
    assert d.evict[0].grace_seconds == 20  # min(evictionMaxPodGracePeriod 20, pod's 30)


def test_soft_threshold_clock_restarts_when_it_stops_being_met() -> None:
    m = manager(SOFT_MEMORY)
    pods = [pod("ns/a", memory=Gi)]
    m.synchronize(0.0, node(mem_free=512 * Mi), pods)
    m.synchronize(50.0, node(mem_free=2 * Gi), pods)  # recovered for one pass
    assert m.synchronize(70.0, node(mem_free=512 * Mi), pods).evict == ()
    assert m.synchronize(129.0, node(mem_free=512 * Mi), pods).evict == ()
    assert evicted(m.synchronize(130.0, node(mem_free=512 * Mi), pods)) == ["ns/a"]


@pytest.mark.parametrize(
    ("max_pod_grace", "pod_grace", "expected"),
    [
        (0, 30, 0),  # the default evictionMaxPodGracePeriod kills at once
        (60, 30, 30),  # the pod's own grace period is shorter
        (10, 30, 10),  # the cap is shorter
        (60, None, 60),  # no grace period on the pod: the cap
        (60, 0, 0),
    ],
)
def test_soft_eviction_grace_is_min_of_max_pod_grace_and_pods_grace(
    max_pod_grace: int, pod_grace: float | None, expected: float
) -> None:
    m = manager({**SOFT_MEMORY, "evictionMaxPodGracePeriod": max_pod_grace})
    pods = [pod("ns/a", memory=Gi, termination_grace_period_seconds=pod_grace)]
    m.synchronize(0.0, node(mem_free=512 * Mi), pods)
    (e,) = m.synchronize(60.0, node(mem_free=512 * Mi), pods).evict
    assert e.grace_seconds == expected


def test_hard_threshold_wins_over_soft_of_the_same_signal() -> None:
    m = manager(SOFT_MEMORY)
    pods = [pod("ns/a", memory=Gi, termination_grace_period_seconds=30)]
    (e,) = m.synchronize(0.0, node(mem_free=50 * Mi), pods).evict
    assert e.grace_seconds == ev.IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS


# ========================================================= transition period


def test_condition_outlives_pressure_by_the_transition_period() -> None:
    m = manager({"evictionPressureTransitionPeriod": "5m"})
    m.synchronize(0.0, node(mem_free=Mi), [])
    calm = node()
    assert m.synchronize(10.0, calm, []).conditions["MemoryPressure"]
    assert m.synchronize(299.9, calm, []).conditions["MemoryPressure"]
    assert not m.synchronize(300.0, calm, []).conditions["MemoryPressure"]


def test_transition_period_counts_from_the_last_pass_under_pressure() -> None:
    m = manager({"evictionPressureTransitionPeriod": "30s"})
    m.synchronize(0.0, node(mem_free=Mi), [])
    m.synchronize(20.0, node(mem_free=Mi), [])
    assert m.synchronize(49.0, node(), []).conditions["MemoryPressure"]
    assert not m.synchronize(50.0, node(), []).conditions["MemoryPressure"]


def test_each_condition_has_its_own_signals() -> None:
    m = EvictionManager()
    d = m.synchronize(0.0, node(inodes_free=10_000, pids_used=4090), [])
    # nodefs.inodesFree < 5% → DiskPressure; no pid threshold configured by default
    assert d.conditions == {**NO_PRESSURE, "DiskPressure": True}
    m2 = manager({"evictionHard": {"pid.available": "100"}})
    assert m2.synchronize(0.0, node(pids_used=4090), []).conditions == {
        **NO_PRESSURE,
        "PIDPressure": True,
    }


# =========================================================== minimum reclaim


def test_evictions_continue_until_minimum_reclaim_is_met() -> None:
    m = manager(
        {
            "evictionHard": {"memory.available": "100Mi"},
            "evictionMinimumReclaim": {"memory.available": "500Mi"},
        }
    )
    pods = [pod("ns/a", memory=3 * Gi), pod("ns/b", memory=2 * Gi), pod("ns/c", memory=Gi)]
    assert evicted(m.synchronize(0.0, node(mem_free=50 * Mi), pods)) == ["ns/a"]
    # a is gone; 300Mi free is above 100Mi but below 100Mi + 500Mi: not resolved yet
    d = m.synchronize(10.0, node(mem_free=300 * Mi), pods[1:])
    assert evicted(d) == ["ns/b"]
    assert d.conditions["MemoryPressure"]
    # 600Mi free: resolved, no more evictions (the condition waits out its transition)
    d = m.synchronize(20.0, node(mem_free=600 * Mi), pods[2:])
    assert d.evict == ()
    assert d.thresholds_observed == ()
    # and, once resolved, 300Mi free is no longer a reason to evict
    assert m.synchronize(30.0, node(mem_free=300 * Mi), pods[2:]).evict == ()


# ================================================================ disk, images

IMAGES = [
    ImageStats("small:1", 1 * Gi),
    ImageStats("big:1", 6 * Gi),
    ImageStats("used:1", 20 * Gi, in_use=True),
    ImageStats("pause:3.9", 10 * Gi, pinned=True),
    ImageStats("mid:1", 3 * Gi),
]


def test_disk_pressure_deletes_unused_images_first_and_spares_pods_if_enough() -> None:
    # nodefs 10% of 100Gi ≈ 10Gi, imagefs (= nodefs here) 15% ≈ 15Gi: 6Gi free meets both;
    # 10Gi of unused images bring it to 16Gi, above both.
    d = EvictionManager().synchronize(0.0, node(nodefs_free=6 * Gi), [pod("ns/a")], IMAGES)
    assert d.conditions["DiskPressure"]
    assert d.reclaim_signal == ev.NODEFS_AVAILABLE
    assert d.images_to_delete == ("big:1", "mid:1", "small:1")
    assert d.evict == ()


def test_disk_pressure_evicts_when_images_are_not_enough() -> None:
    pods = [pod("ns/quiet", ephemeral_storage=Gi), pod("ns/writer", ephemeral_storage=30 * Gi)]
    d = EvictionManager().synchronize(0.0, node(nodefs_free=2 * Gi), pods, IMAGES)
    assert d.images_to_delete == ("big:1", "mid:1", "small:1")
    assert evicted(d) == ["ns/writer"]
    assert d.evict[0].message.startswith("The node was low on resource: ephemeral-storage. ")


def test_separate_imagefs_nodefs_pressure_evicts_without_image_gc() -> None:
    d = EvictionManager().synchronize(
        0.0,
        node(nodefs_free=5 * Gi, imagefs_free=90 * Gi),
        [
            pod("ns/layer", ephemeral_storage=9 * Gi, writable_layer=9 * Gi),
            pod("ns/logs", ephemeral_storage=Gi),
        ],
        IMAGES,
    )
    assert d.reclaim_signal == ev.NODEFS_AVAILABLE
    assert d.images_to_delete == ()
    assert evicted(d) == ["ns/logs"]  # nodefs holds logs and volumes, not writable layers


def test_separate_imagefs_pressure_reclaims_images_on_imagefs() -> None:
    d = EvictionManager().synchronize(0.0, node(imagefs_free=10 * Gi), [pod("ns/a")], IMAGES)
    assert d.reclaim_signal == ev.IMAGEFS_AVAILABLE
    assert d.images_to_delete == ("big:1", "mid:1", "small:1")
    assert d.evict == ()  # 10Gi + 10Gi freed ≥ 15% of 100Gi


def test_image_gc_must_also_clear_every_other_threshold_with_its_min_reclaim() -> None:
    # Upstream re-checks all configured thresholds after node-level reclaim: a soft memory
    # threshold still inside its grace period keeps the disk eviction going.
    m = manager(
        {
            "evictionHard": {"nodefs.available": "10Gi"},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "5m"},
        }
    )
    pods = [pod("ns/a", ephemeral_storage=Gi)]
    d = m.synchronize(0.0, node(nodefs_free=5 * Gi, mem_free=512 * Mi), pods, IMAGES)
    assert d.reclaim_signal == ev.NODEFS_AVAILABLE
    assert d.images_to_delete == ("big:1", "mid:1", "small:1")
    assert evicted(d) == ["ns/a"]
    # without the memory threshold met, the same images would have been enough
    d = manager({"evictionHard": {"nodefs.available": "10Gi"}}).synchronize(
        0.0, node(nodefs_free=5 * Gi), pods, IMAGES
    )
    assert d.evict == ()


def test_freed_image_inodes_count_for_inode_pressure() -> None:
    images = [ImageStats("fat:1", Gi, inodes=100_000)]
    m = manager({"evictionHard": {"nodefs.inodesFree": "5%"}})
    d = m.synchronize(0.0, node(inodes_free=40_000), [pod("ns/a", inodes=10)], images)
    assert d.reclaim_signal == ev.NODEFS_INODES_FREE
    assert d.images_to_delete == ("fat:1",)
    assert d.evict == ()


def test_memory_is_reclaimed_before_disk() -> None:
    pods = [pod("ns/mem", memory=4 * Gi), pod("ns/disk", ephemeral_storage=40 * Gi, memory=0)]
    d = EvictionManager().synchronize(0.0, node(mem_free=Mi, nodefs_free=Gi), pods, IMAGES)
    assert d.reclaim_signal == ev.MEMORY_AVAILABLE
    assert d.images_to_delete == ()
    assert evicted(d) == ["ns/mem"]
    assert d.conditions == {**NO_PRESSURE, "MemoryPressure": True, "DiskPressure": True}


def test_pid_pressure_evicts_the_lowest_priority_pod() -> None:
    m = manager({"evictionHard": {"pid.available": "5%"}})
    pods = [pod("ns/forky", priority=10, pids=3000), pod("ns/low", priority=0, pids=5)]
    d = m.synchronize(0.0, node(pids_used=4000), pods)
    assert d.conditions["PIDPressure"]
    assert evicted(d) == ["ns/low"]
    assert d.evict[0].message == (
        "The node was low on resource: pids. Threshold quantity: 204, available: 96. "
    )


def test_containerfs_thresholds_follow_nodefs_on_a_single_filesystem() -> None:
    m = EvictionManager()
    assert ev.CONTAINERFS_AVAILABLE not in {t.signal for t in m.thresholds}
    d = m.synchronize(0.0, node(nodefs_free=Gi), [])
    assert ev.CONTAINERFS_AVAILABLE in {t.signal for t in m.thresholds}
    assert ev.CONTAINERFS_AVAILABLE in {t.signal for t in d.thresholds_observed}


def test_filesystem_layout_is_fixed_at_the_first_pass() -> None:
    m = EvictionManager()
    m.synchronize(0.0, node(), [])
    with pytest.raises(ValueError, match="layout changed from single to separate-imagefs"):
        m.synchronize(10.0, node(imagefs_free=50 * Gi), [])


# ================================================================ candidates


@pytest.mark.parametrize(
    "critical",
    [
        {"priority": ev.SYSTEM_CRITICAL_PRIORITY},
        {"priority": 2_000_001_000},
        {"static": True, "priority": -5},
    ],
)
def test_critical_pods_are_never_evicted_the_next_in_rank_goes(critical: dict[str, object]) -> None:
    pods = [pod("ns/critical", memory=6 * Gi, **critical), pod("ns/next", memory=Gi)]
    d = EvictionManager().synchronize(0.0, node(mem_free=Mi), pods)
    assert evicted(d) == ["ns/next"]


def test_only_critical_pods_means_no_eviction() -> None:
    pods = [pod("kube-system/etcd", static=True, memory=6 * Gi)]
    assert EvictionManager().synchronize(0.0, node(mem_free=Mi), pods).evict == ()


def test_terminating_pods_are_not_candidates() -> None:
    pods = [pod("ns/dying", memory=6 * Gi, terminating=True), pod("ns/next", memory=Gi)]
    assert evicted(EvictionManager().synchronize(0.0, node(mem_free=Mi), pods)) == ["ns/next"]


# ========================================================= waiting for cleanup


def test_no_pass_runs_while_the_evicted_pod_is_still_there() -> None:
    m = EvictionManager()
    pods = [pod("ns/a", memory=3 * Gi), pod("ns/b", memory=2 * Gi)]
    assert evicted(m.synchronize(0.0, node(mem_free=Mi), pods)) == ["ns/a"]
    d = m.synchronize(10.0, node(mem_free=Mi), pods)
    assert d.waiting_for_cleanup
    assert d.evict == ()
    assert d.conditions["MemoryPressure"]
    assert not m.idle()
    d = m.synchronize(20.0, node(mem_free=Mi), pods[1:])  # a is gone
    assert not d.waiting_for_cleanup
    assert evicted(d) == ["ns/b"]


def test_waiting_for_cleanup_gives_up_after_thirty_seconds() -> None:
    m = EvictionManager()
    pods = [pod("ns/a", memory=3 * Gi), pod("ns/b", memory=2 * Gi)]
    m.synchronize(0.0, node(mem_free=Mi), pods)
    assert m.synchronize(29.9, node(mem_free=Mi), pods).waiting_for_cleanup
    d = m.synchronize(30.0, node(mem_free=Mi), pods)
    assert not d.waiting_for_cleanup
    assert len(d.evict) == 1


def test_stale_stats_update_conditions_but_evict_nothing() -> None:
    m = EvictionManager()
    assert m.synchronize(0.0, node(), [], ()).evict == ()
    m.synchronize(10.0, node(time=100.0), [pod("ns/a")])
    d = m.synchronize(20.0, node(mem_free=Mi, time=100.0), [pod("ns/a")])
    assert d.conditions["MemoryPressure"]
    assert d.evict == ()
    assert evicted(m.synchronize(30.0, node(mem_free=Mi, time=110.0), [pod("ns/a")])) == ["ns/a"]


# ========================================================================= idle


def test_idle_until_a_threshold_is_met_and_again_after_the_transition() -> None:
    m = manager({**SOFT_MEMORY, "evictionPressureTransitionPeriod": "1m"})
    assert m.idle()
    m.synchronize(0.0, node(), [])
    assert m.idle()
    m.synchronize(10.0, node(mem_free=512 * Mi), [])  # soft threshold being timed
    assert not m.idle()
    m.synchronize(20.0, node(), [])
    assert not m.idle()  # MemoryPressure holds for the transition period
    m.synchronize(80.0, node(), [])
    assert m.idle()
    assert m.conditions == NO_PRESSURE


# ==================================================================== admission

ADMIT = [
    ("no pressure admits BestEffort", "BestEffort", False, {}, False, True, ""),
    (
        "memory pressure admits Burstable",
        "Burstable",
        False,
        {"MemoryPressure": True},
        False,
        True,
        "",
    ),
    (
        "memory pressure admits Guaranteed",
        "Guaranteed",
        False,
        {"MemoryPressure": True, "DiskPressure": False},
        False,
        True,
        "",
    ),
    (
        "memory pressure rejects BestEffort",
        "BestEffort",
        False,
        {"MemoryPressure": True},
        False,
        False,
        "The node had condition: [MemoryPressure]. ",
    ),
    (
        "memory pressure admits BestEffort tolerating the memory-pressure taint",
        "BestEffort",
        True,
        {"MemoryPressure": True},
        False,
        True,
        "",
    ),
    (
        "disk pressure rejects every pod",
        "Guaranteed",
        True,
        {"DiskPressure": True},
        False,
        False,
        "The node had condition: [DiskPressure]. ",
    ),
    (
        "PID pressure rejects every pod",
        "Burstable",
        False,
        {"PIDPressure": True},
        False,
        False,
        "The node had condition: [PIDPressure]. ",
    ),
    (
        "memory with disk pressure rejects even a tolerating BestEffort",
        "BestEffort",
        True,
        {"DiskPressure": True, "MemoryPressure": True},
        False,
        False,
        "The node had condition: [MemoryPressure DiskPressure]. ",
    ),
    (
        "critical pods are admitted under any pressure",
        "BestEffort",
        False,
        {"MemoryPressure": True, "DiskPressure": True, "PIDPressure": True},
        True,
        True,
        "",
    ),
]


@pytest.mark.parametrize(
    ("rule", "qos", "tolerates", "conditions", "critical", "ok", "message"),
    ADMIT,
    ids=[a[0] for a in ADMIT],
)
def test_admission_under_pressure(
    rule: str,
    qos: str,
    tolerates: bool,
    conditions: dict[str, bool],
    critical: bool,
    ok: bool,
    message: str,
) -> None:
    got = ev.admit(qos, tolerates, conditions, critical=critical)
    assert got == (ok, ev.REASON_EVICTED if not ok else "", message), rule


def test_manager_admit_uses_its_current_conditions() -> None:
    m = EvictionManager()
    assert m.admit("BestEffort", False) == (True, "", "")
    m.synchronize(0.0, node(mem_free=Mi), [])
    assert m.admit("BestEffort", False)[0] is False
    assert m.admit("Burstable", False)[0] is True
