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
    __slots__ = ("partitioned", "remaining_seconds", "pid", "identity", "component", "cpu_seconds", "rss_bytes", "host", "boot_id", "pid_ns", "start_ticks")
    PARTITIONED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    CPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    BOOT_ID_FIELD_NUMBER: _ClassVar[int]
    PID_NS_FIELD_NUMBER: _ClassVar[int]
    START_TICKS_FIELD_NUMBER: _ClassVar[int]
    partitioned: bool
    remaining_seconds: float
    pid: int
    identity: str
    component: str
    cpu_seconds: float
    rss_bytes: float
    host: str
    boot_id: str
    pid_ns: str
    start_ticks: int
    def __init__(self, partitioned: _Optional[bool] = ..., remaining_seconds: _Optional[float] = ..., pid: _Optional[int] = ..., identity: _Optional[str] = ..., component: _Optional[str] = ..., cpu_seconds: _Optional[float] = ..., rss_bytes: _Optional[float] = ..., host: _Optional[str] = ..., boot_id: _Optional[str] = ..., pid_ns: _Optional[str] = ..., start_ticks: _Optional[int] = ...) -> None: ...

class KillRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class KillResponse(_message.Message):
    __slots__ = ("pid",)
    PID_FIELD_NUMBER: _ClassVar[int]
    pid: int
    def __init__(self, pid: _Optional[int] = ...) -> None: ...

class PauseRequest(_message.Message):
    __slots__ = ("seconds",)
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    def __init__(self, seconds: _Optional[float] = ...) -> None: ...

class PauseResponse(_message.Message):
    __slots__ = ("pid", "watchdog_pid")
    PID_FIELD_NUMBER: _ClassVar[int]
    WATCHDOG_PID_FIELD_NUMBER: _ClassVar[int]
    pid: int
    watchdog_pid: int
    def __init__(self, pid: _Optional[int] = ..., watchdog_pid: _Optional[int] = ...) -> None: ...
