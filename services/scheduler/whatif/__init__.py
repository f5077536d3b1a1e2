"""What-if scheduling on a fork of the leader's state (issue 31): the given pods (or a
gang) go through the leader's real profile on a copy of its cache, and the answer says
per pod the node or the reasons, the scores, and the victims preemption would take.
Nothing is written. Sessions chain steps (schedule, delete a node or a pod, add a node)
and roll back to any step.

    fork.py      Base (the leader's state, captured at once) and Fork (a session's copy)
    handle.py    the plugins' handle on a fork; its client records instead of writing
    cycle.py     a Schedule step: PreEnqueue, QueueSort, the cycles, gangs, preemption
    session.py   Session (steps, rollback) and Sessions (a leader's open sessions)
    steps.py     the steps and the answers
    wire.py      scheduler.proto's WhatIf messages to and from the above

Public API: `Session`, `Sessions`, `Base`, the steps (`Schedule`, `DeleteNode`,
`DeletePod`, `AddNode`), `StepError`, and wire.py's `serve_whatif` for the gRPC edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.exports import lazy_exports

if TYPE_CHECKING:
    from services.scheduler.whatif.fork import Base
    from services.scheduler.whatif.session import Session, Sessions, StepError
    from services.scheduler.whatif.steps import AddNode, DeleteNode, DeletePod, Schedule

__all__ = [
    "AddNode",
    "Base",
    "DeleteNode",
    "DeletePod",
    "Schedule",
    "Session",
    "Sessions",
    "StepError",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "AddNode": "services.scheduler.whatif.steps",
        "Base": "services.scheduler.whatif.fork",
        "DeleteNode": "services.scheduler.whatif.steps",
        "DeletePod": "services.scheduler.whatif.steps",
        "Schedule": "services.scheduler.whatif.steps",
        "Session": "services.scheduler.whatif.session",
        "Sessions": "services.scheduler.whatif.session",
        "StepError": "services.scheduler.whatif.session",
    },
)
