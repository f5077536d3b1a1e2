from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class SetAliveRequest(_message.Message):
    __slots__ = ("nodes", "alive")
    NODES_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedScalarFieldContainer[str]
    alive: bool
    def __init__(self, nodes: _Optional[_Iterable[str]] = ..., alive: _Optional[bool] = ...) -> None: ...

class SetAliveResponse(_message.Message):
    __slots__ = ("changed", "unknown", "unchanged")
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: _containers.RepeatedScalarFieldContainer[str]
    unknown: _containers.RepeatedScalarFieldContainer[str]
    unchanged: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, changed: _Optional[_Iterable[str]] = ..., unknown: _Optional[_Iterable[str]] = ..., unchanged: _Optional[_Iterable[str]] = ...) -> None: ...

class InjectUsageRequest(_message.Message):
    __slots__ = ("nodes", "usage")
    class UsageEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedScalarFieldContainer[str]
    usage: _containers.ScalarMap[str, str]
    def __init__(self, nodes: _Optional[_Iterable[str]] = ..., usage: _Optional[_Mapping[str, str]] = ...) -> None: ...

class InjectUsageResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, nodes: _Optional[_Iterable[str]] = ...) -> None: ...

class PoolStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PoolStatsResponse(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...
