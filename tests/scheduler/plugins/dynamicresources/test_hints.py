"""DynamicResources' queueing hints (upstream TestIsSchedulableAfterClaimChange and
TestIsSchedulableAfterPodChange, by case name) and the events it registers."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.types import ActionType, QueueingHint
from services.scheduler.plugins.dynamicresources import FINALIZER, Args, DynamicResources
from tests.scheduler.plugins.dynamicresources._fakes import FakeClaimsAPI
from tests.scheduler.plugins.dynamicresources.test_dynamicresources import (
    CLAIM2,
    POD_UID,
    _with,
    allocated,
    claim,
    pod_with_claim_name,
    pod_with_template,
)

# ------------------------------------------------------------------- queueing hints
# upstream TestIsSchedulableAfterClaimChange / TestIsSchedulableAfterPodChange.

HINT_QUEUE, HINT_SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def _claim_hint_cases() -> dict[str, tuple[core_pb2.Pod, list[Any], Any, Any, QueueingHint]]:
    pending = claim()
    owned = claim(owner=POD_UID)
    other = claim("not-my-claim")
    alloc = allocated(pending)
    return {
        "skip-deletes": (pod_with_template(in_status=False), [], alloc, None, HINT_SKIP),
        "skip-unrelated-claim": (pod_with_claim_name(), [pending, other], None, other, HINT_SKIP),
        "queue-on-add": (pod_with_claim_name(), [pending], None, pending, HINT_QUEUE),
        "skip-claim-not-yet-in-store": (pod_with_claim_name(), [], None, pending, HINT_SKIP),
        "skip-template-not-owner": (pod_with_template(), [other], None, other, HINT_SKIP),
        "queue-template-claim-made": (pod_with_template(), [owned], None, owned, HINT_QUEUE),
        "skip-finalizer-added": (
            pod_with_claim_name(),
            [pending],
            pending,
            _with(pending, lambda c: c.metadata.finalizers.append(FINALIZER)),
            HINT_SKIP,
        ),
        "queue-status-change": (pod_with_claim_name(), [alloc], pending, alloc, HINT_QUEUE),
        "structured-claim-deallocate": (
            pod_with_claim_name(POD_UID, CLAIM2),
            [pending, claim(CLAIM2)],
            allocated(other),
            other,
            HINT_QUEUE,
        ),
    }


@pytest.mark.parametrize("name", list(_claim_hint_cases()))
def test_is_schedulable_after_claim_change(name: str) -> None:
    pod, claims, old, new, want = _claim_hint_cases()[name]
    api = FakeClaimsAPI(claims)
    plugin = DynamicResources(Args(), claims=api.store, slices={}, classes={})
    assert plugin.is_schedulable_after_claim_change(pod, old, new) == want


@pytest.mark.parametrize(
    ("name", "pod", "new", "want"),
    [
        ("skip-other-pod", pod_with_template(), pod_with_claim_name("other"), HINT_SKIP),
        ("skip-no-status", pod_with_template(), pod_with_template(in_status=False), HINT_SKIP),
        ("queue-claim-made", pod_with_template(False), pod_with_template(), HINT_QUEUE),
    ],
)
def test_is_schedulable_after_pod_change(
    name: str, pod: core_pb2.Pod, new: core_pb2.Pod, want: QueueingHint
) -> None:
    api = FakeClaimsAPI([claim(owner=POD_UID)])
    plugin = DynamicResources(Args(), claims=api.store, slices={}, classes={})
    assert plugin.is_schedulable_after_pod_change(pod, pod, new) == want


def test_registers_upstreams_events() -> None:
    plugin = DynamicResources(Args(), claims={}, slices={}, classes={})
    got = {(e.event.resource, int(e.event.action)) for e in plugin.events_to_register()}
    A = ActionType
    assert got == {
        ("Node", int(A.ADD | A.UPDATE_NODE_LABEL)),
        ("ResourceClaim", int(A.ADD | A.UPDATE)),
        ("Pod", int(A.UPDATE_POD_GENERATED_RESOURCE_CLAIM)),
        ("DeviceClass", int(A.ADD | A.UPDATE)),
        ("ResourceSlice", int(A.ADD | A.UPDATE)),
        # Upstream's slice tracker reports a rule's change as updates of the slices it
        # taints; kubera's plugin registers the DeviceTaintRule events themselves.
        ("DeviceTaintRule", int(A.ALL)),
        # draext (kubera's addition): PostFilter deleted the pod's stale extended resource
        # claim; upstream waits for another event or the periodic flush.
        ("ResourceClaim", int(A.DELETE)),
    }
