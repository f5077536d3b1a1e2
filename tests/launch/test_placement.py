"""Placement on a Ray cluster of several nodes (kubera/launch/placement.py), the
supervisor's component records (components.py), the addresses components listen on and
give out (services/hosts/address.py) and `kubera components`' table — without Ray."""

from __future__ import annotations

from typing import Any

import pytest

from kubera.cli.components import table
from kubera.launch import placement
from kubera.launch.components import Component, Components, record_in_context
from kubera.launch.context import Context
from services.hosts.address import join, listen_hosts

CP, NP = placement.CONTROL_PLANE, placement.NODE_POOL
#: Ray node ids (28 bytes, hex).
HEAD, W1, W2, GONE = ("11" * 28, "22" * 28, "33" * 28, "44" * 28)


def _nodes(monkeypatch: pytest.MonkeyPatch, nodes: list[dict[str, Any]]) -> None:
    monkeypatch.setattr(placement, "ray_nodes", lambda: nodes)


def _node(node_id: str, ip: str, *resources: str, head: bool = False) -> dict[str, Any]:
    return {
        "id": node_id,
        "ip": ip,
        "alive": True,
        "head": head,
        "resources": {"CPU": 2.0, **dict.fromkeys(resources, 1.0)},
    }


def _target(options: dict[str, Any]) -> str:
    return str(options["scheduling_strategy"].node_id)


def test_roles_go_round_the_nodes_with_their_resource_head_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _nodes(
        monkeypatch,
        [
            _node(W2, "10.0.0.4", NP),
            _node(W1, "10.0.0.3", CP, NP),
            _node(GONE, "10.0.0.9", CP, NP) | {"alive": False},
            _node(HEAD, "10.0.0.2", CP, head=True),
        ],
    )
    p = placement.plan(CP, NP)
    assert p.control_plane_nodes == (HEAD, W1)
    assert p.node_pool_nodes == (W1, W2)
    api = p.apiserver()
    assert _target(api) == HEAD and api["resources"] == {CP: placement.RESOURCE_SHARE}
    assert [_target(p.replica(i)) for i in range(3)] == [HEAD, W1, HEAD]
    assert [_target(p.pool(i)) for i in range(3)] == [W1, W2, W1]
    assert p.pool(0)["resources"] == {NP: placement.RESOURCE_SHARE}
    # soft: an actor whose node died is re-created on another node with the resource
    assert all(p.pool(i)["scheduling_strategy"].soft for i in range(2))
    # never a whole CPU held per actor (Ray's default once a resource is named)
    assert p.replica(0)["num_cpus"] == 0 and p.pool(1)["num_cpus"] == 0


def test_a_resource_no_node_has_constrains_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _nodes(monkeypatch, [_node(W1, "127.0.0.1"), _node(HEAD, "127.0.0.1", head=True)])
    p = placement.plan(CP, "")
    assert (p.control_plane, p.node_pool) == ("", "")
    assert p.control_plane_nodes == p.node_pool_nodes == (HEAD, W1)
    assert "resources" not in p.replica(0) and "resources" not in p.pool(0)
    assert [_target(p.pool(i)) for i in range(2)] == [HEAD, W1]
    assert placement.Placement().pool(3) == {"num_cpus": 0}  # nothing known: Ray decides


def test_unconstrained_roles_leave_out_nodes_without_cpus_and_named_missing_resources_are_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    driver = _node(W2, "10.0.0.4") | {"resources": {"CPU": 0.0, "memory": 1.0}}
    no_cpu_key = _node(GONE, "10.0.0.5") | {"resources": {"memory": 1.0}}
    _nodes(
        monkeypatch, [driver, no_cpu_key, _node(W1, "10.0.0.3"), _node(HEAD, "10.0.0.2", head=True)]
    )
    p = placement.plan(CP, "gpu-nodes", named=("gpu-nodes",))
    assert p.control_plane_nodes == p.node_pool_nodes == (HEAD, W1)
    assert p.missing == ("gpu-nodes",)  # named by the user, on no node
    assert placement.plan(CP, NP).missing == ()  # the defaults: no node has them, unsaid
    # a resource some node has keeps that node, CPUs or not (the user chose it)
    _nodes(
        monkeypatch, [driver | {"resources": {"CPU": 0.0, NP: 1.0}}, _node(HEAD, "h", head=True)]
    )
    p = placement.plan(CP, NP, named=(NP,))
    assert p.node_pool_nodes == (W2,) and p.control_plane_nodes == (HEAD,) and p.missing == ()
    # only drivers: better somewhere than nowhere
    _nodes(monkeypatch, [driver])
    assert placement.plan("", "").control_plane_nodes == (W2,)


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


def test_bind_and_advertise_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERA_BIND_HOST", raising=False)
    monkeypatch.delenv("KUBERA_ADVERTISE_HOST", raising=False)
    assert listen_hosts("127.0.0.1") == ("127.0.0.1", "127.0.0.1")
    assert listen_hosts("10.1.2.3") == ("10.1.2.3", "10.1.2.3")  # the Ray node's address
    assert listen_hosts("") == ("127.0.0.1", "127.0.0.1")
    monkeypatch.setenv("KUBERA_BIND_HOST", "0.0.0.0")
    assert listen_hosts("10.1.2.3") == ("0.0.0.0", "10.1.2.3")  # never the wildcard
    monkeypatch.setenv("KUBERA_ADVERTISE_HOST", "ray-worker-2")
    assert listen_hosts("10.1.2.3") == ("0.0.0.0", "ray-worker-2")
    assert join("::1", 80) == "[::1]:80" and join("10.0.0.1", 80) == "10.0.0.1:80"


# ---------------------------------------------- the embedded etcd on a multi-host cluster


def test_a_cluster_on_loopback_raylets_needs_no_etcd_url() -> None:
    nodes = [_node(HEAD, "127.0.0.2", head=True), _node(W1, "127.0.0.3"), _node(W2, "127.0.0.4")]
    assert placement.other_hosts(nodes, "192.0.2.2") == []
    placement.require_one_host(nodes, "192.0.2.2")


def test_nodes_on_other_hosts_need_an_etcd_url() -> None:
    gone = {**_node(GONE, "10.0.0.9"), "alive": False}  # a dead node is no reason
    nodes = [_node(HEAD, "10.0.0.1", head=True), _node(W1, "10.0.0.2"), gone]
    assert placement.other_hosts(nodes, "10.0.0.1") == ["10.0.0.2"]
    with pytest.raises(placement.PlacementError, match=r"^--etcd URL is needed: .*10\.0\.0\.2"):
        placement.require_one_host(nodes, "10.0.0.1")
    placement.require_one_host(nodes[:1] + [gone], "10.0.0.1")
