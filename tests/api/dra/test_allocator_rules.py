"""kubera's own allocator rows: the Unfit wording FailedScheduling shows, admin
namespaces, generations and incomplete pools, domain-qualified attributes, CEL runtime
errors, and the DeviceCache shared across Allocators."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import resource_pb2
from services.api.dra.allocator import Allocator, DeviceCache, DeviceID, Unfit
from tests.api.dra.allocator_table import (
    ALL_NODES,
    CA,
    CLASS_A,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REGION1,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    Case,
    cfg,
    check,
    claim,
    dev,
    local,
    match,
    node,
    one,
    opaque,
    req,
    result,
    run,
    slc,
)
from tests.builders import device, device_class, resource_slice

# ----------------------------------------------------------------------------- kubera's rows

GPU = "gpu.example.com"
GPU_CLASS = device_class(GPU, f'device.driver == "{GPU}"')


def gpus(node_name: str, n: int, **kw: Any) -> resource_pb2.ResourceSlice:
    return resource_slice(
        f"{node_name}-gpu",
        node=node_name,
        devices=[device(f"gpu-{i}", index=i, **kw) for i in range(n)],
        driver=GPU,
    )


CASES: dict[str, Case] = {
    # What FailedScheduling and `kubera explain` show.
    "unfit-names-claim-request-and-class": Case(
        claims=[claim("c1", req("gpu", GPU, 1, 'device.attributes["gpu.example.com"].index > 7'))],
        classes=[GPU_CLASS],
        slices=[gpus(NODE1, 8)],
        unfit=(
            "default/c1",
            'claim default/c1, request "gpu": no device of class "gpu.example.com" matches',
        ),
    ),
    "request-and-class-selectors-are-anded": Case(
        claims=[claim("c1", req("gpu", GPU, 1, 'device.attributes["gpu.example.com"].index >= 2'))],
        classes=[
            device_class(
                GPU,
                f'device.driver == "{GPU}"',
                'device.attributes["gpu.example.com"].index % 2 == 1',
            )
        ],
        slices=[gpus(NODE1, 8)],
        results=[result(local(NODE1), dev("gpu", GPU, NODE1, "gpu-3"))],
    ),
    "allocated-devices-are-skipped-in-listing-order": Case(
        claims=[claim("c1", req("gpu", GPU, 2))],
        classes=[GPU_CLASS],
        slices=[gpus(NODE1, 4)],
        allocated={DeviceID(GPU, NODE1, "gpu-0"), DeviceID(GPU, NODE1, "gpu-2")},
        results=[
            result(local(NODE1), dev("gpu", GPU, NODE1, "gpu-1"), dev("gpu", GPU, NODE1, "gpu-3"))
        ],
    ),
    "slices-of-other-nodes-do-not-reach": Case(
        claims=[claim("c1", req("gpu", GPU))],
        classes=[GPU_CLASS],
        slices=[gpus(NODE2, 8)],
        unfit=("default/c1", 'no device of class "gpu.example.com" matches'),
    ),
    "older-generation-is-ignored": Case(
        claims=[claim("c1", req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            slc(SLICE2, NODE1, POOL1, DRIVER_A, device(DEV2), generation=2),
            slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), generation=1),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV2))],
    ),
    "incomplete-pool-is-skipped-for-exact-count": Case(
        claims=[claim("c1", req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), count=2),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, device(DEV2)),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL2, DEV2))],
    ),
    "all-nodes-slice-has-no-node-selector": Case(
        claims=[claim("c1", req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, ALL_NODES, POOL1, DRIVER_A)],
        results=[result(None, dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "admin-access-in-unlabelled-namespace-is-an-error": Case(
        claims=[claim("c1", req(REQ0, CLASS_A, admin=True), namespace="team")],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        admin_namespaces=frozenset({"kube-system"}),
        error='claim team/c1, request "req-0": admin access to devices requires the namespace "team"',
    ),
    "constraint-on-domain-qualified-attribute-of-other-domain": Case(
        claims=[claim("c1", req(REQ0, CLASS_A, 2), constraints=[match("other.io/numa")])],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, **{"other.io/numa": 1}),
                device(DEV2, numa=1),
                device(DEV3, **{"other.io/numa": 1}),
            )
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL1, DEV3))
        ],
    ),
    "claim-config-for-a-request-is-kept-with-its-name": Case(
        claims=[
            claim(
                "c1",
                req(REQ0, CLASS_A),
                req(REQ1, CLASS_A),
                config=[{"requests": [REQ1], "opaque": opaque(DRIVER_A, "x")}],
            )
        ],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                dev(REQ1, DRIVER_A, POOL1, DEV2),
                config=[cfg("FromClaim", [REQ1], DRIVER_A, "x")],
            )
        ],
    ),
    "cel-runtime-error-is-an-allocation-error": Case(
        claims=[claim("c1", req(REQ0, CLASS_A, 1, 'device.attributes["driver-a"].missing == 1'))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error='claim default/c1, request "req-0": selector #0 on device driver-a/pool-1/device-1: CEL runtime error',
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)


def test_one_allocator_answers_for_every_node_and_a_shared_cache_keeps_verdicts() -> None:
    cache = DeviceCache()
    slices = [gpus(f"node-{i}", 2) for i in range(3)]
    alloc = Allocator([claim("c1", req("gpu", GPU))], set(), {GPU: GPU_CLASS}, slices, cache=cache)
    for i in range(3):
        got = alloc.allocate(node(f"node-{i}", REGION1))
        assert not isinstance(got, Unfit)
        assert got[0].devices.results[0].pool == f"node-{i}"
    assert len(cache) == 3
    entry = cache.slice(slices[0])
    assert entry.devices[0].verdicts == {f'device.driver == "{GPU}"': True}
    # An updated slice is a new message: a new entry; prune drops the old one.
    newer = resource_pb2.ResourceSlice()
    newer.CopyFrom(slices[0])
    cache.prune([newer, *slices[1:]])
    assert len(cache) == 2
    assert cache.slice(newer) is not entry


def test_allocation_is_deterministic_across_calls() -> None:
    case = CASES["constraint-on-domain-qualified-attribute-of-other-domain"]
    first_ = [json_format.MessageToDict(r) for r in run(case)]  # type: ignore[union-attr]
    for _ in range(3):
        assert [json_format.MessageToDict(r) for r in run(case, DeviceCache())] == first_  # type: ignore[union-attr]
