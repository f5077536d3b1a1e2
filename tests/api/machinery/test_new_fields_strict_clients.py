"""The fields this turn added to existing kinds, written by kubera's codec and read back
through the models of clients written by others: the official `kubernetes` client (strict,
pydantic) and lightkube. A field a model lacks, or a value of the wrong shape, fails here
before any cluster runs (the e2e clients tests read whole objects from a live cluster)."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client as k8s
from lightkube.models.core_v1 import NodeStatus, PodSpec, PodStatus
from lightkube.models.resource_v1 import DeviceClassSpec

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.machinery import codec

VOLUME = "kubernetes.io/csi/hollow.kubera.io^vol-1"


def _node() -> core_pb2.Node:
    node = core_pb2.Node()
    node.metadata.name = "n1"
    node.status.volumes_attached.add(name=VOLUME)  # devicePath "": required upstream
    node.status.volumes_in_use.append(VOLUME)
    node.status.declared_features.append("GuaranteedQoSPodCPUResize")
    return node


def _pod() -> core_pb2.Pod:
    pod = core_pb2.Pod()
    pod.metadata.name = "p1"
    pod.spec.containers.add(name="c", image="pause")
    pod.spec.scheduling_group.pod_group_name = "pg-1"
    ext = pod.status.extended_resource_claim_status
    ext.resource_claim_name = "p1-extended-resources-abcde"
    ext.request_mappings.add(container_name="c", resource_name="example.com/gpu", request_name="r0")
    return pod


def _class() -> resource_pb2.DeviceClass:
    dc = resource_pb2.DeviceClass()
    dc.metadata.name = "gpu"
    dc.spec.extended_resource_name = "example.com/gpu"
    return dc


def _official(obj: Any, model: str) -> Any:
    return k8s.ApiClient().deserialize(json.dumps(codec.encode(obj)), model, "application/json")


def test_the_official_client_reads_the_new_node_pod_and_device_class_fields() -> None:
    node = _official(_node(), "V1Node")
    (attached,) = node.status.volumes_attached
    assert (attached.name, attached.device_path) == (VOLUME, "")
    assert node.status.volumes_in_use == [VOLUME]
    assert node.status.declared_features == ["GuaranteedQoSPodCPUResize"]
    pod = _official(_pod(), "V1Pod")
    assert pod.spec.scheduling_group.pod_group_name == "pg-1"
    ext = pod.status.extended_resource_claim_status
    assert ext.resource_claim_name == "p1-extended-resources-abcde"
    (mapping,) = ext.request_mappings
    assert (mapping.container_name, mapping.resource_name, mapping.request_name) == (
        "c",
        "example.com/gpu",
        "r0",
    )
    dc = _official(_class(), "V1DeviceClass")
    assert dc.spec.extended_resource_name == "example.com/gpu"


def test_lightkube_reads_the_new_node_pod_and_device_class_fields() -> None:
    status = NodeStatus.from_dict(codec.encode(_node())["status"])
    assert status.volumesAttached is not None and status.volumesAttached[0].name == VOLUME
    assert status.volumesInUse == [VOLUME]
    assert status.declaredFeatures == ["GuaranteedQoSPodCPUResize"]
    pod = codec.encode(_pod())
    spec = PodSpec.from_dict(pod["spec"])
    assert spec.schedulingGroup is not None and spec.schedulingGroup.podGroupName == "pg-1"
    ext = PodStatus.from_dict(pod["status"]).extendedResourceClaimStatus
    assert ext is not None and ext.requestMappings[0].resourceName == "example.com/gpu"
    dc = DeviceClassSpec.from_dict(codec.encode(_class())["spec"])
    assert dc.extendedResourceName == "example.com/gpu"
