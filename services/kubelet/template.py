"""Node templates: what hollow nodes look like, as data (kwok's stages and node shapes).

A template is YAML:

    apiVersion: kubera.io/v1alpha1
    kind: NodeTemplate
    zones: 3                       # nodes spread round-robin over zone-a, zone-b, ...
    region: region-1
    namePrefix: kubera-node        # names <prefix>-<00000>, or <prefix>-<kind>-<00000>
                                   # when there are several kinds
    nodes:
      - name: standard             # a node kind
        count: 9                   # how many; with --nodes N the counts are proportions
        capacity: {cpu: "8", memory: 32Gi, ephemeral-storage: 100Gi, pods: "110"}
        allocatable: {}            # default: capacity
        disk: {nodefs: 100Gi, nodefsInodes: 6553600, imagefs: 0, imagefsInodes: 0, pidMax: 32768}
        labels: {node.kubernetes.io/instance-type: standard}
        taints: []
        system: {memory: 500Mi, ephemeral-storage: 2Gi, inodes: 20000, pids: 300}
        images: {default: 100Mi, sizes: {nginx: 150Mi}}
        stages: {creatingDelay: 1s, startDelay: 2s, jitter: 500ms, runDuration: 0, exitCode: 0,
                 failureRate: 0, containers: {}, jobRunDuration: 10s}  # containers: per name
        usageDefaults: [{selector: {app: web}, usage: {memory: {start: 200Mi}}}]
        eviction: {evictionHard: {memory.available: "<100Mi"}, evictionMonitoringPeriod: 10s}
        devices:                   # DRA devices, published as ResourceSlices (slices.py)
          - driver: gpu.example.com
            count: 8               # devices <namePrefix>-0 .. -7
            namePrefix: gpu        # default "device"
            attributes: {model: A100, driverVersion: {version: 1.2.3}, nvlink: true}
            capacity: {memory: 80Gi}
            taints: [{key: example.com/unhealthy, value: "yes", effect: NoSchedule}]
                                   # on every device of the set (None, NoSchedule, NoExecute)
            sharedCounters: {memory: 80Gi, slices: "7"}   # partitionable (MIG-style), below
            partitions: [{name: 1g, count: 7, consumes: {memory: 10Gi, slices: "1"},
                          attributes: {profile: 1g.10gb}}]
            allowMultipleAllocations: false  # true: shared by requests while capacity lasts
            bindsToNode: true      # binding conditions (BindingDriver in slices.py):
            bindingConditions: [gpu.example.com/is-prepared]
            bindingFailureConditions: [gpu.example.com/preparing-failed]
            preparationDelay: 2s   # the hollow driver reports after this,
            preparationFailureRate: 0  # the failure condition with this probability
        csiDrivers:                # hollow CSI drivers (csidriver.py; published by csinode.py)
          - name: disk.example.com
            topologyKeys: [topology.kubernetes.io/zone]
            attachLimit: 16
            capacity: [{storageClassName: zonal-disk, per: zone, capacity: 1Ti}]

Every device also gets the int attribute `index` (0..count-1).

Partitionable devices (DRAPartitionableDevices): with `sharedCounters`, each device
<namePrefix>-<i> gets a counter set of its own (named like the device, holding those
counters) that it consumes whole, and each `partitions` entry adds `count` devices
<namePrefix>-<i>-<name>-<j> consuming `consumes` of it (with that as their capacity, the
set's attributes, the entry's and `index` i). The scheduler then never allocates a device
together with partitions that would exceed its counters. The counter sets are published
in a second slice of the node's pool (upstream keeps devices and sharedCounters apart):
at most 8 devices per set, 64 devices in all with their partitions.

Consumable capacity (DRAConsumableCapacity): with `allowMultipleAllocations: true` every
device of the set (a shared NIC, say) may be allocated to several requests at once, each
consuming what it asks of the capacities (`capacity.requests`; the whole capacity when it
asks nothing) while they last.

`imagefs: 0` means images share the node filesystem (nodefs), Kubernetes' default layout.
Every duration is simulated time (see services/clock.ScaledClock). Pod annotations
override the stages (`kubera.io/stages`, same keys: services/api/helpers/stages.py) and the usage
(`kubera.io/usage`: services/api/helpers/usage.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from services.api.helpers.stages import Stages, TemplateError, duration, known, mapping
from services.api.helpers.wellknown import (
    LABEL_ARCH,
    LABEL_HOSTNAME,
    LABEL_OS,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)
from services.api.machinery import names, yamlload
from services.api.machinery.quantity import QuantityError, parse_quantity
from services.kubelet.csidriver import HollowCSIDriver, parse_csi_drivers

DEFAULT_NAME_PREFIX = "kubera-node"


def _qty(path: str, value: Any) -> int:
    try:
        return parse_quantity(value).int_value()
    except (QuantityError, TypeError, ValueError, OverflowError):
        raise TemplateError(f'{path}: {value!r}: expected a quantity like "100Mi" or "8"') from None


@dataclass(frozen=True)
class Disk:
    nodefs: int = 100 * 2**30
    nodefs_inodes: int = 6_553_600
    #: 0: images live on nodefs (no separate image filesystem).
    imagefs: int = 0
    imagefs_inodes: int = 0
    pid_max: int = 32_768


#: Upstream's ResourceSliceMaxDevices: at most this many devices in one slice (and kubera
#: publishes one slice per node and driver).
MAX_DEVICES_PER_SLICE = 128
#: Upstream's ResourceSliceMaxAttributesAndCapacitiesPerDevice.
MAX_ATTRIBUTES_AND_CAPACITIES = 32
#: The attribute every device gets: its number within its set (0..count-1).
INDEX_ATTRIBUTE = "index"
#: Upstream's limits for partitionable devices: counter sets per slice, devices per slice
#: when they consume counters, counters per set.
MAX_COUNTER_SETS = 8
MAX_DEVICES_WITH_COUNTERS = 64
MAX_COUNTERS_PER_SET = 32

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


@dataclass(frozen=True)
class Binding:
    """A device set's binding conditions (drabinding; upstream Device.bindsToNode,
    bindingConditions, bindingFailureConditions) and the hollow driver's preparation:
    `delay` simulated seconds after an allocation it sets the binding conditions True,
    or, with probability `failure_rate`, the first failure condition."""

    binds_to_node: bool | None
    conditions: tuple[str, ...]
    failure_conditions: tuple[str, ...]
    delay: float = 0.0
    failure_rate: float = 0.0


_BINDING_FIELDS = (
    "bindsToNode",
    "bindingConditions",
    "bindingFailureConditions",
    "preparationDelay",
    "preparationFailureRate",
)


def _condition_types(path: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= 4:
        raise TemplateError(f"{path}: expected a list of 1 to 4 condition types")
    for i, t in enumerate(value):
        problems = names.qualified_name(t) if isinstance(t, str) else ["expected a string"]
        if problems:
            raise TemplateError(f"{path}[{i}]: {t!r}: {problems[0]}")
    if len(set(value)) != len(value):
        raise TemplateError(f"{path}: {value!r}: a condition type appears twice")
    return tuple(value)


def _binding(path: str, doc: Mapping[str, Any]) -> Binding | None:
    if not any(k in doc for k in _BINDING_FIELDS):
        return None
    binds = doc.get("bindsToNode")
    if binds is not None and not isinstance(binds, bool):
        raise TemplateError(f"{path}.bindsToNode: {binds!r}: expected true or false")
    if "bindingConditions" not in doc:
        if any(k in doc for k in _BINDING_FIELDS[1:]):
            raise TemplateError(
                f"{path}.bindingConditions: required with bindingFailureConditions and the preparation"
            )
        return Binding(binds, (), ())
    conditions = _condition_types(f"{path}.bindingConditions", doc["bindingConditions"])
    failures = _condition_types(
        f"{path}.bindingFailureConditions", doc.get("bindingFailureConditions")
    )
    if set(conditions) & set(failures):
        raise TemplateError(
            f"{path}.bindingFailureConditions: must not overlap with bindingConditions"
        )
    rate = doc.get("preparationFailureRate", 0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise TemplateError(
            f"{path}.preparationFailureRate: {rate!r}: expected a number from 0 to 1"
        )
    delay = duration(f"{path}.preparationDelay", doc.get("preparationDelay", "0s"))
    return Binding(binds, conditions, failures, delay, float(rate))


@dataclass(frozen=True)
class DeviceSet:
    """`count` devices of one driver on every node of a kind (one ResourceSlice per node)."""

    driver: str
    count: int
    name_prefix: str
    #: attribute name -> its value in the DeviceAttribute shape ({"string": ..}, {"int": ..},
    #: {"bool": ..} or {"version": ..}); `index` is added per device.
    attributes: dict[str, dict[str, Any]]
    #: capacity name -> quantity, as given (validated).
    capacity: dict[str, str]
    #: partitionable devices: the counters of each device's own counter set (empty: none)
    shared_counters: dict[str, str] = field(default_factory=dict)
    #: the partitions of each device (only with shared_counters)
    partitions: tuple[Partition, ...] = ()
    #: consumable capacity: the devices may be shared by several requests
    allow_multiple_allocations: bool = False
    #: Binding conditions of every device, and how the hollow driver reports them.
    binding: Binding | None = None
    #: drataints: the DeviceTaints of every device of the set ({key, value, effect}).
    taints: tuple[dict[str, str], ...] = ()

    def device_names(self) -> list[str]:
        return [f"{self.name_prefix}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class Partition:
    """`count` devices <namePrefix>-<i>-<name>-<j> per device i, each consuming `consumes`
    of device i's counter set."""

    name: str
    count: int
    consumes: dict[str, str]
    attributes: dict[str, dict[str, Any]]


def _attribute_name(path: str, name: Any) -> str:
    """A qualified attribute or capacity name: a C identifier of at most 32 characters,
    optionally prefixed by a DNS subdomain and "/" (upstream's validation)."""
    if not isinstance(name, str):
        raise TemplateError(f"{path}: {name!r}: expected a name")
    domain, _, ident = name.rpartition("/")
    if domain and (len(domain) > 63 or not _DNS_SUBDOMAIN.match(domain)):
        raise TemplateError(f"{path}: {name!r}: the prefix must be a DNS subdomain")
    if not _C_IDENTIFIER.match(ident):
        raise TemplateError(
            f"{path}: {name!r}: expected a C identifier of at most 32 characters (optionally <domain>/ before it)"
        )
    return name


def _attribute_value(path: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise TemplateError(f"{path}: {value!r}: out of the int64 range")
        return {"int": value}
    if isinstance(value, str):
        if len(value) > 64:
            raise TemplateError(f"{path}: {value!r}: a string attribute has at most 64 characters")
        return {"string": value}
    if isinstance(value, Mapping):
        known(path, value, ("version",))
        version = value.get("version")
        if not isinstance(version, str) or not _SEMVER.match(version) or len(version) > 64:
            raise TemplateError(
                f"{path}.version: {version!r}: expected a semantic version like 1.2.3"
            )
        return {"version": version}
    raise TemplateError(
        f"{path}: {value!r}: expected a string, a whole number, true/false or {{version: X.Y.Z}}"
    )


_DEVICE_TAINT_EFFECTS = ("None", "NoSchedule", "NoExecute")


def _device_taints(path: str, value: Any) -> tuple[dict[str, str], ...]:
    """drataints: at most 16 taints, each a label-name key, a label value and an effect."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > 16:
        raise TemplateError(f"{path}: expected a list of at most 16 taints")
    out = []
    for i, t in enumerate(value):
        t = mapping(f"{path}[{i}]", t)
        known(f"{path}[{i}]", t, ("key", "value", "effect"))
        key, val, effect = t.get("key"), str(t.get("value", "")), t.get("effect")
        if not isinstance(key, str) or names.qualified_name(key) or names.label_value(val):
            raise TemplateError(f"{path}[{i}]: expected a label-name key and a label value")
        if effect not in _DEVICE_TAINT_EFFECTS:
            raise TemplateError(
                f"{path}[{i}].effect: {effect!r}: expected one of None, NoSchedule, NoExecute"
            )
        out.append({"key": key, **({"value": val} if val else {}), "effect": effect})
    return tuple(out)


_DEVICE_FIELDS = (
    "driver",
    "count",
    "namePrefix",
    "attributes",
    "capacity",
    "sharedCounters",
    "partitions",
    "allowMultipleAllocations",
    "taints",
    *_BINDING_FIELDS,
)
_PARTITION_FIELDS = ("name", "count", "consumes", "attributes")


def _counters(path: str, value: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in mapping(path, value).items():
        if not isinstance(k, str) or not _DNS_LABEL.match(k):
            raise TemplateError(f"{path}.{k}: expected a lowercase DNS label as counter name")
        if isinstance(v, bool):
            raise TemplateError(f'{path}.{k}: {v!r}: expected a quantity like "80Gi"')
        _qty(f"{path}.{k}", v)
        out[k] = str(v)
    if len(out) > MAX_COUNTERS_PER_SET:
        raise TemplateError(f"{path}: at most {MAX_COUNTERS_PER_SET} counters")
    return out


def _partitions(
    path: str, value: Any, counters: dict[str, str], prefix: str, count: int
) -> tuple[Partition, ...]:
    if value is None:
        return ()
    if not counters:
        raise TemplateError(f"{path}: partitions consume sharedCounters, which are not set")
    if not isinstance(value, list):
        raise TemplateError(f"{path}: expected a list of partitions")
    out = []
    for i, raw in enumerate(value):
        p = f"{path}[{i}]"
        doc = mapping(p, raw)
        known(p, doc, _PARTITION_FIELDS)
        name = doc.get("name")
        n = doc.get("count", 1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise TemplateError(f"{p}.count: {n!r}: expected a whole number of at least 1")
        if not isinstance(name, str) or not _DNS_LABEL.match(
            f"{prefix}-{count - 1}-{name}-{n - 1}"
        ):
            raise TemplateError(f"{p}.name: {name!r}: device names must be lowercase DNS labels")
        consumes = _counters(f"{p}.consumes", doc.get("consumes"))
        for c in consumes:
            if c not in counters:
                raise TemplateError(f"{p}.consumes.{c}: not one of sharedCounters")
        attributes = {
            _attribute_name(f"{p}.attributes.{k}", k): _attribute_value(f"{p}.attributes.{k}", v)
            for k, v in mapping(f"{p}.attributes", doc.get("attributes")).items()
        }
        out.append(Partition(name, n, consumes, attributes))
    if len({x.name for x in out}) != len(out):
        raise TemplateError(f"{path}: partition names must differ")
    return tuple(out)


def _device_set(doc: Mapping[str, Any], path: str) -> DeviceSet:
    known(path, doc, _DEVICE_FIELDS)
    driver = doc.get("driver")
    if not isinstance(driver, str) or len(driver) > 63 or not _DNS_SUBDOMAIN.match(driver):
        raise TemplateError(
            f"{path}.driver: {driver!r}: expected a lowercase DNS subdomain of at most 63 characters, like gpu.example.com"
        )
    count = doc.get("count", 1)
    if (
        isinstance(count, bool)
        or not isinstance(count, int)
        or not 1 <= count <= MAX_DEVICES_PER_SLICE
    ):
        raise TemplateError(
            f"{path}.count: {count!r}: expected a whole number from 1 to {MAX_DEVICES_PER_SLICE}"
        )
    prefix = doc.get("namePrefix", "device")
    if not isinstance(prefix, str) or not _DNS_LABEL.match(f"{prefix}-{count - 1}"):
        raise TemplateError(f"{path}.namePrefix: {prefix!r}: expected a lowercase DNS label")
    attributes: dict[str, dict[str, Any]] = {}
    for k, v in mapping(f"{path}.attributes", doc.get("attributes")).items():
        name = _attribute_name(f"{path}.attributes.{k}", k)
        if name == INDEX_ATTRIBUTE:
            raise TemplateError(
                f"{path}.attributes.{k}: set by kubera on every device (0..count-1)"
            )
        attributes[name] = _attribute_value(f"{path}.attributes.{k}", v)
    capacity: dict[str, str] = {}
    for k, v in mapping(f"{path}.capacity", doc.get("capacity")).items():
        name = _attribute_name(f"{path}.capacity.{k}", k)
        if isinstance(v, bool):
            raise TemplateError(f'{path}.capacity.{k}: {v!r}: expected a quantity like "80Gi"')
        _qty(f"{path}.capacity.{k}", v)
        capacity[name] = str(v)
    if len(attributes) + 1 + len(capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
        raise TemplateError(
            f"{path}: at most {MAX_ATTRIBUTES_AND_CAPACITIES} attributes and capacities per device (index included)"
        )
    shared = _counters(f"{path}.sharedCounters", doc.get("sharedCounters"))
    parts = _partitions(f"{path}.partitions", doc.get("partitions"), shared, prefix, count)
    if shared:
        if count > MAX_COUNTER_SETS:
            raise TemplateError(
                f"{path}.count: with sharedCounters at most {MAX_COUNTER_SETS} devices "
                "(one counter set each)"
            )
        total = count * (1 + sum(x.count for x in parts))
        if total > MAX_DEVICES_WITH_COUNTERS:
            raise TemplateError(
                f"{path}: {total} devices with their partitions; at most "
                f"{MAX_DEVICES_WITH_COUNTERS} when they consume counters"
            )
    multi = doc.get("allowMultipleAllocations", False)
    if not isinstance(multi, bool):
        raise TemplateError(f"{path}.allowMultipleAllocations: {multi!r}: expected true or false")
    return DeviceSet(
        driver,
        count,
        prefix,
        attributes,
        capacity,
        shared,
        parts,
        multi,
        _binding(path, doc),
        _device_taints(f"{path}.taints", doc.get("taints")),
    )


def _device_sets(path: str, value: Any) -> list[DeviceSet]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TemplateError(f"{path}: expected a list of device sets")
    sets = [_device_set(mapping(f"{path}[{i}]", d), f"{path}[{i}]") for i, d in enumerate(value)]
    drivers = [d.driver for d in sets]
    for i, d in enumerate(drivers):
        if d in drivers[:i]:
            raise TemplateError(
                f"{path}[{i}].driver: {d!r} appears twice (one ResourceSlice per node and driver)"
            )
    return sets


@dataclass(frozen=True)
class NodeKind:
    """One shape of node and how many of it."""

    name: str
    count: int
    capacity: dict[str, str]
    allocatable: dict[str, str]
    disk: Disk
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    #: What the node's own daemons use (memory, ephemeral-storage, inodes, pids).
    system: dict[str, int]
    default_image_size: int
    image_sizes: dict[str, int]
    stages: Stages
    #: (label selector, usage spec) pairs; the first match gives a pod's default usage.
    usage_defaults: list[tuple[dict[str, str], dict[str, Any]]]
    #: KubeletConfiguration eviction keys, as given (validated by the eviction module).
    eviction: dict[str, Any]
    #: DRA devices, one set per driver.
    devices: list[DeviceSet] = field(default_factory=list)
    #: Hollow CSI drivers (csidriver.py).
    csi_drivers: list[HollowCSIDriver] = field(default_factory=list)
    #: The KubeletConfiguration cpuManagerPolicy its declared features are discovered
    #: from ("none" or "static"; services/api/nodedeclaredfeatures.py).
    cpu_manager_policy: str = "none"
    #: status.declaredFeatures as given, in place of discovery (None: discover them).
    declared_features: list[str] | None = None

    def image_size(self, image: str) -> int:
        repo = image.rsplit("@", 1)[0]
        if ":" in repo.rsplit("/", 1)[-1]:
            repo = repo.rsplit(":", 1)[0]
        return self.image_sizes.get(image, self.image_sizes.get(repo, self.default_image_size))


@dataclass(frozen=True)
class NodeTemplate:
    kinds: list[NodeKind]
    zones: int = 3
    region: str = "region-1"
    name_prefix: str = DEFAULT_NAME_PREFIX

    @property
    def total(self) -> int:
        return sum(k.count for k in self.kinds)


_KIND_FIELDS = (
    "name",
    "count",
    "capacity",
    "allocatable",
    "disk",
    "labels",
    "taints",
    "system",
    "images",
    "stages",
    "usageDefaults",
    "eviction",
    "devices",
    "csiDrivers",
    "cpuManagerPolicy",
    "declaredFeatures",
)
_DEFAULT_CAPACITY = {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"}


def _kind(doc: Mapping[str, Any], path: str) -> NodeKind:
    known(path, doc, _KIND_FIELDS)
    name = doc.get("name", "node")
    if not isinstance(name, str) or not name.replace("-", "").isalnum() or name != name.lower():
        raise TemplateError(f"{path}.name: {name!r}: expected a lowercase DNS label")
    count = doc.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise TemplateError(f"{path}.count: {count!r}: expected a whole number ≥ 0")
    capacity = {
        **_DEFAULT_CAPACITY,
        **{str(k): str(v) for k, v in mapping(f"{path}.capacity", doc.get("capacity")).items()},
    }
    for k, v in capacity.items():
        _qty(f"{path}.capacity.{k}", v)
    allocatable = {
        str(k): str(v) for k, v in mapping(f"{path}.allocatable", doc.get("allocatable")).items()
    }
    for k, v in allocatable.items():
        _qty(f"{path}.allocatable.{k}", v)
        if k not in capacity:
            raise TemplateError(f"{path}.allocatable.{k}: not in capacity")
    allocatable = {**capacity, **allocatable}
    d = mapping(f"{path}.disk", doc.get("disk"))
    known(f"{path}.disk", d, ("nodefs", "nodefsInodes", "imagefs", "imagefsInodes", "pidMax"))
    base = Disk()
    nodefs = _qty(
        f"{path}.disk.nodefs", d.get("nodefs", capacity.get("ephemeral-storage", base.nodefs))
    )
    disk = Disk(
        nodefs=nodefs,
        nodefs_inodes=_qty(f"{path}.disk.nodefsInodes", d.get("nodefsInodes", base.nodefs_inodes)),
        imagefs=_qty(f"{path}.disk.imagefs", d.get("imagefs", 0)),
        imagefs_inodes=_qty(f"{path}.disk.imagefsInodes", d.get("imagefsInodes", 0)),
        pid_max=_qty(f"{path}.disk.pidMax", d.get("pidMax", base.pid_max)),
    )
    if disk.imagefs and not disk.imagefs_inodes:
        disk = Disk(disk.nodefs, disk.nodefs_inodes, disk.imagefs, disk.nodefs_inodes, disk.pid_max)
    labels = {str(k): str(v) for k, v in mapping(f"{path}.labels", doc.get("labels")).items()}
    taints = doc.get("taints") or []
    if not isinstance(taints, list):
        raise TemplateError(f"{path}.taints: expected a list of taints")
    for i, t in enumerate(taints):
        t = mapping(f"{path}.taints[{i}]", t)
        if not t.get("key") or t.get("effect") not in (
            "NoSchedule",
            "PreferNoSchedule",
            "NoExecute",
        ):
            raise TemplateError(
                f"{path}.taints[{i}]: expected a key and an effect of NoSchedule, PreferNoSchedule or NoExecute"
            )
    sysd = mapping(f"{path}.system", doc.get("system"))
    known(f"{path}.system", sysd, ("memory", "ephemeral-storage", "inodes", "pids"))
    system = {
        "memory": _qty(f"{path}.system.memory", sysd.get("memory", "500Mi")),
        "ephemeral-storage": _qty(
            f"{path}.system.ephemeral-storage", sysd.get("ephemeral-storage", "2Gi")
        ),
        "inodes": _qty(f"{path}.system.inodes", sysd.get("inodes", 20_000)),
        "pids": _qty(f"{path}.system.pids", sysd.get("pids", 300)),
    }
    images = mapping(f"{path}.images", doc.get("images"))
    known(f"{path}.images", images, ("default", "sizes"))
    sizes = {
        str(k): _qty(f"{path}.images.sizes.{k}", v)
        for k, v in mapping(f"{path}.images.sizes", images.get("sizes")).items()
    }
    defaults = []
    for i, entry in enumerate(doc.get("usageDefaults") or []):
        e = mapping(f"{path}.usageDefaults[{i}]", entry)
        known(f"{path}.usageDefaults[{i}]", e, ("selector", "usage"))
        sel = {
            str(k): str(v)
            for k, v in mapping(f"{path}.usageDefaults[{i}].selector", e.get("selector")).items()
        }
        defaults.append((sel, dict(mapping(f"{path}.usageDefaults[{i}].usage", e.get("usage")))))
    return NodeKind(
        name=name,
        count=count,
        capacity=capacity,
        allocatable=allocatable,
        disk=disk,
        labels=labels,
        taints=[dict(t) for t in taints],
        system=system,
        default_image_size=_qty(f"{path}.images.default", images.get("default", "100Mi")),
        image_sizes=sizes,
        stages=Stages.from_dict(mapping(f"{path}.stages", doc.get("stages")), f"{path}.stages"),
        usage_defaults=defaults,
        eviction=dict(mapping(f"{path}.eviction", doc.get("eviction"))),
        devices=_device_sets(f"{path}.devices", doc.get("devices")),
        csi_drivers=parse_csi_drivers(f"{path}.csiDrivers", doc.get("csiDrivers")),
        cpu_manager_policy=_cpu_manager_policy(path, doc.get("cpuManagerPolicy", "none")),
        declared_features=_declared_features(path, doc.get("declaredFeatures")),
    )


def _cpu_manager_policy(path: str, value: Any) -> str:
    if value not in ("none", "static"):
        raise TemplateError(f'{path}.cpuManagerPolicy: {value!r}: expected "none" or "static"')
    return str(value)


def _declared_features(path: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TemplateError(f"{path}.declaredFeatures: expected a list of feature names")
    return sorted(set(value))


def parse_template(doc: Mapping[str, Any] | None) -> NodeTemplate:
    doc = mapping("template", doc)
    known("template", doc, ("apiVersion", "kind", "zones", "region", "namePrefix", "nodes"))
    if doc.get("kind", "NodeTemplate") != "NodeTemplate":
        raise TemplateError(f"kind: {doc.get('kind')!r}: expected NodeTemplate")
    zones = doc.get("zones", 3)
    if isinstance(zones, bool) or not isinstance(zones, int) or zones < 1:
        raise TemplateError(f"zones: {zones!r}: expected a whole number ≥ 1")
    nodes = doc.get("nodes") or [{"name": "node", "count": 1}]
    if not isinstance(nodes, list):
        raise TemplateError("nodes: expected a list of node kinds")
    kinds = [_kind(mapping(f"nodes[{i}]", n), f"nodes[{i}]") for i, n in enumerate(nodes)]
    names = [k.name for k in kinds]
    if len(set(names)) != len(names):
        raise TemplateError(f"nodes: kind names must be unique, got {names}")
    return NodeTemplate(
        kinds=kinds,
        zones=zones,
        region=str(doc.get("region", "region-1")),
        name_prefix=str(doc.get("namePrefix", DEFAULT_NAME_PREFIX)),
    )


def load_template(text: str) -> NodeTemplate:
    try:
        doc = yamlload.safe_load(text)
    except yaml.YAMLError as e:
        raise TemplateError(f"node template is not valid YAML: {e}") from None
    return parse_template(doc)


def default_template() -> NodeTemplate:
    return parse_template({})


@dataclass(frozen=True)
class NodePlan:
    """One hollow node to run: its name, kind and placement labels."""

    name: str
    kind: NodeKind
    zone: str
    labels: dict[str, str] = field(default_factory=dict)


def plan_nodes(template: NodeTemplate, total: int | None = None) -> list[NodePlan]:
    """The nodes to run: the template's counts, or `total` nodes split in their proportions
    (largest remainders), zones assigned round-robin so each zone gets an even share."""
    counts = [k.count for k in template.kinds]
    if total is not None:
        weight = sum(counts) or len(counts)
        shares = [(c if sum(counts) else 1) * total / weight for c in counts]
        counts = [int(s) for s in shares]
        order = sorted(range(len(shares)), key=lambda i: shares[i] - counts[i], reverse=True)
        for i in order[: total - sum(counts)]:
            counts[i] += 1
    plans: list[NodePlan] = []
    n = 0
    for kind, count in zip(template.kinds, counts, strict=True):
        for i in range(count):
            name = (
                f"{template.name_prefix}-{kind.name}-{i:05d}"
                if len(template.kinds) > 1
                else f"{template.name_prefix}-{i:05d}"
            )
            zone = (
                f"{template.region}-{chr(ord('a') + n % template.zones)}"
                if template.zones <= 26
                else f"{template.region}-z{n % template.zones}"
            )
            labels = {
                LABEL_HOSTNAME: name,
                LABEL_OS: "linux",
                LABEL_ARCH: "amd64",
                LABEL_TOPOLOGY_ZONE: zone,
                LABEL_TOPOLOGY_REGION: template.region,
                "type": "kubera-hollow",
                **kind.labels,
            }
            for driver in kind.csi_drivers:
                labels.update(driver.topology_labels(name, labels))
            plans.append(NodePlan(name, kind, zone, labels))
            n += 1
    return plans
