"""A what-if session's steps and what each answered (plain values; wire.py maps them to
and from scheduler.proto's WhatIf messages).

    Schedule(pods, objects, preempt)   place these pods (with the PodGroups / Workloads
                                       they name, when the cluster lacks them)
    DeleteNode(name)                   the node goes, with the pods bound to it
    DeletePod(namespace, name)
    AddNode(node)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.scheduler.trace import Attempt

#: PodResult.result values.
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
#: Held by a PreEnqueue plugin (scheduling gates, a gang short of its pods): never tried.
GATED = "gated"
ERROR = "error"
#: Removed by the step (a deleted pod, or a pod of a deleted node).
DELETED = "deleted"


@dataclass
class Schedule:
    pods: list[core_pb2.Pod]
    #: (kind name, object): objects the pods need that the cluster does not have yet.
    objects: list[tuple[str, Message]] = field(default_factory=list)
    #: Run PostFilter (preemption) for a pod that does not fit; victims leave the fork.
    preempt: bool = False


@dataclass
class DeleteNode:
    name: str


@dataclass
class DeletePod:
    namespace: str
    name: str


@dataclass
class AddNode:
    node: core_pb2.Node


Step = Schedule | DeleteNode | DeletePod | AddNode


def describe(step: Step) -> tuple[str, str]:
    """(op, target) of a step, as the answer names it."""
    if isinstance(step, Schedule):
        return "schedule", f"{len(step.pods)} pod(s)"
    if isinstance(step, DeleteNode):
        return "delete-node", step.name
    if isinstance(step, DeletePod):
        return "delete-pod", f"{step.namespace}/{step.name}"
    return "add-node", step.node.metadata.name


@dataclass
class PodResult:
    """One pod's answer: where it goes (or why not), how the nodes scored, and whom it
    would preempt."""

    pod: str
    result: str
    node: str = ""
    reasons: list[str] = field(default_factory=list)
    #: The chosen node's total score; None when not scored (one feasible node, not placed).
    score: int | None = None
    #: The cycle as `kubera explain` shows one (nodes looked at, rejections, top scores).
    attempt: Attempt | None = None
    #: namespace/name of the pods preempted to make room (removed from the fork).
    victims: list[str] = field(default_factory=list)
    #: preemption.Decision of the dry run, when one ran.
    preemption: Any = None


@dataclass
class StepResult:
    #: 1-based position in the session.
    step: int
    op: str
    target: str
    pods: list[PodResult] = field(default_factory=list)
    message: str = ""
