from protos.kubera.v1 import meta_pb2 as _meta_pb2
from protos.kubera.v1 import options_pb2 as _options_pb2
from protos.kubera.v1 import storage_pb2 as _storage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StorageClass(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "provisioner", "parameters", "reclaim_policy", "mount_options", "allow_volume_expansion", "volume_binding_mode", "allowed_topologies")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PROVISIONER_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RECLAIM_POLICY_FIELD_NUMBER: _ClassVar[int]
    MOUNT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_VOLUME_EXPANSION_FIELD_NUMBER: _ClassVar[int]
    VOLUME_BINDING_MODE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOPOLOGIES_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    provisioner: str
    parameters: _containers.ScalarMap[str, str]
    reclaim_policy: str
    mount_options: _containers.RepeatedScalarFieldContainer[str]
    allow_volume_expansion: bool
    volume_binding_mode: str
    allowed_topologies: _containers.RepeatedCompositeFieldContainer[_storage_pb2.TopologySelectorTerm]
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., provisioner: _Optional[str] = ..., parameters: _Optional[_Mapping[str, str]] = ..., reclaim_policy: _Optional[str] = ..., mount_options: _Optional[_Iterable[str]] = ..., allow_volume_expansion: _Optional[bool] = ..., volume_binding_mode: _Optional[str] = ..., allowed_topologies: _Optional[_Iterable[_Union[_storage_pb2.TopologySelectorTerm, _Mapping]]] = ...) -> None: ...

class TokenRequest(_message.Message):
    __slots__ = ("audience", "expiration_seconds")
    AUDIENCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    audience: str
    expiration_seconds: int
    def __init__(self, audience: _Optional[str] = ..., expiration_seconds: _Optional[int] = ...) -> None: ...

class CSIDriverSpec(_message.Message):
    __slots__ = ("attach_required", "pod_info_on_mount", "volume_lifecycle_modes", "storage_capacity", "fs_group_policy", "token_requests", "requires_republish", "se_linux_mount", "node_allocatable_update_period_seconds", "service_account_token_in_secrets")
    ATTACH_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    POD_INFO_ON_MOUNT_FIELD_NUMBER: _ClassVar[int]
    VOLUME_LIFECYCLE_MODES_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    FS_GROUP_POLICY_FIELD_NUMBER: _ClassVar[int]
    TOKEN_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_REPUBLISH_FIELD_NUMBER: _ClassVar[int]
    SE_LINUX_MOUNT_FIELD_NUMBER: _ClassVar[int]
    NODE_ALLOCATABLE_UPDATE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_TOKEN_IN_SECRETS_FIELD_NUMBER: _ClassVar[int]
    attach_required: bool
    pod_info_on_mount: bool
    volume_lifecycle_modes: _containers.RepeatedScalarFieldContainer[str]
    storage_capacity: bool
    fs_group_policy: str
    token_requests: _containers.RepeatedCompositeFieldContainer[TokenRequest]
    requires_republish: bool
    se_linux_mount: bool
    node_allocatable_update_period_seconds: int
    service_account_token_in_secrets: bool
    def __init__(self, attach_required: _Optional[bool] = ..., pod_info_on_mount: _Optional[bool] = ..., volume_lifecycle_modes: _Optional[_Iterable[str]] = ..., storage_capacity: _Optional[bool] = ..., fs_group_policy: _Optional[str] = ..., token_requests: _Optional[_Iterable[_Union[TokenRequest, _Mapping]]] = ..., requires_republish: _Optional[bool] = ..., se_linux_mount: _Optional[bool] = ..., node_allocatable_update_period_seconds: _Optional[int] = ..., service_account_token_in_secrets: _Optional[bool] = ...) -> None: ...

class CSIDriver(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: CSIDriverSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CSIDriverSpec, _Mapping]] = ...) -> None: ...

class VolumeNodeResources(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class CSINodeDriver(_message.Message):
    __slots__ = ("name", "node_id", "topology_keys", "allocatable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEYS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    node_id: str
    topology_keys: _containers.RepeatedScalarFieldContainer[str]
    allocatable: VolumeNodeResources
    def __init__(self, name: _Optional[str] = ..., node_id: _Optional[str] = ..., topology_keys: _Optional[_Iterable[str]] = ..., allocatable: _Optional[_Union[VolumeNodeResources, _Mapping]] = ...) -> None: ...

class CSINodeSpec(_message.Message):
    __slots__ = ("drivers",)
    DRIVERS_FIELD_NUMBER: _ClassVar[int]
    drivers: _containers.RepeatedCompositeFieldContainer[CSINodeDriver]
    def __init__(self, drivers: _Optional[_Iterable[_Union[CSINodeDriver, _Mapping]]] = ...) -> None: ...

class CSINode(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: CSINodeSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CSINodeSpec, _Mapping]] = ...) -> None: ...

class CSIStorageCapacity(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "node_topology", "storage_class_name", "capacity", "maximum_volume_size")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NODE_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_VOLUME_SIZE_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    node_topology: _meta_pb2.LabelSelector
    storage_class_name: str
    capacity: str
    maximum_volume_size: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., node_topology: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., storage_class_name: _Optional[str] = ..., capacity: _Optional[str] = ..., maximum_volume_size: _Optional[str] = ...) -> None: ...

class VolumeAttachmentSource(_message.Message):
    __slots__ = ("persistent_volume_name", "inline_volume_spec")
    PERSISTENT_VOLUME_NAME_FIELD_NUMBER: _ClassVar[int]
    INLINE_VOLUME_SPEC_FIELD_NUMBER: _ClassVar[int]
    persistent_volume_name: str
    inline_volume_spec: _storage_pb2.PersistentVolumeSpec
    def __init__(self, persistent_volume_name: _Optional[str] = ..., inline_volume_spec: _Optional[_Union[_storage_pb2.PersistentVolumeSpec, _Mapping]] = ...) -> None: ...

class VolumeAttachmentSpec(_message.Message):
    __slots__ = ("attacher", "source", "node_name")
    ATTACHER_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    attacher: str
    source: VolumeAttachmentSource
    node_name: str
    def __init__(self, attacher: _Optional[str] = ..., source: _Optional[_Union[VolumeAttachmentSource, _Mapping]] = ..., node_name: _Optional[str] = ...) -> None: ...

class VolumeError(_message.Message):
    __slots__ = ("time", "message", "error_code")
    TIME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    time: str
    message: str
    error_code: int
    def __init__(self, time: _Optional[str] = ..., message: _Optional[str] = ..., error_code: _Optional[int] = ...) -> None: ...

class VolumeAttachmentStatus(_message.Message):
    __slots__ = ("attached", "attachment_metadata", "attach_error", "detach_error")
    class AttachmentMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    ATTACH_ERROR_FIELD_NUMBER: _ClassVar[int]
    DETACH_ERROR_FIELD_NUMBER: _ClassVar[int]
    attached: bool
    attachment_metadata: _containers.ScalarMap[str, str]
    attach_error: VolumeError
    detach_error: VolumeError
    def __init__(self, attached: _Optional[bool] = ..., attachment_metadata: _Optional[_Mapping[str, str]] = ..., attach_error: _Optional[_Union[VolumeError, _Mapping]] = ..., detach_error: _Optional[_Union[VolumeError, _Mapping]] = ...) -> None: ...

class VolumeAttachment(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: VolumeAttachmentSpec
    status: VolumeAttachmentStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[VolumeAttachmentSpec, _Mapping]] = ..., status: _Optional[_Union[VolumeAttachmentStatus, _Mapping]] = ...) -> None: ...
