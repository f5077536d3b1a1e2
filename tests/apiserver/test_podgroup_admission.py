"""A scheduling.k8s.io/v1beta1 PodGroup through the registry: stored under kubera's own
resource name beside scheduler-plugins' PodGroup, and given its priority by the Priority
admission plugin as a pod is (upstream 1.37: priorityClassName, or the global default,
resolved to spec.priority; a priority that disagrees is refused)."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery.errors import ForbiddenError
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP
from services.apiserver.registry import ApiServer
from tests.apiserver.conftest import obj


def _group(name: str, version: str = "v1beta1", **spec: Any) -> Any:
    return obj(
        {
            "apiVersion": f"scheduling.k8s.io/{version}",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec},
        }
    )


def _class(name: str, value: int, *, default: bool = False) -> Any:
    return obj(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": default,
        }
    )


async def test_a_pod_group_lives_beside_scheduler_plugins_pod_groups(api: ApiServer) -> None:
    made = await api.create(_group("g", version="v1alpha3"))
    assert made.api_version == "scheduling.k8s.io/v1beta1"
    theirs = obj(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"minMember": 2},
        }
    )
    await api.create(theirs)  # the same name in another group: no conflict
    ours, _ = await api.list(BY_KIND[SCHEDULING_POD_GROUP], namespace="default")
    plugins, _ = await api.list(BY_KIND["PodGroup"], namespace="default")
    assert [g.spec.scheduling_policy.gang.min_count for g in ours] == [2]
    assert [g.spec.min_member for g in plugins] == [2]


async def test_a_pod_groups_priority_class_resolves_to_its_priority(api: ApiServer) -> None:
    await api.create(_class("high", 1000))
    g = await api.create(_group("g", priorityClassName="high"))
    assert g.spec.priority == 1000
    assert not g.spec.HasField("preemption_policy")  # PodGroupPreemptionPolicy gate: off


async def test_a_pod_group_without_a_class_gets_the_global_default_or_zero(
    api: ApiServer,
) -> None:
    assert (await api.create(_group("plain"))).spec.priority == 0
    await api.create(_class("dflt", 50, default=True))
    g = await api.create(_group("later"))
    assert (g.spec.priority, g.spec.priority_class_name) == (50, "dflt")


async def test_a_pod_groups_unknown_class_or_own_priority_is_refused(api: ApiServer) -> None:
    with pytest.raises(ForbiddenError, match="no PriorityClass with name missing was found"):
        await api.create(_group("x", priorityClassName="missing"))
    with pytest.raises(ForbiddenError, match=r"priority \(7\) must not be provided in pod group"):
        await api.create(_group("y", priority=7))
