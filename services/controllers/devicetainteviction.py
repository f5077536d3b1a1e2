"""Device taint eviction: delete the pods whose allocated devices carry a NoExecute taint
their claim does not tolerate.

kube-controller-manager's device-taint-eviction-controller (pkg/controller/
devicetainteviction, DRADeviceTaints and DRADeviceTaintRules, on by default upstream). The
device-side twin of tainteviction.py:

    claim / slice / rule / pod informer event ──► dirty; the loop resyncs (no I/O):
        per allocated claim, claim_eviction_time over its devices' NoExecute taints
        (the slice's, then the DeviceTaintRules selecting the device):
            a taint no NoExecute toleration of the result matches ─► at timeAdded
            all tolerated, some for tolerationSeconds ─────────────► timeAdded + min(s)
            every taint tolerated forever / no taint ─────────────► none
        per pod it is reserved for (scheduled, same uid, not being deleted): the earliest
        of its claims' times ─► scheduled in an EvictionQueue (tainteviction's)
        a pod no longer due ─► cancelled ("Cancelling deletion")
    due ─► event "Marking for deletion", DisruptionTarget=True
        (DeletionByDeviceTaintManager), delete pinned to the pod's uid

As upstream: only tolerations with effect NoExecute count here (an effect-less toleration
lets the allocator pick the device but does not keep the pod running); the times count from
each taint's timeAdded (the apiserver stamps it; a taint without one counts from when this
controller first saw it); only the devices of a pool's newest generation count.

Each DeviceTaintRule gets the condition EvictionInProgress in its status (upstream
updateRuleStatus): for a NoExecute rule True (PodsPendingEviction, "N pods need to be
evicted in M namespaces.") while pods its taint will evict remain, else False (NotStarted,
or Completed once it evicted some); for effect None, once per generation, False (NoEffect)
with what would happen with NoExecute (devices selected, pods that would be evicted); for
other effects False (OtherEffect). observedGeneration is the rule's generation.

Differences from upstream: kubera resyncs every allocated claim when something changed
instead of upstream's per-device bookkeeping (same decisions, more work per event; none at
all while no slice has a NoExecute taint, no rule exists and nothing is scheduled); a
rule's condition is rewritten when it changes, not at most every ruleStatusPeriod.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.claims import existing_pod_claims, is_reserved_for_pod
from services.api.dra.taints import NO_EXECUTE, TaintRules, rule_matches, tolerates
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.events import new_event
from services.api.machinery import codec
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339
from services.controllers.events import write_event
from services.controllers.tainteviction import (
    DISRUPTION_TARGET,
    EvictionLoop,
    EvictionQueue,
    EvictionWorkersConfig,
    delete_with_retries,
)

log = logging.getLogger(__name__)

PODS, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceClaim"]
SLICES, RULES = BY_KIND["ResourceSlice"], BY_KIND["DeviceTaintRule"]

COMPONENT = "device-taint-eviction-controller"
EVICTION_REASON = "DeviceTaintManagerEviction"
DISRUPTION_REASON = "DeletionByDeviceTaintManager"
DISRUPTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"

DeviceKey = tuple[str, str, str]  # driver, pool, device

EVICTION_IN_PROGRESS = "EvictionInProgress"


@dataclass(frozen=True)
class DeviceTaintEvictionConfig(EvictionWorkersConfig):
    """Settings of the device taint eviction controller (its deletion workers, as the
    taint eviction controller's); durations in simulated seconds."""


# ------------------------------------------------------------------ the decision (no I/O)


def published_devices(
    slices: Iterable[resource_pb2.ResourceSlice],
) -> dict[DeviceKey, resource_pb2.Device]:
    """The devices of every pool's newest generation, by (driver, pool, device)."""
    newest: dict[tuple[str, str], int] = {}
    slices = list(slices)
    for s in slices:
        pool = (s.spec.driver, s.spec.pool.name)
        newest[pool] = max(newest.get(pool, s.spec.pool.generation), s.spec.pool.generation)
    out: dict[DeviceKey, resource_pb2.Device] = {}
    for s in slices:
        if s.spec.pool.generation != newest[(s.spec.driver, s.spec.pool.name)]:
            continue
        for d in s.spec.devices:
            out[(s.spec.driver, s.spec.pool.name, d.name)] = d
    return out


def evicting_taints(
    key: DeviceKey, device: resource_pb2.Device | None, rules: TaintRules
) -> list[resource_pb2.DeviceTaint]:
    """The NoExecute taints of an allocated device: its slice's (when still published),
    then those of the rules selecting it."""
    own = list(device.taints) if device is not None else []
    return [t for t in (*own, *rules.taints(*key)) if t.effect == NO_EXECUTE]


def claim_eviction_time(
    claim: resource_pb2.ResourceClaim,
    devices: Mapping[DeviceKey, resource_pb2.Device],
    rules: TaintRules,
    added: TimeAdded,
) -> float | None:
    """When the pods using the (allocated) claim must go, or None (upstream
    claimEvictionTime): the earliest, over its devices' NoExecute taints not tolerated
    forever by a NoExecute toleration of the result, of timeAdded + the shortest matching
    tolerationSeconds (0 without one; negative counts as 0)."""
    when: float | None = None
    for res in claim.status.allocation.devices.results:
        key = (res.driver, res.pool, res.device)
        for taint in evicting_taints(key, devices.get(key), rules):
            seconds: int | None = None
            forever = False
            for tol in res.tolerations:
                if tol.effect != NO_EXECUTE or not tolerates(tol, taint):
                    continue
                if not tol.HasField("toleration_seconds"):
                    forever = True
                    break
                s = max(0, tol.toleration_seconds)
                seconds = s if seconds is None else min(seconds, s)
            if forever:
                continue
            at = added(key, taint) + (seconds or 0)
            when = at if when is None else min(when, at)
    return when


class TimeAdded:
    """A taint's timeAdded in seconds, or, for a taint without one, when it was first seen
    (kept per device and taint, so the time does not move with every resync)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[DeviceKey, str, str, str], float] = {}
        self.now = 0.0

    def __call__(self, key: DeviceKey, taint: resource_pb2.DeviceTaint) -> float:
        if taint.HasField("time_added") and taint.time_added:
            return parse_rfc3339(taint.time_added)
        return self._seen.setdefault((key, taint.key, taint.value, taint.effect), self.now)


def pod_claims(
    pod: core_pb2.Pod, claims: Mapping[str, resource_pb2.ResourceClaim]
) -> list[resource_pb2.ResourceClaim]:
    """The allocated claims the pod uses and is reserved in (upstream podEvictionTime's
    filter): made, owned by the pod when from a template, reserved for this pod."""
    return [
        c
        for c in existing_pod_claims(pod, claims.get)
        if c.status.HasField("allocation") and is_reserved_for_pod(pod, c)
    ]


def pod_eviction_time(
    pod: core_pb2.Pod,
    claims: Mapping[str, resource_pb2.ResourceClaim],
    times: Mapping[str, float | None],
) -> float | None:
    """The earliest eviction time of the pod's claims (`times` by claim key), or None; an
    unscheduled pod or one being deleted is not evicted."""
    if not pod.spec.node_name or pod.metadata.deletion_timestamp:
        return None
    when: float | None = None
    for claim in pod_claims(pod, claims):
        t = times.get(f"{claim.metadata.namespace}/{claim.metadata.name}")
        if t is not None and (when is None or t < when):
            when = t
    return when


def pods_to_evict(
    pods: Mapping[str, Message],
    claims: Iterable[resource_pb2.ResourceClaim],
    slices: Iterable[resource_pb2.ResourceSlice],
    rules: Iterable[resource_pb2.DeviceTaintRule],
    added: TimeAdded,
) -> dict[str, tuple[core_pb2.Pod, float]]:
    """Every pod to evict and when ("namespace/name" -> (pod, time)): the pods the tainted
    allocated claims are reserved for (same uid), each at its pod_eviction_time."""
    by_key = {f"{c.metadata.namespace}/{c.metadata.name}": c for c in claims}
    allocated = [c for c in by_key.values() if c.status.allocation.devices.results]
    if not allocated:
        return {}
    devices = published_devices(slices)
    taint_rules = TaintRules(rules)
    times = {
        f"{c.metadata.namespace}/{c.metadata.name}": claim_eviction_time(
            c, devices, taint_rules, added
        )
        for c in allocated
    }
    out: dict[str, tuple[core_pb2.Pod, float]] = {}
    for c in allocated:
        if times[f"{c.metadata.namespace}/{c.metadata.name}"] is None:
            continue
        for ref in c.status.reserved_for:
            key = f"{c.metadata.namespace}/{ref.name}"
            if ref.api_group or ref.resource != "pods" or key in out:
                continue
            pod = narrow_optional(pods.get(key), core_pb2.Pod)
            if pod is None or pod.metadata.uid != ref.uid:
                continue
            when = pod_eviction_time(pod, by_key, times)
            if when is not None:
                out[key] = (pod, when)
    return out


# ------------------------------------------------------------------ rule status (no I/O)


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many.format(n)


def affected_pods(
    rule: resource_pb2.DeviceTaintRule,
    claims: Iterable[resource_pb2.ResourceClaim],
    pods: Mapping[str, Message],
) -> set[tuple[str, str]]:
    """(namespace, name) of the running pods the rule's taint, as NoExecute, evicts: those
    reserved in an allocated claim with a device the rule selects that does not tolerate
    the taint forever."""
    taint = resource_pb2.DeviceTaint()
    taint.CopyFrom(rule.spec.taint)
    taint.effect = NO_EXECUTE
    out: set[tuple[str, str]] = set()
    for c in claims:
        hit = any(
            rule_matches(rule, r.driver, r.pool, r.device)
            and not any(
                t.effect == NO_EXECUTE
                and tolerates(t, taint)
                and not t.HasField("toleration_seconds")
                for t in r.tolerations
            )
            for r in c.status.allocation.devices.results
        )
        if not hit:
            continue
        for ref in c.status.reserved_for:
            pod = narrow_optional(pods.get(f"{c.metadata.namespace}/{ref.name}"), core_pb2.Pod)
            if (
                pod is not None
                and pod.metadata.uid == ref.uid
                and pod.spec.node_name
                and not pod.metadata.deletion_timestamp
            ):
                out.add((c.metadata.namespace, ref.name))
    return out


def rule_condition(
    rule: resource_pb2.DeviceTaintRule,
    affected: set[tuple[str, str]],
    claims: list[resource_pb2.ResourceClaim],
    devices: Mapping[DeviceKey, resource_pb2.Device],
    evicted: int,
) -> tuple[str, str, str]:
    """(status, reason, message) of the rule's EvictionInProgress condition; `affected`:
    its affected_pods."""
    effect = rule.spec.taint.effect
    if effect == NO_EXECUTE:
        pending = affected
        namespaces = len({ns for ns, _ in pending})
        if pending:
            status, reason = "True", "PodsPendingEviction"
            message = _plural(len(pending), "1 pod needs", "{} pods need") + " to be evicted in "
            message += _plural(namespaces, "1 namespace.", "{} different namespaces.")
        else:
            status, reason, message = "False", "Completed" if evicted else "NotStarted", ""
    elif effect == "None":
        would = affected
        published = sum(1 for k in devices if rule_matches(rule, *k))
        allocated = sum(
            1
            for c in claims
            for r in c.status.allocation.devices.results
            if rule_matches(rule, r.driver, r.pool, r.device)
        )
        status, reason = "False", "NoEffect"
        message = _plural(published, "1 published device", "{} published devices") + " selected. "
        message += _plural(allocated, "1 allocated device", "{} allocated devices") + " selected. "
        message += _plural(len(would), "1 pod would", "{} pods would") + " be evicted in "
        message += _plural(len({ns for ns, _ in would}), "1 namespace ", "{} different namespaces ")
        message += (
            "if the effect was NoExecute. This information will not be updated again. "
            "Recreate the DeviceTaintRule to trigger an update."
        )
    else:
        status, reason = "False", "OtherEffect"
        message = "Eviction only happens for the NoExecute effect."
    if evicted:
        message += (" " if message else "") + _plural(evicted, "1 pod", "{} pods")
        message += " evicted since starting the controller."
    return status, reason, message


def set_rule_condition(
    rule: resource_pb2.DeviceTaintRule, status: str, reason: str, message: str, now: str
) -> bool:
    """Write the condition into `rule` (a copy); whether it changed. lastTransitionTime
    moves with any change, as upstream's."""
    want = (status, reason, message, rule.metadata.generation)
    for c in rule.status.conditions:
        if c.type == EVICTION_IN_PROGRESS:
            if (c.status, c.reason, c.message, c.observed_generation) == want:
                return False
            if rule.spec.taint.effect == "None" and c.observed_generation == want[3]:
                return False  # upstream: set once per generation for effect None
            c.status, c.reason, c.message, c.observed_generation = want
            c.last_transition_time = now
            return True
    rule.status.conditions.add(
        type=EVICTION_IN_PROGRESS,
        status=status,
        reason=reason,
        message=message,
        observed_generation=rule.metadata.generation,
        last_transition_time=now,
    )
    return True


# ------------------------------------------------------------------ the controller


class DeviceTaintEvictionController(EvictionLoop):
    """Deletes the pods whose claims' devices have NoExecute taints they do not tolerate."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: DeviceTaintEvictionConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or DeviceTaintEvictionConfig()
        self.clock = clock or RealClock()
        self.pods = informers.get(PODS)
        self.claims = informers.get(CLAIMS)
        self.slices = informers.get(SLICES)
        self.rules = informers.get(RULES)
        touched = Handlers(
            on_add=lambda _o: self._touch(),
            on_update=lambda _o, _n: self._touch(),
            on_delete=lambda _o: self._touch(),
        )
        for inf in (self.pods, self.claims, self.rules):
            inf.add_handlers(touched)
        #: The slices with a NoExecute device taint, by name: with none of them, no rule
        #: and nothing scheduled there is nothing to recompute (the common case).
        self.tainted_slices: set[str] = set()
        self.slices.add_handlers(
            Handlers(
                on_add=lambda o: self._slice_changed(o, o),
                on_update=self._slice_changed,
                on_delete=lambda o: self._slice_changed(o, None),
            )
        )
        self.queue = EvictionQueue()
        self.times = TimeAdded()
        #: pod key -> (uid, fire time) of what is scheduled.
        self.scheduled: dict[str, tuple[str, float]] = {}
        self.deleted_total = 0
        #: pod key -> uids of the NoExecute rules that evict it; rule uid -> pods evicted.
        self.pod_rules: dict[str, set[str]] = {}
        self.evicted: dict[str, int] = {}
        self._dirty = True
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._workers = asyncio.Semaphore(self.config.deletion_workers)

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """The pod updates that matter: scheduled, being deleted, claims recorded."""
        o, n = narrow(old, core_pb2.Pod), narrow(new, core_pb2.Pod)
        return (
            o.spec.node_name != n.spec.node_name
            or o.metadata.deletion_timestamp != n.metadata.deletion_timestamp
            or list(o.status.resource_claim_statuses) != list(n.status.resource_claim_statuses)
        )

    def _slice_changed(self, old: Message, new: Message | None) -> None:
        name = narrow(old, resource_pb2.ResourceSlice).metadata.name
        s = narrow_optional(new, resource_pb2.ResourceSlice)
        if s is not None and any(t.effect == NO_EXECUTE for d in s.spec.devices for t in d.taints):
            self.tainted_slices.add(name)
        else:
            self.tainted_slices.discard(name)
        self._touch()

    def _touch(self) -> None:
        self._dirty = True
        self._wake.set()

    # ----------------------------------------------------------- resync

    def desired(self, now: float) -> dict[str, tuple[core_pb2.Pod, float]]:
        """Every pod to evict and when, from the informers' stores."""
        self.times.now = now
        return pods_to_evict(
            self.pods.store,
            (narrow(c, resource_pb2.ResourceClaim) for c in self.claims.store.values()),
            (narrow(s, resource_pb2.ResourceSlice) for s in self.slices.store.values()),
            (narrow(r, resource_pb2.DeviceTaintRule) for r in self.rules.store.values()),
            self.times,
        )

    def resync(self, now: float) -> None:
        want = self.desired(now)
        for key in [k for k in self.scheduled if k not in want]:
            self._cancel_with_event(key)
        for key, (pod, when) in want.items():
            have = self.scheduled.get(key)
            if have == (pod.metadata.uid, when) or self.queue.is_running(key):
                continue
            if have is not None:
                self.queue.cancel(key)
            if self.queue.add(key, now, when):
                self.scheduled[key] = (pod.metadata.uid, when)
                log.debug("device taint eviction: pod %s due at %s", key, when)

    def sync_rule_statuses(self, now: float) -> list[resource_pb2.DeviceTaintRule]:
        """Each rule's EvictionInProgress condition: the rules (copies) whose condition
        changed, to be written; also which rules evict which pods (`pod_rules`)."""
        pods = self.pods.store
        claims = [
            c
            for c in (narrow(x, resource_pb2.ResourceClaim) for x in self.claims.store.values())
            if c.status.allocation.devices.results
        ]
        devices = published_devices(
            narrow(x, resource_pb2.ResourceSlice) for x in self.slices.store.values()
        )
        self.pod_rules = {}
        changed = []
        for x in self.rules.store.values():
            rule = narrow(x, resource_pb2.DeviceTaintRule)
            affected = (
                affected_pods(rule, claims, pods)
                if rule.spec.taint.effect in (NO_EXECUTE, "None")
                else set()
            )
            if rule.spec.taint.effect == NO_EXECUTE:
                for ns, name in affected:
                    self.pod_rules.setdefault(f"{ns}/{name}", set()).add(rule.metadata.uid)
            status, reason, message = rule_condition(
                rule, affected, claims, devices, self.evicted.get(rule.metadata.uid, 0)
            )
            copy = narrow(codec.clone(rule), resource_pb2.DeviceTaintRule)
            if set_rule_condition(copy, status, reason, message, rfc3339(now)):
                changed.append(copy)
        return changed

    async def _write_rule_status(self, rule: resource_pb2.DeviceTaintRule) -> None:
        try:
            await self.client.update_status(rule)
        except ApiError as e:  # a newer rule or a deleted one: the next resync decides again
            log.debug("device taint eviction: status of rule %s: %s", rule.metadata.name, e)

    def _cancel_with_event(self, key: str) -> None:
        self.scheduled.pop(key, None)
        if self.queue.cancel(key) and self.config.emit_events:
            namespace, name = key.split("/", 1)
            self._spawn(self._event(namespace, name, "Cancelling deletion"))

    # ----------------------------------------------------------- running

    def _refresh(self) -> None:
        if self._dirty:
            self._dirty = False
            if not (self.tainted_slices or self.rules.store or self.scheduled):
                return  # no NoExecute taint, no rule, nothing to cancel
            now = self.clock.now()
            self.resync(now)
            for rule in self.sync_rule_statuses(now):
                self._spawn(self._write_rule_status(rule))

    def _fire(self, key: str) -> Coroutine[object, object, None]:
        uid, _ = self.scheduled.pop(key, ("", 0.0))
        return self._evict(key, uid)

    async def _evict(self, key: str, uid: str) -> None:
        namespace, name = key.split("/", 1)
        # The rules evicting the pod, taken now: once it is deleted a resync may run (on the
        # informer's delete event) before this task goes on, and leaves it out of pod_rules.
        rules = set(self.pod_rules.get(key, ()))
        try:
            async with self._workers:
                if await delete_with_retries(
                    lambda: self._mark_and_delete(namespace, name, uid),
                    self.config,
                    self.clock,
                    key,
                ):
                    self.deleted_total += 1
                    for rule_uid in rules:
                        self.evicted[rule_uid] = self.evicted.get(rule_uid, 0) + 1
        except Exception:  # noqa: BLE001 - one pod's failure costs only that pod
            log.exception("device taint eviction: deleting pod %s failed", key)
        finally:
            self.queue.done(key)
            self._touch()  # a pod that survived (replaced, failed) is looked at again

    async def _mark_and_delete(self, namespace: str, name: str, uid: str) -> bool:
        """DisruptionTarget=True, then delete pinned to the uid; False when the pod is
        another one by now, or already being deleted (nothing to do)."""
        pod = narrow(await self.client.get(PODS, name, namespace), core_pb2.Pod)
        if (uid and pod.metadata.uid != uid) or pod.metadata.deletion_timestamp:
            return False
        log.info("device taint eviction: deleting pod %s/%s", namespace, name)
        if self.config.emit_events:
            await self._event(namespace, name, "Marking for deletion")
        marked = narrow(codec.clone(pod), core_pb2.Pod)
        if update_pod_condition(
            marked.status,
            DISRUPTION_TARGET,
            "True",
            self.clock.now(),
            reason=DISRUPTION_REASON,
            message=DISRUPTION_MESSAGE,
        ):
            await self.client.update_status(marked)
        await self.client.delete(PODS, name, namespace, uid=pod.metadata.uid)
        return True

    async def _event(self, namespace: str, name: str, message: str) -> None:
        ev = new_event(
            self.clock.now(),
            kind="Pod",
            name=name,
            namespace=namespace,
            reason=EVICTION_REASON,
            message=message,
            component=COMPONENT,
        )
        await write_event(self.client, ev)
