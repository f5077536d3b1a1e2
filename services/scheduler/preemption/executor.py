"""Preemption's effects (upstream preemption Executor.prepareCandidate and
util.ClearNominatedNodeName), through the client:

- each victim: a pod waiting at Permit is rejected instead; otherwise it gets the
  DisruptionTarget condition (reason PreemptionByScheduler, "<scheduler>: preempting to
  accommodate a higher priority pod"), is deleted with its own grace period, and a Preempted
  event names the preemptor;
- pods of lower priority nominated to the same node lose their nomination;
- the preemptor's status.nominatedNodeName is set (`set_nominated_node_name`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from protos.kubera.v1 import core_pb2
from services.api.helpers.events import new_event
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.clock import rfc3339
from services.scheduler.framework.nominator import pod_priority
from services.scheduler.framework.types import PodInfo
from services.scheduler.preemption.evaluator import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from services.scheduler.preemption.victims import Candidate

log = logging.getLogger("services.scheduler.scheduler")


class PreemptionClient(Protocol):
    """The client calls preemption makes (services.client.Client has them)."""

    async def create(self, obj: Any) -> Any: ...

    async def patch(
        self, kind: Any, name: str, merge_patch: str, *, namespace: str = "", status: bool = False
    ) -> Any: ...

    async def delete(self, kind: Any, name: str, namespace: str = "", *, uid: str = "") -> Any: ...


def disruption_message(scheduler_name: str) -> str:
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


async def set_nominated_node_name(client: PreemptionClient, pod: core_pb2.Pod, node: str) -> None:
    """status.nominatedNodeName of `pod` (empty: cleared); a vanished pod is ignored."""
    if pod.status.nominated_node_name == node:
        return
    with contextlib.suppress(NotFoundError):
        await client.patch(
            BY_KIND["Pod"],
            pod.metadata.name,
            json.dumps({"status": {"nominatedNodeName": node}}),
            namespace=pod.metadata.namespace,
            status=True,
        )


def victim_conditions(
    victim: core_pb2.Pod, scheduler_name: str, now: float
) -> list[dict[str, str]]:
    """The victim's conditions with DisruptionTarget=True (PreemptionByScheduler) set."""
    out = [
        {
            "type": c.type,
            "status": c.status,
            "reason": c.reason,
            "message": c.message,
            "lastTransitionTime": c.last_transition_time,
        }
        for c in victim.status.conditions
        if c.type != DISRUPTION_TARGET
    ]
    out.append(
        {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": disruption_message(scheduler_name),
            "lastTransitionTime": rfc3339(now),
        }
    )
    return out


def preempted_event(
    victim: core_pb2.Pod, preemptor: core_pb2.Pod, node: str, scheduler_name: str, now: float
) -> core_pb2.Event:
    return new_event(
        now,
        kind="Pod",
        name=victim.metadata.name,
        namespace=victim.metadata.namespace,
        uid=victim.metadata.uid,
        reason="Preempted",
        message=f"Preempted by pod {preemptor.metadata.uid} on node {node}",
        component=scheduler_name,
        action="Preempting",
    )


async def prepare_candidate(
    client: PreemptionClient,
    *,
    scheduler_name: str,
    preemptor: core_pb2.Pod,
    candidate: Candidate,
    now: float,
    reject_waiting_pod: Callable[[str], bool],
    nominated_on_node: Sequence[PodInfo],
    forget_nomination: Callable[[str], None],
) -> list[str]:
    """Evict the candidate's victims and clear lower-priority nominations on its node.
    `reject_waiting_pod(uid)` rejects a victim waiting at Permit (True when it was one).
    Returns the problems met (the caller logs them; preemption goes on)."""
    problems: list[str] = []
    pod_kind = BY_KIND["Pod"]

    async def evict(v: core_pb2.Pod) -> None:
        key = f"{v.metadata.namespace}/{v.metadata.name}"
        if reject_waiting_pod(v.metadata.uid):
            return
        try:
            await client.patch(
                pod_kind,
                v.metadata.name,
                json.dumps({"status": {"conditions": victim_conditions(v, scheduler_name, now)}}),
                namespace=v.metadata.namespace,
                status=True,
            )
            await client.delete(pod_kind, v.metadata.name, v.metadata.namespace, uid=v.metadata.uid)
        except NotFoundError:
            return
        except ApiError as e:
            problems.append(f"preempting {key}: {e}")
            return
        try:
            await client.create(preempted_event(v, preemptor, candidate.name, scheduler_name, now))
        except ApiError as e:
            log.info("could not record the preemption of %s: %s", key, e)

    async def clear(p: PodInfo) -> None:
        forget_nomination(p.uid)
        try:
            await set_nominated_node_name(client, p.pod, "")
        except ApiError as e:
            problems.append(f"clearing the nomination of {p.key}: {e}")

    # Victims in parallel, as upstream's Parallelizer().Until over them.
    await asyncio.gather(*(evict(v) for v in candidate.victims))
    prio = pod_priority(preemptor)
    lower = [
        p
        for p in nominated_on_node
        if p.uid != preemptor.metadata.uid and pod_priority(p.pod) < prio
    ]
    await asyncio.gather(*(clear(p) for p in lower))
    return problems
