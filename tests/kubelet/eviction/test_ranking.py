"""Which pod goes first under each kind of pressure (upstream rankMemoryPressure,
rankDiskPressureFunc per filesystem layout, rankPIDPressure), and the eviction message
a kubelet would write on it."""

from __future__ import annotations

import pytest

from services.kubelet import eviction as ev
from services.kubelet.eviction import ContainerStats, FsLayout, Observation, PodStats, Threshold

Mi, Gi = 2**20, 2**30


def pod(key: str, **kw: object) -> PodStats:
    return PodStats(key=key, uid=key, **kw)  # type: ignore[arg-type]


def keys(pods: list[PodStats]) -> list[str]:
    return [p.key for p in pods]


# ===================================================================== memory

MEMORY_CASES = [
    (
        "a leaking low-request pod goes before a higher-priority well-behaved one, and "
        "before a lower-priority one within its request",
        [
            pod("well-behaved", priority=1000, memory_request=2 * Gi, memory=Gi),
            pod("leaking", priority=500, memory_request=100 * Mi, memory=800 * Mi),
            pod("low-within", priority=0, memory_request=2 * Gi, memory=Gi),
        ],
        ["leaking", "low-within", "well-behaved"],
    ),
    (
        "among pods exceeding requests, lower priority goes first even if it uses less",
        [
            pod("big-high", priority=100, memory_request=0, memory=4 * Gi),
            pod("small-low", priority=10, memory_request=0, memory=10 * Mi),
        ],
        ["small-low", "big-high"],
    ),
    (
        "same priority: the largest usage above request goes first",
        [
            pod("over-100Mi", memory_request=Gi, memory=Gi + 100 * Mi),
            pod("over-1Gi", memory_request=Gi, memory=2 * Gi),
            pod("over-10Mi", memory_request=Gi, memory=Gi + 10 * Mi),
        ],
        ["over-1Gi", "over-100Mi", "over-10Mi"],
    ),
    (
        "BestEffort counts as exceeding its request when it uses anything",
        [
            pod("guaranteed-low", priority=-10, qos="Guaranteed", memory_request=Gi, memory=Gi),
            pod("besteffort-1-byte", priority=10, qos="BestEffort", memory=1),
        ],
        ["besteffort-1-byte", "guaranteed-low"],
    ),
    (
        "usage equal to the request does not exceed it",
        [
            pod("at-request", priority=0, memory_request=Gi, memory=Gi),
            pod("idle-besteffort", priority=5, memory=0),
            pod("one-over", priority=9, memory_request=Gi, memory=Gi + 1),
        ],
        ["one-over", "at-request", "idle-besteffort"],
    ),
    (
        "within requests: lower priority first, then the smallest margin below request",
        [
            pod("far-below", priority=0, memory_request=2 * Gi, memory=Mi),
            pod("near-request", priority=0, memory_request=2 * Gi, memory=2 * Gi - Mi),
            pod("lower-prio", priority=-1, memory_request=2 * Gi, memory=Mi),
        ],
        ["lower-prio", "near-request", "far-below"],
    ),
    (
        "pods without stats go first",
        [
            pod("leaking", priority=0, memory=8 * Gi),
            pod("no-stats", priority=1000, has_stats=False),
        ],
        ["no-stats", "leaking"],
    ),
    (
        "ties keep the input order",
        [pod("b", memory=Mi), pod("a", memory=Mi), pod("c", memory=Mi)],
        ["b", "a", "c"],
    ),
]


@pytest.mark.parametrize(
    ("rule", "pods", "order"), MEMORY_CASES, ids=[c[0][:50] for c in MEMORY_CASES]
)
def test_memory_pressure_ranking(rule: str, pods: list[PodStats], order: list[str]) -> None:
    assert keys(ev.rank_memory_pressure(pods)) == order, rule
    assert keys(ev.rank_pods(ev.MEMORY_AVAILABLE, pods, FsLayout.SINGLE)) == order


# ======================================================================= disk

DISK_CASES = [
    (
        "single filesystem: all of a pod's ephemeral storage counts",
        FsLayout.SINGLE,
        ev.NODEFS_AVAILABLE,
        [
            pod("layer-hog", ephemeral_storage=5 * Gi, writable_layer=5 * Gi),
            pod("log-hog", ephemeral_storage=3 * Gi),
            pod("within", ephemeral_storage=Gi, ephemeral_storage_request=2 * Gi),
        ],
        ["layer-hog", "log-hog", "within"],
    ),
    (
        "storage over request goes before lower priority within request",
        FsLayout.SINGLE,
        ev.IMAGEFS_AVAILABLE,
        [
            pod("low-within", priority=-5, ephemeral_storage=Gi, ephemeral_storage_request=2 * Gi),
            pod("high-over", priority=50, ephemeral_storage=3 * Gi, ephemeral_storage_request=Gi),
        ],
        ["high-over", "low-within"],
    ),
    (
        "separate imagefs: nodefs ranks by logs and volumes, not writable layers",
        FsLayout.SEPARATE_IMAGEFS,
        ev.NODEFS_AVAILABLE,
        [
            pod("layer-hog", ephemeral_storage=5 * Gi, writable_layer=5 * Gi),
            pod("log-hog", ephemeral_storage=3 * Gi),
            pod("volume-hog", ephemeral_storage=4 * Gi, local_volumes=4 * Gi),
        ],
        ["volume-hog", "log-hog", "layer-hog"],
    ),
    (
        "separate imagefs: imagefs ranks by writable layers only",
        FsLayout.SEPARATE_IMAGEFS,
        ev.IMAGEFS_AVAILABLE,
        [
            pod("log-hog", ephemeral_storage=3 * Gi),
            pod("layer-hog", ephemeral_storage=5 * Gi, writable_layer=2 * Gi),
        ],
        ["layer-hog", "log-hog"],
    ),
    (
        "separate imagefs: containerfs ranks like imagefs",
        FsLayout.SEPARATE_IMAGEFS,
        ev.CONTAINERFS_AVAILABLE,
        [
            pod("log-hog", ephemeral_storage=3 * Gi),
            pod("layer-hog", ephemeral_storage=5 * Gi, writable_layer=2 * Gi),
        ],
        ["layer-hog", "log-hog"],
    ),
    (
        "split image filesystem: imagefs holds only images, so priority decides",
        FsLayout.SPLIT_IMAGEFS,
        ev.IMAGEFS_AVAILABLE,
        [
            pod("hog", priority=10, ephemeral_storage=9 * Gi, writable_layer=9 * Gi),
            pod("quiet", priority=1),
        ],
        ["quiet", "hog"],
    ),
    (
        "split image filesystem: containerfs counts layers, logs and volumes",
        FsLayout.SPLIT_IMAGEFS,
        ev.CONTAINERFS_AVAILABLE,
        [
            pod("logs", ephemeral_storage=2 * Gi),
            pod("layer", ephemeral_storage=3 * Gi, writable_layer=3 * Gi),
        ],
        ["layer", "logs"],
    ),
    (
        "inodes: any inode use exceeds the (absent) inode request, then priority",
        FsLayout.SINGLE,
        ev.NODEFS_INODES_FREE,
        [
            pod("no-inodes", priority=-100),
            pod("many-high", priority=100, inodes=90_000),
            pod("few-low", priority=0, inodes=10),
        ],
        ["few-low", "many-high", "no-inodes"],
    ),
    (
        "inodes: a storage request does not stop inode use from counting as exceeding",
        FsLayout.SINGLE,
        ev.NODEFS_INODES_FREE,
        [
            pod("idle-low", priority=0),
            pod("requested-high", priority=100, inodes=500, ephemeral_storage_request=Gi),
        ],
        ["requested-high", "idle-low"],
    ),
    (
        "inodes tie-break: upstream subtracts the ephemeral-storage byte request",
        FsLayout.SINGLE,
        ev.NODEFS_INODES_FREE,
        [
            pod("many-with-request", inodes=90_000, ephemeral_storage_request=Gi),
            pod("few-no-request", inodes=10),
        ],
        ["few-no-request", "many-with-request"],
    ),
    (
        "separate imagefs: imagefs inodes count writable-layer inodes only",
        FsLayout.SEPARATE_IMAGEFS,
        ev.IMAGEFS_INODES_FREE,
        [
            pod("log-inodes", inodes=50_000, priority=-1),
            pod("layer-inodes", inodes=50_000, writable_layer_inodes=100, priority=5),
        ],
        ["layer-inodes", "log-inodes"],
    ),
]


@pytest.mark.parametrize(
    ("rule", "layout", "signal", "pods", "order"),
    DISK_CASES,
    ids=[c[0][:50] for c in DISK_CASES],
)
def test_disk_pressure_ranking_per_layout(
    rule: str, layout: FsLayout, signal: str, pods: list[PodStats], order: list[str]
) -> None:
    assert keys(ev.rank_pods(signal, pods, layout)) == order, rule


# ======================================================================== pids

PID_CASES = [
    (
        "lowest priority first, however few processes it runs",
        [pod("busy-high", priority=10, pids=5000), pod("calm-low", priority=1, pids=3)],
        ["calm-low", "busy-high"],
    ),
    (
        "same priority: most processes first",
        [pod("few", pids=3), pod("most", pids=300), pod("some", pids=30)],
        ["most", "some", "few"],
    ),
    (
        "priority before missing stats",
        [pod("no-stats-high", priority=5, has_stats=False), pod("low", priority=0, pids=1)],
        ["low", "no-stats-high"],
    ),
    (
        "same priority: pods without stats first",
        [pod("busy", pids=900), pod("no-stats", has_stats=False)],
        ["no-stats", "busy"],
    ),
]


@pytest.mark.parametrize(("rule", "pods", "order"), PID_CASES, ids=[c[0] for c in PID_CASES])
def test_pid_pressure_ranking(rule: str, pods: list[PodStats], order: list[str]) -> None:
    assert keys(ev.rank_pid_pressure(pods)) == order, rule
    assert keys(ev.rank_pods(ev.PID_AVAILABLE, pods, FsLayout.SINGLE)) == order


# ===================================================================== message

MEM_100MI = Threshold(ev.MEMORY_AVAILABLE, 100 * Mi, value_format="BinarySI")
MEM_OBS = {ev.MEMORY_AVAILABLE: Observation(50 * Mi, 8 * Gi)}


def test_memory_message_matches_upstream_wording() -> None:
    p = pod("ns/p", memory=Gi, containers=["c"])
    message, annotations = ev.eviction_message("memory", p, [MEM_100MI], MEM_OBS)
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container c was using 1Gi, request is 0, has larger consumption of memory. "
    )
    assert annotations == {
        "offending_containers": "c",
        "offending_containers_usage": "1Gi",
        "starved_resource": "memory",
    }


def test_message_names_only_containers_above_their_request() -> None:
    p = pod(
        "ns/p",
        memory=3 * Gi,
        containers=[
            ContainerStats("app", memory=2 * Gi, memory_request=Gi),
            ContainerStats("sidecar", memory=Gi, memory_request=Gi),
            ContainerStats("db", memory=300_000 * 1024, memory_request=10**9 // 4),
        ],
    )
    message, annotations = ev.eviction_message("memory", p, [MEM_100MI], MEM_OBS)
    assert message.endswith(
        "Container app was using 2Gi, request is 1Gi, has larger consumption of memory. "
        "Container db was using 300000Ki, request is 250M, has larger consumption of memory. "
    )
    assert "sidecar" not in message
    assert annotations["offending_containers"] == "app,db"


def test_bare_container_names_share_the_pods_usage_and_request_evenly() -> None:
    p = pod("ns/p", memory=2 * Gi, memory_request=Gi, containers=["a", "b"])
    message, _ = ev.eviction_message("memory", p, [MEM_100MI], MEM_OBS)
    assert "Container a was using 1Gi, request is 512Mi" in message
    assert "Container b was using 1Gi, request is 512Mi" in message


def test_percentage_threshold_prints_its_amount_as_a_binary_si_integer() -> None:
    t = Threshold(ev.NODEFS_AVAILABLE, ev.Percentage.parse("10%"))
    obs = {ev.NODEFS_AVAILABLE: Observation(512 * Mi, 10 * Gi)}
    p = pod("ns/p", ephemeral_storage=3 * Gi, containers=["c"])
    message, _ = ev.eviction_message("ephemeral-storage", p, [t], obs)
    assert message == (
        "The node was low on resource: ephemeral-storage. "
        "Threshold quantity: 1073741840, available: 512Mi. "
        "Container c was using 3Gi, request is 0, has larger consumption of ephemeral-storage. "
    )


def test_ephemeral_storage_message_counts_layer_and_logs_not_volumes() -> None:
    t = Threshold(ev.NODEFS_AVAILABLE, Gi)
    obs = {ev.NODEFS_AVAILABLE: Observation(0, 10 * Gi)}
    p = pod("ns/p", ephemeral_storage=3 * Gi, local_volumes=2 * Gi, containers=["c"])
    message, _ = ev.eviction_message("ephemeral-storage", p, [t], obs)
    assert "Container c was using 1Gi" in message


@pytest.mark.parametrize(
    ("resource", "signal", "obs", "threshold_text"),
    [
        ("inodes", ev.NODEFS_INODES_FREE, Observation(40_000, 1_000_000), "50000, available: 40k"),
        ("pids", ev.PID_AVAILABLE, Observation(12, 4096), "100, available: 12"),
    ],
)
def test_inode_and_pid_messages_have_no_container_part(
    resource: str, signal: str, obs: Observation, threshold_text: str
) -> None:
    value: object = ev.Percentage(0.05) if resource == "inodes" else 100
    t = Threshold(signal, value, value_format="DecimalSI")  # type: ignore[arg-type]
    p = pod("ns/p", inodes=10**6, pids=4000, containers=["c"])
    message, annotations = ev.eviction_message(resource, p, [t], {signal: obs})
    assert message == (
        f"The node was low on resource: {resource}. Threshold quantity: {threshold_text}. "
    )
    assert annotations["offending_containers"] == ""


def test_pod_without_stats_gets_only_the_node_part() -> None:
    message, annotations = ev.eviction_message(
        "memory", pod("ns/p", has_stats=False, containers=["c"]), [MEM_100MI], MEM_OBS
    )
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
    )
    assert annotations == {}


def test_message_threshold_is_the_first_of_the_reclaimed_resource() -> None:
    soft = Threshold(ev.MEMORY_AVAILABLE, Gi, grace_period=30)
    disk = Threshold(ev.NODEFS_AVAILABLE, Gi)
    message, _ = ev.eviction_message("memory", pod("p"), [disk, MEM_100MI, soft], MEM_OBS)
    assert "Threshold quantity: 100Mi," in message
