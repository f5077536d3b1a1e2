"""Where the actors run on a Ray cluster of several nodes, and where they run now.

Ray nodes say what they are for with custom resources (`ray start --resources
'{"kubera/control-plane": 1}'`):

    kubera/control-plane   the apiserver, scheduler and controller-manager replicas
    kubera/node-pool       the node pools (hollow kubelets)

Each actor asks for a sliver of its resource (RESOURCE_SHARE), so any positive amount on a
node admits up to a thousand actors there. The replicas of one deployment and the pools
spread over the nodes that have their resource (Ray's SPREAD), so losing one node loses
one replica, not a deployment. The apiserver prefers the head node: when the head dies
the Ray cluster goes with it (its GCS lives there), so nothing is lost by putting it
there, and any other node could take the apiserver's address with it.

A resource that no node of the cluster has places nothing (the embedded single-node
cluster has none), and the names are `kubera up --control-plane-resource/
--node-pool-resource` ("" never constrains).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: `kubera up`'s default resource names.
CONTROL_PLANE = "kubera/control-plane"
NODE_POOL = "kubera/node-pool"
#: What one actor asks for of its resource.
RESOURCE_SHARE = 0.001

#: Ray's actor states as `kubera components` shows them.
STATES = {
    "ALIVE": "alive",
    "RESTARTING": "restarting",
    "DEAD": "dead",
    "PENDING_CREATION": "pending",
    "DEPENDENCIES_UNREADY": "pending",
}


@dataclass(frozen=True)
class Placement:
    #: The resources the actors ask for ("": that role is not placed).
    control_plane: str = ""
    node_pool: str = ""
    #: The head node's id (the apiserver's preferred node).
    head: str = ""

    def apiserver(self) -> dict[str, Any]:
        if not self.control_plane:
            return {}
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return {
            "resources": {self.control_plane: RESOURCE_SHARE},
            # soft: on another control-plane node when the head has no such resource
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=self.head, soft=True)
            if self.head
            else "SPREAD",
        }

    def replica(self) -> dict[str, Any]:
        """A scheduler or controller-manager replica."""
        out: dict[str, Any] = {"scheduling_strategy": "SPREAD"}
        if self.control_plane:
            out["resources"] = {self.control_plane: RESOURCE_SHARE}
        return out

    def pool(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scheduling_strategy": "SPREAD"}
        if self.node_pool:
            out["resources"] = {self.node_pool: RESOURCE_SHARE}
        return out

    def describe(self) -> str:
        """One line for `kubera up`'s summary."""
        parts = [
            f"{what} on nodes with {name}" if name else f"{what} anywhere"
            for what, name in (("control plane", self.control_plane), ("pools", self.node_pool))
        ]
        return ", ".join(parts)


def ray_nodes() -> list[dict[str, Any]]:
    """The Ray cluster's nodes: id, ip, alive, head, resources (ray.nodes())."""
    import ray

    return [
        {
            "id": n["NodeID"],
            "ip": n.get("NodeManagerAddress", ""),
            "alive": bool(n.get("Alive")),
            "head": "node:__internal_head__" in n.get("Resources", {}),
            "resources": dict(n.get("Resources", {})),
        }
        for n in ray.nodes()
    ]


def plan(control_plane: str, node_pool: str) -> Placement:
    """The placement on the connected Ray cluster: a resource no live node has is dropped."""
    nodes = [n for n in ray_nodes() if n["alive"]]
    have = {name for n in nodes for name in n["resources"]}
    head = next((n["id"] for n in nodes if n["head"]), "")
    return Placement(
        control_plane=control_plane if control_plane in have else "",
        node_pool=node_pool if node_pool in have else "",
        head=head,
    )


def actor_table() -> dict[str, dict[str, Any]]:
    """This job's actors by id (hex): state, node id and address, pid, restarts — from the
    GCS (Ray's debugging API; the state API needs the dashboard, which kubera leaves out)."""
    import ray
    from ray._private import state

    job = ray.JobID.from_hex(ray.get_runtime_context().get_job_id())
    out: dict[str, dict[str, Any]] = {}
    for actor_id, info in state.actors(job_id=job).items():
        address = info.get("Address") or {}
        out[actor_id] = {
            "state": STATES.get(str(info.get("State")), str(info.get("State", "")).lower()),
            "node_id": address.get("NodeID", ""),
            "node_ip": address.get("IPAddress", ""),
            "pid": int(info.get("Pid") or 0),
            "restarts": int(info.get("NumRestarts") or 0),
        }
    return out


def actor_id(handle: Any) -> str:
    return str(handle._actor_id.hex())
