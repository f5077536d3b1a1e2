from protos.kubera.v1 import meta_pb2 as _meta_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PodGroupBasicSchedulingPolicy(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PodGroupGangSchedulingPolicy(_message.Message):
    __slots__ = ("min_count",)
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    min_count: int
    def __init__(self, min_count: _Optional[int] = ...) -> None: ...

class PodGroupSchedulingPolicy(_message.Message):
    __slots__ = ("basic", "gang")
    BASIC_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    basic: PodGroupBasicSchedulingPolicy
    gang: PodGroupGangSchedulingPolicy
    def __init__(self, basic: _Optional[_Union[PodGroupBasicSchedulingPolicy, _Mapping]] = ..., gang: _Optional[_Union[PodGroupGangSchedulingPolicy, _Mapping]] = ...) -> None: ...

class TopologyConstraint(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class PodGroupSchedulingConstraints(_message.Message):
    __slots__ = ("topology",)
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    topology: _containers.RepeatedCompositeFieldContainer[TopologyConstraint]
    def __init__(self, topology: _Optional[_Iterable[_Union[TopologyConstraint, _Mapping]]] = ...) -> None: ...

class PodGroupResourceClaim(_message.Message):
    __slots__ = ("name", "resource_claim_name", "resource_claim_template_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    resource_claim_template_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ..., resource_claim_template_name: _Optional[str] = ...) -> None: ...

class SingleDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DisruptionMode(_message.Message):
    __slots__ = ("single", "all")
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    single: SingleDisruptionMode
    all: AllDisruptionMode
    def __init__(self, single: _Optional[_Union[SingleDisruptionMode, _Mapping]] = ..., all: _Optional[_Union[AllDisruptionMode, _Mapping]] = ...) -> None: ...

class PodGroupWorkloadReference(_message.Message):
    __slots__ = ("workload_name", "template_name")
    WORKLOAD_NAME_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    workload_name: str
    template_name: str
    def __init__(self, workload_name: _Optional[str] = ..., template_name: _Optional[str] = ...) -> None: ...

class SchedulingPodGroupSpec(_message.Message):
    __slots__ = ("parent_composite_pod_group_name", "workload_ref", "scheduling_policy", "scheduling_constraints", "resource_claims", "disruption_mode", "priority_class_name", "priority", "preemption_policy")
    PARENT_COMPOSITE_POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_REF_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    parent_composite_pod_group_name: str
    workload_ref: PodGroupWorkloadReference
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: PodGroupSchedulingConstraints
    resource_claims: _containers.RepeatedCompositeFieldContainer[PodGroupResourceClaim]
    disruption_mode: DisruptionMode
    priority_class_name: str
    priority: int
    preemption_policy: str
    def __init__(self, parent_composite_pod_group_name: _Optional[str] = ..., workload_ref: _Optional[_Union[PodGroupWorkloadReference, _Mapping]] = ..., scheduling_policy: _Optional[_Union[PodGroupSchedulingPolicy, _Mapping]] = ..., scheduling_constraints: _Optional[_Union[PodGroupSchedulingConstraints, _Mapping]] = ..., resource_claims: _Optional[_Iterable[_Union[PodGroupResourceClaim, _Mapping]]] = ..., disruption_mode: _Optional[_Union[DisruptionMode, _Mapping]] = ..., priority_class_name: _Optional[str] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class PodGroupResourceClaimStatus(_message.Message):
    __slots__ = ("name", "resource_claim_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ...) -> None: ...

class SchedulingPodGroupStatus(_message.Message):
    __slots__ = ("conditions", "resource_claim_statuses")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_STATUSES_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Condition]
    resource_claim_statuses: _containers.RepeatedCompositeFieldContainer[PodGroupResourceClaimStatus]
    def __init__(self, conditions: _Optional[_Iterable[_Union[_meta_pb2.Condition, _Mapping]]] = ..., resource_claim_statuses: _Optional[_Iterable[_Union[PodGroupResourceClaimStatus, _Mapping]]] = ...) -> None: ...

class SchedulingPodGroup(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: SchedulingPodGroupSpec
    status: SchedulingPodGroupStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[SchedulingPodGroupSpec, _Mapping]] = ..., status: _Optional[_Union[SchedulingPodGroupStatus, _Mapping]] = ...) -> None: ...
