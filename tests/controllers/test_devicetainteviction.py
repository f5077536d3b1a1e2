"""The device taint eviction controller's decision (upstream pkg/controller/
devicetainteviction, device_taint_eviction_test.go): which pods go and when, for upstream's
fixtures (a slice with devices "instance", "instance-no-schedule" and "instance-no-execute",
the rules "evict", "evict-instance", "evict-other" and a None one, a claim in use by
"my-pod", tolerations for an hour). Upstream's table drives its event handlers one event at
a time; kubera's controller recomputes from the stores, so each row is a state and the
pods due in it. Then the controller against the fake apiserver: the pod is marked and
deleted, and a rule removed in time cancels it."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.machinery.kinds import BY_KIND
from services.client import SharedInformers
from services.clock import ScaledClock, parse_rfc3339
from services.controllers.devicetainteviction import (
    DISRUPTION_MESSAGE,
    DISRUPTION_REASON,
    EVICTION_IN_PROGRESS,
    DeviceTaintEvictionController,
    TimeAdded,
    affected_pods,
    pods_to_evict,
    published_devices,
    rule_condition,
    set_rule_condition,
)
from tests.builders import MakePod, resource_claim, resource_slice
from tests.harness import control_plane
from tests.waiting import eventually

Json = dict[str, Any]

NODE, DRIVER, NS = "worker", "some-driver", "default"
POD, POD_UID, CLAIM = "my-pod", "1234", "my-pod-my-resource"
TAINT_TIME = "2000-01-01T00:00:00Z"
T0 = parse_rfc3339(TAINT_TIME)
KEY, VALUE = "example.com/taint", "something"
HOUR = 3600
NOW = T0 + 10

TAINT: Json = {"key": KEY, "value": VALUE, "effect": "NoExecute", "timeAdded": TAINT_TIME}


def dev(name: str, *taints: Json) -> Json:
    d: Json = {"name": name}
    if taints:
        d["taints"] = list(taints)
    return d


def slc(*devices: Json, generation: int = 1, name: str = "slice") -> resource_pb2.ResourceSlice:
    return resource_slice(name, driver=DRIVER, node=NODE, devices=devices, generation=generation)


SLICE = slc(
    dev("instance"),
    dev("instance-no-schedule", {"key": KEY, "effect": "NoSchedule"}),
    dev(
        "instance-no-execute",
        {"key": KEY, "effect": "None", "timeAdded": TAINT_TIME},
        {"key": KEY, "effect": "NoExecute", "timeAdded": TAINT_TIME},
    ),
)


def tainted(effect: str = "NoExecute", **over: Any) -> resource_pb2.ResourceSlice:
    """upstream sliceTainted (and its None/unknown/NoSchedule variants): "instance" tainted."""
    s = resource_pb2.ResourceSlice()
    s.CopyFrom(SLICE)
    json_format.ParseDict({**TAINT, "effect": effect, **over}, s.spec.devices[0].taints.add())
    return s


def rule(name: str, taint: Json, **selector: str) -> resource_pb2.DeviceTaintRule:
    r = resource_pb2.DeviceTaintRule()
    json_format.ParseDict(
        {"metadata": {"name": name}, "spec": {"deviceSelector": selector, "taint": taint}}, r
    )
    return r


RULE_EVICT = rule("evict", TAINT, driver=DRIVER)
RULE_EVICT_INSTANCE_LATER = rule(
    "evict-instance",
    {**TAINT, "timeAdded": "2000-01-01T00:00:40Z"},
    driver=DRIVER,
    device="instance",
)
RULE_NONE = rule("none", {**TAINT, "effect": "None"}, driver=DRIVER)
RULE_EVICT_OTHER = rule("evict-other", TAINT, device="instance")
RULE_OTHER_DRIVER = rule("evict-driver-b", TAINT, driver="driver-b")


def in_use_claim(
    *tolerations: Json,
    devices: tuple[str, ...] = ("instance",),
    name: str = CLAIM,
    uid: str = POD_UID,
    pod: str = POD,
) -> resource_pb2.ResourceClaim:
    results = [
        {
            "request": "req-1",
            "driver": DRIVER,
            "pool": NODE,
            "device": d,
            **({"tolerations": list(tolerations)} if tolerations else {}),
        }
        for d in devices
    ]
    return resource_claim(
        name,
        NS,
        {"name": "req-1", "exactly": {"deviceClassName": "my-resource-class"}},
        status={
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}],
        },
    )


def pod(*claims: str, uid: str = POD_UID, node: str = NODE, name: str = POD) -> core_pb2.Pod:
    p = MakePod().name(name).namespace(NS).uid(uid).container("c", "pause")
    for i, c in enumerate(claims or (CLAIM,)):
        p = p.resource_claim(f"res-{i}", claim=c)
    if node:
        p = p.node(node)
    return p.obj()


TOL_HOUR: Json = {
    "key": KEY,
    "operator": "Equal",
    "value": VALUE,
    "effect": "NoExecute",
    "tolerationSeconds": HOUR,
}
TOL_FOREVER: Json = {"key": KEY, "operator": "Exists", "effect": "NoExecute"}
TOL_NO_EFFECT: Json = {"key": KEY, "operator": "Exists"}
TOL_NEGATIVE: Json = {**TOL_HOUR, "tolerationSeconds": -5}

# name -> (pods, claims, slices, rules, {pod name: eviction time})
CASES: dict[str, tuple[list[core_pb2.Pod], list[Any], list[Any], list[Any], dict[str, float]]] = {
    "no-taint": ([pod()], [in_use_claim()], [SLICE], [], {}),
    "tainted-slice": ([pod()], [in_use_claim()], [tainted()], [], {POD: T0}),
    "tainted-none": ([pod()], [in_use_claim()], [tainted("None")], [], {}),
    "tainted-unknown-effect": ([pod()], [in_use_claim()], [tainted("unknown-effect")], [], {}),
    "tainted-no-schedule": ([pod()], [in_use_claim()], [tainted("NoSchedule")], [], {}),
    "tainted-other-devices": (
        [pod()],
        [in_use_claim(devices=("instance-no-schedule", "instance-no-execute"))],
        [SLICE],
        [],
        {POD: T0},
    ),
    "toleration-for-an-hour": (
        [pod()],
        [in_use_claim(TOL_HOUR)],
        [tainted()],
        [],
        {POD: T0 + HOUR},
    ),
    "toleration-negative-seconds": (
        [pod()],
        [in_use_claim(TOL_NEGATIVE)],
        [tainted()],
        [],
        {POD: T0},
    ),
    "toleration-forever": ([pod()], [in_use_claim(TOL_FOREVER)], [tainted()], [], {}),
    # Only NoExecute tolerations keep a pod running (upstream claimEvictionTime).
    "toleration-without-effect": (
        [pod()],
        [in_use_claim(TOL_NO_EFFECT)],
        [tainted()],
        [],
        {POD: T0},
    ),
    "toleration-other-value": (
        [pod()],
        [in_use_claim(TOL_HOUR)],
        [tainted(value="other")],
        [],
        {POD: T0},
    ),
    "rule-evict": ([pod()], [in_use_claim()], [SLICE], [RULE_EVICT], {POD: T0}),
    "rule-evict-instance-later": (
        [pod()],
        [in_use_claim()],
        [SLICE],
        [RULE_EVICT_INSTANCE_LATER],
        {POD: T0 + 40},
    ),
    "rule-none": ([pod()], [in_use_claim()], [SLICE], [RULE_NONE], {}),
    "rule-evict-other": ([pod()], [in_use_claim()], [SLICE], [RULE_EVICT_OTHER], {POD: T0}),
    "rule-other-driver": ([pod()], [in_use_claim()], [SLICE], [RULE_OTHER_DRIVER], {}),
    "rule-tolerated-for-an-hour": (
        [pod()],
        [in_use_claim(TOL_HOUR)],
        [SLICE],
        [RULE_EVICT],
        {POD: T0 + HOUR},
    ),
    # The device is gone from the slices: the rule still reaches the allocated device.
    "rule-without-slice": ([pod()], [in_use_claim()], [], [RULE_EVICT], {POD: T0}),
    "unscheduled-pod": ([pod(node="")], [in_use_claim()], [tainted()], [], {}),
    "pod-other-uid": ([pod(uid="other")], [in_use_claim()], [tainted()], [], {}),
    "slice-replaced": (
        [pod()],
        [in_use_claim()],
        [tainted(), slc(dev("instance"), generation=2, name="new")],
        [],
        {},
    ),
    "two-claims-earliest": (
        [pod(CLAIM, CLAIM + "-other")],
        [
            in_use_claim(TOL_HOUR),
            in_use_claim(devices=("instance-no-execute",), name=CLAIM + "-other"),
        ],
        [tainted()],
        [],
        {POD: T0},
    ),
    "claim-not-reserved": (
        [pod()],
        [in_use_claim(uid="someone-else")],
        [tainted()],
        [],
        {},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_pods_to_evict(name: str) -> None:
    pods, claims, slices, rules, want = CASES[name]
    store = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods}
    times = TimeAdded()
    times.now = NOW
    got = pods_to_evict(store, claims, slices, rules, times)
    assert {k.split("/", 1)[1]: when for k, (_, when) in got.items()} == want


def test_template_claim_counts_once_recorded_in_status() -> None:
    p = MakePod().name(POD).namespace(NS).uid(POD_UID).resource_claim("res", template="t")
    p = p.node(NODE)
    unrecorded = p.obj()
    claim = in_use_claim()
    claim.metadata.owner_references.add(kind="Pod", name=POD, uid=POD_UID, controller=True)
    store = {f"{NS}/{POD}": unrecorded}
    times = TimeAdded()
    assert pods_to_evict(store, [claim], [tainted()], [], times) == {}
    recorded = unrecorded.__deepcopy__()
    recorded.status.resource_claim_statuses.add(name="res", resource_claim_name=CLAIM)
    store = {f"{NS}/{POD}": recorded}
    assert list(pods_to_evict(store, [claim], [tainted()], [], times)) == [f"{NS}/{POD}"]


def test_taint_without_time_counts_from_first_seen() -> None:
    times = TimeAdded()
    times.now = 100.0
    store = {f"{NS}/{POD}": pod()}
    s = tainted(timeAdded="")
    s.spec.devices[0].taints[0].ClearField("time_added")
    first = pods_to_evict(store, [in_use_claim(TOL_HOUR)], [s], [], times)
    times.now = 500.0
    again = pods_to_evict(store, [in_use_claim(TOL_HOUR)], [s], [], times)
    assert first[f"{NS}/{POD}"][1] == again[f"{NS}/{POD}"][1] == 100.0 + HOUR


# ------------------------------------------------------------------ rule status


@pytest.mark.parametrize(
    ("r", "claims", "evicted", "want"),
    [
        pytest.param(
            RULE_EVICT,
            [in_use_claim()],
            0,
            ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace."),
            id="no-execute-pending",
        ),
        pytest.param(
            RULE_EVICT,
            [in_use_claim(TOL_FOREVER)],
            0,
            ("False", "NotStarted", ""),
            id="no-execute-tolerated-forever",
        ),
        pytest.param(
            RULE_EVICT,
            [in_use_claim(TOL_HOUR)],
            0,
            ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace."),
            id="no-execute-tolerated-for-a-while",
        ),
        pytest.param(
            RULE_EVICT,
            [],
            2,
            ("False", "Completed", "2 pods evicted since starting the controller."),
            id="no-execute-completed",
        ),
        pytest.param(
            RULE_NONE,
            [in_use_claim()],
            0,
            (
                "False",
                "NoEffect",
                "3 published devices selected. 1 allocated device selected. 1 pod would be "
                "evicted in 1 namespace if the effect was NoExecute. This information will "
                "not be updated again. Recreate the DeviceTaintRule to trigger an update.",
            ),
            id="none-simulates",
        ),
        pytest.param(
            rule("ns", {**TAINT, "effect": "NoSchedule"}, driver=DRIVER),
            [in_use_claim()],
            0,
            ("False", "OtherEffect", "Eviction only happens for the NoExecute effect."),
            id="other-effect",
        ),
    ],
)
def test_rule_condition(
    r: resource_pb2.DeviceTaintRule, claims: list[Any], evicted: int, want: tuple[str, ...]
) -> None:
    pods = {f"{NS}/{POD}": pod()}
    affected = affected_pods(r, claims, pods)
    devices = published_devices([SLICE])
    assert rule_condition(r, affected, claims, devices, evicted) == want


def test_rule_condition_written_once_per_generation_for_effect_none() -> None:
    r = resource_pb2.DeviceTaintRule()
    r.CopyFrom(RULE_NONE)
    r.metadata.generation = 1
    assert set_rule_condition(r, "False", "NoEffect", "a", TAINT_TIME)
    assert not set_rule_condition(r, "False", "NoEffect", "b", TAINT_TIME)
    r.metadata.generation = 2
    assert set_rule_condition(r, "False", "NoEffect", "b", TAINT_TIME)
    (c,) = r.status.conditions
    assert (c.type, c.message, c.observed_generation) == (EVICTION_IN_PROGRESS, "b", 2)


# ------------------------------------------------------------------ against an apiserver

SCALE = 50.0


async def _in_use(cp: Any, *tolerations: Json) -> core_pb2.Pod:
    """A pod bound to NODE using CLAIM, allocated "instance" and reserved for the pod."""
    created = await cp.client.create(pod(uid=""))
    claim = in_use_claim(*tolerations, uid=created.metadata.uid)
    status = resource_pb2.ResourceClaimStatus()
    status.CopyFrom(claim.status)
    claim.ClearField("status")
    stored = await cp.client.create(claim)
    stored.status.CopyFrom(status)
    await cp.client.update_status(stored)
    return created  # type: ignore[no-any-return]


async def _started(cp: Any, clock: ScaledClock) -> DeviceTaintEvictionController:
    """The controller on its own informers, synced and running until the block ends."""
    informers = SharedInformers(cp.client)
    ctl = DeviceTaintEvictionController(cp.client, informers, clock=clock)
    informers.start()
    cp.defer(informers.stop)
    await informers.wait_synced()
    cp.run(ctl)
    return ctl


@pytest.mark.parametrize(
    ("tolerations", "after"), [((), 0), ((TOL_HOUR | {"tolerationSeconds": 30},), 30)]
)
async def test_rule_with_no_execute_evicts_the_pod(
    tolerations: tuple[Json, ...], after: int
) -> None:

    clock = ScaledClock(SCALE)
    async with control_plane(clock=clock) as cp:
        created = await _in_use(cp, *tolerations)
        ctl = await _started(cp, clock)
        r = rule("evict", {"key": KEY, "value": VALUE, "effect": "NoExecute"}, driver=DRIVER)
        stored = await cp.client.create(r)
        added = parse_rfc3339(stored.spec.taint.time_added)

        async def marked() -> Any:
            p = await cp.client.get(BY_KIND["Pod"], POD, NS)
            return p if p.metadata.deletion_timestamp else None

        got = await eventually(marked, timeout=10.0)
        assert got.metadata.uid == created.metadata.uid
        (cond,) = [c for c in got.status.conditions if c.type == "DisruptionTarget"]
        assert (cond.status, cond.reason, cond.message) == (
            "True",
            DISRUPTION_REASON,
            DISRUPTION_MESSAGE,
        )
        deleted_at = parse_rfc3339(got.metadata.deletion_timestamp) - (
            got.metadata.deletion_grace_period_seconds
        )
        assert deleted_at >= added + after - 1  # second precision
        assert ctl.deleted_total == 1

        async def completed() -> Any:
            got = await cp.client.get(BY_KIND["DeviceTaintRule"], "evict")
            conds = [c for c in got.status.conditions if c.type == EVICTION_IN_PROGRESS]
            return conds and conds[0].reason == "Completed" and conds[0]

        cond = await eventually(completed, timeout=10.0)
        assert (cond.status, cond.message) == (
            "False",
            "1 pod evicted since starting the controller.",
        )


async def test_rule_removed_in_time_cancels_the_eviction() -> None:

    clock = ScaledClock(SCALE)
    async with control_plane(clock=clock) as cp:
        await _in_use(cp, TOL_HOUR)
        ctl = await _started(cp, clock)
        r = rule("evict", {"key": KEY, "value": VALUE, "effect": "NoExecute"}, driver=DRIVER)
        await cp.client.create(r)
        await eventually(lambda: f"{NS}/{POD}" in ctl.scheduled)

        async def pending() -> Any:
            got = await cp.client.get(BY_KIND["DeviceTaintRule"], "evict")
            return [(c.status, c.reason, c.message) for c in got.status.conditions]

        assert await eventually(pending) == [
            ("True", "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace.")
        ]
        await cp.client.delete(BY_KIND["DeviceTaintRule"], "evict")
        await eventually(lambda: f"{NS}/{POD}" not in ctl.scheduled)
        assert len(ctl.queue) == 0 and ctl.deleted_total == 0


async def test_slice_with_no_execute_taint_evicts_the_pod() -> None:
    """The driver taints the device in its slice (no rule): the pod goes at once."""
    clock = ScaledClock(SCALE)
    async with control_plane(clock=clock) as cp:
        created = await _in_use(cp)
        await cp.client.create(slc(dev("instance")))
        ctl = await _started(cp, clock)
        assert not ctl.tainted_slices
        s = await cp.client.get(BY_KIND["ResourceSlice"], "slice")
        taint = {"key": KEY, "value": VALUE, "effect": "NoExecute"}
        json_format.ParseDict(taint, s.spec.devices[0].taints.add())
        await cp.client.update(s)

        async def marked() -> Any:
            p = await cp.client.get(BY_KIND["Pod"], POD, NS)
            return p if p.metadata.deletion_timestamp else None

        got = await eventually(marked, timeout=10.0)
        assert got.metadata.uid == created.metadata.uid
        assert ctl.tainted_slices == {"slice"}
