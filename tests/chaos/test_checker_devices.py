"""The checker's device property (services/chaos/devices.py): fed a history in which two
claims hold one device at once, it reports double-allocation naming both; fed histories
where a device passes from claim to claim (deallocated, deleted, replaced, moved within
one txn) or is shared (admin access, shares of a multi-allocation device), it passes.
The histories are fabricated etcd events, as a buggy or deposed scheduler would leave
them; one more is written through a real ApiServer and read back from storage."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from services.chaos.checker import Checker
from services.chaos.devices import DOUBLE_ALLOCATION
from services.chaos.history import check_history
from services.storage import Event, KeyValue, Put, Storage
from tests.builders import exact_request, resource_claim

CLAIMS = BY_KIND["ResourceClaim"]
DRIVER = "gpu.example.com"

#: (name, uid, devices, admin, share) -> a claim PUT; (name, None, ...) -> a DELETE
Step = tuple[str, str | None, tuple[str, ...]] | tuple[str, str | None, tuple[str, ...], str]


def _claim(name: str, uid: str, devices: tuple[str, ...], mode: str = "") -> bytes:
    c = resource_pb2.ResourceClaim()
    c.metadata.name, c.metadata.namespace, c.metadata.uid = name, "default", uid
    for d in devices:
        r = c.status.allocation.devices.results.add(
            request="gpu", driver=DRIVER, pool="n1", device=d
        )
        if mode == "admin":
            r.admin_access = True
        elif mode == "share":
            r.share_id = f"share-{uid}"
    return c.SerializeToString()


def _event(step: Step) -> Event:
    name, uid, devices = step[0], step[1], step[2]
    mode = step[3] if len(step) > 3 else ""  # type: ignore[misc]
    key = CLAIMS.key("default", name)
    if uid is None:
        return Event("DELETE", KeyValue(key, b"", 0, 0, 0), None)
    return Event("PUT", KeyValue(key, _claim(name, uid, devices, mode), 1, 1, 1), None)


def _replay(history: list[list[Step]]) -> list[str]:
    checker = Checker()
    for rev, steps in enumerate(history, start=1):
        checker.apply(rev, [_event(s) for s in steps])
    verdict = checker.finish()
    return [v.message for v in verdict.violations if v.check == DOUBLE_ALLOCATION]


GOOD: dict[str, list[list[Step]]] = {
    "allocated then deallocated then taken": [
        [("a", "ua", ("gpu-0",))],
        [("a", "ua", ())],
        [("b", "ub", ("gpu-0",))],
    ],
    "holder deleted then taken": [
        [("a", "ua", ("gpu-0",))],
        [("a", None, ())],
        [("b", "ub", ("gpu-0",))],
    ],
    "holder replaced by a new uid under its name": [
        [("a", "ua", ("gpu-0",))],
        [("a", "ua2", ("gpu-0",))],
    ],
    "moved from one claim to another in one txn": [
        [("a", "ua", ("gpu-0",))],
        [("b", "ub", ("gpu-0",)), ("a", "ua", ())],
    ],
    "the holder written again": [
        [("a", "ua", ("gpu-0",))],
        [("a", "ua", ("gpu-0", "gpu-1"))],
        [("a", "ua", ("gpu-1",))],
        [("b", "ub", ("gpu-0",))],
    ],
    "admin access holds nothing": [
        [("a", "ua", ("gpu-0",))],
        [("b", "ub", ("gpu-0",), "admin")],
    ],
    "shares of a multi-allocation device": [
        [("a", "ua", ("gpu-0",), "share")],
        [("b", "ub", ("gpu-0",), "share")],
    ],
}

BAD: dict[str, tuple[list[list[Step]], str]] = {
    "two claims hold one device": (
        [[("a", "ua", ("gpu-0",))], [("b", "ub", ("gpu-0", "gpu-1"))]],
        "default/b (uid ub) at revision 2 while resourceclaim default/a (uid ua) held it "
        "(since revision 1)",
    ),
    "two claims take one device in one txn": (
        [[("a", "ua", ("gpu-0",)), ("b", "ub", ("gpu-0",))]],
        "default/b (uid ub) at revision 1 while resourceclaim default/a (uid ua)",
    ),
    "the device given again after the other claim re-took it": (
        [
            [("a", "ua", ("gpu-0",))],
            [("a", "ua", ())],
            [("b", "ub", ("gpu-0",))],
            [("a", "ua", ("gpu-0",))],
        ],
        "default/a (uid ua) at revision 4 while resourceclaim default/b (uid ub)",
    ),
}


@pytest.mark.parametrize("history", GOOD.values(), ids=GOOD.keys())
def test_a_device_passed_on_or_shared_is_never_reported(history: list[list[Step]]) -> None:
    assert _replay(history) == []


@pytest.mark.parametrize(("history", "words"), BAD.values(), ids=BAD.keys())
def test_a_device_held_by_two_claims_is_reported_once(
    history: list[list[Step]], words: str
) -> None:
    (message,) = _replay(history)
    assert f"device {DRIVER}/n1/gpu-0 was allocated to resourceclaim " in message
    assert words in message


def test_the_verdict_counts_device_allocations_and_says_none_was_given_twice() -> None:
    checker = Checker()
    checker.apply(1, [_event(("a", "ua", ("gpu-0", "gpu-1")))])
    checker.apply(2, [_event(("b", "ub", ("gpu-2",)))])
    verdict = checker.finish()
    assert verdict.ok and verdict.counts.device_allocations == 3
    assert verdict.lines()[-1].endswith("no pod lost, no device given twice")
    assert verdict.to_dict()["violation_counts"][DOUBLE_ALLOCATION] == 0


async def test_a_forged_second_allocation_in_storage_fails_the_check(storage: Storage) -> None:
    start = await storage.revision() + 1
    api = ApiServer(storage)
    await api.start()
    try:
        for name in ("a", "b"):
            c = await api.create(resource_claim(name, "default", exact_request("gpu", "gpu")))
            c.status.allocation.devices.results.add(  # type: ignore[attr-defined]
                request="gpu", driver=DRIVER, pool="n1", device="gpu-0" if name == "a" else "gpu-1"
            )
            await api.update_status(c, check_allocation=True)
        clean = await check_history(storage, start_revision=start)
        assert clean.ok and clean.counts.device_allocations == 2, clean.lines()
        # what a scheduler that skipped the record would write: b takes a's device
        b = await api.get(CLAIMS, "default", "b")
        b.status.allocation.devices.results[0].device = "gpu-0"  # type: ignore[attr-defined]
        b.metadata.ClearField("resource_version")
        await storage.txn([], [Put(CLAIMS.key("default", "b"), b.SerializeToString())])
    finally:
        await api.stop()
    verdict = await check_history(storage, start_revision=start)
    assert [v.check for v in verdict.violations] == [DOUBLE_ALLOCATION], verdict.lines()
    assert "FAILED: 1 violations (1 double-allocation)" in verdict.lines()[-1]


# -- shares of a device that allows multiple allocations: its capacity (DRAConsumableCapacity)

SLICES = BY_KIND["ResourceSlice"]


def _slice_event(memory: str) -> Event:
    rs = resource_pb2.ResourceSlice()
    rs.metadata.name = "n1-gpus"
    rs.spec.driver, rs.spec.pool.name, rs.spec.node_name = DRIVER, "n1", "n1"
    dev = rs.spec.devices.add(name="gpu-0", allow_multiple_allocations=True)
    dev.capacity["memory"].value = memory
    return Event("PUT", KeyValue(SLICES.key("", "n1-gpus"), rs.SerializeToString(), 1, 1, 1), None)


def _share_event(name: str, uid: str, memory: str | None) -> Event:
    c = resource_pb2.ResourceClaim()
    c.metadata.name, c.metadata.namespace, c.metadata.uid = name, "default", uid
    if memory is not None:
        r = c.status.allocation.devices.results.add(
            request="gpu", driver=DRIVER, pool="n1", device="gpu-0", share_id=f"share-{uid}"
        )
        r.consumed_capacity["memory"] = memory
    return Event("PUT", KeyValue(CLAIMS.key("default", name), c.SerializeToString(), 1, 1, 1), None)


def _replay_shares(revisions: list[list[Event]]) -> list[str]:
    checker = Checker()
    for rev, events in enumerate(revisions, start=1):
        checker.apply(rev, events)
    return [v.message for v in checker.finish().violations if v.check == DOUBLE_ALLOCATION]


def test_shares_within_a_devices_capacity_pass() -> None:
    assert (
        _replay_shares(
            [
                [_slice_event("8Gi")],
                [_share_event("a", "ua", "4Gi")],
                [_share_event("b", "ub", "4Gi")],
                [_share_event("a", "ua", None)],  # a lets its share go
                [_share_event("c", "uc", "4Gi")],
            ]
        )
        == []
    )


def test_shares_beyond_a_devices_capacity_are_a_double_allocation_reported_once() -> None:
    (message,) = _replay_shares(
        [
            [_slice_event("8Gi")],
            [_share_event("a", "ua", "6Gi")],
            [_share_event("b", "ub", "3Gi")],
            [_share_event("c", "uc", "1Gi")],  # still over: not reported again
        ]
    )
    assert f"device {DRIVER}/n1/gpu-0's capacity memory" in message
    assert "overcommitted at revision 3" in message
    assert "after resourceclaim default/b (uid ub) took one" in message


def test_shares_of_a_device_no_slice_publishes_are_not_judged() -> None:
    assert (
        _replay_shares([[_share_event("a", "ua", "6Gi")], [_share_event("b", "ub", "6Gi")]]) == []
    )
