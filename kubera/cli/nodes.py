"""`kubera drain`: take a node out of service the way `kubectl drain` does.

Cordon the node (spec.unschedulable, as `kubera cordon`), choose the pods on it with
kubectl's filters (pkg/drain/filters.go, in its order, the first filter that does not let a
pod through deciding for it), delete them, and wait on a watch until they are gone. A
refusal by any filter stops the drain before a pod is deleted; the node stays cordoned.

Pods are deleted, not evicted: kubera has no Eviction API yet, so PodDisruptionBudgets are
not consulted (that comes later). The output still says "evicting pod" / "evicted", as
kubectl's does against a server with eviction, so what reads kubectl's output reads ours.
Deleting a bound pod only marks it Terminating; its kubelet removes it once the containers
have stopped, and that removal is what drain waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from google.protobuf.message import Message

from kubera.cli.objects import _command
from kubera.cli.scheduling import NODES, set_unschedulable, update_node
from kubera.errors import CliError
from kubera.launch.context import apiserver_address
from kubera.printing.tables import is_terminated
from services.api.duration import parse_duration
from services.api.errors import ApiError, GoneError, NotFoundError, UnavailableError
from services.api.kinds import BY_KIND
from services.client import Client

PODS = BY_KIND["Pod"]
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
#: kubectl waits forever by default (--timeout=0); without a kubelet to finish the pods that
#: would hang, so kubera gives up after 5 minutes unless told otherwise.
DEFAULT_TIMEOUT = "5m"

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
    for ref in pod.metadata.owner_references:  # type: ignore[attr-defined]
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
        meta: Any = pod.metadata  # type: ignore[attr-defined]
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


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def _unable_to_drain(node: str, errors: Sequence[str], *, pending: Sequence[Message]) -> int:
    """kubectl's failure report: pods still there, the per-node error, the nodes left, then
    each error on its own line (cmdutil.CheckErr of an aggregate); exit 1."""
    text = aggregate(errors)
    if pending:
        _err(f'There are pending pods in node "{node}" when an error occurred: {text}')
        for pod in pending:
            _err(f"pod/{pod.metadata.name}")  # type: ignore[attr-defined]
    _err(f'error: unable to drain node "{node}" due to error:{text}, continuing command...')
    _err("There are pending nodes to be drained:")
    _err(f" {node}")
    for line in dict.fromkeys(errors):
        _err(line)
    return 1


# ------------------------------------------------------------------ drain


def _key(pod: Message) -> tuple[str, str]:
    meta: Any = pod.metadata  # type: ignore[attr-defined]
    return meta.namespace, meta.name


async def _delete_pods(
    client: Client, pods: Sequence[Message], *, grace: int | None
) -> tuple[list[Message], list[str]]:
    """Delete each pod ("evicting pod ns/name"); the pods deleted (or already gone) and
    kubectl's error for each that the apiserver refused."""
    deleted: list[Message] = []
    errors: list[str] = []
    for pod in pods:
        namespace, name = _key(pod)
        print(f"evicting pod {namespace}/{name}")
        try:
            await client.delete(PODS, name, namespace, grace_period_seconds=grace)
        except NotFoundError:
            pass  # gone already: the watch reports it
        except UnavailableError:
            raise
        except ApiError as e:
            errors.append(f'error when evicting pods/"{name}" -n "{namespace}": {e.message}')
            continue
        deleted.append(pod)
    return deleted, errors


async def wait_until_gone(
    client: Client,
    pods: Sequence[Message],
    *,
    node: str,
    resource_version: str,
    timeout: float | None,
    on_gone: Callable[[Message], None],
) -> list[Message]:
    """Watch the node's pods from `resource_version` (taken before the deletions, so none is
    missed) until each of `pods` is deleted or replaced by a pod of another UID; the pods
    still there when `timeout` (None: no limit) runs out, in their original order."""
    pending = {_key(p): p for p in pods}
    selector = f"spec.nodeName={node}"

    def check(obj: Message, deleted: bool) -> None:
        key = _key(obj)
        pod = pending.get(key)
        if pod is None:
            return
        if deleted or obj.metadata.uid != pod.metadata.uid:  # type: ignore[attr-defined]
            del pending[key]
            on_gone(pod)

    async def watch() -> None:
        rv = resource_version
        while pending:
            try:
                async with contextlib.aclosing(
                    client.watch(PODS, field_selector=selector, resource_version=rv)
                ) as events:
                    async for ev in events:
                        if ev.type != "BOOKMARK":
                            check(ev.object, ev.type == "DELETED")
                            if not pending:
                                return
                        rv = ev.object.metadata.resource_version or rv  # type: ignore[attr-defined]
            except GoneError:
                # The history since `rv` is gone: what is not in a fresh list has gone.
                current, rv = await client.list(PODS, field_selector=selector)
                present = {_key(p): p for p in current}
                for key, pod in list(pending.items()):
                    now = present.get(key)
                    if now is None:
                        check(pod, True)
                    else:
                        check(now, False)

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await watch()
    return [p for p in pods if _key(p) in pending]


@_command
async def cmd_drain(args: argparse.Namespace) -> int:
    node, dry_run = _node_and_dry_run(args)
    opts = DrainOptions(
        force=args.force,
        ignore_daemonsets=args.ignore_daemonsets,
        delete_emptydir_data=args.delete_emptydir_data,
    )
    grace = args.grace_period if args.grace_period >= 0 else None
    suffix = " (dry run)" if dry_run else ""
    async with Client(apiserver_address(args.server)) as client:
        cordon = set_unschedulable(True)
        if dry_run:
            word = cordon(await client.get(NODES, node)) or "unchanged"
        else:
            word = await update_node(client, node, cordon)
        print(f"node/{node} {'already cordoned' if word == 'unchanged' else word}{suffix}")

        pods, rv = await client.list(PODS, field_selector=f"spec.nodeName={node}")
        pods.sort(key=_key)
        plan = plan_drain(pods, opts)
        if plan.errors:
            return _unable_to_drain(node, plan.errors, pending=[])
        if plan.warnings:
            _err(f"Warning: {plan.warnings}")
        if dry_run:
            for pod in plan.pods:
                print(f"evicting pod {'/'.join(_key(pod))} (dry run)")
            print(f"node/{node} drained (dry run)")
            return 0

        deleted, errors = await _delete_pods(client, plan.pods, grace=grace)
        remaining = await wait_until_gone(
            client,
            deleted,
            node=node,
            resource_version=rv,
            timeout=args.timeout or None,
            on_gone=lambda pod: print(f"pod/{pod.metadata.name} evicted"),  # type: ignore[attr-defined]
        )
    for pod in remaining:
        namespace, name = _key(pod)
        errors.append(
            f'error when waiting for pod "{name}" in namespace "{namespace}" to terminate: '
            f"global timeout reached: {go_duration(args.timeout)}"
        )
    if errors:
        gone = {_key(p) for p in deleted} - {_key(p) for p in remaining}
        pending = [p for p in plan.pods if _key(p) not in gone]
        return _unable_to_drain(node, errors, pending=pending)
    print(f"node/{node} drained")
    return 0


# --------------------------------------------------------------- arguments

_DRY_RUN_MODES = ("none", "client", "server")


def _node_and_dry_run(args: argparse.Namespace) -> tuple[str, bool]:
    """kubectl's `--dry-run` takes an optional value, so `drain --dry-run NODE` means a
    client dry run of NODE: a value that is no mode is the node when none was given."""
    mode, node = args.dry_run, args.node
    if mode not in _DRY_RUN_MODES and node is None:
        mode, node = "client", mode
    if node is None:
        raise CliError("USAGE: drain NODE [flags] (see `kubera drain --help`)")
    if mode not in _DRY_RUN_MODES:
        raise CliError(f'Invalid dry-run value ({mode}). Must be "none", "server", or "client".')
    if mode == "server":
        raise CliError("--dry-run=server is not supported by kubera drain yet; use --dry-run")
    return node, mode == "client"


def _timeout(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'time: invalid duration "{text}"') from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f'"{text}": the timeout cannot be negative')
    return seconds


DRAIN_DESCRIPTION = """\
Drain a node in preparation for maintenance.

The node is cordoned (marked unschedulable) so no new pods arrive, then the pods on it
are deleted and drain waits until they are gone. As kubectl does, drain refuses (and
deletes nothing) when the node has pods that declare no controller (--force deletes them
anyway), pods with emptyDir volumes (--delete-emptydir-data) or DaemonSet-managed pods
(--ignore-daemonsets leaves them in place). Mirror (static) pods are skipped.

Pods are deleted, not evicted: kubera has no Eviction API yet, so PodDisruptionBudgets
are not consulted; eviction that respects them comes later. Deleted pods turn Terminating
and are removed by their kubelet after their grace period.

When the node is back in service, `kubera uncordon NODE` makes it schedulable again."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "drain",
        help="cordon a node and delete its pods (no PDBs yet)",
        description=DRAIN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("node", nargs="?", metavar="NODE", help="the node to drain")
    p.add_argument(
        "--grace-period",
        type=int,
        default=-1,
        metavar="SECONDS",
        help="seconds each pod gets to terminate; negative: the pod's own "
        "terminationGracePeriodSeconds (default -1)",
    )
    p.add_argument(
        "--timeout",
        type=_timeout,
        default=_timeout(DEFAULT_TIMEOUT),
        metavar="DURATION",
        help=f"how long to wait for the pods to go, e.g. 90s, 10m; 0 waits forever "
        f"(default {DEFAULT_TIMEOUT}; kubectl's default is 0)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="also delete pods that declare no controller (nothing recreates them)",
    )
    p.add_argument(
        "--ignore-daemonsets",
        action="store_true",
        help="drain even with DaemonSet-managed pods on the node (they are left in place)",
    )
    p.add_argument(
        "--delete-emptydir-data",
        action="store_true",
        help="also delete pods with emptyDir volumes (their data is lost)",
    )
    p.add_argument(
        "--dry-run",
        nargs="?",
        const="client",
        default="none",
        metavar="MODE",
        help="only print what would be done: none (default) or client (bare --dry-run)",
    )
    p.set_defaults(func=cmd_drain)
