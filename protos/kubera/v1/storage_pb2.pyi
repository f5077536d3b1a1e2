from google.protobuf import struct_pb2 as _struct_pb2
from protos.kubera.v1 import core_pb2 as _core_pb2
from protos.kubera.v1 import meta_pb2 as _meta_pb2
from protos.kubera.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VolumeResourceRequirements(_message.Message):
    __slots__ = ("limits", "requests")
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.ScalarMap[str, str]
    requests: _containers.ScalarMap[str, str]
    def __init__(self, limits: _Optional[_Mapping[str, str]] = ..., requests: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PersistentVolumeClaimSpec(_message.Message):
    __slots__ = ("access_modes", "selector", "resources", "volume_name", "storage_class_name", "volume_mode", "data_source", "data_source_ref", "volume_attributes_class_name")
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VOLUME_NAME_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MODE_FIELD_NUMBER: _ClassVar[int]
    DATA_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DATA_SOURCE_REF_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    selector: _meta_pb2.LabelSelector
    resources: VolumeResourceRequirements
    volume_name: str
    storage_class_name: str
    volume_mode: str
    data_source: _struct_pb2.Struct
    data_source_ref: _struct_pb2.Struct
    volume_attributes_class_name: str
    def __init__(self, access_modes: _Optional[_Iterable[str]] = ..., selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., resources: _Optional[_Union[VolumeResourceRequirements, _Mapping]] = ..., volume_name: _Optional[str] = ..., storage_class_name: _Optional[str] = ..., volume_mode: _Optional[str] = ..., data_source: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., data_source_ref: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., volume_attributes_class_name: _Optional[str] = ...) -> None: ...

class PersistentVolumeClaimCondition(_message.Message):
    __slots__ = ("type", "status", "last_probe_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_PROBE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_probe_time: str
    last_transition_time: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_probe_time: _Optional[str] = ..., last_transition_time: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PersistentVolumeClaimStatus(_message.Message):
    __slots__ = ("phase", "access_modes", "capacity", "conditions", "allocated_resources", "allocated_resource_statuses", "current_volume_attributes_class_name", "modify_volume_status")
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatedResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatedResourceStatusesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_RESOURCE_STATUSES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    MODIFY_VOLUME_STATUS_FIELD_NUMBER: _ClassVar[int]
    phase: str
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    capacity: _containers.ScalarMap[str, str]
    conditions: _containers.RepeatedCompositeFieldContainer[PersistentVolumeClaimCondition]
    allocated_resources: _containers.ScalarMap[str, str]
    allocated_resource_statuses: _containers.ScalarMap[str, str]
    current_volume_attributes_class_name: str
    modify_volume_status: _struct_pb2.Struct
    def __init__(self, phase: _Optional[str] = ..., access_modes: _Optional[_Iterable[str]] = ..., capacity: _Optional[_Mapping[str, str]] = ..., conditions: _Optional[_Iterable[_Union[PersistentVolumeClaimCondition, _Mapping]]] = ..., allocated_resources: _Optional[_Mapping[str, str]] = ..., allocated_resource_statuses: _Optional[_Mapping[str, str]] = ..., current_volume_attributes_class_name: _Optional[str] = ..., modify_volume_status: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class PersistentVolumeClaim(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: PersistentVolumeClaimSpec
    status: PersistentVolumeClaimStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PersistentVolumeClaimSpec, _Mapping]] = ..., status: _Optional[_Union[PersistentVolumeClaimStatus, _Mapping]] = ...) -> None: ...

class GCEPersistentDiskVolumeSource(_message.Message):
    __slots__ = ("pd_name", "fs_type", "partition", "read_only")
    PD_NAME_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    pd_name: str
    fs_type: str
    partition: int
    read_only: bool
    def __init__(self, pd_name: _Optional[str] = ..., fs_type: _Optional[str] = ..., partition: _Optional[int] = ..., read_only: _Optional[bool] = ...) -> None: ...

class AWSElasticBlockStoreVolumeSource(_message.Message):
    __slots__ = ("volume_id", "fs_type", "partition", "read_only")
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    volume_id: str
    fs_type: str
    partition: int
    read_only: bool
    def __init__(self, volume_id: _Optional[str] = ..., fs_type: _Optional[str] = ..., partition: _Optional[int] = ..., read_only: _Optional[bool] = ...) -> None: ...

class HostPathVolumeSource(_message.Message):
    __slots__ = ("path", "type")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    type: str
    def __init__(self, path: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...

class LocalVolumeSource(_message.Message):
    __slots__ = ("path", "fs_type")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    fs_type: str
    def __init__(self, path: _Optional[str] = ..., fs_type: _Optional[str] = ...) -> None: ...

class NFSVolumeSource(_message.Message):
    __slots__ = ("server", "path", "read_only")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    server: str
    path: str
    read_only: bool
    def __init__(self, server: _Optional[str] = ..., path: _Optional[str] = ..., read_only: _Optional[bool] = ...) -> None: ...

class SecretReference(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class CSIPersistentVolumeSource(_message.Message):
    __slots__ = ("driver", "volume_handle", "read_only", "fs_type", "volume_attributes", "controller_publish_secret_ref", "node_stage_secret_ref", "node_publish_secret_ref", "controller_expand_secret_ref", "node_expand_secret_ref")
    class VolumeAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    VOLUME_HANDLE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_PUBLISH_SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    NODE_STAGE_SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    NODE_PUBLISH_SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EXPAND_SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    NODE_EXPAND_SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    driver: str
    volume_handle: str
    read_only: bool
    fs_type: str
    volume_attributes: _containers.ScalarMap[str, str]
    controller_publish_secret_ref: SecretReference
    node_stage_secret_ref: SecretReference
    node_publish_secret_ref: SecretReference
    controller_expand_secret_ref: SecretReference
    node_expand_secret_ref: SecretReference
    def __init__(self, driver: _Optional[str] = ..., volume_handle: _Optional[str] = ..., read_only: _Optional[bool] = ..., fs_type: _Optional[str] = ..., volume_attributes: _Optional[_Mapping[str, str]] = ..., controller_publish_secret_ref: _Optional[_Union[SecretReference, _Mapping]] = ..., node_stage_secret_ref: _Optional[_Union[SecretReference, _Mapping]] = ..., node_publish_secret_ref: _Optional[_Union[SecretReference, _Mapping]] = ..., controller_expand_secret_ref: _Optional[_Union[SecretReference, _Mapping]] = ..., node_expand_secret_ref: _Optional[_Union[SecretReference, _Mapping]] = ...) -> None: ...

class VolumeNodeAffinity(_message.Message):
    __slots__ = ("required",)
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    required: _core_pb2.NodeSelector
    def __init__(self, required: _Optional[_Union[_core_pb2.NodeSelector, _Mapping]] = ...) -> None: ...

class PersistentVolumeSpec(_message.Message):
    __slots__ = ("capacity", "gce_persistent_disk", "aws_elastic_block_store", "host_path", "nfs", "local", "csi", "azure_disk", "azure_file", "cinder", "vsphere_volume", "iscsi", "rbd", "fc", "cephfs", "flex_volume", "portworx_volume", "access_modes", "claim_ref", "persistent_volume_reclaim_policy", "storage_class_name", "mount_options", "volume_mode", "node_affinity", "volume_attributes_class_name")
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    GCE_PERSISTENT_DISK_FIELD_NUMBER: _ClassVar[int]
    AWS_ELASTIC_BLOCK_STORE_FIELD_NUMBER: _ClassVar[int]
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    NFS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    CSI_FIELD_NUMBER: _ClassVar[int]
    AZURE_DISK_FIELD_NUMBER: _ClassVar[int]
    AZURE_FILE_FIELD_NUMBER: _ClassVar[int]
    CINDER_FIELD_NUMBER: _ClassVar[int]
    VSPHERE_VOLUME_FIELD_NUMBER: _ClassVar[int]
    ISCSI_FIELD_NUMBER: _ClassVar[int]
    RBD_FIELD_NUMBER: _ClassVar[int]
    FC_FIELD_NUMBER: _ClassVar[int]
    CEPHFS_FIELD_NUMBER: _ClassVar[int]
    FLEX_VOLUME_FIELD_NUMBER: _ClassVar[int]
    PORTWORX_VOLUME_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    CLAIM_REF_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_RECLAIM_POLICY_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    MOUNT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MODE_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    capacity: _containers.ScalarMap[str, str]
    gce_persistent_disk: GCEPersistentDiskVolumeSource
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource
    host_path: HostPathVolumeSource
    nfs: NFSVolumeSource
    local: LocalVolumeSource
    csi: CSIPersistentVolumeSource
    azure_disk: _struct_pb2.Struct
    azure_file: _struct_pb2.Struct
    cinder: _struct_pb2.Struct
    vsphere_volume: _struct_pb2.Struct
    iscsi: _struct_pb2.Struct
    rbd: _struct_pb2.Struct
    fc: _struct_pb2.Struct
    cephfs: _struct_pb2.Struct
    flex_volume: _struct_pb2.Struct
    portworx_volume: _struct_pb2.Struct
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    claim_ref: _core_pb2.ObjectReference
    persistent_volume_reclaim_policy: str
    storage_class_name: str
    mount_options: _containers.RepeatedScalarFieldContainer[str]
    volume_mode: str
    node_affinity: VolumeNodeAffinity
    volume_attributes_class_name: str
    def __init__(self, capacity: _Optional[_Mapping[str, str]] = ..., gce_persistent_disk: _Optional[_Union[GCEPersistentDiskVolumeSource, _Mapping]] = ..., aws_elastic_block_store: _Optional[_Union[AWSElasticBlockStoreVolumeSource, _Mapping]] = ..., host_path: _Optional[_Union[HostPathVolumeSource, _Mapping]] = ..., nfs: _Optional[_Union[NFSVolumeSource, _Mapping]] = ..., local: _Optional[_Union[LocalVolumeSource, _Mapping]] = ..., csi: _Optional[_Union[CSIPersistentVolumeSource, _Mapping]] = ..., azure_disk: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., azure_file: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cinder: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., vsphere_volume: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., iscsi: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., rbd: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., fc: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cephfs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., flex_volume: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., portworx_volume: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., access_modes: _Optional[_Iterable[str]] = ..., claim_ref: _Optional[_Union[_core_pb2.ObjectReference, _Mapping]] = ..., persistent_volume_reclaim_policy: _Optional[str] = ..., storage_class_name: _Optional[str] = ..., mount_options: _Optional[_Iterable[str]] = ..., volume_mode: _Optional[str] = ..., node_affinity: _Optional[_Union[VolumeNodeAffinity, _Mapping]] = ..., volume_attributes_class_name: _Optional[str] = ...) -> None: ...

class PersistentVolumeStatus(_message.Message):
    __slots__ = ("phase", "message", "reason", "last_phase_transition_time")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LAST_PHASE_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    phase: str
    message: str
    reason: str
    last_phase_transition_time: str
    def __init__(self, phase: _Optional[str] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., last_phase_transition_time: _Optional[str] = ...) -> None: ...

class PersistentVolume(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: PersistentVolumeSpec
    status: PersistentVolumeStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PersistentVolumeSpec, _Mapping]] = ..., status: _Optional[_Union[PersistentVolumeStatus, _Mapping]] = ...) -> None: ...

class TopologySelectorLabelRequirement(_message.Message):
    __slots__ = ("key", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class TopologySelectorTerm(_message.Message):
    __slots__ = ("match_label_expressions",)
    MATCH_LABEL_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_label_expressions: _containers.RepeatedCompositeFieldContainer[TopologySelectorLabelRequirement]
    def __init__(self, match_label_expressions: _Optional[_Iterable[_Union[TopologySelectorLabelRequirement, _Mapping]]] = ...) -> None: ...
