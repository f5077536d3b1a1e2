from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class PartitionRequest(_message.Message):
    __slots__ = ("seconds",)
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    def __init__(self, seconds: _Optional[float] = ...) -> None: ...

class PartitionResponse(_message.Message):
    __slots__ = ("until_seconds_from_now", "relays")
    UNTIL_SECONDS_FROM_NOW_FIELD_NUMBER: _ClassVar[int]
    RELAYS_FIELD_NUMBER: _ClassVar[int]
    until_seconds_from_now: float
    relays: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, until_seconds_from_now: _Optional[float] = ..., relays: _Optional[_Iterable[str]] = ...) -> None: ...

class HealRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealResponse(_message.Message):
    __slots__ = ("was_partitioned",)
    WAS_PARTITIONED_FIELD_NUMBER: _ClassVar[int]
    was_partitioned: bool
    def __init__(self, was_partitioned: _Optional[bool] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("partitioned", "remaining_seconds", "pid", "identity", "component")
    PARTITIONED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    partitioned: bool
    remaining_seconds: float
    pid: int
    identity: str
    component: str
    def __init__(self, partitioned: _Optional[bool] = ..., remaining_seconds: _Optional[float] = ..., pid: _Optional[int] = ..., identity: _Optional[str] = ..., component: _Optional[str] = ...) -> None: ...
