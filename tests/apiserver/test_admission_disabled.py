"""Admission plugins turned off (kube-apiserver's --disable-admission-plugins), as upstream's
scheduler_perf apiserver runs: test/integration/scheduler_perf mustSetupCluster passes
"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority", so its pod
templates may set spec.priority directly (default_preemption's PreemptionBasic)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from services.api.machinery.errors import ForbiddenError
from services.apiserver import DISABLEABLE, SCHEDULER_PERF_DISABLED
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.storage.memory import MemoryStorage
from tests.builders import MakePod


@asynccontextmanager
async def _api(*disabled: str) -> AsyncIterator[ApiServer]:
    config = ApiServerConfig(watch_cache_capacity=50, disable_admission_plugins=frozenset(disabled))
    server = ApiServer(MemoryStorage(), config)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _pod(name: str, **spec: Any) -> Any:
    return MakePod().name(name).namespace("default").container("c", "x").spec(spec).obj()


async def test_with_every_plugin_a_pod_may_not_set_its_own_priority() -> None:
    async with _api() as api:
        with pytest.raises(ForbiddenError, match="must not be provided in pod spec"):
            await api.create(_pod("p", priority=10))


async def test_scheduler_perf_set_keeps_the_priority_a_template_sets_and_names_no_account() -> None:
    async with _api(*SCHEDULER_PERF_DISABLED) as api:
        high = await api.create(_pod("high", priority=10))
        plain = await api.create(_pod("plain"))
    assert high.spec.priority == 10 and not high.spec.priority_class_name
    assert not high.spec.preemption_policy  # the scheduler's default, PreemptLowerPriority
    # Priority off: no value is computed; ServiceAccount off: no `default` account named.
    assert not plain.spec.HasField("priority") and not plain.spec.service_account_name
    # DefaultTolerationSeconds still runs, as upstream's (it is not in the disabled set).
    assert {t.key for t in plain.spec.tolerations} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }


async def test_a_disabled_priority_plugin_does_not_look_up_the_class() -> None:
    async with _api("Priority") as api:
        p = await api.create(_pod("p", priorityClassName="missing"))
    assert p.spec.priority_class_name == "missing" and not p.spec.HasField("priority")
    assert p.spec.service_account_name == "default"  # ServiceAccount still runs


def test_unknown_plugin_names_are_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown admission plugin.*Nope.*known: .*Priority"):
        ApiServerConfig(disable_admission_plugins=frozenset({"Priority", "Nope"}))
    assert set(SCHEDULER_PERF_DISABLED) <= DISABLEABLE
