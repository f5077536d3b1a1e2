"""The chaos module's scheduler-leader faults with SchedulerAsyncAPICalls on (`kubera up
--feature-gates`): binds, PodScheduled conditions, nominations and events go through each
leader's API dispatcher; a killed, paused or cut-off leader's queued binds carry its term's
fencing token and are refused, so `kubera check` still finds no double bind, no
overcommitted node, no bind by a deposed leader and no lost pod."""

from __future__ import annotations

import json
import urllib.request

import pytest

from kubera.testing import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

#: A cluster of its own: it kills, pauses and cuts off scheduler leaders.
EXCLUSIVE = True


def test_the_schedulers_run_with_the_gate(cluster: Cluster) -> None:
    """First, before any fault: the replica `kubera up` names serves the dispatcher's
    series, which a scheduler registers only with the gate on."""
    ctx = json.loads((cluster.home / "context.json").read_text())
    with urllib.request.urlopen(f"http://{ctx['scheduler_metrics']}/metrics", timeout=10) as r:
        text = r.read().decode()
    assert "# TYPE scheduler_pending_async_api_calls gauge" in text


# The faults run after the check above (tests run in the order the module binds them).
from tests.e2e.test_chaos_e2e import (  # noqa: E402
    LEASES,
    test_chaos_run_under_load_then_check_finds_nothing_wrong,
    test_killed_leader_is_replaced_and_the_new_one_binds,
    test_paused_leader_is_deposed_and_binds_nothing_after,
)

UP_ARGS = (
    "--nodes", "6", "--schedulers", "3", "--controller-managers", "2", *LEASES,
    "--feature-gates", "SchedulerAsyncAPICalls=true",
)  # fmt: skip

__all__ = [
    "test_chaos_run_under_load_then_check_finds_nothing_wrong",
    "test_killed_leader_is_replaced_and_the_new_one_binds",
    "test_paused_leader_is_deposed_and_binds_nothing_after",
    "test_the_schedulers_run_with_the_gate",
]
