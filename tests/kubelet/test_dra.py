"""DRA on hollow nodes: the template's `devices` (parsing, every error naming its field),
the ResourceSlices a pool publishes (and re-creates), and the claim gate that keeps a pod
Pending until its claims are allocated and reserved for it."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.helpers.stages import TemplateError
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from services.kubelet.claimgate import unprepared, usable_on
from services.kubelet.slices import slice_name
from services.kubelet.template import MAX_DEVICES_PER_SLICE, load_template, parse_template
from tests.builders import MakePod, exact_request, resource_claim
from tests.kubelet.test_pool import Env, _template, running
from tests.waiting import eventually

PODS, SLICES, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceSlice"], BY_KIND["ResourceClaim"]

GPUS: dict[str, Any] = {
    "driver": "gpu.example.com",
    "count": 4,
    "namePrefix": "gpu",
    "attributes": {
        "model": "A100",
        "driverVersion": {"version": "1.2.3"},
        "nvlink": True,
        "numa": 1,
    },
    "capacity": {"memory": "80Gi"},
}


def kind_with(**devices: Any) -> dict[str, Any]:
    return {"nodes": [{"name": "g", "devices": [{**GPUS, **devices}]}]}


def test_devices_parse() -> None:
    (d,) = parse_template(kind_with()).kinds[0].devices
    assert d.driver == "gpu.example.com"
    assert d.device_names() == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert d.attributes == {
        "model": {"string": "A100"},
        "driverVersion": {"version": "1.2.3"},
        "nvlink": {"bool": True},
        "numa": {"int": 1},
    }
    assert d.capacity == {"memory": "80Gi"}
    assert parse_template({}).kinds[0].devices == []


@pytest.mark.parametrize(
    ("devices", "field"),
    [
        ({"driver": "GPU.example.com"}, "nodes[0].devices[0].driver"),
        ({"driver": None}, "nodes[0].devices[0].driver"),
        ({"driver": "a" * 64}, "nodes[0].devices[0].driver"),
        ({"count": 0}, "nodes[0].devices[0].count"),
        ({"count": MAX_DEVICES_PER_SLICE + 1}, "nodes[0].devices[0].count"),
        ({"count": "8"}, "nodes[0].devices[0].count"),
        ({"count": True}, "nodes[0].devices[0].count"),
        ({"namePrefix": "GPU"}, "nodes[0].devices[0].namePrefix"),
        ({"namePrefix": "g_pu"}, "nodes[0].devices[0].namePrefix"),
        ({"attributes": {"9lives": "x"}}, "nodes[0].devices[0].attributes.9lives"),
        ({"attributes": {"a" * 33: "x"}}, f"nodes[0].devices[0].attributes.{'a' * 33}"),
        ({"attributes": {"Bad_Domain/x": "x"}}, "nodes[0].devices[0].attributes.Bad_Domain/x"),
        ({"attributes": {"index": 3}}, "nodes[0].devices[0].attributes.index"),
        ({"attributes": {"model": ["a"]}}, "nodes[0].devices[0].attributes.model"),
        ({"attributes": {"model": "x" * 65}}, "nodes[0].devices[0].attributes.model"),
        ({"attributes": {"v": {"version": "1.2"}}}, "nodes[0].devices[0].attributes.v.version"),
        ({"attributes": {"v": {"semver": "1.2.3"}}}, "nodes[0].devices[0].attributes.v"),
        ({"capacity": {"memory": "lots"}}, "nodes[0].devices[0].capacity.memory"),
        ({"capacity": {"memory": True}}, "nodes[0].devices[0].capacity.memory"),
        (
            {"attributes": {f"a{i}": i for i in range(31)}, "capacity": {"m": "1"}},
            "nodes[0].devices[0]",
        ),
        ({"colour": "red"}, "colour"),
        # drataints
        (
            {"taints": [{"key": "k", "effect": "PreferNoSchedule"}]},
            "nodes[0].devices[0].taints[0].effect",
        ),
        ({"taints": [{"key": "bad key", "effect": "None"}]}, "nodes[0].devices[0].taints[0]"),
        ({"taints": [{"key": "k", "effect": "None", "when": 1}]}, "when"),
        ({"taints": [{"key": "k", "effect": "None"}] * 17}, "nodes[0].devices[0].taints"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_device_errors_name_the_field(devices: dict[str, Any], field: str) -> None:
    with pytest.raises(TemplateError) as e:
        parse_template(kind_with(**devices))
    assert field in str(e.value)


def test_device_taints_reach_every_device_of_the_set() -> None:
    """drataints: a template's device taints, published on each device of its slice."""
    from services.kubelet.slices import slice_objects

    taint = {"key": "example.com/unhealthy", "value": "yes", "effect": "NoExecute"}
    (d,) = parse_template(kind_with(taints=[taint])).kinds[0].devices
    assert d.taints == (taint,)
    (s,) = slice_objects("n1", d)
    assert [[json_format.MessageToDict(t) for t in x.taints] for x in s.spec.devices] == [
        [taint]
    ] * 4


def test_device_sets_one_per_driver() -> None:
    doc = {"nodes": [{"name": "g", "devices": [GPUS, {**GPUS, "namePrefix": "other"}]}]}
    with pytest.raises(TemplateError, match=r"nodes\[0\]\.devices\[1\]\.driver"):
        parse_template(doc)
    with pytest.raises(TemplateError, match=r"nodes\[0\]\.devices: expected a list"):
        parse_template({"nodes": [{"name": "g", "devices": GPUS}]})


def test_gpu_example_template_parses() -> None:
    with open("examples/gpu-node-template.yaml") as f:
        t = load_template(f.read())
    assert any(k.devices for k in t.kinds)


def gpu_template(count: int = 3) -> dict[str, Any]:
    return _template(count=count, devices=[GPUS, {"driver": "nic.example.com", "count": 2}])


def device(s: resource_pb2.ResourceSlice, name: str) -> resource_pb2.Device:
    return next(d for d in s.spec.devices if d.name == name)


async def test_pool_publishes_one_slice_per_node_and_driver() -> None:
    async with running(gpu_template(count=3)) as env:
        items, _ = await env.client.list(SLICES)
        slices = {s.metadata.name: s for s in items}  # type: ignore[attr-defined]
        nodes = [n.name for n in env.pool.nodes]
        assert set(slices) == {
            slice_name(n, d) for n in nodes for d in ("gpu.example.com", "nic.example.com")
        }
        s: resource_pb2.ResourceSlice = slices[f"{nodes[1]}-gpu-example-com"]  # type: ignore[assignment]
        assert s.spec.node_name == nodes[1] and s.spec.driver == "gpu.example.com"
        assert (s.spec.pool.name, s.spec.pool.generation, s.spec.pool.resource_slice_count) == (
            nodes[1],
            1,
            1,
        )
        assert [d.name for d in s.spec.devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
        g2 = device(s, "gpu-2")
        assert g2.attributes["index"].int == 2
        assert g2.attributes["model"].string == "A100"
        assert g2.attributes["driverVersion"].version == "1.2.3"
        assert g2.attributes["nvlink"].bool is True
        assert g2.capacity["memory"].value == "80Gi"
        nic = slices[f"{nodes[0]}-nic-example-com"]
        assert [d.name for d in nic.spec.devices] == ["device-0", "device-1"]  # type: ignore[attr-defined]


async def test_pool_without_devices_publishes_nothing_and_watches_no_slices() -> None:
    async with running(_template()) as env:
        items, _ = await env.client.list(SLICES)
        assert items == []
        assert env.pool.slices.informer is None


async def test_slices_of_many_nodes_are_published_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[int] = []  # the slices of each BatchCreate call
    real = Client.batch_create

    async def batch_create(self: Client, objs: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(sum(1 for o in objs if isinstance(o, resource_pb2.ResourceSlice)))
        return await real(self, objs, *args, **kwargs)

    monkeypatch.setattr(Client, "batch_create", batch_create)
    async with running(gpu_template(count=1000)) as env:
        items, _ = await env.client.list(SLICES)
        assert len(items) == 2000
        # 2000 slices in batches of 500 (not one call each): counted, where a wall-clock
        # bound (< 60 s) stood before.
        assert [n for n in sent if n] == [500] * 4
        assert env.pool.stats()["resource_slices"] == 2000


async def test_deleted_slice_is_recreated() -> None:
    async with running(gpu_template(count=2)) as env:
        name = slice_name(env.pool.nodes[0].name, "gpu.example.com")
        await eventually(lambda: env.pool.slices.informer.synced.is_set())  # type: ignore[union-attr]
        await env.client.delete(SLICES, name)

        async def back() -> bool:
            items, _ = await env.client.list(SLICES)
            return name in {s.metadata.name for s in items} and env.pool.slices.recreated == 1  # type: ignore[attr-defined]

        await eventually(back)


async def test_restarted_pool_takes_its_slices_over() -> None:
    async with running(gpu_template(count=2)) as env:
        await env.pool.slices.publish()  # all exist: written over, no error
        items, _ = await env.client.list(SLICES)
        assert len(items) == 4


# ------------------------------------------------------------------------ claim gate


def claim_obj(
    name: str,
    *,
    allocated: bool = False,
    reserved: core_pb2.Pod | None = None,
    owner: core_pb2.Pod | None = None,
) -> resource_pb2.ResourceClaim:
    c = resource_claim(name, "default", exact_request("gpu", "gpu.example.com"))
    c.metadata.uid = f"uid-{name}"
    if owner is not None:
        c.metadata.owner_references.add(
            api_version="v1",
            kind="Pod",
            name=owner.metadata.name,
            uid=owner.metadata.uid,
            controller=True,
        )
    if allocated:
        c.status.allocation.devices.results.add(
            request="gpu", driver="gpu.example.com", pool="n", device="gpu-0"
        )
    if reserved is not None:
        c.status.reserved_for.add(
            resource="pods", name=reserved.metadata.name, uid=reserved.metadata.uid
        )
    return c


def test_unprepared() -> None:
    pod = (
        MakePod()
        .name("p")
        .namespace("default")
        .uid("pod-uid")
        .resource_claim("gpu", claim="c")
        .obj()
    )
    tpod = (
        MakePod()
        .name("t")
        .namespace("default")
        .uid("t-uid")
        .resource_claim("gpu", template="tmpl")
        .obj()
    )
    tpod_made = (
        MakePod().name("t").namespace("default").uid("t-uid").resource_claim("gpu", template="tmpl")
    )
    tpod_made.claim_status("gpu", "t-gpu-1")
    tpod_none = (
        MakePod().name("t").namespace("default").uid("t-uid").resource_claim("gpu", template="tmpl")
    )
    tpod_none.claim_status("gpu", None)
    xpod = MakePod().name("x").namespace("default").uid("x-uid").obj()
    xpod.status.extended_resource_claim_status.resource_claim_name = "x"
    cases: list[tuple[str, core_pb2.Pod, dict[str, resource_pb2.ResourceClaim], str | None]] = [
        ("no claim", pod, {}, "not found"),
        ("not allocated", pod, {"default/c": claim_obj("c")}, "not allocated"),
        ("not reserved", pod, {"default/c": claim_obj("c", allocated=True)}, "not allowed to use"),
        ("ready", pod, {"default/c": claim_obj("c", allocated=True, reserved=pod)}, None),
        ("template, no status yet", tpod, {}, "to be created"),
        ("template, claim of someone else", tpod_made.obj(),
         {"default/t-gpu-1": claim_obj("t-gpu-1", allocated=True, reserved=tpod)}, "not created for pod"),
        ("template, ready", tpod_made.obj(),
         {"default/t-gpu-1": claim_obj("t-gpu-1", allocated=True, reserved=tpod, owner=tpod)}, None),
        ("template, no claim needed", tpod_none.obj(), {}, None),
        # draext: the scheduler's claim for the pod's extended resources, by name
        ("extended, no claim", xpod, {}, "not found"),
        ("extended, not reserved", xpod, {"default/x": claim_obj("x", allocated=True)},
         "not allowed to use"),
        ("extended, ready", xpod, {"default/x": claim_obj("x", allocated=True, reserved=xpod)},
         None),
    ]  # fmt: skip
    node = core_pb2.Node()
    node.metadata.name = "n1"
    for what, p, store, want in cases:
        got = unprepared(p, store.get, node)
        if want is None:
            assert got is None, what
        else:
            assert got is not None and want in got, (what, got)


async def _bound_pod_with_claim(env: Env, name: str, node: str) -> core_pb2.Pod:
    p = MakePod().typed().name(name).namespace("default").node(node).container("c", "nginx:1.27")
    p.resource_claim("gpu", claim="shared")
    created: core_pb2.Pod = await env.api.create(p.obj())
    return created


async def test_gate_holds_a_pod_until_its_claim_is_allocated_and_reserved() -> None:
    async with running(gpu_template(count=1)) as env:
        node = env.pool.nodes[0].name
        pod = await _bound_pod_with_claim(env, "p", node)
        uid = pod.metadata.uid
        # held: past its creating delay the kubelet has looked and decided to wait
        await eventually(lambda: "not found" in env.pool.waiting_for_claims.get(uid, ""))
        assert await env.phase("p") == "Pending"
        got = await env.get("p")
        assert not got.status.container_statuses, "no ContainerCreating while waiting"

        claim = await env.client.create(claim_obj("shared"))
        json_format.ParseDict(
            {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": node,
                            "device": "gpu-0",
                        }
                    ]
                }
            },
            claim.status.allocation,  # type: ignore[attr-defined]
        )
        claim = await env.client.update_status(claim)
        # the pool knows the allocated claim now; not reserved for the pod, it still waits
        await eventually(lambda: "default/shared" in env.pool.claims.store)
        assert uid in env.pool.waiting_for_claims
        assert await env.phase("p") == "Pending"

        claim.status.reserved_for.add(resource="pods", name="p", uid=uid)  # type: ignore[attr-defined]
        await env.client.update_status(claim)

        async def runs() -> bool:
            return await env.phase("p") == "Running"

        await eventually(runs)
        assert uid not in env.pool.waiting_for_claims


async def test_gate_passes_a_pod_whose_claim_was_ready_before_it_was_bound() -> None:
    async with running(gpu_template(count=1)) as env:
        node = env.pool.nodes[0].name
        p = MakePod().typed().name("p").namespace("default").container("c", "nginx:1.27")
        p.resource_claim("gpu", claim="shared")
        pod: core_pb2.Pod = await env.api.create(p.obj())
        await env.client.create(claim_obj("shared"))
        claim = await env.client.get(CLAIMS, "shared", "default")
        claim.status.allocation.devices.results.add(  # type: ignore[attr-defined]
            request="gpu", driver="gpu.example.com", pool=node, device="gpu-0"
        )
        claim.status.reserved_for.add(resource="pods", name="p", uid=pod.metadata.uid)  # type: ignore[attr-defined]
        await env.client.update_status(claim)
        await env.client.bind("p", node, "default")

        async def runs() -> bool:
            return await env.phase("p") == "Running"

        await eventually(runs)


async def test_pod_without_claims_is_not_gated() -> None:
    async with running(gpu_template(count=1)) as env:
        await env.pod("plain", env.pool.nodes[0].name)

        async def runs() -> bool:
            return await env.phase("plain") == "Running"

        await eventually(runs)
        assert not env.pool.waiting_for_claims


async def test_gate_follows_a_template_claim_recorded_later_in_the_pod_status() -> None:
    """The resourceclaim controller's part played by hand: the claim is made, allocated
    and reserved, then recorded in the pod's status; the pod update lets the pod run."""
    async with running(gpu_template(count=1)) as env:
        node = env.pool.nodes[0].name
        p = MakePod().typed().name("t").namespace("default").node(node).container("c", "nginx:1.27")
        pod: core_pb2.Pod = await env.api.create(p.resource_claim("gpu", template="tmpl").obj())
        uid = pod.metadata.uid
        await eventually(lambda: "to be created" in env.pool.waiting_for_claims.get(uid, ""))

        claim = claim_obj("t-gpu-x1", allocated=True, reserved=pod, owner=pod)
        made = await env.client.create(claim_obj("t-gpu-x1", owner=pod))
        made.status.CopyFrom(claim.status)  # type: ignore[attr-defined]
        await env.client.update_status(made)
        await eventually(lambda: "default/t-gpu-x1" in env.pool.claims.store)
        assert uid in env.pool.waiting_for_claims, "no status entry yet: still waiting"

        fresh = await env.get("t")
        fresh.status.resource_claim_statuses.add(name="gpu", resource_claim_name="t-gpu-x1")
        await env.client.update_status(fresh)

        async def runs() -> bool:
            return await env.phase("t") == "Running"

        await eventually(runs)


def _allocated(node_selector: dict[str, Any] | None) -> resource_pb2.ResourceClaim:
    c = claim_obj("c", allocated=True)
    if node_selector is not None:
        json_format.ParseDict(node_selector, c.status.allocation.node_selector)
    return c


def _names(key: str, *nodes: str, field: bool = True) -> dict[str, Any]:
    req = {"key": key, "operator": "In", "values": list(nodes)}
    return {"matchFields" if field else "matchExpressions": [req]}


def _on(node_selector: dict[str, Any], pod: core_pb2.Pod) -> resource_pb2.ResourceClaim:
    c = claim_obj("c", allocated=True, reserved=pod)
    json_format.ParseDict(node_selector, c.status.allocation.node_selector)
    return c


_GATED = MakePod().name("p").namespace("default").uid("pod-uid").resource_claim("gpu", claim="c")


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        (_on({"nodeSelectorTerms": [_names("metadata.name", "n1")]}, _GATED.obj()), None),
        (_on({"nodeSelectorTerms": [_names("metadata.name", "n2")]}, _GATED.obj()), "cannot use"),
        (_on({"nodeSelectorTerms": [_names("zone", "a", field=False)]}, _GATED.obj()), None),
        (
            _on({"nodeSelectorTerms": [_names("zone", "b", field=False)]}, _GATED.obj()),
            "cannot use",
        ),
        (
            _on(
                {
                    "nodeSelectorTerms": [
                        _names("metadata.name", "n2"),
                        _names("metadata.name", "n1"),
                    ]
                },
                _GATED.obj(),
            ),
            None,
        ),
    ],
    ids=["this-node", "other-node", "by-matching-label", "by-other-label", "second-term"],
)
def test_pod_waits_while_its_claim_is_allocated_for_another_node(
    claim: resource_pb2.ResourceClaim, want: str | None
) -> None:
    """A pool runs several nodes and keeps all their claims: a pod bound to n1 whose claim
    (reserved for it) was allocated on n2 must not start (review finding 4)."""
    node = core_pb2.Node()
    node.metadata.name = "n1"
    node.metadata.labels["zone"] = "a"
    got = unprepared(_GATED.obj(), {"default/c": claim}.get, node)
    if want is None:
        assert got is None
    else:
        assert got is not None and want in got


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        (claim_obj("c"), False),  # not allocated
        (_allocated(None), True),  # no node selector: usable anywhere
        (_allocated({"nodeSelectorTerms": [_names("metadata.name", "mine")]}), True),
        (_allocated({"nodeSelectorTerms": [_names("metadata.name", "theirs")]}), False),
        (
            _allocated(
                {"nodeSelectorTerms": [_names("kubernetes.io/hostname", "mine", field=False)]}
            ),
            True,
        ),
        (
            _allocated(
                {
                    "nodeSelectorTerms": [
                        _names("metadata.name", "theirs"),
                        _names("metadata.name", "mine"),
                    ]
                }
            ),
            True,
        ),
        (_allocated({"nodeSelectorTerms": [_names("zone", "a", field=False)]}), True),
    ],
    ids=["unallocated", "anywhere", "mine", "theirs", "by-hostname", "second-term", "by-label"],
)
def test_pool_keeps_the_claims_usable_on_its_nodes(
    claim: resource_pb2.ResourceClaim, want: bool
) -> None:
    assert usable_on(claim, {"mine"}) is want
