from protos.kubera.v1 import meta_pb2 as _meta_pb2
from protos.kubera.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PodDisruptionBudgetSpec(_message.Message):
    __slots__ = ("min_available", "selector", "max_unavailable", "unhealthy_pod_eviction_policy")
    MIN_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_POD_EVICTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    min_available: str
    selector: _meta_pb2.LabelSelector
    max_unavailable: str
    unhealthy_pod_eviction_policy: str
    def __init__(self, min_available: _Optional[str] = ..., selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., max_unavailable: _Optional[str] = ..., unhealthy_pod_eviction_policy: _Optional[str] = ...) -> None: ...

class PodDisruptionBudgetStatus(_message.Message):
    __slots__ = ("observed_generation", "disrupted_pods", "disruptions_allowed", "current_healthy", "desired_healthy", "expected_pods", "conditions")
    class DisruptedPodsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    DISRUPTED_PODS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTIONS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    CURRENT_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    DESIRED_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_PODS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    disrupted_pods: _containers.ScalarMap[str, str]
    disruptions_allowed: int
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Condition]
    def __init__(self, observed_generation: _Optional[int] = ..., disrupted_pods: _Optional[_Mapping[str, str]] = ..., disruptions_allowed: _Optional[int] = ..., current_healthy: _Optional[int] = ..., desired_healthy: _Optional[int] = ..., expected_pods: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[_meta_pb2.Condition, _Mapping]]] = ...) -> None: ...

class PodDisruptionBudget(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: PodDisruptionBudgetSpec
    status: PodDisruptionBudgetStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PodDisruptionBudgetSpec, _Mapping]] = ..., status: _Optional[_Union[PodDisruptionBudgetStatus, _Mapping]] = ...) -> None: ...

class Preconditions(_message.Message):
    __slots__ = ("uid", "resource_version")
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    uid: str
    resource_version: str
    def __init__(self, uid: _Optional[str] = ..., resource_version: _Optional[str] = ...) -> None: ...

class DeleteOptions(_message.Message):
    __slots__ = ("grace_period_seconds", "propagation_policy", "dry_run", "preconditions")
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PROPAGATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    PRECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    grace_period_seconds: int
    propagation_policy: str
    dry_run: _containers.RepeatedScalarFieldContainer[str]
    preconditions: Preconditions
    def __init__(self, grace_period_seconds: _Optional[int] = ..., propagation_policy: _Optional[str] = ..., dry_run: _Optional[_Iterable[str]] = ..., preconditions: _Optional[_Union[Preconditions, _Mapping]] = ...) -> None: ...

class Eviction(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "delete_options")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DELETE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    delete_options: DeleteOptions
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., delete_options: _Optional[_Union[DeleteOptions, _Mapping]] = ...) -> None: ...
