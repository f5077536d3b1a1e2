"""scheduler_perf's DRA ops and kubera's waitForPodGroups: parsing (upstream's validity rules
of dra.go), the test driver's slices, the pre-allocation of claims (with a first-free fake
allocator: the structured allocator has its own tests), and their execution against the fake
apiserver of test_runner.py."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from google.protobuf import json_format

from kubera.experiment.measure.measures import POD_GROUP_LABEL
from kubera.experiment.run import dra
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import load
from kubera.experiment.spec.fields import ConfigError
from kubera.experiment.spec.objects import OpError, to_message
from kubera.experiment.spec.templates import read_template
from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.allocator import ERR_INVALID_POOLS, DeviceID, FailedOnNode, Unfit
from tests.builders import resource_claim, resource_slice
from tests.experiment.configfiles import runs, write
from tests.experiment.run.test_runner import executor

DRIVER = "test-driver.cdi.k8s.io"

DRA_CASE = """\
- name: D
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes}
  - %s
  - {opcode: createPods, count: 1, collectMetrics: true}
  workloads:
  - {name: w, params: {nodes: 1, perNode: 4, claims: 3}}
"""

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: "c-{{.Index}}"}
spec: {devices: {requests: [{name: r, exactly: {deviceClassName: test-class}}]}}
"""


def _load(tmp_path: Any, op: str, files: dict[str, str] | None = None) -> list[o.Op]:
    text = DRA_CASE % op
    if "perNode" not in op:
        text = text.replace("perNode: 4, ", "")
    if "$claims" not in op:
        text = text.replace(", claims: 3", "")
    (planned,) = runs(load(str(write(tmp_path, text, files)))).values()
    return planned


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (
            "{opcode: createResourceDriver, driverName: d.example.com, nodes: 'n-*', "
            "maxClaimsPerNode: 3}",
            o.CreateResourceDriver(
                index=1, driver_name="d.example.com", nodes="n-*", max_claims_per_node=3
            ),
        ),
        (
            "{opcode: createResourceDriver, driverName: d.example.com, nodes: '*', "
            "maxClaimsPerNodeParam: $perNode}",
            o.CreateResourceDriver(
                index=1,
                driver_name="d.example.com",
                nodes="*",
                max_claims_per_node=4,
                max_claims_per_node_param="$perNode",
            ),
        ),
        (
            # upstream's workloadresourceclaims cases give no maxClaimsPerNode: no devices
            "{opcode: createResourceDriver, driverName: d.example.com, nodes: '*'}",
            o.CreateResourceDriver(index=1, driver_name="d.example.com", nodes="*"),
        ),
        ("{opcode: allocResourceClaims}", o.AllocResourceClaims(index=1)),
        (
            "{opcode: allocResourceClaims, namespace: init}",
            o.AllocResourceClaims(index=1, namespace="init"),
        ),
        ("{opcode: waitForPodGroups, namespace: g}", o.WaitForPodGroups(index=1, namespace="g")),
    ],
)
def test_dra_and_pod_group_ops_parse_and_plan(tmp_path: Any, op: str, expected: o.Op) -> None:
    assert _load(tmp_path, op)[1] == expected


def test_create_resource_claims_plans_its_count_and_keeps_its_template(tmp_path: Any) -> None:
    planned = _load(
        tmp_path,
        "{opcode: createResourceClaims, countParam: $claims, namespace: init, "
        "templatePath: claim.yaml}",
        {"claim.yaml": CLAIM},
    )[1]
    assert isinstance(planned, o.CreateResourceClaims)
    assert (planned.count, planned.namespace) == (3, "init")
    assert planned.template.render(2, 3)["metadata"]["name"] == "c-2"


@pytest.mark.parametrize(
    ("op", "files", "message"),
    [
        (
            "{opcode: createResourceDriver, nodes: '*'}",
            {},
            "[0].workloadTemplate[1].driverName: required field missing",
        ),
        (
            "{opcode: createResourceDriver, driverName: d.example.com}",
            {},
            "[0].workloadTemplate[1].nodes: required field missing",
        ),
        (
            "{opcode: createResourceDriver, driverName: d.example.com, nodes: '*', "
            "maxClaimsPerNode: -1}",
            {},
            "[0].workloadTemplate[1].maxClaimsPerNode: must not be negative, got -1",
        ),
        (
            "{opcode: createResourceDriver, driverName: d.example.com, nodes: '*', "
            "maxClaimsPerNodeParam: $missing}",
            {},
            'parameter "missing" is not defined by workload "w"',
        ),
        (
            "{opcode: createResourceClaims, count: 1, templatePath: claim.yaml}",
            {"claim.yaml": CLAIM},
            "[0].workloadTemplate[1].namespace: required field missing",
        ),
        (
            "{opcode: createResourceClaims, count: 1, namespace: n}",
            {},
            "[0].workloadTemplate[1].templatePath: required field missing",
        ),
        (
            "{opcode: createResourceClaims, count: 1, namespace: n, templatePath: pod.yaml}",
            {"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"},
            "expected a ResourceClaim, got a Pod",
        ),
        (
            "{opcode: allocResourceClaims, count: 1}",
            {},
            "[0].workloadTemplate[1].count: unknown field",
        ),
    ],
)
def test_dra_op_mistakes_are_errors_naming_the_place(
    tmp_path: Any, op: str, files: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        _load(tmp_path, op, files)
    assert message in str(info.value), str(info.value)


def test_upstreams_composite_pod_groups_are_unsupported_with_the_reason(tmp_path: Any) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, "{opcode: createCompositePodGroups, namespace: n}")
    assert '"createCompositePodGroups" is not supported by kubera' in str(info.value)
    assert "CompositePodGroup" in str(info.value)


# ------------------------------------------------------------------ the test driver


@pytest.mark.parametrize(
    ("pattern", "names", "matched"),
    [
        (
            "scheduler-perf-dra-*",
            ["scheduler-perf-dra-0", "scheduler-perf-x1b2c"],
            ["scheduler-perf-dra-0"],
        ),
        ("*", ["b", "a"], ["a", "b"]),
        ("node-[01]", ["node-0", "node-1", "node-2"], ["node-0", "node-1"]),
        ("node-?", ["node-1", "node-10"], ["node-1"]),
        ("Node-*", ["node-1"], []),  # case-sensitive, as Go's filepath.Match
    ],
)
def test_the_driver_serves_the_nodes_its_glob_matches(
    pattern: str, names: list[str], matched: list[str]
) -> None:
    assert dra.matching_nodes(pattern, names) == matched


def test_the_driver_publishes_one_pool_per_node_with_upstreams_devices() -> None:
    slice_ = to_message(dra.resource_slice_doc(DRIVER, "scheduler-perf-dra-3", 3))
    assert isinstance(slice_, resource_pb2.ResourceSlice)
    assert slice_.metadata.name == "scheduler-perf-dra-3"
    assert (slice_.spec.driver, slice_.spec.node_name) == (DRIVER, "scheduler-perf-dra-3")
    assert (slice_.spec.pool.name, slice_.spec.pool.resource_slice_count) == (
        "scheduler-perf-dra-3",
        1,
    )
    assert [d.name for d in slice_.spec.devices] == ["instance-0", "instance-1", "instance-2"]
    last = slice_.spec.devices[2]
    assert last.attributes["model"].string == "A100"
    assert last.attributes["family"].string == "GPU"
    assert last.attributes["driverVersion"].version == "1.2.3"
    assert last.attributes["dra.example.com/numa"].int == 2
    assert last.capacity["memory"].value == "1Gi"
    assert not to_message(dra.resource_slice_doc(DRIVER, "n", 0)).spec.devices  # type: ignore[attr-defined]


# ------------------------------------------------------------- pre-allocation


def test_an_allocation_sees_the_nodes_own_slices_and_the_shared_ones() -> None:
    own = resource_slice("a-gpu", driver=DRIVER, node="a")
    other = resource_slice("b-gpu", driver=DRIVER, node="b")
    everywhere = resource_slice("net", driver=DRIVER, pool="net", allNodes=True)
    selected = resource_slice(
        "rack",
        driver=DRIVER,
        pool="rack",
        nodeSelector={
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
            ]
        },
    )
    reaching = dra.slices_by_node([own, other, everywhere, selected])
    assert [s.metadata.name for s in reaching("a")] == ["a-gpu", "net", "rack"]
    assert [s.metadata.name for s in reaching("c")] == ["net", "rack"]


class FirstFree:
    """Fake allocator: the node's first device (slices with its nodeName) not in use."""

    calls: list[str] = []

    def __init__(self, claims: Any, allocated: Any, classes: Any, slices: Any, admin: Any) -> None:
        self.claim, self.allocated, self.slices = claims[0], allocated, slices

    def allocate(self, node: core_pb2.Node) -> list[resource_pb2.AllocationResult] | Unfit:
        FirstFree.calls.append(node.metadata.name)
        for s in self.slices:
            if s.spec.node_name != node.metadata.name:
                continue
            for d in s.spec.devices:
                if DeviceID(s.spec.driver, s.spec.pool.name, d.name) in self.allocated:
                    continue
                result = resource_pb2.AllocationResult()
                result.devices.results.add(
                    request="r", driver=s.spec.driver, pool=s.spec.pool.name, device=d.name
                )
                return [result]
        return Unfit(claim=self.claim.metadata.name, reason="no free device")


def _node(name: str) -> core_pb2.Node:
    node = core_pb2.Node()
    node.metadata.name = name
    return node


def _slices(per_node: dict[str, int]) -> list[resource_pb2.ResourceSlice]:
    return [
        resource_slice(
            n, driver=DRIVER, node=n, devices=[{"name": f"instance-{i}"} for i in range(k)]
        )
        for n, k in per_node.items()
    ]


def _allocated(name: str, node: str, device: str) -> resource_pb2.ResourceClaim:
    claim = resource_claim(name, "init")
    json_format.ParseDict(
        {
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "r", "driver": DRIVER, "pool": node, "device": device}
                        ]
                    }
                }
            }
        },
        claim,
    )
    return claim


async def _allocate(
    claims: list[resource_pb2.ResourceClaim],
    per_node: dict[str, int],
    every: list[resource_pb2.ResourceClaim] | None = None,
    seed: int = 0,
) -> list[resource_pb2.ResourceClaim]:
    written: list[resource_pb2.ResourceClaim] = []

    async def write(claim: resource_pb2.ResourceClaim) -> resource_pb2.ResourceClaim:
        written.append(claim)
        return claim

    n = await dra.allocate_claims(
        claims,
        every_claim=every if every is not None else claims,
        nodes=[_node(k) for k in per_node],
        classes={},
        slices=_slices(per_node),
        write=write,
        rng=random.Random(seed),
        allocator=FirstFree,
    )
    assert n == len(written)
    return written


def _devices(claims: list[resource_pb2.ResourceClaim]) -> list[DeviceID]:
    return sorted(dra.allocated_devices(claims))


async def test_pre_allocation_never_gives_a_device_twice_and_fills_the_cluster() -> None:
    claims = [resource_claim(f"c-{i}", "init") for i in range(6)]
    written = await _allocate(claims, {"a": 2, "b": 4})
    assert [c.metadata.name for c in written] == [f"c-{i}" for i in range(6)]
    assert len(set(_devices(written))) == 6  # every device of the cluster, once
    assert not written[0].status.reserved_for  # allocated without a pod


async def test_pre_allocation_skips_allocated_claims_and_keeps_their_devices() -> None:
    held = _allocated("held", "a", "instance-0")
    elsewhere = _allocated("other-ns", "a", "instance-1")  # another namespace's claim
    fresh = resource_claim("fresh", "init")
    written = await _allocate([held, fresh], {"a": 3}, every=[held, elsewhere, fresh])
    assert [c.metadata.name for c in written] == ["fresh"]
    assert _devices(written) == [DeviceID(DRIVER, "a", "instance-2")]


async def test_a_claim_that_fits_nowhere_fails_naming_it() -> None:
    claims = [resource_claim(f"c-{i}", "init") for i in range(3)]
    with pytest.raises(
        dra.AllocationFailed, match=r"claim init/c-2 \(3 of 3\) fits on none of 2 nodes"
    ):
        await _allocate(claims, {"a": 1, "b": 1})


class InvalidOnA(FirstFree):
    """FirstFree, but node "a" has an invalid pool (the allocator's FailedOnNode)."""

    def allocate(self, node: core_pb2.Node) -> list[resource_pb2.AllocationResult] | Unfit:
        if node.metadata.name == "a":
            raise FailedOnNode(ERR_INVALID_POOLS)
        return super().allocate(node)


async def test_a_node_with_invalid_pools_is_passed_over_not_an_error() -> None:
    written: list[resource_pb2.ResourceClaim] = []

    async def write(claim: resource_pb2.ResourceClaim) -> resource_pb2.ResourceClaim:
        written.append(claim)
        return claim

    claims = [resource_claim("c", "init")]
    n = await dra.allocate_claims(
        claims,
        every_claim=claims,
        nodes=[_node("a"), _node("b")],
        classes={},
        slices=_slices({"a": 1, "b": 1}),
        write=write,
        rng=random.Random(0),
        allocator=InvalidOnA,
    )
    assert n == 1
    assert _devices(written) == [DeviceID(DRIVER, "b", "instance-0")]


async def test_pre_allocation_picks_random_nodes_reproducibly() -> None:
    claims = [resource_claim(f"c-{i}", "init") for i in range(8)]
    per_node = {f"n{i}": 4 for i in range(8)}
    first = _devices(await _allocate(claims, per_node, seed=7))
    assert first == _devices(await _allocate(claims, per_node, seed=7))
    assert len({d.pool for d in first}) > 1  # not all on the first node listed


# ------------------------------------------------------------------ execution


async def test_create_resource_driver_publishes_slices_for_the_matching_nodes(
    tmp_path: Any,
) -> None:
    ex, api = executor()
    (tmp_path / "node.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: 'scheduler-perf-dra-{{ .Index }}'}\n"
    )
    template = read_template(str(tmp_path / "node.yaml"), "node.yaml")
    await ex.run(o.CreateNodes(index=0, count=2))  # scheduler-perf-<n>: no DRA
    await ex.run(o.CreateNodes(index=1, count=3, node_template=template))
    await ex.run(
        o.CreateResourceDriver(
            index=2, driver_name=DRIVER, nodes="scheduler-perf-dra-*", max_claims_per_node=10
        )
    )
    slices = [x for x in api.created if isinstance(x, resource_pb2.ResourceSlice)]
    assert sorted(s.spec.node_name for s in slices) == [f"scheduler-perf-dra-{i}" for i in range(3)]
    assert {len(s.spec.devices) for s in slices} == {10}
    assert not ex.result.warnings


async def test_a_driver_glob_matching_no_node_is_a_warning() -> None:
    ex, api = executor()
    await ex.run(o.CreateNodes(index=0, count=2))
    await ex.run(o.CreateResourceDriver(index=1, driver_name=DRIVER, nodes="kubera-node-*"))
    assert not [x for x in api.created if isinstance(x, resource_pb2.ResourceSlice)]
    assert ex.result.warnings == [
        f"createResourceDriver[1]: no node matches 'kubera-node-*': driver {DRIVER} has no devices"
    ]


async def test_create_resource_claims_makes_count_claims_in_the_namespace(tmp_path: Any) -> None:
    (tmp_path / "claim.yaml").write_text(CLAIM)
    template = read_template(str(tmp_path / "claim.yaml"), "claim.yaml")
    ex, api = executor()
    await ex.run(o.CreateResourceClaims(index=0, count=3, namespace="init", template=template))
    claims = [x for x in api.created if isinstance(x, resource_pb2.ResourceClaim)]
    assert [(c.metadata.namespace, c.metadata.name) for c in claims] == [
        ("init", "c-0"),
        ("init", "c-1"),
        ("init", "c-2"),
    ]


async def test_alloc_resource_claims_writes_each_allocation(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dra, "Allocator", FirstFree)
    ex, api = executor()
    written: list[Any] = []

    async def update_status(obj: Any) -> Any:
        written.append(obj)
        return obj

    api.update_status = update_status
    await ex.run(o.CreateNodes(index=0, count=2))
    nodes = [x.metadata.name for x in api.created if isinstance(x, core_pb2.Node)]
    api.created.extend(_slices({nodes[0]: 1, nodes[1]: 1}))
    api.created.extend([resource_claim("c-0", "init"), resource_claim("c-1", "init")])
    api.created.append(resource_claim("elsewhere", "other"))
    await ex.run(o.AllocResourceClaims(index=1, namespace="init"))
    assert sorted(c.metadata.name for c in written) == ["c-0", "c-1"]
    assert len(set(_devices(written))) == 2
    api.created.append(resource_claim("c-2", "init"))
    with pytest.raises(OpError, match=r"allocResourceClaims\[2\]: claim init/c-2"):
        await ex.run(o.AllocResourceClaims(index=2, namespace="init"))


def _pod_group(name: str, namespace: str, min_member: int) -> Any:
    return to_message(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": min_member},
        }
    )


async def test_wait_for_pod_groups_returns_once_every_group_has_min_member_bound() -> None:
    ex, api = executor(bind_after=None)
    api.created.extend([_pod_group("g0", "gangs", 2), _pod_group("g1", "gangs", 1)])
    pods = ex.collector.pods

    def see(uid: str, group: str, node: str = "") -> None:
        pods.observe(uid, f"gangs/{uid}", node, "Pending", ex.now(), {POD_GROUP_LABEL: group})

    for uid, group in (("a", "g0"), ("b", "g0"), ("c", "g1")):
        see(uid, group)

    async def bind_later() -> None:
        await asyncio.sleep(0.2)
        see("a", "g0", "n")
        see("c", "g1", "n")
        await asyncio.sleep(0.2)
        assert not waiting.done()  # g0 has 1 of its 2 bound
        see("b", "g0", "n")

    binder = asyncio.create_task(bind_later())
    waiting = asyncio.create_task(ex.run(o.WaitForPodGroups(index=0, namespace="gangs")))
    await asyncio.wait_for(waiting, 5)
    await binder
    assert pods.bound_by_group() == {"gangs/g0": 2, "gangs/g1": 1}


async def test_wait_for_pod_groups_fails_after_the_timeout_when_a_gang_stays_short() -> None:
    ex, api = executor(bind_after=None, timeout=0.3)
    api.created.append(_pod_group("g0", "gangs", 3))
    with pytest.raises(OpError, match="1 pod groups with minMember pods bound"):
        await ex.run(o.WaitForPodGroups(index=4, namespace="gangs"))


#: The shape of upstream's claim templates: a variable, a pipeline through Int, range.
UPSTREAM_CLAIM_TEMPLATE = (
    "{{$n := (or .numRequests 1) | Int}}\n"
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
    "metadata: {name: t}\nspec:\n  spec:\n    devices:\n      requests:{{range $n}}\n"
    "      - {name: req-{{.}}, exactly: {deviceClassName: c}}{{end}}\n"
)


def test_a_case_whose_template_uses_go_features_kubera_lacks_is_left_out(tmp_path: Any) -> None:
    """A template using what gotemplate.py does not implement (`with`): that test case is
    left out with the reason, the file's others still run; upstream's claim templates
    (variables, range, pipelines) run."""
    claim_template = UPSTREAM_CLAIM_TEMPLATE.replace("{{range $n}}", "{{with $n}}")
    text = """\
    - name: Upstream
      workloadTemplate:
      - {opcode: createNodes, count: 1}
      - {opcode: createAny, templatePath: t.yaml, namespace: test}
      - {opcode: createPods, count: 1, collectMetrics: true}
      workloads:
      - {name: w}
    - name: Ours
      workloadTemplate:
      - {opcode: createNodes, count: 1}
      - {opcode: createPods, count: 1, collectMetrics: true}
      workloads:
      - {name: w}
    """
    e = load(str(write(tmp_path, text, {"t.yaml": claim_template})))
    assert list(runs(e)) == ["Ours/w"]
    (warning,) = [w for w in e.warnings if "left out" in w]
    assert 'test case "Upstream" is left out' in warning
    assert "{{with}} is not supported" in warning
    kept = load(str(write(tmp_path, text, {"t.yaml": UPSTREAM_CLAIM_TEMPLATE})))
    assert list(runs(kept)) == ["Upstream/w", "Ours/w"]
    (create,) = [op for op in runs(kept)["Upstream/w"] if type(op) is o.CreateAny]
    doc = create.template.render(0, 1, {"numRequests": 2})
    assert [r["name"] for r in doc["spec"]["spec"]["devices"]["requests"]] == ["req-0", "req-1"]
