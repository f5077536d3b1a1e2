"""The scheduler's asynchronous API calls (upstream SchedulerAsyncAPICalls: backend/
api_dispatcher and framework/api_calls).

With the gate on, the scheduler's writes (PodScheduled conditions, nominatedNodeName,
FailedScheduling events, binds) go through one `APIDispatcher` per term: queued without
waiting, at most one per object (a newer one merges into or supersedes an older one not yet
sent; a binding supersedes a status patch), a bounded number in flight, each caller told
the outcome through `on_finish`. The scheduling loop never waits on the apiserver; a
binding cycle waits on its own bind's outcome, as upstream's does.

    calls.py        the calls: status patch, binding (fenced at queue time), event
    call_queue.py   one call per object; merge / overwrite / skip; per-type in-flight caps
    dispatcher.py   the sending loop and its slots
"""

from __future__ import annotations

from services.scheduler.dispatcher.call_queue import (
    CallOverwritten,
    CallQueue,
    CallSkipped,
    DispatcherClosed,
    OnFinish,
    QueuedCall,
    is_unexpected,
)
from services.scheduler.dispatcher.calls import (
    EVENT,
    POD_BINDING,
    POD_STATUS_PATCH,
    RELEVANCES,
    APICall,
    EventCall,
    PodBindingCall,
    PodStatusPatchCall,
)
from services.scheduler.dispatcher.dispatcher import PARALLELISM, APIDispatcher, nominate

__all__ = [
    "EVENT",
    "PARALLELISM",
    "POD_BINDING",
    "POD_STATUS_PATCH",
    "RELEVANCES",
    "APICall",
    "APIDispatcher",
    "CallOverwritten",
    "CallQueue",
    "CallSkipped",
    "DispatcherClosed",
    "EventCall",
    "OnFinish",
    "PodBindingCall",
    "PodStatusPatchCall",
    "QueuedCall",
    "is_unexpected",
    "nominate",
]
