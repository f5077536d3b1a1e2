from google.protobuf import any_pb2 as _any_pb2
from protos.kubera.v1 import core_pb2 as _core_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExplainRequest(_message.Message):
    __slots__ = ("namespace", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class TraceRejection(_message.Message):
    __slots__ = ("plugin", "reason", "count", "nodes")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    reason: str
    count: int
    nodes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, plugin: _Optional[str] = ..., reason: _Optional[str] = ..., count: _Optional[int] = ..., nodes: _Optional[_Iterable[str]] = ...) -> None: ...

class TraceScore(_message.Message):
    __slots__ = ("node", "total", "by_plugin")
    class ByPluginEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NODE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    BY_PLUGIN_FIELD_NUMBER: _ClassVar[int]
    node: str
    total: int
    by_plugin: _containers.ScalarMap[str, int]
    def __init__(self, node: _Optional[str] = ..., total: _Optional[int] = ..., by_plugin: _Optional[_Mapping[str, int]] = ...) -> None: ...

class TraceAttempt(_message.Message):
    __slots__ = ("pod", "uid", "profile", "cycle", "time", "result", "node", "message", "nodes_total", "nodes_evaluated", "nodes_feasible", "rejections", "top_scores", "duration_seconds", "preemption")
    POD_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    CYCLE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    NODES_EVALUATED_FIELD_NUMBER: _ClassVar[int]
    NODES_FEASIBLE_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    TOP_SCORES_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    pod: str
    uid: str
    profile: str
    cycle: int
    time: float
    result: str
    node: str
    message: str
    nodes_total: int
    nodes_evaluated: int
    nodes_feasible: int
    rejections: _containers.RepeatedCompositeFieldContainer[TraceRejection]
    top_scores: _containers.RepeatedCompositeFieldContainer[TraceScore]
    duration_seconds: float
    preemption: TracePreemption
    def __init__(self, pod: _Optional[str] = ..., uid: _Optional[str] = ..., profile: _Optional[str] = ..., cycle: _Optional[int] = ..., time: _Optional[float] = ..., result: _Optional[str] = ..., node: _Optional[str] = ..., message: _Optional[str] = ..., nodes_total: _Optional[int] = ..., nodes_evaluated: _Optional[int] = ..., nodes_feasible: _Optional[int] = ..., rejections: _Optional[_Iterable[_Union[TraceRejection, _Mapping]]] = ..., top_scores: _Optional[_Iterable[_Union[TraceScore, _Mapping]]] = ..., duration_seconds: _Optional[float] = ..., preemption: _Optional[_Union[TracePreemption, _Mapping]] = ...) -> None: ...

class TracePreemptionCandidate(_message.Message):
    __slots__ = ("node", "victims", "pdb_violations")
    NODE_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    PDB_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    node: str
    victims: _containers.RepeatedScalarFieldContainer[str]
    pdb_violations: int
    def __init__(self, node: _Optional[str] = ..., victims: _Optional[_Iterable[str]] = ..., pdb_violations: _Optional[int] = ...) -> None: ...

class TracePreemption(_message.Message):
    __slots__ = ("eligible", "reason", "potential_nodes", "dry_runs", "candidates", "node", "victims", "why")
    ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    POTENTIAL_NODES_FIELD_NUMBER: _ClassVar[int]
    DRY_RUNS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    eligible: bool
    reason: str
    potential_nodes: int
    dry_runs: int
    candidates: _containers.RepeatedCompositeFieldContainer[TracePreemptionCandidate]
    node: str
    victims: _containers.RepeatedScalarFieldContainer[str]
    why: str
    def __init__(self, eligible: _Optional[bool] = ..., reason: _Optional[str] = ..., potential_nodes: _Optional[int] = ..., dry_runs: _Optional[int] = ..., candidates: _Optional[_Iterable[_Union[TracePreemptionCandidate, _Mapping]]] = ..., node: _Optional[str] = ..., victims: _Optional[_Iterable[str]] = ..., why: _Optional[str] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("attempts",)
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[TraceAttempt]
    def __init__(self, attempts: _Optional[_Iterable[_Union[TraceAttempt, _Mapping]]] = ...) -> None: ...

class SchedulerHealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SchedulerHealthResponse(_message.Message):
    __slots__ = ("leading", "identity", "scheduled", "pending", "mode", "terms", "shared_state", "preemption_attempts", "preemption_victims")
    class PendingEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    LEADING_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    SHARED_STATE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_VICTIMS_FIELD_NUMBER: _ClassVar[int]
    leading: bool
    identity: str
    scheduled: int
    pending: _containers.ScalarMap[str, int]
    mode: str
    terms: int
    shared_state: SharedStateStats
    preemption_attempts: int
    preemption_victims: int
    def __init__(self, leading: _Optional[bool] = ..., identity: _Optional[str] = ..., scheduled: _Optional[int] = ..., pending: _Optional[_Mapping[str, int]] = ..., mode: _Optional[str] = ..., terms: _Optional[int] = ..., shared_state: _Optional[_Union[SharedStateStats, _Mapping]] = ..., preemption_attempts: _Optional[int] = ..., preemption_victims: _Optional[int] = ...) -> None: ...

class SharedStateStats(_message.Message):
    __slots__ = ("binds", "conflicts", "lost_pods", "conflict_fraction", "useful_busy_seconds", "wasted_busy_seconds", "bind_latency_mean_seconds", "queue_wait_p50_seconds", "queue_wait_p90_seconds", "queue_wait_p99_seconds", "attempts_per_pod_mean", "attempts_per_pod_max")
    BINDS_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    LOST_PODS_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_FRACTION_FIELD_NUMBER: _ClassVar[int]
    USEFUL_BUSY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WASTED_BUSY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BIND_LATENCY_MEAN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_P50_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_P90_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_WAIT_P99_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_PER_POD_MEAN_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_PER_POD_MAX_FIELD_NUMBER: _ClassVar[int]
    binds: int
    conflicts: int
    lost_pods: int
    conflict_fraction: float
    useful_busy_seconds: float
    wasted_busy_seconds: float
    bind_latency_mean_seconds: float
    queue_wait_p50_seconds: float
    queue_wait_p90_seconds: float
    queue_wait_p99_seconds: float
    attempts_per_pod_mean: float
    attempts_per_pod_max: int
    def __init__(self, binds: _Optional[int] = ..., conflicts: _Optional[int] = ..., lost_pods: _Optional[int] = ..., conflict_fraction: _Optional[float] = ..., useful_busy_seconds: _Optional[float] = ..., wasted_busy_seconds: _Optional[float] = ..., bind_latency_mean_seconds: _Optional[float] = ..., queue_wait_p50_seconds: _Optional[float] = ..., queue_wait_p90_seconds: _Optional[float] = ..., queue_wait_p99_seconds: _Optional[float] = ..., attempts_per_pod_mean: _Optional[float] = ..., attempts_per_pod_max: _Optional[int] = ...) -> None: ...

class WhatIfRequest(_message.Message):
    __slots__ = ("session", "keep", "rollback_to", "steps", "close")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    ROLLBACK_TO_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    session: str
    keep: bool
    rollback_to: int
    steps: _containers.RepeatedCompositeFieldContainer[WhatIfStep]
    close: bool
    def __init__(self, session: _Optional[str] = ..., keep: _Optional[bool] = ..., rollback_to: _Optional[int] = ..., steps: _Optional[_Iterable[_Union[WhatIfStep, _Mapping]]] = ..., close: _Optional[bool] = ...) -> None: ...

class WhatIfStep(_message.Message):
    __slots__ = ("schedule", "delete_node", "delete_pod", "add_node")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    DELETE_NODE_FIELD_NUMBER: _ClassVar[int]
    DELETE_POD_FIELD_NUMBER: _ClassVar[int]
    ADD_NODE_FIELD_NUMBER: _ClassVar[int]
    schedule: WhatIfSchedule
    delete_node: str
    delete_pod: WhatIfPodRef
    add_node: _core_pb2.Node
    def __init__(self, schedule: _Optional[_Union[WhatIfSchedule, _Mapping]] = ..., delete_node: _Optional[str] = ..., delete_pod: _Optional[_Union[WhatIfPodRef, _Mapping]] = ..., add_node: _Optional[_Union[_core_pb2.Node, _Mapping]] = ...) -> None: ...

class WhatIfSchedule(_message.Message):
    __slots__ = ("pods", "objects", "preempt")
    PODS_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[_core_pb2.Pod]
    objects: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    preempt: bool
    def __init__(self, pods: _Optional[_Iterable[_Union[_core_pb2.Pod, _Mapping]]] = ..., objects: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ..., preempt: _Optional[bool] = ...) -> None: ...

class WhatIfPodRef(_message.Message):
    __slots__ = ("namespace", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class WhatIfPodResult(_message.Message):
    __slots__ = ("pod", "result", "node", "reasons", "score", "victims", "attempt")
    POD_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    VICTIMS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    pod: str
    result: str
    node: str
    reasons: _containers.RepeatedScalarFieldContainer[str]
    score: int
    victims: _containers.RepeatedScalarFieldContainer[str]
    attempt: TraceAttempt
    def __init__(self, pod: _Optional[str] = ..., result: _Optional[str] = ..., node: _Optional[str] = ..., reasons: _Optional[_Iterable[str]] = ..., score: _Optional[int] = ..., victims: _Optional[_Iterable[str]] = ..., attempt: _Optional[_Union[TraceAttempt, _Mapping]] = ...) -> None: ...

class WhatIfStepResult(_message.Message):
    __slots__ = ("step", "op", "target", "pods", "message")
    STEP_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    step: int
    op: str
    target: str
    pods: _containers.RepeatedCompositeFieldContainer[WhatIfPodResult]
    message: str
    def __init__(self, step: _Optional[int] = ..., op: _Optional[str] = ..., target: _Optional[str] = ..., pods: _Optional[_Iterable[_Union[WhatIfPodResult, _Mapping]]] = ..., message: _Optional[str] = ...) -> None: ...

class WhatIfResponse(_message.Message):
    __slots__ = ("session", "leader", "steps")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    session: str
    leader: str
    steps: _containers.RepeatedCompositeFieldContainer[WhatIfStepResult]
    def __init__(self, session: _Optional[str] = ..., leader: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[WhatIfStepResult, _Mapping]]] = ...) -> None: ...
