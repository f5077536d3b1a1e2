from protos.kubera.v1 import core_pb2 as _core_pb2
from protos.kubera.v1 import meta_pb2 as _meta_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PodFailurePolicyOnExitCodesRequirement(_message.Message):
    __slots__ = ("container_name", "operator", "values")
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    container_name: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, container_name: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[int]] = ...) -> None: ...

class PodFailurePolicyOnPodConditionsPattern(_message.Message):
    __slots__ = ("type", "status")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ...) -> None: ...

class PodFailurePolicyRule(_message.Message):
    __slots__ = ("action", "on_exit_codes", "on_pod_conditions")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ON_EXIT_CODES_FIELD_NUMBER: _ClassVar[int]
    ON_POD_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    action: str
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement
    on_pod_conditions: _containers.RepeatedCompositeFieldContainer[PodFailurePolicyOnPodConditionsPattern]
    def __init__(self, action: _Optional[str] = ..., on_exit_codes: _Optional[_Union[PodFailurePolicyOnExitCodesRequirement, _Mapping]] = ..., on_pod_conditions: _Optional[_Iterable[_Union[PodFailurePolicyOnPodConditionsPattern, _Mapping]]] = ...) -> None: ...

class PodFailurePolicy(_message.Message):
    __slots__ = ("rules",)
    RULES_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[PodFailurePolicyRule]
    def __init__(self, rules: _Optional[_Iterable[_Union[PodFailurePolicyRule, _Mapping]]] = ...) -> None: ...

class SuccessPolicyRule(_message.Message):
    __slots__ = ("succeeded_indexes", "succeeded_count")
    SUCCEEDED_INDEXES_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_COUNT_FIELD_NUMBER: _ClassVar[int]
    succeeded_indexes: str
    succeeded_count: int
    def __init__(self, succeeded_indexes: _Optional[str] = ..., succeeded_count: _Optional[int] = ...) -> None: ...

class SuccessPolicy(_message.Message):
    __slots__ = ("rules",)
    RULES_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[SuccessPolicyRule]
    def __init__(self, rules: _Optional[_Iterable[_Union[SuccessPolicyRule, _Mapping]]] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ("parallelism", "completions", "active_deadline_seconds", "pod_failure_policy", "success_policy", "backoff_limit", "backoff_limit_per_index", "max_failed_indexes", "selector", "manual_selector", "template", "ttl_seconds_after_finished", "completion_mode", "suspend", "pod_replacement_policy", "managed_by")
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    POD_FAILURE_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_POLICY_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_LIMIT_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_LIMIT_PER_INDEX_FIELD_NUMBER: _ClassVar[int]
    MAX_FAILED_INDEXES_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MANUAL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_AFTER_FINISHED_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_MODE_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    POD_REPLACEMENT_POLICY_FIELD_NUMBER: _ClassVar[int]
    MANAGED_BY_FIELD_NUMBER: _ClassVar[int]
    parallelism: int
    completions: int
    active_deadline_seconds: int
    pod_failure_policy: PodFailurePolicy
    success_policy: SuccessPolicy
    backoff_limit: int
    backoff_limit_per_index: int
    max_failed_indexes: int
    selector: _meta_pb2.LabelSelector
    manual_selector: bool
    template: _core_pb2.PodTemplateSpec
    ttl_seconds_after_finished: int
    completion_mode: str
    suspend: bool
    pod_replacement_policy: str
    managed_by: str
    def __init__(self, parallelism: _Optional[int] = ..., completions: _Optional[int] = ..., active_deadline_seconds: _Optional[int] = ..., pod_failure_policy: _Optional[_Union[PodFailurePolicy, _Mapping]] = ..., success_policy: _Optional[_Union[SuccessPolicy, _Mapping]] = ..., backoff_limit: _Optional[int] = ..., backoff_limit_per_index: _Optional[int] = ..., max_failed_indexes: _Optional[int] = ..., selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., manual_selector: _Optional[bool] = ..., template: _Optional[_Union[_core_pb2.PodTemplateSpec, _Mapping]] = ..., ttl_seconds_after_finished: _Optional[int] = ..., completion_mode: _Optional[str] = ..., suspend: _Optional[bool] = ..., pod_replacement_policy: _Optional[str] = ..., managed_by: _Optional[str] = ...) -> None: ...

class JobCondition(_message.Message):
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

class UncountedTerminatedPods(_message.Message):
    __slots__ = ("succeeded", "failed")
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    succeeded: _containers.RepeatedScalarFieldContainer[str]
    failed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, succeeded: _Optional[_Iterable[str]] = ..., failed: _Optional[_Iterable[str]] = ...) -> None: ...

class JobStatus(_message.Message):
    __slots__ = ("conditions", "start_time", "completion_time", "active", "succeeded", "failed", "terminating", "completed_indexes", "failed_indexes", "uncounted_terminated_pods", "ready")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TIME_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_INDEXES_FIELD_NUMBER: _ClassVar[int]
    FAILED_INDEXES_FIELD_NUMBER: _ClassVar[int]
    UNCOUNTED_TERMINATED_PODS_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[JobCondition]
    start_time: str
    completion_time: str
    active: int
    succeeded: int
    failed: int
    terminating: int
    completed_indexes: str
    failed_indexes: str
    uncounted_terminated_pods: UncountedTerminatedPods
    ready: int
    def __init__(self, conditions: _Optional[_Iterable[_Union[JobCondition, _Mapping]]] = ..., start_time: _Optional[str] = ..., completion_time: _Optional[str] = ..., active: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., terminating: _Optional[int] = ..., completed_indexes: _Optional[str] = ..., failed_indexes: _Optional[str] = ..., uncounted_terminated_pods: _Optional[_Union[UncountedTerminatedPods, _Mapping]] = ..., ready: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: JobSpec
    status: JobStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., status: _Optional[_Union[JobStatus, _Mapping]] = ...) -> None: ...

class JobTemplateSpec(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ObjectMeta
    spec: JobSpec
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ...) -> None: ...

class CronJobSpec(_message.Message):
    __slots__ = ("schedule", "time_zone", "starting_deadline_seconds", "concurrency_policy", "suspend", "job_template", "successful_jobs_history_limit", "failed_jobs_history_limit")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    STARTING_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    JOB_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESSFUL_JOBS_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    FAILED_JOBS_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    schedule: str
    time_zone: str
    starting_deadline_seconds: int
    concurrency_policy: str
    suspend: bool
    job_template: JobTemplateSpec
    successful_jobs_history_limit: int
    failed_jobs_history_limit: int
    def __init__(self, schedule: _Optional[str] = ..., time_zone: _Optional[str] = ..., starting_deadline_seconds: _Optional[int] = ..., concurrency_policy: _Optional[str] = ..., suspend: _Optional[bool] = ..., job_template: _Optional[_Union[JobTemplateSpec, _Mapping]] = ..., successful_jobs_history_limit: _Optional[int] = ..., failed_jobs_history_limit: _Optional[int] = ...) -> None: ...

class CronJobStatus(_message.Message):
    __slots__ = ("active", "last_schedule_time", "last_successful_time")
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    LAST_SCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESSFUL_TIME_FIELD_NUMBER: _ClassVar[int]
    active: _containers.RepeatedCompositeFieldContainer[_core_pb2.ObjectReference]
    last_schedule_time: str
    last_successful_time: str
    def __init__(self, active: _Optional[_Iterable[_Union[_core_pb2.ObjectReference, _Mapping]]] = ..., last_schedule_time: _Optional[str] = ..., last_successful_time: _Optional[str] = ...) -> None: ...

class CronJob(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: CronJobSpec
    status: CronJobStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CronJobSpec, _Mapping]] = ..., status: _Optional[_Union[CronJobStatus, _Mapping]] = ...) -> None: ...
