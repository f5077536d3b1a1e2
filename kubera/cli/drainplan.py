"""Which pods `kubera drain` deletes, decided without I/O: kubectl's filters
(pkg/drain/filters.go, in its order; the first filter that does not let a pod through
decides for it), the plan they make, and kubectl's output words (Go durations, aggregated
errors). `kubera.cli.nodes` runs the drain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from google.protobuf.message import Message

from kubera.printing.tables import is_terminated
from services.api.machinery.kubeobject import object_meta

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

# kubectl's words (pkg/drain/filters.go); errors read "cannot delete <fatal>: ns/a, ns/b".
DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"


# ------------------------------------------------------------------ filters


@dataclass(frozen=True)
class DrainOptions:
    """What the user allowed: the flags that turn a filter's refusal into a warning."""

    #: Delete pods that declare no controller (nothing will recreate them).
    force: bool = False
    #: Leave DaemonSet-managed pods where they are instead of refusing to drain.
    ignore_daemonsets: bool = False
    #: Delete pods with emptyDir volumes (their data goes with them).
    delete_emptydir_data: bool = False


class Verdict(StrEnum):
    """kubectl's PodDeleteStatus reasons."""

    OKAY = "Okay"
    SKIP = "Skip"
    WARNING = "Warning"
    ERROR = "Error"


@dataclass(frozen=True)
class PodDecision:
    delete: bool
    verdict: Verdict
    message: str = ""


_OKAY = PodDecision(True, Verdict.OKAY)


def controller_of(pod: Message) -> Any | None:
    """The ownerReference with controller=true (metav1.GetControllerOf), or None."""
    for ref in object_meta(pod).owner_references:
        if ref.HasField("controller") and ref.controller:
            return ref
    return None


def _daemonset_filter(pod: Any, opts: DrainOptions) -> PodDecision:
    # kubectl also looks the DaemonSet up and lets --force delete orphans; kubera has no
    # DaemonSets to look up, so a DaemonSet owner is taken to exist.
    ref = controller_of(pod)
    if ref is None or ref.kind != "DaemonSet" or is_terminated(pod):
        return _OKAY
    if not opts.ignore_daemonsets:
        return PodDecision(False, Verdict.ERROR, DAEMONSET_FATAL)
    return PodDecision(False, Verdict.WARNING, DAEMONSET_WARNING)


def _mirror_filter(pod: Any, opts: DrainOptions) -> PodDecision:
    if MIRROR_ANNOTATION in pod.metadata.annotations:
        return PodDecision(False, Verdict.SKIP)
    return _OKAY


def has_local_storage(pod: Any) -> bool:
    return any("emptyDir" in volume for volume in pod.spec.volumes)


def _local_storage_filter(pod: Any, opts: DrainOptions) -> PodDecision:
    if not has_local_storage(pod) or is_terminated(pod):
        return _OKAY
    if not opts.delete_emptydir_data:
        return PodDecision(False, Verdict.ERROR, LOCAL_STORAGE_FATAL)
    return PodDecision(True, Verdict.WARNING, LOCAL_STORAGE_WARNING)


def _unreplicated_filter(pod: Any, opts: DrainOptions) -> PodDecision:
    if is_terminated(pod) or controller_of(pod) is not None:
        return _OKAY
    if opts.force:
        return PodDecision(True, Verdict.WARNING, UNMANAGED_WARNING)
    return PodDecision(False, Verdict.ERROR, UNMANAGED_FATAL)


#: kubectl's order; the first filter that does not let a pod through decides for it.
FILTERS: tuple[Callable[[Any, DrainOptions], PodDecision], ...] = (
    _daemonset_filter,
    _mirror_filter,
    _local_storage_filter,
    _unreplicated_filter,
)


@dataclass(frozen=True)
class PodOutcome:
    """What drain does with one pod: delete it or not, why not, and what to warn about."""

    delete: bool
    error: str = ""
    warnings: tuple[str, ...] = ()


def decide(pod: Message, opts: DrainOptions) -> PodOutcome:
    """The filters in order. Unlike kubectl, whose later filters overwrite an earlier
    warning (a TODO in filters.go), every warning is kept: "deleting Pods with local
    storage" is worth seeing even for a pod that has a controller."""
    warnings: list[str] = []
    for check in FILTERS:
        d = check(pod, opts)
        if d.verdict == Verdict.WARNING:
            warnings.append(d.message)
        if not d.delete:
            error = d.message if d.verdict == Verdict.ERROR else ""
            return PodOutcome(False, error, tuple(warnings))
    return PodOutcome(True, "", tuple(warnings))


@dataclass(frozen=True)
class DrainPlan:
    """The pods to delete, kubectl's Warning text, and its refusals (empty: go ahead)."""

    pods: tuple[Message, ...]
    warnings: str
    errors: tuple[str, ...]


def _by_message(items: Iterable[tuple[str, Message]]) -> list[tuple[str, str]]:
    """(message, "ns/a, ns/b") per message, in order of first appearance."""
    grouped: dict[str, list[str]] = {}
    for message, pod in items:
        meta: Any = object_meta(pod)
        grouped.setdefault(message, []).append(f"{meta.namespace}/{meta.name}")
    return [(m, ", ".join(names)) for m, names in grouped.items()]


def plan_drain(pods: Sequence[Message], opts: DrainOptions) -> DrainPlan:
    outcomes = [(pod, decide(pod, opts)) for pod in pods]
    warnings = _by_message((w, p) for p, o in outcomes for w in o.warnings)
    errors = _by_message((o.error, p) for p, o in outcomes if o.error)
    return DrainPlan(
        pods=tuple(p for p, o in outcomes if o.delete),
        warnings="; ".join(f"{m}: {names}" for m, names in warnings),
        errors=tuple(f"cannot delete {m}: {names}" for m, names in errors),
    )


# ----------------------------------------------------------------- output


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String: `300ms`, `1.5s`, `1m30s`, `5m0s`, `1h0m0s`."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-" if ns < 0 else ""), abs(ns)

    def frac(value: int, unit: int) -> str:
        whole, rest = divmod(value, unit)
        digits = str(rest).rjust(len(str(unit)) - 1, "0").rstrip("0")
        return f"{whole}.{digits}" if digits else str(whole)

    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return f"{sign}{frac(ns, size)}{unit}"
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{frac(rest, 10**9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def aggregate(errors: Sequence[str]) -> str:
    """utilerrors.Aggregate's text: one message as it is, several as `[a, b]` (deduplicated)."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]"
