"""One manifest of each DRA kind (resource.k8s.io/v1) and of PodGroup, as users write them
(YAML numbers where Kubernetes takes quantities, arbitrary JSON in opaque parameters), and
the object the apiserver stores for each (quantities canonical, everything else kept).
Shared by the codec, HTTP and `kubera apply` tests."""

from __future__ import annotations

import copy
from typing import Any

import yaml

DEVICE_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
  config:
  - opaque:
      driver: gpu.example.com
      parameters:
        apiVersion: gpu.example.com/v1
        kind: GpuConfig
        sharing: {strategy: TimeSlicing, replicas: 4, interval: 1.5, exclusive: false}
        tags: [a, 2, null]
"""

RESOURCE_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpu-example-com
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: A100}
      index: {int: 0}
      nvlink: {bool: true}
      driverVersion: {version: 1.2.3}
    capacity:
      memory: {value: 80Gi}
      cores: {value: 80}
      bandwidth: {value: 1024Mi}
"""

RESOURCE_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: two-gpus
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'}
        allocationMode: ExactCount
        count: 2
    - name: nic
      firstAvailable:
      - name: fast
        deviceClassName: nic.example.com
      - name: slow
        deviceClassName: nic.example.com
        allocationMode: All
    constraints:
    - requests: [gpu]
      matchAttribute: gpu.example.com/model
    config:
    - requests: [gpu]
      opaque:
        driver: gpu.example.com
        parameters: {mode: shared, replicas: 2}
"""

RESOURCE_CLAIM_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
  namespace: default
spec:
  metadata:
    labels: {team: ml}
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"""

POD_GROUP = """\
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: training
  namespace: default
spec:
  minMember: 4
  minResources: {cpu: 4000m, memory: 1024Mi, nvidia.com/gpu: 4}
  scheduleTimeoutSeconds: 60
"""

#: kind -> the manifest's text.
MANIFESTS = {
    "DeviceClass": DEVICE_CLASS,
    "ResourceSlice": RESOURCE_SLICE,
    "ResourceClaim": RESOURCE_CLAIM,
    "ResourceClaimTemplate": RESOURCE_CLAIM_TEMPLATE,
    "PodGroup": POD_GROUP,
}


def manifest(kind: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(MANIFESTS[kind])
    return loaded


def stored(kind: str) -> dict[str, Any]:
    """What the apiserver keeps of `manifest(kind)`: quantities canonical (`80` stays `80`,
    `1024Mi` is `1Gi`, `4000m` is `4`), every other value as written."""
    doc = copy.deepcopy(manifest(kind))
    if kind == "ResourceSlice":
        capacity = doc["spec"]["devices"][0]["capacity"]
        capacity["cores"] = {"value": "80"}
        capacity["bandwidth"] = {"value": "1Gi"}
    if kind == "PodGroup":
        doc["spec"]["minResources"] = {"cpu": "4", "memory": "1Gi", "nvidia.com/gpu": "4"}
    if kind == "ResourceClaim":
        doc["status"] = {}  # a struct: Go writes it empty
    return doc


def defaulted(kind: str) -> dict[str, Any]:
    """What the apiserver keeps: `stored(kind)` with upstream's defaults applied at admission
    (a device request is ExactCount of 1 unless it says otherwise)."""
    doc = stored(kind)
    exact = {"allocationMode": "ExactCount", "count": 1}
    if kind == "ResourceClaim":
        doc["spec"]["devices"]["requests"][1]["firstAvailable"][0] |= exact
    if kind == "ResourceClaimTemplate":
        doc["spec"]["spec"]["devices"]["requests"][0]["exactly"] |= exact
    return doc
