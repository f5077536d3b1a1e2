"""The monitor pass settles healthy nodes without a copy or a task
(`_update_healthy_node`); the same scenario run with that fast path switched off (every
node through `_update_node`, the reference) ends every step in the same state: nodes'
conditions and taints, pods' Ready conditions, health records, zone states and queues."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery.kinds import BY_KIND
from services.clock import FakeClock
from services.controllers.nodelifecycle.controller import NodeLifecycleController
from tests.controllers._lifecycle_cluster import LifecycleCluster, lifecycle_cluster

PODS = BY_KIND["Pod"]


def _reference(self: NodeLifecycleController, cached: Any, _zone_conditions: Any) -> Any:
    return self.health.check(cached)  # never settled here: always the full path


async def _state(c: LifecycleCluster) -> dict[str, Any]:
    ctl = c.lifecycle
    assert ctl is not None
    nodes = {}
    for name in sorted(ctl.nodes.store):
        n = await c.get_node(name)
        nodes[name] = (
            sorted(
                (x.type, x.status, x.reason, x.last_transition_time) for x in n.status.conditions
            ),
            sorted((t.key, t.effect) for t in n.spec.taints),
        )
    pods, _ = await c.client.list(PODS)
    ready = {
        p.metadata.name: [(x.type, x.status) for x in p.status.conditions]  # type: ignore[attr-defined]
        for p in pods
    }
    records = {
        k: (h.probe, h.ready_transition, h.lease_renew, h.ready.status if h.ready else None)
        for k, h in sorted(ctl.health.records.items())
    }
    queues = sorted(sorted(q._members) for q in ctl.zones.queues())
    return {
        "nodes": nodes,
        "pods": ready,
        "records": records,
        "zones": sorted((str(k), str(v)) for k, v in ctl.zone_states.items()),
        "queues": queues,
        "retry": sorted(ctl._nodes_to_retry),
    }


async def _scenario(fast: bool, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(NodeLifecycleController, "_update_healthy_node", _reference)
        async with lifecycle_cluster(FakeClock(), eviction=False, run=False) as c:
            ctl = c.lifecycle
            assert ctl is not None
            names = [f"{z}{i}" for z in "ab" for i in range(4)]
            for name in names:
                await c.node(name, zone=name[0])
            await c.node(
                "tainted",
                zone="a",
                taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}],
            )
            await c.node("notready", zone="b", ready="False")
            for name in ("a0", "a1", "b0", "notready"):
                await c.pod(f"p-{name}", name, ready=True)
            alive = {*names, "tainted", "notready"}
            trace = []
            # (seconds, nodes renewing their lease): all, then a0 a1 b0 go silent, then
            # a0 comes back and reports Ready again
            phases = [(15, alive), (70, alive - {"a0", "a1", "b0"}), (30, alive - {"a1", "b0"})]
            for i, (seconds, renewing) in enumerate(phases):
                if i == 2:
                    await c.post_status("a0", Ready="True")
                for step in range(seconds):
                    c.clock.advance(1.0)  # type: ignore[attr-defined]
                    if step % 10 == 0:
                        for name in sorted(renewing):
                            await c.renew(name)
                    await c.settle()
                    if step % 5 == 0:
                        await ctl.monitor_node_health()
                        await c.settle()
                        await ctl.do_no_execute_tainting_pass()
                        await c.settle()
                        trace.append(await _state(c))
            return trace


async def test_the_fast_path_ends_each_pass_where_the_reference_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = await _scenario(True, monkeypatch)
    reference = await _scenario(False, monkeypatch)
    assert len(fast) == len(reference)
    for i, (a, b) in enumerate(zip(fast, reference, strict=True)):
        assert a == b, f"pass {i}"
    # the scenario went through what it meant to: silent nodes Unknown and tainted, pods
    # marked not Ready, a node back
    last = fast[-1]["nodes"]
    assert ("node.kubernetes.io/unreachable", "NoExecute") in last["b0"][1]
    assert ("Ready", "True") in [(t, s) for t, s, *_ in last["a0"][0]]
    assert ("Ready", "False") in fast[-1]["pods"]["p-b0"]
