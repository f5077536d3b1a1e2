"""Where the actors run on a Ray cluster of several nodes.

Ray nodes say what they are for with custom resources (`ray start --resources
'{"kubera/control-plane": 1}'`):

    kubera/control-plane   the apiserver, scheduler and controller-manager replicas
    kubera/node-pool       the node pools (hollow kubelets)

Each actor asks for a sliver of its resource (RESOURCE_SHARE), so any positive amount on a
node admits up to a thousand actors there. The replicas of one deployment and the pools go
round the nodes that have their resource, one per node while they last (a soft node
affinity, so an actor whose node died is re-created on another node with the resource),
so losing one node loses one replica, not a deployment. The apiserver goes to the first
control-plane node, the head when it is one: when the head dies the Ray cluster goes with
it (its GCS lives there), so nothing is lost by putting it there. On another node that
dies, Ray re-creates the apiserver elsewhere and the supervisor starts it on the same port
of the new node's address; the CLI follows (the context records it), but the components
started with the old address keep dialling it until they are restarted.

A resource that no node of the cluster has constrains nothing (the embedded single-node
cluster has none; its actors all go to its one node, as before): the role then spreads
over the nodes with CPUs, leaving out `ray start --num-cpus=0` nodes (drivers, such as the
compose file's kubera and experiment containers). The names are `kubera up
--control-plane-resource/--node-pool-resource` ("" never constrains); one named there
that no node has is reported (`Placement.missing`, a warning in up's output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: `kubera up`'s default resource names.
CONTROL_PLANE = "kubera/control-plane"
NODE_POOL = "kubera/node-pool"
#: What one actor asks for of its resource.
RESOURCE_SHARE = 0.001


@dataclass(frozen=True)
class Placement:
    #: The resources the actors ask for ("": that role is not placed).
    control_plane: str = ""
    node_pool: str = ""
    #: The nodes each role is spread over (ids, the head first): the nodes with its
    #: resource, or every node when none has it ((): leave it to Ray).
    control_plane_nodes: tuple[str, ...] = ()
    node_pool_nodes: tuple[str, ...] = ()
    #: Resources named explicitly that no live node has (placed as if unnamed).
    missing: tuple[str, ...] = ()

    def apiserver(self) -> dict[str, Any]:
        """The first control-plane node: the head when it is one."""
        return self._options(self.control_plane, self.control_plane_nodes, 0)

    def replica(self, index: int) -> dict[str, Any]:
        """Replica `index` of a scheduler or controller-manager deployment: replicas of
        one deployment go round the control-plane nodes, one per node while they last."""
        return self._options(self.control_plane, self.control_plane_nodes, index)

    def pool(self, index: int) -> dict[str, Any]:
        return self._options(self.node_pool, self.node_pool_nodes, index)

    @staticmethod
    def _options(resource: str, nodes: tuple[str, ...], index: int) -> dict[str, Any]:
        # num_cpus=0: an actor that names a resource would otherwise hold a whole CPU for
        # its life (Ray's default then), and a node's CPUs would cap its actors
        out: dict[str, Any] = {"num_cpus": 0}
        if resource:
            out["resources"] = {resource: RESOURCE_SHARE}
        if nodes:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            # soft: once that node is gone, Ray re-creates the actor on another node
            # that has the resource
            out["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                node_id=nodes[index % len(nodes)], soft=True
            )
        return out


def plan(
    ray_nodes: list[dict[str, Any]],
    control_plane: str,
    node_pool: str,
    *,
    named: tuple[str, ...] = (),
) -> Placement:
    """The placement on a Ray cluster of `ray_nodes` (kubera.launch.ray.ray_nodes): a
    resource no live node has is dropped
    (and listed in `missing` when it is one of `named`, the ones the user gave), and each
    role is spread over the nodes that have its resource (when none does: the nodes with
    CPUs, else every node)."""
    nodes = sorted(
        (n for n in ray_nodes if n["alive"]), key=lambda n: (not n["head"], n["ip"], n["id"])
    )
    have = {name for n in nodes for name in n["resources"]}
    missing = tuple(dict.fromkeys(r for r in named if r and r not in have))
    control_plane = control_plane if control_plane in have else ""
    node_pool = node_pool if node_pool in have else ""
    workers = [n for n in nodes if n["resources"].get("CPU", 0) > 0] or nodes

    def spread(resource: str) -> tuple[str, ...]:
        if not resource:
            return tuple(n["id"] for n in workers)
        return tuple(n["id"] for n in nodes if resource in n["resources"])

    return Placement(
        control_plane=control_plane,
        node_pool=node_pool,
        control_plane_nodes=spread(control_plane),
        node_pool_nodes=spread(node_pool),
        missing=missing,
    )


class PlacementError(Exception):
    """The Ray cluster cannot run this kubera as asked (the message says what is needed)."""


def is_loopback(ip: str) -> bool:
    return ip.startswith("127.") or ip in ("::1", "localhost")


def other_hosts(nodes: list[dict[str, Any]], driver_ip: str) -> list[str]:
    """The addresses of live Ray nodes on another host than the driver's (any loopback
    address counts as the driver's host: several raylets on one machine)."""
    return sorted(
        {
            n["ip"]
            for n in nodes
            if n["alive"] and n["ip"] and n["ip"] != driver_ip and not is_loopback(n["ip"])
        }
    )


def require_one_host(nodes: list[dict[str, Any]], driver_ip: str) -> None:
    """Refuse a Ray cluster with nodes on other hosts when etcd would be the embedded one,
    which listens on loopback: components placed there would dial their own 127.0.0.1."""
    others = other_hosts(nodes, driver_ip)
    if others:
        raise PlacementError(
            f"--etcd URL is needed: the Ray cluster has nodes on other hosts "
            f"({', '.join(others)}; this one is {driver_ip}) and the embedded etcd "
            "listens on loopback"
        )
