"""Placement on a Ray cluster of several nodes (kubera/launch/placement.py) and the
addresses components listen on and give out (services/hosts/address.py) — without Ray."""

from __future__ import annotations

from typing import Any

import pytest

from kubera.launch import placement
from services.hosts.address import join, listen_hosts

CP, NP = placement.CONTROL_PLANE, placement.NODE_POOL
#: Ray node ids (28 bytes, hex).
HEAD, W1, W2, GONE = ("11" * 28, "22" * 28, "33" * 28, "44" * 28)


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


def test_roles_go_round_the_nodes_with_their_resource_head_first() -> None:
    nodes = [
        _node(W2, "10.0.0.4", NP),
        _node(W1, "10.0.0.3", CP, NP),
        _node(GONE, "10.0.0.9", CP, NP) | {"alive": False},
        _node(HEAD, "10.0.0.2", CP, head=True),
    ]
    p = placement.plan(nodes, CP, NP)
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


def test_a_resource_no_node_has_constrains_nothing() -> None:
    nodes = [_node(W1, "127.0.0.1"), _node(HEAD, "127.0.0.1", head=True)]
    p = placement.plan(nodes, CP, "")
    assert (p.control_plane, p.node_pool) == ("", "")
    assert p.control_plane_nodes == p.node_pool_nodes == (HEAD, W1)
    assert "resources" not in p.replica(0) and "resources" not in p.pool(0)
    assert [_target(p.pool(i)) for i in range(2)] == [HEAD, W1]
    assert placement.Placement().pool(3) == {"num_cpus": 0}  # nothing known: Ray decides


def test_unconstrained_roles_leave_out_nodes_without_cpus_and_named_missing_resources_are_said() -> (
    None
):
    driver = _node(W2, "10.0.0.4") | {"resources": {"CPU": 0.0, "memory": 1.0}}
    no_cpu_key = _node(GONE, "10.0.0.5") | {"resources": {"memory": 1.0}}
    nodes = [driver, no_cpu_key, _node(W1, "10.0.0.3"), _node(HEAD, "10.0.0.2", head=True)]
    p = placement.plan(nodes, CP, "gpu-nodes", named=("gpu-nodes",))
    assert p.control_plane_nodes == p.node_pool_nodes == (HEAD, W1)
    assert p.missing == ("gpu-nodes",)  # named by the user, on no node
    assert placement.plan(nodes, CP, NP).missing == ()  # the defaults: no node has them, unsaid
    # a resource some node has keeps that node, CPUs or not (the user chose it)
    nodes = [driver | {"resources": {"CPU": 0.0, NP: 1.0}}, _node(HEAD, "h", head=True)]
    p = placement.plan(nodes, CP, NP, named=(NP,))
    assert p.node_pool_nodes == (W2,) and p.control_plane_nodes == (HEAD,) and p.missing == ()
    # only drivers: better somewhere than nowhere
    assert placement.plan([driver], "", "").control_plane_nodes == (W2,)


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
