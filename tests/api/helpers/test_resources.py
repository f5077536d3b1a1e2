"""Pod requests as upstream computes them (component-helpers/resource helpers_test.go
TestPodResourceRequests and the scheduler's non-zero requests): sidecars (init containers
with restartPolicy Always) add to the regular containers and to every later init container."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    is_restartable_init_container,
    pod_non_zero_requests,
    pod_requests,
)
from tests.builders import MakePod

Req = Mapping[str, str]
# (name, requests, sidecar?) in spec order
Init = tuple[str, Req, bool]


def make(
    containers: list[Req], inits: Sequence[Init] = (), overhead: Req | None = None
) -> core_pb2.Pod:
    b = MakePod().name("p")
    for i, r in enumerate(containers):
        b.container(f"container-{i + 1}", requests=r)
    for name, r, sidecar in inits:
        b.init_container(name, requests=r, restart_policy="Always" if sidecar else "")
    if overhead is not None:
        b.overhead(overhead)
    return b.obj()


# helpers_test.go TestPodResourceRequests (the cases without status resources or options).
REQUESTS = [
    pytest.param(
        [{"cpu": "1"}],
        [("init-1", {"cpu": "4"}, False)],
        None,
        4000,
        0,
        id="a larger init container sets the pod's request",
    ),
    pytest.param(
        [{"cpu": "2"}, {"cpu": "3"}],
        [("init-1", {"cpu": "2"}, False)],
        None,
        5000,
        0,
        id="larger regular containers: their sum is the pod's request",
    ),
    pytest.param(
        [{"cpu": "2"}, {"cpu": "3"}],
        [("init-1", {"cpu": "2"}, False)],
        {"cpu": "1", "memory": "1Gi"},
        6000,
        1 << 30,
        id="overhead is added to the requests",
    ),
    pytest.param(
        [{"cpu": "1"}],
        [("restartable-init-1", {"cpu": "1"}, True)],
        None,
        2000,
        0,
        id="a sidecar adds to the regular containers",
    ),
    pytest.param(
        [{"cpu": "1"}],
        [
            ("init-1", {"cpu": "5"}, False),
            ("restartable-init-1", {"cpu": "1"}, True),
            ("restartable-init-2", {"cpu": "2"}, True),
            ("restartable-init-3", {"cpu": "3"}, True),
        ],
        None,
        7000,
        0,
        id="max(init 5, sidecars 3+2+1 + regular 1) = 7",
    ),
    pytest.param(
        [{"cpu": "1"}],
        [
            ("init-1", {"cpu": "5"}, False),
            ("restartable-init-1", {"cpu": "1"}, True),
            ("restartable-init-2", {"cpu": "2"}, True),
            ("init-2", {"cpu": "5"}, False),
            ("restartable-init-3", {"cpu": "3"}, True),
        ],
        None,
        8000,
        0,
        id="an init container needs the sidecars started before it (5+1+2), not after",
    ),
    pytest.param(
        [{"cpu": "100"}],
        [("restartable-init-1", {"cpu": "10"}, True), ("init-1", {"cpu": "200"}, False)],
        None,
        210_000,
        0,
        id="sidecar, init and regular: init 200 + sidecar 10 = 210",
    ),
    pytest.param(
        [{"memory": "1Gi"}],
        [("restartable-init-1", {"cpu": "1"}, True), ("init-1", {"memory": "2Gi"}, False)],
        None,
        1000,
        2 << 30,
        id="the maximum is taken per resource",
    ),
]


@pytest.mark.parametrize(("containers", "inits", "overhead", "cpu", "memory"), REQUESTS)
def test_pod_requests(
    containers: list[Req], inits: list[Init], overhead: Req | None, cpu: int, memory: int
) -> None:
    got = pod_requests(make(containers, inits, overhead))
    assert (got.milli_cpu, got.memory) == (cpu, memory)


D_CPU, D_MEM = DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST

# The scheduler's non-zero requests: upstream PodRequests with NonMissingContainerRequests
# {cpu: 100m, memory: 200Mi}, applied to every container (sidecars and init containers too).
NON_ZERO = [
    pytest.param(
        [{}], [], None, D_CPU, D_MEM, id="a container without requests counts the defaults"
    ),
    pytest.param(
        [{"cpu": "0", "memory": "0"}],
        [],
        None,
        0,
        0,
        id="an explicit zero request is kept",
    ),
    pytest.param(
        [{}],
        [("sidecar", {}, True)],
        None,
        2 * D_CPU,
        2 * D_MEM,
        id="a sidecar without requests adds the defaults to the regular containers",
    ),
    pytest.param(
        [{"cpu": "1", "memory": "1Gi"}],
        [("sidecar", {"cpu": "500m", "memory": "1Gi"}, True)],
        None,
        1500,
        2 << 30,
        id="a sidecar's requests add to the regular containers",
    ),
    pytest.param(
        [{"cpu": "100m"}],
        [("sidecar", {"cpu": "200m"}, True), ("init", {"cpu": "1"}, False)],
        None,
        1200,
        2 * D_MEM,
        id="an init container after a sidecar needs both",
    ),
    pytest.param(
        [{"cpu": "100m"}],
        [("init", {"cpu": "1"}, False), ("sidecar", {"cpu": "200m"}, True)],
        None,
        1000,
        2 * D_MEM,
        id="a sidecar started after an init container does not add to it",
    ),
    pytest.param(
        [{"cpu": "1"}],
        [("sidecar", {"cpu": "1"}, True)],
        {"cpu": "250m", "memory": "1Mi"},
        2250,
        2 * D_MEM + (1 << 20),
        id="overhead is added after",
    ),
]


@pytest.mark.parametrize(("containers", "inits", "overhead", "cpu", "memory"), NON_ZERO)
def test_pod_non_zero_requests(
    containers: list[Req], inits: list[Init], overhead: Req | None, cpu: int, memory: int
) -> None:
    assert pod_non_zero_requests(make(containers, inits, overhead)) == (cpu, memory)


@pytest.mark.parametrize(
    ("policy", "want"), [("Always", True), ("", False)], ids=["Always: sidecar", "unset: init"]
)
def test_only_restart_policy_always_makes_a_sidecar(policy: str, want: bool) -> None:
    assert (
        is_restartable_init_container(core_pb2.Container(name="c", restart_policy=policy)) is want
    )
