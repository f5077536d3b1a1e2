"""Device taints and tolerations (upstream DRADeviceTaints and DRADeviceTaintRules, GA and
on by default in the newest upstream; k8s.io/api/resource/v1 DeviceTaint,
DeviceToleration.ToleratesTaint, DeviceTaintRule; k8s.io/dynamic-resource-allocation
resourceslice/tracker for the rules' taints on devices).

A device's taints are those its ResourceSlice lists plus one per DeviceTaintRule whose
selector matches it (driver, pool, device: each one set must be equal; a rule without a
selector matches nothing). The vocabulary shared by the allocator (services/api/dra/
allocator.py: a request may only get a device whose NoSchedule and NoExecute taints it
all tolerates) and the device-taint eviction controller (services/controllers/
devicetainteviction.py: a pod whose allocated device has a NoExecute taint its request
does not tolerate is evicted, after the shortest tolerationSeconds when all tolerate it
for a while). Effect None and unknown effects are informational only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from protos.kubera.v1 import resource_pb2

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
NONE = "None"
#: Effects that keep a device from being allocated to a claim not tolerating them.
BLOCKING_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
EXISTS = "Exists"
EQUAL = "Equal"


def tolerates(toleration: resource_pb2.DeviceToleration, taint: resource_pb2.DeviceTaint) -> bool:
    """upstream DeviceToleration.ToleratesTaint: the effect (when set) and the key (when set)
    are the taint's; Equal (the default) also needs the value, Exists any value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator or EQUAL
    if op == EQUAL:
        return toleration.value == taint.value
    return op == EXISTS


def tolerated(
    taint: resource_pb2.DeviceTaint, tolerations: Iterable[resource_pb2.DeviceToleration]
) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def allocatable(
    taints: Iterable[resource_pb2.DeviceTaint],
    tolerations: Sequence[resource_pb2.DeviceToleration],
) -> bool:
    """Every NoSchedule and NoExecute taint is tolerated (the allocator's test)."""
    return all(t.effect not in BLOCKING_EFFECTS or tolerated(t, tolerations) for t in taints)


def rule_matches(rule: resource_pb2.DeviceTaintRule, driver: str, pool: str, device: str) -> bool:
    """The rule's selector selects the device: every criterion set is equal; no selector
    selects nothing."""
    spec = rule.spec
    if not spec.HasField("device_selector"):
        return False
    sel = spec.device_selector
    return (
        (not sel.HasField("driver") or sel.driver == driver)
        and (not sel.HasField("pool") or sel.pool == pool)
        and (not sel.HasField("device") or sel.device == device)
    )


class TaintRules:
    """The DeviceTaintRules of the cluster, looked up per device. Rules naming a driver are
    indexed by it, the others checked for every device."""

    def __init__(self, rules: Iterable[resource_pb2.DeviceTaintRule] = ()) -> None:
        self.by_driver: dict[str, list[resource_pb2.DeviceTaintRule]] = {}
        self.any_driver: list[resource_pb2.DeviceTaintRule] = []
        for r in rules:
            if not r.spec.HasField("device_selector"):
                continue
            if r.spec.device_selector.HasField("driver"):
                self.by_driver.setdefault(r.spec.device_selector.driver, []).append(r)
            else:
                self.any_driver.append(r)

    def __bool__(self) -> bool:
        return bool(self.by_driver or self.any_driver)

    def matching(self, driver: str, pool: str, device: str) -> list[resource_pb2.DeviceTaintRule]:
        return [
            r
            for r in (*self.by_driver.get(driver, ()), *self.any_driver)
            if rule_matches(r, driver, pool, device)
        ]

    def taints(self, driver: str, pool: str, device: str) -> list[resource_pb2.DeviceTaint]:
        return [r.spec.taint for r in self.matching(driver, pool, device)]


def device_taints(
    device: resource_pb2.Device, driver: str, pool: str, rules: TaintRules | None
) -> list[resource_pb2.DeviceTaint]:
    """The device's own taints, then those of the rules selecting it."""
    out = list(device.taints)
    if rules:
        out += rules.taints(driver, pool, device.name)
    return out


def stamp_time_added(obj: object, old: object | None, now: str) -> None:
    """What the apiserver does to the taints of a ResourceSlice or DeviceTaintRule it writes
    (upstream's registry strategies): a taint without timeAdded gets `now`; a rule whose
    effect changes while the client kept the old timeAdded gets `now` too (the eviction
    counts from the effect's change)."""
    if isinstance(obj, resource_pb2.ResourceSlice):
        for d in obj.spec.devices:
            for t in d.taints:
                if not t.HasField("time_added"):
                    t.time_added = now
    elif isinstance(obj, resource_pb2.DeviceTaintRule):
        taint = obj.spec.taint
        prev = old.spec.taint if isinstance(old, resource_pb2.DeviceTaintRule) else None
        if (
            not taint.HasField("time_added")
            or prev is not None
            and prev.effect != taint.effect
            and prev.time_added == taint.time_added
        ):
            taint.time_added = now
