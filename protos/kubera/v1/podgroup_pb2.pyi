from protos.kubera.v1 import meta_pb2 as _meta_pb2
from protos.kubera.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PodGroupSpec(_message.Message):
    __slots__ = ("min_member", "min_resources", "schedule_timeout_seconds")
    class MinResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MIN_MEMBER_FIELD_NUMBER: _ClassVar[int]
    MIN_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    min_member: int
    min_resources: _containers.ScalarMap[str, str]
    schedule_timeout_seconds: int
    def __init__(self, min_member: _Optional[int] = ..., min_resources: _Optional[_Mapping[str, str]] = ..., schedule_timeout_seconds: _Optional[int] = ...) -> None: ...

class PodGroupStatus(_message.Message):
    __slots__ = ("phase", "occupied_by", "scheduled", "running", "succeeded", "failed", "schedule_start_time")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    OCCUPIED_BY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_START_TIME_FIELD_NUMBER: _ClassVar[int]
    phase: str
    occupied_by: str
    scheduled: int
    running: int
    succeeded: int
    failed: int
    schedule_start_time: str
    def __init__(self, phase: _Optional[str] = ..., occupied_by: _Optional[str] = ..., scheduled: _Optional[int] = ..., running: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., schedule_start_time: _Optional[str] = ...) -> None: ...

class PodGroup(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: PodGroupSpec
    status: PodGroupStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PodGroupSpec, _Mapping]] = ..., status: _Optional[_Union[PodGroupStatus, _Mapping]] = ...) -> None: ...
