"""Hollow CSI drivers as node templates declare them (template.py's `csiDrivers` of a node
kind): what a CSI driver's node plugin registers with the kubelet (its name, node ID,
topology keys, attach limit) and what its controller side publishes (the CSIDriver
object, CSIStorageCapacity per node or per zone).

    csiDrivers:
      - name: disk.example.com
        topologyKeys: [topology.kubernetes.io/zone]   # default: that one key
        attachLimit: 16            # CSINode allocatable.count (default: no limit)
        attachRequired: true       # CSIDriver spec.attachRequired (default true)
        capacity:                  # CSIStorageCapacity objects (storageCapacity: true)
          - storageClassName: zonal-disk
            per: zone              # zone (topology.kubernetes.io/zone) or node
            capacity: 1Ti
            maximumVolumeSize: 100Gi   # optional

A topology key the node has no label for (a driver's own key such as
`topology.disk.example.com/node`) becomes a label of the node with the node's name as its
value, as the kubelet's CSI registration labels the node with the driver's topology.
Publishing is csinode.py's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.api.helpers.stages import TemplateError, known, mapping
from services.api.helpers.wellknown import LABEL_TOPOLOGY_ZONE
from services.api.machinery.quantity import QuantityError, parse_quantity

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DRIVER_FIELDS = ("name", "topologyKeys", "attachLimit", "attachRequired", "capacity")
_CAPACITY_FIELDS = ("storageClassName", "per", "capacity", "maximumVolumeSize")


@dataclass(frozen=True)
class StorageCapacity:
    """The capacity a driver offers one StorageClass, per node or per zone."""

    storage_class: str
    per: str
    capacity: str
    maximum_volume_size: str = ""


@dataclass(frozen=True)
class HollowCSIDriver:
    """One hollow CSI driver on every node of a kind."""

    name: str
    topology_keys: tuple[str, ...] = (LABEL_TOPOLOGY_ZONE,)
    attach_limit: int | None = None
    attach_required: bool = True
    capacity: tuple[StorageCapacity, ...] = ()

    def topology_labels(self, node: str, labels: Mapping[str, str]) -> dict[str, str]:
        """The labels this driver adds to a node: its keys the node has no label for,
        valued with the node's name."""
        return {k: node for k in self.topology_keys if k not in labels}


def _quantity(path: str, value: Any) -> str:
    try:
        parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        raise TemplateError(f'{path}: {value!r}: expected a quantity like "1Ti"') from None
    return str(value)


def _capacity(path: str, doc: Mapping[str, Any]) -> StorageCapacity:
    known(path, doc, _CAPACITY_FIELDS)
    cls = doc.get("storageClassName")
    if not isinstance(cls, str) or not _DNS_SUBDOMAIN.match(cls):
        raise TemplateError(f"{path}.storageClassName: {cls!r}: expected a StorageClass name")
    per = doc.get("per", "zone")
    if per not in ("zone", "node"):
        raise TemplateError(f"{path}.per: {per!r}: expected zone or node")
    if "capacity" not in doc:
        raise TemplateError(f"{path}.capacity: required")
    size = doc.get("maximumVolumeSize")
    return StorageCapacity(
        cls,
        per,
        _quantity(f"{path}.capacity", doc["capacity"]),
        _quantity(f"{path}.maximumVolumeSize", size) if size is not None else "",
    )


def _driver(path: str, doc: Mapping[str, Any]) -> HollowCSIDriver:
    known(path, doc, _DRIVER_FIELDS)
    name = doc.get("name")
    if not isinstance(name, str) or len(name) > 63 or not _DNS_SUBDOMAIN.match(name):
        raise TemplateError(f"{path}.name: {name!r}: expected a driver name (a DNS subdomain)")
    keys = doc.get("topologyKeys", [LABEL_TOPOLOGY_ZONE])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise TemplateError(f"{path}.topologyKeys: expected a list of label keys")
    limit = doc.get("attachLimit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise TemplateError(f"{path}.attachLimit: {limit!r}: expected a whole number ≥ 0")
    attach = doc.get("attachRequired", True)
    if not isinstance(attach, bool):
        raise TemplateError(f"{path}.attachRequired: {attach!r}: expected true or false")
    capacity = doc.get("capacity") or []
    if not isinstance(capacity, list):
        raise TemplateError(f"{path}.capacity: expected a list")
    caps = tuple(
        _capacity(f"{path}.capacity[{i}]", mapping(f"{path}.capacity[{i}]", c))
        for i, c in enumerate(capacity)
    )
    for i, c in enumerate(caps):
        if c.per == "zone" and LABEL_TOPOLOGY_ZONE not in keys:
            raise TemplateError(
                f"{path}.capacity[{i}].per: zone needs {LABEL_TOPOLOGY_ZONE} in topologyKeys"
            )
    return HollowCSIDriver(name, tuple(keys), limit, attach, caps)


def parse_csi_drivers(path: str, value: Any) -> list[HollowCSIDriver]:
    """A node kind's `csiDrivers` (see the module docstring)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TemplateError(f"{path}: expected a list of CSI drivers")
    drivers = [_driver(f"{path}[{i}]", mapping(f"{path}[{i}]", d)) for i, d in enumerate(value)]
    names = [d.name for d in drivers]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise TemplateError(f"{path}[{i}].name: {n!r} appears twice")
    return drivers


__all__ = ["HollowCSIDriver", "StorageCapacity", "parse_csi_drivers"]
