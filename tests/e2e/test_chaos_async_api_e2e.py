"""The chaos module's scheduler-leader faults with SchedulerAsyncAPICalls on (`kubera up
--feature-gates`): binds, PodScheduled conditions, nominations and events go through each
leader's API dispatcher; a killed, paused or cut-off leader's queued binds carry its term's
fencing token and are refused, so `kubera check` still finds no double bind, no
overcommitted node, no bind by a deposed leader and no lost pod."""

from __future__ import annotations

import pytest

from tests.e2e.test_chaos_e2e import (
    LEASES,
    test_chaos_run_under_load_then_check_finds_nothing_wrong,
    test_killed_leader_is_replaced_and_the_new_one_binds,
    test_paused_leader_is_deposed_and_binds_nothing_after,
)

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

#: A cluster of its own: it kills, pauses and cuts off scheduler leaders.
EXCLUSIVE = True
UP_ARGS = (
    "--nodes", "6", "--schedulers", "3", "--controller-managers", "2", *LEASES,
    "--feature-gates", "SchedulerAsyncAPICalls=true",
)  # fmt: skip

__all__ = [
    "test_chaos_run_under_load_then_check_finds_nothing_wrong",
    "test_killed_leader_is_replaced_and_the_new_one_binds",
    "test_paused_leader_is_deposed_and_binds_nothing_after",
]
