"""Device pools as the allocator sees them from one node (upstream
k8s.io/dynamic-resource-allocation/structured, pools.go: GatherPools).

A ResourceSlice reaches a node by spec.nodeName, a nodeSelector matching the node's labels
and name, or allNodes (a slice with none of them is some future extension and is ignored);
with perDeviceNodeSelection (DRAPartitionableDevices) each device says so itself, and the
slice reaches the node when one of its devices does. Per (driver, pool) only the reaching
slices of the newest generation count. A pool may span nodes (resourceSliceCount counts
the slices of every node): when fewer slices reach the node than the count, all slices of
the pool are checked, as upstream's newest GatherPools does with checkSlicesInPool. A
slice of a newer generation anywhere makes the node's slices *obsolete* (the driver is
replacing the pool: it is left out); else the pool is complete when the slices of its
generation, on any node, are as many as the count (its other slices are kept as `others`:
their counter sets and their devices' consumption count), and *incomplete* otherwise
(never allocated from, so not validated). A complete pool is *invalid* when a device name
repeats among its reaching slices or its counters do not add up (counters.py). Pools come
out sorted by (driver, pool), slices by name, devices in slice order (upstream
sortPoolsByID, sortSlicesByName: a driver orders the first-fit search by naming): the
allocator's search is deterministic because of it.

With DRAPartitionableDevices off, slices with perDeviceNodeSelection or sharedCounters are
ignored (as upstream) and a device that consumes counters is never allocated.

The parsed forms are what the allocator keeps across calls: a DeviceCache holds one
ParsedSlice per ResourceSlice message (with each device's selector verdicts), a SliceIndex
sorts one listing by node so that finding a node's pools does not walk every slice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import counters
from services.api.helpers.nodeaffinity import NodeSelector


@dataclass(frozen=True, order=True)
class DeviceID:
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class PoolDevice:
    """One device of a parsed slice, with each selector's verdict once computed (a slice
    message is never changed in place, so the verdicts hold while it is cached)."""

    __slots__ = ("id", "device", "slice", "verdicts", "consumes", "multi", "plain", "_selector")

    def __init__(self, id_: DeviceID, device: resource_pb2.Device, slice_: ParsedSlice) -> None:
        self.id = id_
        self.device = device
        self.slice = slice_
        # by expression, and by a request's tuple of expressions (class's, then its own)
        self.verdicts: dict[str | tuple[str, ...], bool] = {}
        #: what the device consumes of the pool's counter sets (partitionable devices)
        self.consumes: counters.Amounts = (
            counters.consumption(device) if device.consumes_counters else {}
        )
        #: consumable capacity: the device allows multiple allocations; `plain`: it does
        #: not and no capacity has a request policy (a request without capacity requests
        #: then needs no arithmetic)
        self.multi = device.allow_multiple_allocations
        self.plain = not self.multi and not any(
            c.HasField("request_policy") for c in device.capacity.values()
        )
        self._selector: NodeSelector | None = None

    def reaches(self, node: core_pb2.Node) -> bool:
        """Per-device node selection (the slice's perDeviceNodeSelection)."""
        d = self.device
        if d.HasField("node_name"):
            return node.metadata.name == d.node_name
        if d.HasField("all_nodes") and d.all_nodes:
            return True
        if d.HasField("node_selector"):
            if self._selector is None:
                self._selector = NodeSelector(d.node_selector)
            return self._selector.match(node)
        return False


class ParsedSlice:
    """A ResourceSlice made ready to allocate from."""

    __slots__ = (
        "msg",
        "driver",
        "pool",
        "generation",
        "count",
        "node_name",
        "all_nodes",
        "node_selector",
        "devices",
        "per_device",
        "shared_counters",
        "consumes",
        "binding",
    )

    def __init__(self, msg: resource_pb2.ResourceSlice) -> None:
        spec = msg.spec
        self.msg = msg
        self.driver = spec.driver
        self.pool = spec.pool.name
        self.generation = spec.pool.generation
        self.count = spec.pool.resource_slice_count
        self.node_name = spec.node_name if spec.HasField("node_name") else ""
        self.all_nodes = spec.HasField("all_nodes") and spec.all_nodes
        self.node_selector: NodeSelector | None = (
            NodeSelector(spec.node_selector) if spec.HasField("node_selector") else None
        )
        self.devices = [
            PoolDevice(DeviceID(self.driver, self.pool, d.name), d, self) for d in spec.devices
        ]
        self.per_device = spec.HasField("per_device_node_selection") and (
            spec.per_device_node_selection
        )
        self.shared_counters = bool(spec.shared_counters)
        self.consumes = any(d.consumes for d in self.devices)
        #: drabinding: a device of the slice has binding conditions
        self.binding = any(d.binding_conditions for d in spec.devices)

    def reaches(self, node: core_pb2.Node) -> bool:
        if self.node_name:
            return node.metadata.name == self.node_name
        if self.all_nodes:
            return True
        if self.node_selector is not None:
            return self.node_selector.match(node)
        if self.per_device:
            return any(d.reaches(node) for d in self.devices)
        return False  # nothing known is set: some future extension, not ours to use


class DeviceCache:
    """Parsed slices, selector verdicts and the last listing's SliceIndex, kept across
    allocations (by the scheduler plugin across cycles: give every Allocator the same one).

    Entries are keyed by the identity of the ResourceSlice message and hold it, so an
    updated slice (a new message in the informer's store; messages there are never changed
    in place) gets a fresh entry. `index` reuses the last SliceIndex while the listing holds
    the same messages in the same order (the ids compare equal, and the cached index keeps
    those messages alive, so equal ids are the same messages); a new listing rebuilds it
    and drops the entries of slices no longer listed. Not thread-safe: one cache per
    scheduler loop."""

    def __init__(self) -> None:
        self._slices: dict[int, ParsedSlice] = {}
        self._listing: tuple[int, ...] | None = None
        self._index: SliceIndex | None = None

    def __len__(self) -> int:
        return len(self._slices)

    def slice(self, msg: resource_pb2.ResourceSlice) -> ParsedSlice:
        entry = self._slices.get(id(msg))
        if entry is None or entry.msg is not msg:
            entry = self._slices[id(msg)] = ParsedSlice(msg)
        return entry

    def index(self, slices: Sequence[resource_pb2.ResourceSlice]) -> SliceIndex:
        """The SliceIndex of this listing (every ResourceSlice in the cluster)."""
        listing = tuple(map(id, slices))
        if self._index is None or listing != self._listing:
            self._index = SliceIndex(slices, self)
            self._listing = listing
            if len(self._slices) > len(slices):
                self.prune(slices)
        return self._index

    def prune(self, slices: Sequence[resource_pb2.ResourceSlice]) -> None:
        keep = {id(s) for s in slices}
        for key in [k for k in self._slices if k not in keep]:
            del self._slices[key]


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[ParsedSlice]
    incomplete: bool = False
    invalid: str = ""  # why, when invalid
    #: the pool's slices of the same generation that do not reach the node (multi-host)
    others: list[ParsedSlice] = field(default_factory=list)
    #: the pool's counter sets (partitionable devices), reaching slices' and others'
    counter_sets: counters.Amounts = field(default_factory=dict)
    #: the node the pool was gathered for, when a slice selects per device
    node: core_pb2.Node | None = None

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def key(self) -> tuple[str, str]:
        return (self.driver, self.name)

    def devices(self) -> Iterator[PoolDevice]:
        """The devices reaching the node."""
        for s in self.slices:
            if s.per_device and self.node is not None:
                node = self.node
                yield from (d for d in s.devices if d.reaches(node))
            else:
                yield from s.devices

    def all_devices(self) -> Iterator[PoolDevice]:
        """Every device of the pool, on this node or another (for shared counters)."""
        for s in (*self.slices, *self.others):
            yield from s.devices


class SliceIndex:
    """The slices by the node they name, and the others (nodeSelector, allNodes,
    per-device), each with its listing position so a node's slices come out in listing
    order; and every slice by pool, for multi-host pools."""

    def __init__(self, slices: Sequence[resource_pb2.ResourceSlice], cache: DeviceCache) -> None:
        self.by_node: dict[str, list[tuple[int, ParsedSlice]]] = {}
        self.other: list[tuple[int, ParsedSlice]] = []
        # every slice of a pool, whichever node it reaches (upstream checkSlicesInPool)
        self.by_pool: dict[tuple[str, str], list[ParsedSlice]] = {}
        self._pools: dict[object, list[Pool]] = {}
        for pos, msg in enumerate(slices):
            s = cache.slice(msg)
            if s.node_name:
                self.by_node.setdefault(s.node_name, []).append((pos, s))
            else:
                self.other.append((pos, s))
            self.by_pool.setdefault((s.driver, s.pool), []).append(s)

    def pools(self, node: core_pb2.Node, *, partitionable: bool = True) -> list[Pool]:
        """The pools reaching the node, sorted by (driver, pool) (upstream GatherPools).
        Kept per node name (and labels, when selector slices exist) and gate: callers must
        not change the Pools. `partitionable`: the DRAPartitionableDevices gate."""
        key: object = (node.metadata.name, partitionable)
        if self.other:
            key = (key, tuple(sorted(node.metadata.labels.items())))
        pools = self._pools.get(key)
        if pools is None:
            pools = self._pools[key] = self._gather(node, partitionable)
        return pools

    def _gather(self, node: core_pb2.Node, partitionable: bool) -> list[Pool]:
        mine = self.by_node.get(node.metadata.name, [])
        reaching = (
            sorted(mine + [(p, s) for p, s in self.other if s.reaches(node)])
            if self.other
            else mine
        )
        pools: dict[tuple[str, str], Pool] = {}
        for _, s in reaching:
            if not partitionable and (s.per_device or s.shared_counters):
                continue
            pool = pools.get((s.driver, s.pool))
            if pool is None:
                pools[(s.driver, s.pool)] = Pool(s.driver, s.pool, [s])
            elif s.generation > pool.slices[0].generation:
                pool.slices = [s]  # a newer generation replaces the older slices
            elif s.generation == pool.slices[0].generation:
                pool.slices.append(s)
        out = []
        for key in sorted(pools):
            pool = pools[key]
            if len(pool.slices) != pool.slices[0].count and not self._other_hosts(pool):
                continue  # obsolete: a newer generation exists elsewhere
            if any(s.per_device for s in pool.slices):
                pool.node = node
            pool.slices.sort(key=lambda s: s.msg.metadata.name)  # stable: ties keep order
            if not pool.incomplete:  # never allocated from, so not validated (as upstream)
                pool.invalid = _invalid(pool, partitionable)
            out.append(pool)
        return out

    def _other_hosts(self, pool: Pool) -> bool:
        """Complete the pool from its slices that do not reach the node (multi-host pools):
        False when they show the pool's slices here are obsolete."""
        generation = pool.slices[0].generation
        same = []
        for s in self.by_pool.get(pool.key, ()):
            if s.generation > generation:
                return False
            if s.generation == generation:
                same.append(s)
        if len(same) != pool.slices[0].count:
            pool.incomplete = True
            return True
        here = {id(s) for s in pool.slices}
        pool.others = [s for s in same if id(s) not in here]
        return True


def _invalid(pool: Pool, partitionable: bool) -> str:
    """Why the pool cannot be used ("" when it can): a device name twice among the slices
    reaching the node, or counters that do not add up (counters.py)."""
    seen: set[str] = set()
    for s in pool.slices:
        for d in s.devices:
            if d.id.device in seen:
                return f"duplicate device name {d.id.device}"
            seen.add(d.id.device)
    every = (*pool.slices, *pool.others)
    if not partitionable or not any(s.shared_counters or s.consumes for s in every):
        return ""
    msgs = [s.msg for s in every if s.shared_counters]
    sets, why = counters.counter_sets(msgs)
    if why:
        return why
    pool.counter_sets = sets
    return counters.check_consumption(sets, (d.device for s in every for d in s.devices))
