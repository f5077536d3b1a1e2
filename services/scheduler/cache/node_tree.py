"""Node names grouped by zone, listed one zone at a time (upstream backend/cache/node_tree.go).

`NodeTree` lists zone round-robin, so that a scan of the first N feasible nodes spreads over
zones; `zone_key` is the zone identity it groups by.
"""

from __future__ import annotations

from collections.abc import Iterable

from protos.kubera.v1 import core_pb2
from services.api.helpers.wellknown import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)


def zone_key(node: core_pb2.Node) -> str:
    """region + ":\\x00:" + zone, or "" when the node has neither (upstream GetZoneKey).
    The NUL keeps "a:b" + "c" apart from "a" + "b:c"."""
    labels = node.metadata.labels
    zone = labels.get(LABEL_TOPOLOGY_ZONE, labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE, ""))
    region = labels.get(LABEL_TOPOLOGY_REGION, labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION, ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names by zone, listed round-robin over zones (upstream node_tree.go).

    Invariants: every name is in exactly one zone list; `zones` holds exactly the zones with
    at least one node, in the order they were (re)first seen; `num_nodes` is the total.
    `version` changes whenever `list()` would change, so a snapshot knows when to reorder.
    """

    def __init__(self, nodes: Iterable[core_pb2.Node] = ()) -> None:
        self._tree: dict[str, list[str]] = {}
        self._zones: list[str] = []
        self._zone_of: dict[str, str] = {}
        self.num_nodes = 0
        self.version = 0
        for n in nodes:
            self.add_node(n)

    def __len__(self) -> int:
        return self.num_nodes

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    @property
    def zones(self) -> list[str]:
        return list(self._zones)

    def add_node(self, node: core_pb2.Node) -> None:
        name = node.metadata.name
        if name in self._zone_of:
            return  # already present (upstream logs and ignores)
        zone = zone_key(node)
        names = self._tree.get(zone)
        if names is None:
            self._zones.append(zone)
            self._tree[zone] = [name]
        else:
            names.append(name)
        self._zone_of[name] = zone
        self.num_nodes += 1
        self.version += 1

    def remove_node(self, node: core_pb2.Node) -> bool:
        """False when the node was not in the tree."""
        name = node.metadata.name
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return False
        names = self._tree[zone]
        names.remove(name)
        if not names:
            del self._tree[zone]
            self._zones.remove(zone)
        self.num_nodes -= 1
        self.version += 1
        return True

    def update_node(self, old: core_pb2.Node | None, new: core_pb2.Node) -> None:
        """Move the node if its zone changed. The zone it is filed under is the tree's own
        record, not `old`'s labels, so a stale `old` cannot leave the node in two zones."""
        name = new.metadata.name
        current = self._zone_of.get(name)
        if current is None:
            self.add_node(new)
            return
        if current == zone_key(new):
            return
        self.remove_node(new)
        self.add_node(new)

    def list(self) -> list[str]:
        """One node per zone in turn: zone lists a1 a2 a3 | b1 | c1 c2 → a1 b1 c1 a2 c2 a3."""
        lists = [self._tree[z] for z in self._zones]
        if len(lists) == 1:
            return list(lists[0])
        out: list[str] = []
        depth = max((len(names) for names in lists), default=0)
        for i in range(depth):
            for names in lists:
                if i < len(names):
                    out.append(names[i])
        return out
