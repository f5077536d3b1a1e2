from google.protobuf import any_pb2 as _any_pb2
from protos.kubera.v1 import policy_pb2 as _policy_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EvictRequest(_message.Message):
    __slots__ = ("eviction",)
    EVICTION_FIELD_NUMBER: _ClassVar[int]
    eviction: _policy_pb2.Eviction
    def __init__(self, eviction: _Optional[_Union[_policy_pb2.Eviction, _Mapping]] = ...) -> None: ...

class CreateRequest(_message.Message):
    __slots__ = ("resource", "object", "dry_run")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    resource: str
    object: _any_pb2.Any
    dry_run: bool
    def __init__(self, resource: _Optional[str] = ..., object: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class ObjectResponse(_message.Message):
    __slots__ = ("object",)
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    object: _any_pb2.Any
    def __init__(self, object: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("resource", "namespace", "name")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    name: str
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("resource", "namespace", "label_selector", "field_selector")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    label_selector: str
    field_selector: str
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., field_selector: _Optional[str] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("items", "resource_version", "warnings")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    resource_version: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, items: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ..., resource_version: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("resource", "object", "check_allocation")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CHECK_ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    resource: str
    object: _any_pb2.Any
    check_allocation: bool
    def __init__(self, resource: _Optional[str] = ..., object: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., check_allocation: _Optional[bool] = ...) -> None: ...

class PatchRequest(_message.Message):
    __slots__ = ("resource", "namespace", "name", "merge_patch", "status")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MERGE_PATCH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    name: str
    merge_patch: str
    status: bool
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., merge_patch: _Optional[str] = ..., status: _Optional[bool] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("resource", "namespace", "name", "grace_period_seconds", "uid", "resource_version", "ignore_store_read_error_with_cluster_breaking_potential", "propagation_policy")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    IGNORE_STORE_READ_ERROR_WITH_CLUSTER_BREAKING_POTENTIAL_FIELD_NUMBER: _ClassVar[int]
    PROPAGATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    name: str
    grace_period_seconds: int
    uid: str
    resource_version: str
    ignore_store_read_error_with_cluster_breaking_potential: bool
    propagation_policy: str
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., grace_period_seconds: _Optional[int] = ..., uid: _Optional[str] = ..., resource_version: _Optional[str] = ..., ignore_store_read_error_with_cluster_breaking_potential: _Optional[bool] = ..., propagation_policy: _Optional[str] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("resource", "namespace", "label_selector", "field_selector", "resource_version", "allow_watch_bookmarks")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    ALLOW_WATCH_BOOKMARKS_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    label_selector: str
    field_selector: str
    resource_version: str
    allow_watch_bookmarks: bool
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., field_selector: _Optional[str] = ..., resource_version: _Optional[str] = ..., allow_watch_bookmarks: _Optional[bool] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("type", "object")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    type: str
    object: _any_pb2.Any
    def __init__(self, type: _Optional[str] = ..., object: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class WatchEventBatch(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ...) -> None: ...

class FencingToken(_message.Message):
    __slots__ = ("key", "create_revision")
    KEY_FIELD_NUMBER: _ClassVar[int]
    CREATE_REVISION_FIELD_NUMBER: _ClassVar[int]
    key: str
    create_revision: int
    def __init__(self, key: _Optional[str] = ..., create_revision: _Optional[int] = ...) -> None: ...

class BindRequest(_message.Message):
    __slots__ = ("namespace", "name", "node_name", "resource_version", "uid", "fencing", "check_allocation")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    FENCING_FIELD_NUMBER: _ClassVar[int]
    CHECK_ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    node_name: str
    resource_version: str
    uid: str
    fencing: FencingToken
    check_allocation: bool
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., node_name: _Optional[str] = ..., resource_version: _Optional[str] = ..., uid: _Optional[str] = ..., fencing: _Optional[_Union[FencingToken, _Mapping]] = ..., check_allocation: _Optional[bool] = ...) -> None: ...

class BindBatchRequest(_message.Message):
    __slots__ = ("binds",)
    BINDS_FIELD_NUMBER: _ClassVar[int]
    binds: _containers.RepeatedCompositeFieldContainer[BindRequest]
    def __init__(self, binds: _Optional[_Iterable[_Union[BindRequest, _Mapping]]] = ...) -> None: ...

class BindResult(_message.Message):
    __slots__ = ("code", "message", "reason", "object")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    reason: str
    object: _any_pb2.Any
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., object: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class BindBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BindResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BindResult, _Mapping]]] = ...) -> None: ...

class BatchCreateRequest(_message.Message):
    __slots__ = ("resource", "objects")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    resource: str
    objects: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    def __init__(self, resource: _Optional[str] = ..., objects: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ...) -> None: ...

class BatchUpdateRequest(_message.Message):
    __slots__ = ("resource", "objects", "status")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    resource: str
    objects: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    status: bool
    def __init__(self, resource: _Optional[str] = ..., objects: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ..., status: _Optional[bool] = ...) -> None: ...

class BatchCreateResult(_message.Message):
    __slots__ = ("code", "message", "object")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    object: _any_pb2.Any
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., object: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

class BatchCreateResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchCreateResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchCreateResult, _Mapping]]] = ...) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealthResponse(_message.Message):
    __slots__ = ("ok", "etcd", "revision")
    OK_FIELD_NUMBER: _ClassVar[int]
    ETCD_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    etcd: str
    revision: int
    def __init__(self, ok: _Optional[bool] = ..., etcd: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...
