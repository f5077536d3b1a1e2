"""Eviction thresholds and their configuration: KubeletConfiguration parsing (defaults,
merging, flag forms, errors that name the field), float32 percentages, the strict
less-than rule with minimum reclaim, containerfs thresholds per filesystem layout, and the
signal observations a node's stats give."""

from __future__ import annotations

import pytest

from services.api.machinery.duration import parse_duration
from services.kubelet import eviction as ev
from services.kubelet.eviction import (
    EvictionConfig,
    EvictionConfigError,
    FsLayout,
    NodeStats,
    Observation,
    Percentage,
    Threshold,
)

Ki, Mi, Gi = 2**10, 2**20, 2**30


def by_signal(thresholds: tuple[Threshold, ...]) -> dict[str, Threshold]:
    out: dict[str, Threshold] = {}
    for t in thresholds:
        assert t.signal not in out, f"two thresholds for {t.signal}"
        out[t.signal] = t
    return out


# ==================================================================== amounts


@pytest.mark.parametrize(
    ("text", "capacity", "amount"),
    [
        # float32(10)/100 = 0.100000001490116…: upstream's amount is not exactly 1Gi
        ("10%", 10 * Gi, 1_073_741_840),
        ("15%", 100 * Gi, 16_106_128_000),
        ("5%", 1_000_000, 50_000),
        ("50%", 3, 1),  # truncated toward zero, as int64(float64)
        ("0.5%", 8 * Gi, 42_949_672),  # float32(0.005) is just below 0.005
        ("100%", 12345, 12345),
    ],
)
def test_percentage_amount_is_float32_fraction_of_capacity_truncated(
    text: str, capacity: int, amount: int
) -> None:
    assert Threshold(ev.NODEFS_AVAILABLE, Percentage.parse(text)).amount(capacity) == amount


def test_absolute_amount_ignores_capacity() -> None:
    t = Threshold(ev.MEMORY_AVAILABLE, 100 * Mi)
    assert t.amount(1) == t.amount(64 * Gi) == 100 * Mi


def test_float_value_is_read_as_a_fraction() -> None:
    assert Threshold(ev.MEMORY_AVAILABLE, 0.1).value == Percentage.parse("10%")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"signal": "cpu.available", "value": 1}, "unsupported eviction signal cpu.available"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": 0}, "value must be positive"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": -5}, "value must be positive"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": 0.0}, "above 0%"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": 1.5}, "within [0, 1]"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": True}, "int amount or a Percentage"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": 1, "grace_period": -1}, "grace_period"),
        ({"signal": ev.MEMORY_AVAILABLE, "value": 1, "min_reclaim": -1}, "non-negative"),
    ],
)
def test_threshold_rejects_nonsense(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        Threshold(**kwargs)  # type: ignore[arg-type]


# ===================================================================== is met


@pytest.mark.parametrize(
    ("available", "enforce", "met"),
    [
        (99 * Mi, False, True),
        (100 * Mi, False, False),  # strictly less than: equal is not met
        (101 * Mi, False, False),
        (100 * Mi, True, True),  # 100Mi + 50Mi minimum reclaim
        (150 * Mi - 1, True, True),
        (150 * Mi, True, False),
    ],
)
def test_threshold_met_strictly_below_amount_plus_min_reclaim_when_enforced(
    available: int, enforce: bool, met: bool
) -> None:
    t = Threshold(ev.MEMORY_AVAILABLE, 100 * Mi, min_reclaim=50 * Mi)
    assert t.is_met(Observation(available, 8 * Gi), enforce_min_reclaim=enforce) is met


def test_percentage_min_reclaim_is_of_the_signal_capacity() -> None:
    t = Threshold(ev.NODEFS_AVAILABLE, Percentage.parse("10%"), min_reclaim=Percentage(0.05))
    cap = 1_000_000
    assert t.amount(cap) + t.reclaim_amount(cap) == 150_000
    assert t.is_met(Observation(149_999, cap), enforce_min_reclaim=True)
    assert not t.is_met(Observation(150_001, cap), enforce_min_reclaim=True)


def test_thresholds_met_skips_signals_without_observation() -> None:
    pid = Threshold(ev.PID_AVAILABLE, 100)
    mem = Threshold(ev.MEMORY_AVAILABLE, 100 * Mi)
    obs = {ev.MEMORY_AVAILABLE: Observation(0, Gi)}
    assert ev.thresholds_met([pid, mem], obs) == [mem]


# ============================================================ config: defaults


def test_default_config_has_the_kubelet_linux_hard_thresholds() -> None:
    t = by_signal(EvictionConfig().thresholds())
    assert set(t) == {
        ev.MEMORY_AVAILABLE,
        ev.NODEFS_AVAILABLE,
        ev.NODEFS_INODES_FREE,
        ev.IMAGEFS_AVAILABLE,
        ev.IMAGEFS_INODES_FREE,
    }
    assert t[ev.MEMORY_AVAILABLE].value == 100 * Mi
    assert t[ev.NODEFS_AVAILABLE].value == Percentage.parse("10%")
    assert t[ev.IMAGEFS_AVAILABLE].value == Percentage.parse("15%")
    assert t[ev.NODEFS_INODES_FREE].value == Percentage.parse("5%")
    assert all(x.hard for x in t.values())
    cfg = EvictionConfig()
    assert (cfg.pressure_transition_period, cfg.monitoring_period) == (300.0, 10.0)
    assert cfg.max_pod_grace_period == 0


@pytest.mark.parametrize("d", [None, {}, {"maxPods": 110, "apiVersion": "x"}])
def test_from_dict_without_eviction_hard_uses_defaults(d: dict[str, object] | None) -> None:
    assert EvictionConfig.from_dict(d).thresholds() == EvictionConfig().thresholds()


def test_partial_eviction_hard_replaces_defaults_like_the_kubelet() -> None:
    # Upstream (and the seeds): other signals are set to zero unless
    # mergeDefaultEvictionSettings is true.
    cfg = EvictionConfig.from_dict({"evictionHard": {"memory.available": "<200Mi"}})
    assert [(t.signal, t.value) for t in cfg.thresholds()] == [(ev.MEMORY_AVAILABLE, 200 * Mi)]


def test_merge_default_eviction_settings_keeps_unspecified_defaults() -> None:
    cfg = EvictionConfig.from_dict(
        {"evictionHard": {"memory.available": "200Mi"}, "mergeDefaultEvictionSettings": True}
    )
    t = by_signal(cfg.thresholds())
    assert t[ev.MEMORY_AVAILABLE].value == 200 * Mi
    assert t[ev.NODEFS_AVAILABLE].value == Percentage.parse("10%")
    assert len(t) == 5


def test_empty_eviction_hard_map_means_no_hard_thresholds() -> None:
    assert EvictionConfig.from_dict({"evictionHard": {}}).thresholds() == ()


@pytest.mark.parametrize("value", ["0%", "100%", "<0%", "0.0%"])
def test_zero_and_full_percentages_disable_the_threshold(value: str) -> None:
    cfg = EvictionConfig.from_dict({"evictionHard": {"memory.available": value}})
    assert cfg.thresholds() == ()


@pytest.mark.parametrize(
    ("value", "amount"),
    [
        ("100Mi", 100 * Mi),
        ("<100Mi", 100 * Mi),
        ("1.5Gi", 3 * Gi // 2),
        ("1G", 10**9),
        ("500", 500),
        (500, 500),
        ("<10%", Percentage(0.1)),
        ("12.5%", Percentage(0.125)),
    ],
)
def test_threshold_values_as_kubernetes_writes_them(value: object, amount: object) -> None:
    cfg = EvictionConfig.from_dict({"evictionHard": {"memory.available": value}})
    (t,) = cfg.thresholds()
    assert t.value == amount


def test_flag_form_strings_are_accepted() -> None:
    cfg = EvictionConfig.from_dict(
        {
            "evictionHard": "memory.available<1Gi, nodefs.available<5%",
            "evictionSoft": "memory.available<2Gi",
            "evictionSoftGracePeriod": "memory.available=1m30s",
            "evictionMinimumReclaim": "memory.available=500Mi",
        }
    )
    hard, soft = [t for t in cfg.thresholds() if t.signal == ev.MEMORY_AVAILABLE]
    assert (hard.value, hard.grace_period, hard.min_reclaim) == (Gi, 0.0, 500 * Mi)
    assert (soft.value, soft.grace_period, soft.min_reclaim) == (2 * Gi, 90.0, 500 * Mi)


def test_soft_thresholds_take_grace_periods_and_minimum_reclaim_applies_to_both() -> None:
    cfg = EvictionConfig.from_dict(
        {
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1Gi"},
            "evictionSoft": {"memory.available": "1Gi", "nodefs.available": "15%"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s", "nodefs.available": "2m"},
            "evictionMinimumReclaim": {"memory.available": "0Mi", "nodefs.available": "500Mi"},
            "evictionMaxPodGracePeriod": 60,
            "evictionPressureTransitionPeriod": "30s",
            "evictionMonitoringPeriod": "5s",
        }
    )
    got = {(t.signal, t.hard): t for t in cfg.thresholds()}
    assert got[(ev.MEMORY_AVAILABLE, False)].grace_period == 90.0
    assert got[(ev.NODEFS_AVAILABLE, False)].grace_period == 120.0
    assert got[(ev.NODEFS_AVAILABLE, True)].min_reclaim == 500 * Mi
    assert got[(ev.NODEFS_AVAILABLE, False)].min_reclaim == 500 * Mi
    assert got[(ev.MEMORY_AVAILABLE, True)].min_reclaim == 0
    assert (cfg.max_pod_grace_period, cfg.pressure_transition_period) == (60.0, 30.0)
    assert cfg.monitoring_period == 5.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2h45m", 9900.0),
        ("0", 0.0),
        ("+10s", 10.0),
        ("-1m", -60.0),
        ("1h0m0s", 3600.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "1x", "s", "1m 30s", "1.5.2s", "-"])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_zero_pressure_transition_period_means_the_default_five_minutes() -> None:
    cfg = EvictionConfig.from_dict({"evictionPressureTransitionPeriod": "0s"})
    assert cfg.pressure_transition_period == 300.0


def test_grace_period_for_a_signal_without_soft_threshold_is_ignored() -> None:
    cfg = EvictionConfig.from_dict({"evictionSoftGracePeriod": {"pid.available": "1m"}})
    assert cfg.thresholds() == EvictionConfig().thresholds()


def test_soft_threshold_with_zero_grace_acts_as_hard() -> None:
    cfg = EvictionConfig.from_dict(
        {
            "evictionHard": {},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "0s"},
        }
    )
    (t,) = cfg.thresholds()
    assert t.hard


def test_user_containerfs_thresholds_are_reported_as_ignored() -> None:
    cfg = EvictionConfig.from_dict({"evictionHard": {"containerfs.available": "1Gi"}})
    assert cfg.warnings() == [
        'evictionHard["containerfs.available"] is ignored: '
        "containerfs thresholds follow nodefs or imagefs"
    ]


# ============================================================== config: errors

ERRORS = [
    (
        {"evictionHard": {"memory.available": "<lots"}},
        'evictionHard["memory.available"]: "<lots": expected a quantity like "100Mi" '
        'or a percentage like "10%"',
    ),
    (
        {"evictionHard": {"memory.availabel": "100Mi"}},
        'evictionHard["memory.availabel"]: unsupported eviction signal "memory.availabel"',
    ),
    (
        {"evictionHard": {"memory.available": "-100Mi"}},
        'evictionHard["memory.available"]: "-100Mi": must be positive',
    ),
    (
        {"evictionHard": {"memory.available": "0"}},
        'evictionHard["memory.available"]: "0": must be positive',
    ),
    (
        {"evictionHard": {"nodefs.available": "150%"}},
        'evictionHard["nodefs.available"]: "150%": a percentage must be at most 100%',
    ),
    (
        {"evictionHard": {"nodefs.available": "-5%"}},
        'evictionHard["nodefs.available"]: "-5%": a percentage must be at least 0%',
    ),
    (
        {"evictionHard": {"nodefs.available": "ten%"}},
        'evictionHard["nodefs.available"]: "ten%": expected a quantity',
    ),
    (
        {"evictionHard": {"nodefs.available": ">1Gi"}},
        'evictionHard["nodefs.available"]: ">1Gi": expected a quantity',
    ),
    (
        {"evictionHard": {"nodefs.available": True}},
        'evictionHard["nodefs.available"]: True: expected a quantity',
    ),
    (
        {"evictionSoft": {"memory.available": "1Gi"}},
        'evictionSoft["memory.available"]: "1Gi": a soft threshold needs a grace period; '
        'set evictionSoftGracePeriod["memory.available"]',
    ),
    (
        {
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "soon"},
        },
        'evictionSoftGracePeriod["memory.available"]: "soon": expected a duration like "1m30s"',
    ),
    (
        {
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "-1m"},
        },
        'evictionSoftGracePeriod["memory.available"]: "-1m": must not be negative',
    ),
    (
        {"evictionSoftGracePeriod": {"swap.available": "1m"}},
        'evictionSoftGracePeriod["swap.available"]: unsupported eviction signal',
    ),
    (
        {"evictionMinimumReclaim": {"memory.available": "-1Mi"}},
        'evictionMinimumReclaim["memory.available"]: "-1Mi": must not be negative',
    ),
    (
        {"evictionMinimumReclaim": {"memory.available": "0%"}},
        'evictionMinimumReclaim["memory.available"]: "0%": a percentage must be above 0%',
    ),
    (
        {"evictionMinimumReclaim": {"pids": "5"}},
        'evictionMinimumReclaim["pids"]: unsupported eviction signal "pids"',
    ),
    (
        {"evictionMaxPodGracePeriod": -1},
        "evictionMaxPodGracePeriod: -1: must not be negative",
    ),
    (
        {"evictionMaxPodGracePeriod": "30s"},
        'evictionMaxPodGracePeriod: "30s": expected whole seconds',
    ),
    (
        {"evictionPressureTransitionPeriod": "5 minutes"},
        'evictionPressureTransitionPeriod: "5 minutes": expected a duration',
    ),
    ({"evictionMonitoringPeriod": "0s"}, 'evictionMonitoringPeriod: "0s": must be positive'),
    ({"evictionHardd": {}}, "evictionHardd: unknown eviction setting"),
    ({"evictionHard": ["memory.available<1Gi"]}, "evictionHard: ['memory.available<1Gi']"),
    ({"evictionHard": "memory.available=1Gi"}, 'evictionHard: "memory.available=1Gi": expected'),
    ({"mergeDefaultEvictionSettings": "yes"}, 'mergeDefaultEvictionSettings: "yes": expected'),
    (
        {"evictionHard": {"memory.available": "1e400"}},
        'evictionHard["memory.available"]: "1e400": must be at most 9223372036854775807m',
    ),
]


@pytest.mark.parametrize(("d", "message"), ERRORS, ids=[m[:60] for _, m in ERRORS])
def test_config_errors_name_the_field_value_and_expectation(
    d: dict[str, object], message: str
) -> None:
    with pytest.raises(EvictionConfigError) as info:
        EvictionConfig.from_dict(d)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(EvictionConfigError, match='evictionHard\\["memory.available"\\]'):
        EvictionConfig(hard={"memory.available": "lots"})
    with pytest.raises(EvictionConfigError, match="pressure_transition_period"):
        EvictionConfig(pressure_transition_period=0)


# ========================================================= containerfs per layout


def _hard(signal: str, value: object) -> Threshold:
    return Threshold(signal, value)  # type: ignore[arg-type]


BASE = (
    _hard(ev.NODEFS_AVAILABLE, Percentage(0.1)),
    _hard(ev.NODEFS_INODES_FREE, Percentage(0.05)),
    _hard(ev.IMAGEFS_AVAILABLE, Percentage(0.15)),
    _hard(ev.CONTAINERFS_AVAILABLE, 5 * Gi),  # the user's: always replaced
    Threshold(ev.IMAGEFS_AVAILABLE, Percentage(0.3), grace_period=60),
)


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        (
            FsLayout.SINGLE,
            {
                (ev.CONTAINERFS_AVAILABLE, Percentage(0.1), 0.0),
                (ev.CONTAINERFS_INODES_FREE, Percentage(0.05), 0.0),
            },
        ),
        (
            FsLayout.SPLIT_IMAGEFS,
            {
                (ev.CONTAINERFS_AVAILABLE, Percentage(0.1), 0.0),
                (ev.CONTAINERFS_INODES_FREE, Percentage(0.05), 0.0),
            },
        ),
        (
            FsLayout.SEPARATE_IMAGEFS,
            {
                (ev.CONTAINERFS_AVAILABLE, Percentage(0.15), 0.0),
                (ev.CONTAINERFS_AVAILABLE, Percentage(0.3), 60.0),
            },
        ),
    ],
)
def test_containerfs_thresholds_copy_nodefs_or_imagefs_by_layout(
    layout: FsLayout, expected: set[tuple[str, object, float]]
) -> None:
    got = ev.thresholds_for_layout(BASE, layout)
    containerfs = {(t.signal, t.value, t.grace_period) for t in got if "containerfs" in t.signal}
    assert containerfs == expected
    others = [t for t in got if "containerfs" not in t.signal]
    assert others == [t for t in BASE if "containerfs" not in t.signal]


# ================================================================ observations


def stats(**kw: object) -> NodeStats:
    base: dict[str, object] = {
        "memory_capacity": 8 * Gi,
        "memory_working_set": 3 * Gi,
        "nodefs_capacity": 100 * Gi,
        "nodefs_available": 40 * Gi,
        "nodefs_inodes": 1_000_000,
        "nodefs_inodes_free": 600_000,
        "imagefs_capacity": 200 * Gi,
        "imagefs_available": 150 * Gi,
        "imagefs_inodes": 2_000_000,
        "imagefs_inodes_free": 1_500_000,
        "containerfs_capacity": 50 * Gi,
        "containerfs_available": 10 * Gi,
        "containerfs_inodes": 500_000,
        "containerfs_inodes_free": 100_000,
        "pid_max": 4096,
        "pids_used": 1000,
    }
    base.update(kw)
    return NodeStats(**base)  # type: ignore[arg-type]


def test_memory_available_is_capacity_minus_working_set() -> None:
    o = ev.signal_observations(stats())
    assert o[ev.MEMORY_AVAILABLE] == Observation(5 * Gi, 8 * Gi)


def test_memory_available_is_clipped_at_zero_when_overcommitted() -> None:
    o = ev.signal_observations(stats(memory_working_set=9 * Gi))
    assert o[ev.MEMORY_AVAILABLE] == Observation(0, 9 * Gi)


def test_single_filesystem_imagefs_and_containerfs_observe_nodefs() -> None:
    o = ev.signal_observations(stats())
    assert stats().layout is FsLayout.SINGLE
    for fs in ("imagefs", "containerfs"):
        assert o[f"{fs}.available"] == Observation(40 * Gi, 100 * Gi)
        assert o[f"{fs}.inodesFree"] == Observation(600_000, 1_000_000)


def test_separate_imagefs_has_its_own_numbers_and_containerfs_follows_it() -> None:
    s = stats(imagefs_separate=True)
    o = ev.signal_observations(s)
    assert s.layout is FsLayout.SEPARATE_IMAGEFS
    assert o[ev.NODEFS_AVAILABLE] == Observation(40 * Gi, 100 * Gi)
    assert o[ev.IMAGEFS_AVAILABLE] == o[ev.CONTAINERFS_AVAILABLE] == Observation(150 * Gi, 200 * Gi)
    assert o[ev.CONTAINERFS_INODES_FREE] == Observation(1_500_000, 2_000_000)


def test_split_image_filesystem_observes_containerfs_itself() -> None:
    s = stats(imagefs_separate=True, containerfs_split=True)
    o = ev.signal_observations(s)
    assert s.layout is FsLayout.SPLIT_IMAGEFS
    assert o[ev.CONTAINERFS_AVAILABLE] == Observation(10 * Gi, 50 * Gi)
    assert o[ev.CONTAINERFS_INODES_FREE] == Observation(100_000, 500_000)
    assert o[ev.IMAGEFS_AVAILABLE] == Observation(150 * Gi, 200 * Gi)


def test_containerfs_split_without_separate_imagefs_is_rejected() -> None:
    with pytest.raises(ValueError, match="needs imagefs_separate"):
        stats(containerfs_split=True)


def test_unreported_inodes_and_pids_give_no_signal() -> None:
    o = ev.signal_observations(stats(nodefs_inodes=0, pid_max=0))
    assert ev.NODEFS_INODES_FREE not in o
    assert ev.IMAGEFS_INODES_FREE not in o  # imagefs is nodefs here
    assert ev.PID_AVAILABLE not in o


def test_pid_available_is_max_minus_used() -> None:
    assert ev.signal_observations(stats())[ev.PID_AVAILABLE] == Observation(3096, 4096)


def test_format_quantity_prints_like_kubernetes() -> None:
    assert ev.format_quantity(50 * Mi) == "50Mi"
    assert ev.format_quantity(48144 * Ki) == "48144Ki"
    assert ev.format_quantity(1_500_000_000) == "1500000000"
    assert ev.format_quantity(40_000, "DecimalSI") == "40k"
    assert ev.format_quantity(0) == "0"
