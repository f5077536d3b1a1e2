from google.protobuf import struct_pb2 as _struct_pb2
from protos.kubera.v1 import core_pb2 as _core_pb2
from protos.kubera.v1 import meta_pb2 as _meta_pb2
from protos.kubera.v1 import options_pb2 as _options_pb2
from protos.kubera.v1 import storage_pb2 as _storage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReplicaSetSpec(_message.Message):
    __slots__ = ("replicas", "min_ready_seconds", "selector", "template")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    min_ready_seconds: int
    selector: _meta_pb2.LabelSelector
    template: _core_pb2.PodTemplateSpec
    def __init__(self, replicas: _Optional[int] = ..., min_ready_seconds: _Optional[int] = ..., selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., template: _Optional[_Union[_core_pb2.PodTemplateSpec, _Mapping]] = ...) -> None: ...

class ReplicaSetCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicaSetStatus(_message.Message):
    __slots__ = ("replicas", "fully_labeled_replicas", "ready_replicas", "available_replicas", "observed_generation", "conditions", "terminating_replicas")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    FULLY_LABELED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    fully_labeled_replicas: int
    ready_replicas: int
    available_replicas: int
    observed_generation: int
    conditions: _containers.RepeatedCompositeFieldContainer[ReplicaSetCondition]
    terminating_replicas: int
    def __init__(self, replicas: _Optional[int] = ..., fully_labeled_replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., available_replicas: _Optional[int] = ..., observed_generation: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[ReplicaSetCondition, _Mapping]]] = ..., terminating_replicas: _Optional[int] = ...) -> None: ...

class ReplicaSet(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ReplicaSetSpec
    status: ReplicaSetStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ReplicaSetSpec, _Mapping]] = ..., status: _Optional[_Union[ReplicaSetStatus, _Mapping]] = ...) -> None: ...

class RollingUpdateDeployment(_message.Message):
    __slots__ = ("max_unavailable", "max_surge")
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MAX_SURGE_FIELD_NUMBER: _ClassVar[int]
    max_unavailable: str
    max_surge: str
    def __init__(self, max_unavailable: _Optional[str] = ..., max_surge: _Optional[str] = ...) -> None: ...

class DeploymentStrategy(_message.Message):
    __slots__ = ("type", "rolling_update")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLLING_UPDATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    rolling_update: RollingUpdateDeployment
    def __init__(self, type: _Optional[str] = ..., rolling_update: _Optional[_Union[RollingUpdateDeployment, _Mapping]] = ...) -> None: ...

class DeploymentSpec(_message.Message):
    __slots__ = ("replicas", "selector", "template", "strategy", "min_ready_seconds", "revision_history_limit", "paused", "progress_deadline_seconds")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REVISION_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    selector: _meta_pb2.LabelSelector
    template: _core_pb2.PodTemplateSpec
    strategy: DeploymentStrategy
    min_ready_seconds: int
    revision_history_limit: int
    paused: bool
    progress_deadline_seconds: int
    def __init__(self, replicas: _Optional[int] = ..., selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., template: _Optional[_Union[_core_pb2.PodTemplateSpec, _Mapping]] = ..., strategy: _Optional[_Union[DeploymentStrategy, _Mapping]] = ..., min_ready_seconds: _Optional[int] = ..., revision_history_limit: _Optional[int] = ..., paused: _Optional[bool] = ..., progress_deadline_seconds: _Optional[int] = ...) -> None: ...

class DeploymentCondition(_message.Message):
    __slots__ = ("type", "status", "last_update_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_update_time: str
    last_transition_time: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_update_time: _Optional[str] = ..., last_transition_time: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeploymentStatus(_message.Message):
    __slots__ = ("observed_generation", "replicas", "updated_replicas", "ready_replicas", "available_replicas", "unavailable_replicas", "conditions", "collision_count", "terminating_replicas")
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    COLLISION_COUNT_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    replicas: int
    updated_replicas: int
    ready_replicas: int
    available_replicas: int
    unavailable_replicas: int
    conditions: _containers.RepeatedCompositeFieldContainer[DeploymentCondition]
    collision_count: int
    terminating_replicas: int
    def __init__(self, observed_generation: _Optional[int] = ..., replicas: _Optional[int] = ..., updated_replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., available_replicas: _Optional[int] = ..., unavailable_replicas: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[DeploymentCondition, _Mapping]]] = ..., collision_count: _Optional[int] = ..., terminating_replicas: _Optional[int] = ...) -> None: ...

class Deployment(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: DeploymentSpec
    status: DeploymentStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DeploymentSpec, _Mapping]] = ..., status: _Optional[_Union[DeploymentStatus, _Mapping]] = ...) -> None: ...

class RollingUpdateDaemonSet(_message.Message):
    __slots__ = ("max_unavailable", "max_surge")
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MAX_SURGE_FIELD_NUMBER: _ClassVar[int]
    max_unavailable: str
    max_surge: str
    def __init__(self, max_unavailable: _Optional[str] = ..., max_surge: _Optional[str] = ...) -> None: ...

class DaemonSetUpdateStrategy(_message.Message):
    __slots__ = ("type", "rolling_update")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLLING_UPDATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    rolling_update: RollingUpdateDaemonSet
    def __init__(self, type: _Optional[str] = ..., rolling_update: _Optional[_Union[RollingUpdateDaemonSet, _Mapping]] = ...) -> None: ...

class DaemonSetSpec(_message.Message):
    __slots__ = ("selector", "template", "update_strategy", "min_ready_seconds", "revision_history_limit")
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REVISION_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    selector: _meta_pb2.LabelSelector
    template: _core_pb2.PodTemplateSpec
    update_strategy: DaemonSetUpdateStrategy
    min_ready_seconds: int
    revision_history_limit: int
    def __init__(self, selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., template: _Optional[_Union[_core_pb2.PodTemplateSpec, _Mapping]] = ..., update_strategy: _Optional[_Union[DaemonSetUpdateStrategy, _Mapping]] = ..., min_ready_seconds: _Optional[int] = ..., revision_history_limit: _Optional[int] = ...) -> None: ...

class DaemonSetCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DaemonSetStatus(_message.Message):
    __slots__ = ("current_number_scheduled", "number_misscheduled", "desired_number_scheduled", "number_ready", "observed_generation", "updated_number_scheduled", "number_available", "number_unavailable", "collision_count", "conditions")
    CURRENT_NUMBER_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    NUMBER_MISSCHEDULED_FIELD_NUMBER: _ClassVar[int]
    DESIRED_NUMBER_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    NUMBER_READY_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_NUMBER_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    NUMBER_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    COLLISION_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    current_number_scheduled: int
    number_misscheduled: int
    desired_number_scheduled: int
    number_ready: int
    observed_generation: int
    updated_number_scheduled: int
    number_available: int
    number_unavailable: int
    collision_count: int
    conditions: _containers.RepeatedCompositeFieldContainer[DaemonSetCondition]
    def __init__(self, current_number_scheduled: _Optional[int] = ..., number_misscheduled: _Optional[int] = ..., desired_number_scheduled: _Optional[int] = ..., number_ready: _Optional[int] = ..., observed_generation: _Optional[int] = ..., updated_number_scheduled: _Optional[int] = ..., number_available: _Optional[int] = ..., number_unavailable: _Optional[int] = ..., collision_count: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[DaemonSetCondition, _Mapping]]] = ...) -> None: ...

class DaemonSet(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: DaemonSetSpec
    status: DaemonSetStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DaemonSetSpec, _Mapping]] = ..., status: _Optional[_Union[DaemonSetStatus, _Mapping]] = ...) -> None: ...

class RollingUpdateStatefulSetStrategy(_message.Message):
    __slots__ = ("partition", "max_unavailable")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    partition: int
    max_unavailable: str
    def __init__(self, partition: _Optional[int] = ..., max_unavailable: _Optional[str] = ...) -> None: ...

class StatefulSetUpdateStrategy(_message.Message):
    __slots__ = ("type", "rolling_update")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLLING_UPDATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    rolling_update: RollingUpdateStatefulSetStrategy
    def __init__(self, type: _Optional[str] = ..., rolling_update: _Optional[_Union[RollingUpdateStatefulSetStrategy, _Mapping]] = ...) -> None: ...

class StatefulSetPersistentVolumeClaimRetentionPolicy(_message.Message):
    __slots__ = ("when_deleted", "when_scaled")
    WHEN_DELETED_FIELD_NUMBER: _ClassVar[int]
    WHEN_SCALED_FIELD_NUMBER: _ClassVar[int]
    when_deleted: str
    when_scaled: str
    def __init__(self, when_deleted: _Optional[str] = ..., when_scaled: _Optional[str] = ...) -> None: ...

class StatefulSetOrdinals(_message.Message):
    __slots__ = ("start",)
    START_FIELD_NUMBER: _ClassVar[int]
    start: int
    def __init__(self, start: _Optional[int] = ...) -> None: ...

class StatefulSetSpec(_message.Message):
    __slots__ = ("replicas", "selector", "template", "volume_claim_templates", "service_name", "pod_management_policy", "update_strategy", "revision_history_limit", "min_ready_seconds", "persistent_volume_claim_retention_policy", "ordinals")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_CLAIM_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    SERVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_MANAGEMENT_POLICY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    REVISION_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_CLAIM_RETENTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    ORDINALS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    selector: _meta_pb2.LabelSelector
    template: _core_pb2.PodTemplateSpec
    volume_claim_templates: _containers.RepeatedCompositeFieldContainer[_storage_pb2.PersistentVolumeClaim]
    service_name: str
    pod_management_policy: str
    update_strategy: StatefulSetUpdateStrategy
    revision_history_limit: int
    min_ready_seconds: int
    persistent_volume_claim_retention_policy: StatefulSetPersistentVolumeClaimRetentionPolicy
    ordinals: StatefulSetOrdinals
    def __init__(self, replicas: _Optional[int] = ..., selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., template: _Optional[_Union[_core_pb2.PodTemplateSpec, _Mapping]] = ..., volume_claim_templates: _Optional[_Iterable[_Union[_storage_pb2.PersistentVolumeClaim, _Mapping]]] = ..., service_name: _Optional[str] = ..., pod_management_policy: _Optional[str] = ..., update_strategy: _Optional[_Union[StatefulSetUpdateStrategy, _Mapping]] = ..., revision_history_limit: _Optional[int] = ..., min_ready_seconds: _Optional[int] = ..., persistent_volume_claim_retention_policy: _Optional[_Union[StatefulSetPersistentVolumeClaimRetentionPolicy, _Mapping]] = ..., ordinals: _Optional[_Union[StatefulSetOrdinals, _Mapping]] = ...) -> None: ...

class StatefulSetCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class StatefulSetStatus(_message.Message):
    __slots__ = ("observed_generation", "replicas", "ready_replicas", "current_replicas", "updated_replicas", "current_revision", "update_revision", "collision_count", "conditions", "available_replicas")
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_REVISION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_REVISION_FIELD_NUMBER: _ClassVar[int]
    COLLISION_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    replicas: int
    ready_replicas: int
    current_replicas: int
    updated_replicas: int
    current_revision: str
    update_revision: str
    collision_count: int
    conditions: _containers.RepeatedCompositeFieldContainer[StatefulSetCondition]
    available_replicas: int
    def __init__(self, observed_generation: _Optional[int] = ..., replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., current_replicas: _Optional[int] = ..., updated_replicas: _Optional[int] = ..., current_revision: _Optional[str] = ..., update_revision: _Optional[str] = ..., collision_count: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[StatefulSetCondition, _Mapping]]] = ..., available_replicas: _Optional[int] = ...) -> None: ...

class StatefulSet(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: StatefulSetSpec
    status: StatefulSetStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[StatefulSetSpec, _Mapping]] = ..., status: _Optional[_Union[StatefulSetStatus, _Mapping]] = ...) -> None: ...

class ControllerRevision(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "data", "revision")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    data: _struct_pb2.Struct
    revision: int
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...
