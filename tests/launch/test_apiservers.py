"""The launcher's apiserver replicas without Ray (kubera/launch/apiservers.py): names,
the rotated address list each component gets, the context following a moved replica,
and a restarted replica recorded (`--apiservers` through the detached supervisor's
options: test_options.py)."""

from __future__ import annotations

from typing import Any

from kubera.launch.apiservers import ApiServerReplica, ApiServerReplicas, replica_name
from kubera.launch.components import record_in_context
from kubera.launch.context import Context
from services.client import parse_addresses
from tests.launch.test_components import _record


def _replicas(*addresses: str) -> ApiServerReplicas:
    r = ApiServerReplicas()
    r.items = [
        ApiServerReplica(replica_name(i), actor=None, address=a, pid=100 + i)
        for i, a in enumerate(addresses)
    ]
    return r


def test_replica_zero_keeps_the_single_apiservers_name() -> None:
    assert [replica_name(i) for i in range(3)] == ["apiserver", "apiserver-1", "apiserver-2"]


def test_one_replica_hands_out_its_address_unchanged() -> None:
    r = _replicas("127.0.0.1:7000")
    assert r.address == "127.0.0.1:7000"
    assert {r.for_component(i) for i in range(5)} == {"127.0.0.1:7000"}


def test_components_get_every_address_rotated_so_they_spread() -> None:
    r = _replicas("a:1", "b:2")
    assert r.address == "a:1,b:2"
    lists = [parse_addresses(r.for_component(i)) for i in range(4)]
    assert lists == [["a:1", "b:2"], ["b:2", "a:1"], ["a:1", "b:2"], ["b:2", "a:1"]]
    assert r.records() == [
        {"name": "apiserver", "address": "a:1", "pid": 100},
        {"name": "apiserver-1", "address": "b:2", "pid": 101},
    ]


def test_a_restarted_replica_is_recorded_in_the_context(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("KUBERA_HOME", str(tmp_path))
    r = _replicas("a:1", "b:2")
    ctx = Context(
        apiserver=r.address,
        etcd="http://127.0.0.1:2379",
        apiserver_pid=100,
        apiservers=r.records(),
        started={"100": 1, "101": 2},
    )
    r._restarted(r.items[1], {"pid": 201, "start_ticks": 7, "address": "b:2"}, ctx)
    assert ctx.apiserver_pid == 100  # replica 0's, unchanged
    assert ctx.apiservers[1] == {"name": "apiserver-1", "address": "b:2", "pid": 201}
    assert ctx.started == {"100": 1, "201": 7}
    r._restarted(r.items[0], {"pid": 200, "start_ticks": 8, "address": "a:1"}, ctx)
    assert ctx.apiserver_pid == 200 and ctx.apiservers[0]["pid"] == 200
    assert (tmp_path / "context.json").exists()


def test_the_context_follows_a_moved_replica_once_every_replica_serves() -> None:
    ctx = Context(
        apiserver="127.0.0.2:7000,127.0.0.3:7001",
        etcd="http://127.0.0.1:2379",
        apiservers=[
            {"name": "apiserver", "address": "127.0.0.2:7000", "pid": 10},
            {"name": "apiserver-1", "address": "127.0.0.3:7001", "pid": 11},
        ],
    )
    records = [
        _record("apiserver", "apiserver", address="127.0.0.2:7000"),
        _record("apiserver-1", "apiserver", address=""),  # restarting on another node
        _record("scheduler", "scheduler", address="127.0.0.2:8"),
    ]
    assert record_in_context(ctx, records) == []
    assert ctx.apiserver == "127.0.0.2:7000,127.0.0.3:7001"
    records[1]["address"] = "127.0.0.4:7001"
    assert record_in_context(ctx, records) == [
        "apiserver moved: 127.0.0.2:7000,127.0.0.3:7001 -> 127.0.0.2:7000,127.0.0.4:7001"
    ]
    assert ctx.apiserver == "127.0.0.2:7000,127.0.0.4:7001"
    assert ctx.apiservers[1]["address"] == "127.0.0.4:7001"
