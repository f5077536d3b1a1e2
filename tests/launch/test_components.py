"""The supervisor's component records (kubera/launch/components.py), the context following
the components, and `kubera components`' table — without Ray."""

from __future__ import annotations

from typing import Any

from kubera.cli.components import table
from kubera.launch.components import Component, Components, record_in_context
from kubera.launch.context import Context


def _record(name: str, kind: str, **fields: Any) -> dict[str, Any]:
    base = {
        "name": name,
        "kind": kind,
        "actor_id": name,
        "node_id": "ab" * 28,
        "node_ip": "127.0.0.3",
        "pid": 10,
        "state": "alive",
        "restarts": 0,
        "address": "",
    }
    return base | fields


def test_a_health_answer_counts_only_for_the_current_process_once_it_serves() -> None:
    c = Component("pool-0", "node-pool", None, record=_record("pool-0", "node-pool", pid=11))
    assert not Components._take(c, {"pid": 10, "address": "127.0.0.3:1", "started": True})
    assert not Components._take(c, {"pid": 11, "address": "", "started": False})
    assert c.known_pid == -1  # asked again on the next refresh
    assert Components._take(c, {"pid": 11, "address": "127.0.0.4:2", "started": True})
    assert c.record["address"] == "127.0.0.4:2" and c.known_pid == 11
    cm = Component("controller-manager", "controller-manager", None, record=_record("cm", "cm"))
    assert Components._take(cm, {"pid": 10, "control": "127.0.0.3:5", "identity": "x_1"})
    assert cm.record["address"] == cm.record["control"] == "127.0.0.3:5"


def test_a_replica_between_its_control_server_and_its_api_is_asked_again() -> None:
    """A re-created scheduler's start() opens its chaos control before its gRPC API: a
    health() answer from between the two is not taken (its control address is no API)."""
    c = Component("scheduler-0-1", "scheduler", None, record=_record("s", "scheduler", pid=11))
    half = {"pid": 11, "address": "", "control": "127.0.0.2:7", "identity": "x_1"}
    assert not Components._take(c, half)
    assert not Components._take(c, half | {"address": "127.0.0.2:8", "started": False})
    assert c.known_pid == -1 and c.record["address"] == ""  # asked again on the next refresh
    assert Components._take(c, half | {"address": "127.0.0.2:8", "started": True})
    assert c.record["address"] == "127.0.0.2:8" and c.record["control"] == "127.0.0.2:7"


def test_the_context_follows_a_moved_pool_scheduler_and_apiserver() -> None:
    ctx = Context(
        apiserver="127.0.0.2:7000",
        etcd="http://127.0.0.1:2379",
        node_pools=[
            {"name": "pool-0", "address": "127.0.0.3:1", "first": 0, "count": 10, "pid": 10},
            {"name": "pool-1", "address": "127.0.0.4:1", "first": 10, "count": 10, "pid": 20},
        ],
    )
    records = [
        _record("apiserver", "apiserver", node_ip="127.0.0.2", address="127.0.0.2:7000"),
        _record("scheduler", "scheduler", address="127.0.0.2:8", metrics="127.0.0.2:9"),
        _record("pool-0", "node-pool", node_ip="127.0.0.4", pid=30, address="127.0.0.4:2"),
        _record("pool-1", "node-pool", node_ip="127.0.0.4", pid=21, address=""),  # starting
    ]
    said = record_in_context(ctx, records)
    assert ctx.node_pools[0]["address"] == "127.0.0.4:2" and ctx.node_pools[0]["pid"] == 30
    assert ctx.node_pools[1]["address"] == "127.0.0.4:1" and ctx.node_pools[1]["pid"] == 20
    assert (ctx.scheduler, ctx.scheduler_metrics) == ("127.0.0.2:8", "127.0.0.2:9")
    assert ctx.components == records
    assert said == [
        f"node pool pool-0 restarted: pid 30 on Ray node 127.0.0.4 ({'ab' * 4}), "
        "serving 127.0.0.4:2"
    ]
    records[0]["address"] = "127.0.0.3:7000"
    assert record_in_context(ctx, records) == ["apiserver moved: 127.0.0.2:7000 -> 127.0.0.3:7000"]
    assert ctx.apiserver == "127.0.0.3:7000"


def test_the_components_table() -> None:
    rows = [
        _record("scheduler", "scheduler", role="leader", address="127.0.0.2:8"),
        _record("pool-0", "node-pool", role="", node_ip="", state="restarting", restarts=1),
    ]
    lines = table(rows).splitlines()
    assert lines[0].split() == [
        "NAME",
        "KIND",
        "ROLE",
        "NODE",
        "PID",
        "ADDRESS",
        "STATE",
        "RESTARTS",
    ]
    assert lines[1].split() == [
        "scheduler", "scheduler", "leader", "127.0.0.3", "(abababab)", "10", "127.0.0.2:8",
        "alive", "0",
    ]  # fmt: skip
    assert lines[2].split()[2:] == ["-", "-", "(abababab)", "10", "-", "restarting", "1"]
