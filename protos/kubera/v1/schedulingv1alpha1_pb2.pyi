from protos.kubera.v1 import meta_pb2 as _meta_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SchedulingTypedLocalObjectReference(_message.Message):
    __slots__ = ("api_group", "kind", "name")
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    api_group: str
    kind: str
    name: str
    def __init__(self, api_group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class BasicSchedulingPolicy(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GangSchedulingPolicy(_message.Message):
    __slots__ = ("min_count",)
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    min_count: int
    def __init__(self, min_count: _Optional[int] = ...) -> None: ...

class PodGroupPolicy(_message.Message):
    __slots__ = ("basic", "gang")
    BASIC_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    basic: BasicSchedulingPolicy
    gang: GangSchedulingPolicy
    def __init__(self, basic: _Optional[_Union[BasicSchedulingPolicy, _Mapping]] = ..., gang: _Optional[_Union[GangSchedulingPolicy, _Mapping]] = ...) -> None: ...

class WorkloadPodGroup(_message.Message):
    __slots__ = ("name", "policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    policy: PodGroupPolicy
    def __init__(self, name: _Optional[str] = ..., policy: _Optional[_Union[PodGroupPolicy, _Mapping]] = ...) -> None: ...

class WorkloadSpec(_message.Message):
    __slots__ = ("controller_ref", "pod_groups")
    CONTROLLER_REF_FIELD_NUMBER: _ClassVar[int]
    POD_GROUPS_FIELD_NUMBER: _ClassVar[int]
    controller_ref: SchedulingTypedLocalObjectReference
    pod_groups: _containers.RepeatedCompositeFieldContainer[WorkloadPodGroup]
    def __init__(self, controller_ref: _Optional[_Union[SchedulingTypedLocalObjectReference, _Mapping]] = ..., pod_groups: _Optional[_Iterable[_Union[WorkloadPodGroup, _Mapping]]] = ...) -> None: ...

class Workload(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: WorkloadSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[WorkloadSpec, _Mapping]] = ...) -> None: ...
