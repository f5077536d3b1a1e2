"""The node lifecycle controller: silent nodes become Unknown and get the unreachable
taints, NotReady ones the not-ready taints, conditions map to NoSchedule taints, and
NoExecute tainting is rate limited per zone with upstream's disruption rules.

Two kinds of test:
- integration, on a ScaledClock (scale 50: the 50 s grace period takes one real
  seconds) with the controller's own loops; times are read off the objects in simulated
  seconds (Time has second precision, hence a 1 s slack);
- deterministic, on a FakeClock: the test advances time in 1 s steps and runs the passes
  itself (`drive`), so rates can be checked to the second.
"""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock, ScaledClock, parse_rfc3339
from services.controllers.nodelifecycle import NodeLifecycleConfig
from services.controllers.nodelifecycle.health import NODE_LEASE_NAMESPACE
from services.controllers.nodelifecycle.ratelimit import RateLimitedTimedQueue, TimedValue
from services.controllers.nodelifecycle.zones import (
    ZoneState,
    compute_zone_state,
    tainting_rate,
    zone_key,
)
from tests.controllers._lifecycle_cluster import (
    LEASES,
    LifecycleCluster,
    condition,
    lifecycle_cluster,
    taint_keys,
)

SCALE = 50.0
#: How late a reaction may come past its deadline, in simulated seconds: one monitor
#: period, plus 0.2 s of real time at SCALE for a loaded machine.
LATE = 5.0 + 10.0

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
USER_TAINT = {"key": "example.com/dedicated", "value": "x", "effect": "NoSchedule"}


def _has(key: str, effect: str) -> Any:
    return lambda n: key in taint_keys(n, effect)


async def _lease_renewed_at(c: LifecycleCluster, name: str) -> float:
    lease = await c.client.get(LEASES, name, NODE_LEASE_NAMESPACE)
    return parse_rfc3339(lease.spec.renew_time)  # type: ignore[attr-defined]


async def _go_silent(c: LifecycleCluster, name: str) -> core_pb2.Node:
    """Stop the node's kubelet; returns the node once it carries unreachable:NoExecute."""
    await c.stop_kubelet(name)
    return await c.wait_node(name, _has(UNREACHABLE, "NoExecute"))


# ------------------------------------------------------------------ integration


async def test_a_node_whose_lease_stops_is_marked_unknown_and_tainted_unreachable() -> None:
    async with lifecycle_cluster(ScaledClock(SCALE), eviction=False) as c:
        await c.node("dead")
        await c.node("alive")
        await c.pod("web", "dead", ready=True)
        c.keep_alive("dead", "alive")
        await c.clock.sleep(60)  # longer than the grace period: the lease alone keeps them
        for name in ("dead", "alive"):
            assert condition(await c.get_node(name), "Ready").status == "True"  # type: ignore[union-attr]

        node = await _go_silent(c, "dead")
        renewed = await _lease_renewed_at(c, "dead")
        ready = condition(node, "Ready")
        assert ready is not None
        assert (ready.status, ready.reason, ready.message) == (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
        for type_ in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            assert condition(node, type_).status == "Unknown"  # type: ignore[union-attr]
        marked = parse_rfc3339(ready.last_transition_time)
        assert 50 - 1 <= marked - renewed <= 50 + LATE, marked - renewed
        assert UNREACHABLE in taint_keys(node, "NoSchedule")
        no_execute = next(t for t in node.spec.taints if t.effect == "NoExecute")
        assert no_execute.time_added and parse_rfc3339(no_execute.time_added) >= marked - 1
        assert NOT_READY not in taint_keys(node)

        alive = await c.get_node("alive")
        assert condition(alive, "Ready").status == "True"  # type: ignore[union-attr]
        assert not alive.spec.taints
        # Ready left True: the node's pods are not Ready any more, and an event says why.
        pod = await c.get_pod("web")
        assert pod is not None
        assert next(x for x in pod.status.conditions if x.type == "Ready").status == "False"


async def test_a_node_that_reports_again_is_ready_and_untainted() -> None:
    async with lifecycle_cluster(ScaledClock(SCALE), eviction=False) as c:
        await c.node("n1", labels={}, taints=[USER_TAINT])
        await c.node("n2")
        c.keep_alive("n1", "n2")
        await _go_silent(c, "n1")
        # The kubelet is back: it renews its lease and posts Ready=True.
        c.keep_alive("n1")
        await c.post_status("n1", Ready="True")
        node = await c.wait_node("n1", lambda n: UNREACHABLE not in taint_keys(n))
        assert condition(node, "Ready").status == "True"  # type: ignore[union-attr]
        assert taint_keys(node) == {USER_TAINT["key"]}, "taints the controller does not own stay"


async def test_a_node_reporting_not_ready_gets_the_not_ready_taints() -> None:
    async with lifecycle_cluster(ScaledClock(SCALE), eviction=False) as c:
        await c.node("n1")
        await c.node("n2")  # a lone NotReady node would be a fully disrupted cluster
        c.keep_alive("n1", "n2")
        await c.post_status("n1", Ready="False")
        node = await c.wait_node(
            "n1", lambda n: {NOT_READY} <= taint_keys(n, "NoExecute") & taint_keys(n, "NoSchedule")
        )
        assert UNREACHABLE not in taint_keys(node)
        assert condition(node, "Ready").status == "False", "the kubelet's word stands"  # type: ignore[union-attr]
        # Then it goes silent too: the not-ready taint is swapped for unreachable at once.
        node = await _go_silent(c, "n1")
        assert NOT_READY not in taint_keys(node, "NoExecute")


@pytest.mark.parametrize(
    ("conditions", "unschedulable", "taint"),
    [
        ({"MemoryPressure": "True"}, False, "node.kubernetes.io/memory-pressure"),
        ({"DiskPressure": "True"}, False, "node.kubernetes.io/disk-pressure"),
        ({"PIDPressure": "True"}, False, "node.kubernetes.io/pid-pressure"),
        ({"NetworkUnavailable": "True"}, False, "node.kubernetes.io/network-unavailable"),
        ({}, True, "node.kubernetes.io/unschedulable"),
        ({"MemoryPressure": "Unknown"}, False, None),
    ],
    ids=["memory", "disk", "pid", "network", "unschedulable", "unknown-pressure-no-taint"],
)
async def test_conditions_map_to_no_schedule_taints_and_clear_with_them(
    conditions: dict[str, str], unschedulable: bool, taint: str | None
) -> None:
    async with lifecycle_cluster(ScaledClock(SCALE), eviction=False) as c:
        await c.node("n1", taints=[USER_TAINT])
        c.keep_alive("n1")
        if conditions:
            await c.post_status("n1", **conditions)
        if unschedulable:
            await c.set_unschedulable("n1", True)
        if taint is None:
            await c.clock.sleep(20)
            assert taint_keys(await c.get_node("n1")) == {USER_TAINT["key"]}
            return
        node = await c.wait_node("n1", _has(taint, "NoSchedule"))
        added = next(t for t in node.spec.taints if t.key == taint)
        assert added.effect == "NoSchedule" and added.time_added
        assert USER_TAINT["key"] in taint_keys(node)

        if conditions:
            await c.post_status("n1", **dict.fromkeys(conditions, "False"))
        if unschedulable:
            await c.set_unschedulable("n1", False)
        node = await c.wait_node("n1", lambda n: taint not in taint_keys(n))
        assert taint_keys(node) == {USER_TAINT["key"]}


# ------------------------------------------------------------------ rates and zones (FakeClock)


async def drive(c: LifecycleCluster, seconds: int, *, alive: set[str]) -> dict[str, float]:
    """Advance the FakeClock in 1 s steps for `seconds`, renewing the `alive` nodes'
    leases every 10 s, running a monitor pass every 5 s and the tainting pass every
    second. Returns, per node, when it got its NoExecute taint (clock.now())."""
    ctl = c.lifecycle
    assert ctl is not None
    clock: FakeClock = c.clock  # type: ignore[assignment]
    tainted: dict[str, float] = {}
    for step in range(seconds):
        clock.advance(1.0)
        if step % 10 == 0:
            for name in sorted(alive):
                await c.renew(name)
        await c.settle()
        if step % 5 == 0:
            await ctl.monitor_node_health()
            await c.settle()
        await ctl.do_no_execute_tainting_pass()
        await c.settle()
        for name, node in ctl.nodes.store.items():
            if taint_keys(node, "NoExecute") and name not in tainted:  # type: ignore[arg-type]
                tainted[name] = clock.now()
    return tainted


def _offsets(times: dict[str, float]) -> list[float]:
    if not times:
        return []
    first = min(times.values())
    return sorted(round(t - first) for t in times.values())


@pytest.mark.parametrize(
    ("zones", "large", "offsets"),
    [
        pytest.param({"a": (10, 4)}, 50, [0, 10, 20, 30], id="normal-zone-at-node-eviction-rate"),
        pytest.param({"a": (10, 6)}, 50, [], id="partial-disruption-small-zone-stops"),
        pytest.param({"a": (10, 6)}, 5, [0, 100], id="partial-disruption-large-zone-secondary"),
        pytest.param(
            {"a": (2, 0), "b": (3, 3)}, 50, [0, 10, 20], id="one-zone-fully-down-normal-rate"
        ),
        pytest.param({"a": (2, 2), "b": (3, 3)}, 50, [], id="every-zone-fully-down-no-taints"),
    ],
)
async def test_no_execute_taints_are_added_at_the_zone_rate(
    zones: dict[str, tuple[int, int]], large: int, offsets: list[float]
) -> None:
    """`zones`: zone -> (nodes, nodes that go silent at once)."""
    cfg = NodeLifecycleConfig(large_cluster_size_threshold=large)
    async with lifecycle_cluster(FakeClock(), lifecycle=cfg, eviction=False, run=False) as c:
        alive: set[str] = set()
        lost: set[str] = set()
        for zone, (total, silent) in zones.items():
            for i in range(total):
                name = f"{zone}{i}"
                await c.node(name, zone=zone)
                (lost if i < silent else alive).add(name)
        await drive(c, 20, alive=alive | lost)
        tainted = await drive(c, 50 + 5 + 150, alive=alive)
        assert set(tainted) <= lost
        assert _offsets(tainted) == offsets
        assert c.lifecycle is not None
        if not offsets and all(total == silent for total, silent in zones.values()):
            assert set(c.lifecycle.zone_states.values()) == {ZoneState.FULL_DISRUPTION}
        for name in lost:  # every silent node is Unknown whatever its zone's rate
            ready = condition(await c.get_node(name), "Ready")
            assert ready is not None and ready.status == "Unknown"


async def test_leaving_full_disruption_gives_grace_and_resumes_tainting() -> None:
    async with lifecycle_cluster(FakeClock(), eviction=False, run=False) as c:
        ctl = c.lifecycle
        assert ctl is not None
        names = ["a0", "a1", "b0", "b1"]
        for name in names:
            await c.node(name, zone=name[0])
        await drive(c, 20, alive=set(names))
        assert await drive(c, 80, alive=set()) == {}, "every zone down: nothing is tainted"
        assert set(ctl.zone_states.values()) == {ZoneState.FULL_DISRUPTION}

        await c.renew("a0")
        await c.post_status("a0", Ready="True")
        back = c.clock.now()
        tainted = await drive(c, 40, alive={"a0"})
        assert set(tainted) == {"a1", "b0", "b1"}
        # Leaving the mode drains the zones' buckets: the first taints wait a token.
        assert all(t - back >= 10 for t in tainted.values()), tainted
        assert abs(tainted["b1"] - tainted["b0"]) == pytest.approx(10, abs=1)
        assert ctl.zone_states[zone_key(await c.get_node("a0"))] == ZoneState.NORMAL


# ------------------------------------------------------------------ the pieces alone


def _ready(status: str | None) -> core_pb2.NodeCondition | None:
    return None if status is None else core_pb2.NodeCondition(type="Ready", status=status)


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["True"] * 5, (0, ZoneState.NORMAL)),
        (["Unknown", "False", None], (3, ZoneState.FULL_DISRUPTION)),
        (["True", "Unknown", "Unknown"], (2, ZoneState.NORMAL)),
        (["True", "Unknown", "Unknown", "False"], (3, ZoneState.PARTIAL_DISRUPTION)),
        (["True"] * 4 + ["Unknown"] * 4, (4, ZoneState.NORMAL)),
        (["True"] * 4 + ["Unknown"] * 5, (5, ZoneState.PARTIAL_DISRUPTION)),
        ([], (0, ZoneState.NORMAL)),
    ],
    ids=[
        "all-ready",
        "none-ready-is-full",
        "two-not-ready-is-never-partial",
        "three-of-four",
        "half-is-below-0.55",
        "five-of-nine",
        "empty",
    ],
)
def test_zone_state_follows_upstream_thresholds(
    statuses: list[str | None], expected: tuple[int, ZoneState]
) -> None:
    assert compute_zone_state([_ready(s) for s in statuses], 0.55) == expected


@pytest.mark.parametrize(
    ("size", "state", "rate"),
    [
        (10, ZoneState.NORMAL, 0.1),
        (10, ZoneState.FULL_DISRUPTION, 0.1),
        (50, ZoneState.PARTIAL_DISRUPTION, 0.0),
        (51, ZoneState.PARTIAL_DISRUPTION, 0.01),
    ],
)
def test_tainting_rate_by_zone_state(size: int, state: ZoneState, rate: float) -> None:
    assert tainting_rate(NodeLifecycleConfig(), size, state) == rate


async def _drain(q: RateLimitedTimedQueue, clock: FakeClock, seconds: float) -> list[float]:
    seen: list[float] = []

    async def taint(tv: TimedValue) -> tuple[bool, float]:
        seen.append(clock.monotonic())
        return True, 0.0

    for _ in range(int(seconds * 2)):
        await q.process(taint)
        clock.advance(0.5)
    return seen


@pytest.mark.parametrize(
    ("qps", "times"),
    [(0.1, [0, 10, 20, 30]), (0.5, [0, 2, 4, 6]), (0.0, [])],
    ids=["default-rate", "faster", "zero-stops"],
)
async def test_the_tainting_queue_admits_one_node_per_token(qps: float, times: list[float]) -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(qps, clock=clock)
    for i in range(4):
        assert q.add(f"n{i}")
    assert await _drain(q, clock, 40) == times


async def test_a_processed_node_is_not_queued_again_until_removed() -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(10.0, clock=clock)
    q.add("n1")
    await _drain(q, clock, 1)
    assert not q.add("n1"), "tainted once: it stays a member"
    assert q.remove("n1") and q.add("n1")


async def test_a_failed_node_is_retried_after_its_delay() -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(100.0, clock=clock)
    q.add("n1")
    tries: list[float] = []

    async def fail_once(tv: TimedValue) -> tuple[bool, float]:
        tries.append(clock.monotonic())
        return len(tries) > 1, 3.0

    for _ in range(10):
        await q.process(fail_once)
        clock.advance(1.0)
    assert tries == [0.0, 3.0] and len(q) == 0


async def test_swapping_an_empty_bucket_grants_no_burst() -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(0.1, clock=clock)
    q.add("n0")
    q.add("n1")
    assert await _drain(q, clock, 1) == [0.0]  # the one token went
    q.swap_limiter(1.0)
    assert await _drain(q, clock, 3) == [1.0 + 1.0]
    q.swap_limiter(0.0)
    q.add("n2")
    assert await _drain(q, clock, 30) == []
    assert q.next_ready_in() is None


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        ({"topology.kubernetes.io/zone": "z", "topology.kubernetes.io/region": "r"}, "r:\x00:z"),
        ({"failure-domain.beta.kubernetes.io/zone": "old"}, ":\x00:old"),
        ({}, ""),
    ],
)
def test_zone_key_joins_region_and_zone(labels: dict[str, str], key: str) -> None:
    node = core_pb2.Node()
    node.metadata.labels.update(labels)
    assert zone_key(node) == key


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"node_monitor_period": 0}, "node_monitor_period"),
        ({"node_monitor_grace_period": 5}, "longer than node_monitor_period"),
        ({"node_eviction_rate": -1}, "node_eviction_rate"),
        ({"unhealthy_zone_threshold": 0}, "unhealthy_zone_threshold"),
        ({"unhealthy_zone_threshold": 1.5}, "unhealthy_zone_threshold"),
        ({"node_update_workers": 0}, "node_update_workers"),
    ],
)
def test_config_refuses_nonsense(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        NodeLifecycleConfig(**kw)


def test_config_defaults_are_upstreams() -> None:
    cfg = NodeLifecycleConfig()
    assert (
        cfg.node_monitor_period,
        cfg.node_monitor_grace_period,
        cfg.node_startup_grace_period,
        cfg.node_eviction_rate,
        cfg.secondary_node_eviction_rate,
        cfg.unhealthy_zone_threshold,
        cfg.large_cluster_size_threshold,
    ) == (5.0, 50.0, 60.0, 0.1, 0.01, 0.55, 50)
