"""Node verbs: `kubera cordon|uncordon|taint` (kubectl's syntax), and `kubera drain`, which
takes a node out of service the way `kubectl drain` does.

Drain cordons the node (spec.unschedulable, as `kubera cordon`), chooses the pods on it
with kubectl's filters (`kubera.cli.drainplan`), deletes them, and waits on a watch until
they are gone. A refusal by any filter stops the drain before a pod is deleted; the node
stays cordoned.

Pods are evicted as kubectl drain evicts them: through the apiserver's pods/eviction
subresource (the Evict RPC), which refuses (429 TooManyRequests) a pod whose
PodDisruptionBudget allows no disruption now. Drain retries such a pod every 5 s until
--timeout, then fails naming the pods still there and the budgets that blocked them;
the node stays cordoned. `--disable-eviction` deletes the pods instead, budgets or not.
Deleting a bound pod only marks it Terminating; its kubelet removes it once the containers
have stopped, and that removal is what drain waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, cast

from google.protobuf.message import Message

from kubera.cli.common import command, err
from kubera.cli.drainplan import DrainOptions, aggregate, go_duration, plan_drain
from kubera.errors import CliError
from kubera.launch.context import apiserver_address
from protos.kubera.v1 import core_pb2
from services.api.machinery.duration import parse_duration
from services.api.machinery.errors import (
    ApiError,
    ConflictError,
    GoneError,
    NotFoundError,
    TooManyRequestsError,
    UnavailableError,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.listoptions import ListOptions
from services.client import Client, WatchEvent

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: kubectl waits forever by default (--timeout=0); without a kubelet to finish the pods that
#: would hang, so kubera gives up after 5 minutes unless told otherwise.
DEFAULT_TIMEOUT = "5m"
#: How long drain waits before asking again to evict a pod its budget protects (kubectl: 5 s).
EVICTION_RETRY = 5.0


def _unable_to_drain(node: str, errors: Sequence[str], *, pending: Sequence[Message]) -> int:
    """kubectl's failure report: pods still there, the per-node error, the nodes left, then
    each error on its own line (cmdutil.CheckErr of an aggregate); exit 1."""
    text = aggregate(errors)
    if pending:
        err(f'There are pending pods in node "{node}" when an error occurred: {text}')
        for pod in pending:
            err(f"pod/{object_meta(pod).name}")
    err(f'error: unable to drain node "{node}" due to error:{text}, continuing command...')
    err("There are pending nodes to be drained:")
    err(f" {node}")
    for line in dict.fromkeys(errors):
        err(line)
    return 1


# --------------------------------------------------------- cordon and taint


def _fail(e: ApiError) -> CliError:
    return CliError(f"Error from server ({e.reason}): {e.message}")


async def update_node(client: Client, name: str, change: Callable[[Message], str | None]) -> str:
    """Read-modify-write a node with optimistic concurrency; `change(node)` edits the node
    in place and returns a word for the output, or None when there is nothing to write."""
    for _ in range(10):
        node = await client.get(NODES, name)
        word = change(node)
        if word is None:
            return "unchanged"
        try:
            await client.update(node)
            return word
        except ConflictError:
            continue
    raise CliError(f'node "{name}" kept changing; try again')


async def _update_node(address: str, name: str, change: Callable[[Message], str | None]) -> str:
    async with Client(address) as c:
        return await update_node(c, name, change)


def set_unschedulable(flag: bool) -> Callable[[Message], str | None]:
    """The change `cordon` (True) and `uncordon` (False) make: "cordoned" / "uncordoned",
    None when the node already is that way."""

    def change(node: Message) -> str | None:
        spec: Any = node.spec  # type: ignore[attr-defined]
        if spec.unschedulable == flag:
            return None
        spec.unschedulable = flag
        return "cordoned" if flag else "uncordoned"

    return change


def cmd_cordon(args: argparse.Namespace) -> int:
    change = set_unschedulable(args.unschedulable)
    try:
        word = asyncio.run(_update_node(apiserver_address(args.server), args.node, change))
    except ApiError as e:
        raise _fail(e) from None
    if word == "unchanged":
        word = "already cordoned" if args.unschedulable else "already uncordoned"
    print(f"node/{args.node} {word}")
    return 0


def parse_taint(spec: str) -> tuple[str, str, str, bool]:
    """(key, value, effect, remove) from kubectl's forms; effect may be "" only for removal."""
    remove = spec.endswith("-")
    body = spec[:-1] if remove else spec
    key_value, _, effect = body.partition(":")
    key, _, value = key_value.partition("=")
    if not key:
        raise CliError(f'invalid taint spec: "{spec}": the key is empty')
    if remove:
        if effect and effect not in EFFECTS:
            raise CliError(
                f"invalid taint effect: {effect}, unsupported taint effect (supported: {', '.join(EFFECTS)})"
            )
        return key, value, effect, True
    if not effect:
        raise CliError(
            f'invalid taint spec: "{spec}": expected key[=value]:Effect, e.g. dedicated=accel:NoSchedule'
        )
    if effect not in EFFECTS:
        raise CliError(
            f"invalid taint effect: {effect}, unsupported taint effect (supported: {', '.join(EFFECTS)})"
        )
    return key, value, effect, False


def cmd_taint(args: argparse.Namespace) -> int:
    rest = list(args.args)
    if rest and rest[0] in ("node", "nodes", "no"):
        rest = rest[1:]
    if len(rest) < 2:
        raise CliError(
            "taint: expected NODE and at least one taint, e.g. `kubera taint node-a dedicated=accel:NoSchedule`"
        )
    name, specs = rest[0], [parse_taint(s) for s in rest[1:]]

    def change(node) -> str | None:
        taints = list(node.spec.taints)
        removed = added = False
        for key, value, effect, remove in specs:
            if remove:
                keep = [
                    t for t in taints if not (t.key == key and (not effect or t.effect == effect))
                ]
                if len(keep) == len(taints):
                    raise CliError(f'taint "{key}{":" + effect if effect else ""}" not found')
                taints, removed = keep, True
                continue
            same = [t for t in taints if t.key == key and t.effect == effect]
            if same and not args.overwrite:
                raise CliError(
                    f"node {name} already has {key} taint(s) with same effect(s) and --overwrite is false"
                )
            taints = [t for t in taints if not (t.key == key and t.effect == effect)]
            taints.append(core_pb2.Taint(key=key, value=value, effect=effect))
            added = True
        del node.spec.taints[:]
        node.spec.taints.extend(taints)
        return "tainted" if added else ("untainted" if removed else None)

    try:
        word = asyncio.run(_update_node(apiserver_address(args.server), name, change))
    except ApiError as e:
        raise _fail(e) from None
    print(f"node/{name} {'modified' if word == 'unchanged' else word}")
    return 0


# ------------------------------------------------------------------ drain


def _key(pod: Message) -> tuple[str, str]:
    meta: Any = object_meta(pod)
    return meta.namespace, meta.name


async def _delete_pods(
    client: Client, pods: Sequence[Message], *, grace: int | None
) -> tuple[list[Message], list[str]]:
    """--disable-eviction: delete each pod ("deleting pod ns/name"), budgets or not; the
    pods deleted (or already gone) and kubectl's error for each the apiserver refused."""
    deleted: list[Message] = []
    errors: list[str] = []
    for pod in pods:
        namespace, name = _key(pod)
        print(f"deleting pod {namespace}/{name}")
        try:
            await client.delete(PODS, name, namespace, grace_period_seconds=grace)
        except NotFoundError:
            pass  # gone already: the watch reports it
        except UnavailableError:
            raise
        except ApiError as e:
            errors.append(f'error when deleting pods/"{name}" -n "{namespace}": {e.message}')
            continue
        deleted.append(pod)
    return deleted, errors


async def _evict_pods(
    client: Client, pods: Sequence[Message], *, grace: int | None, timeout: float | None
) -> tuple[list[Message], list[str]]:
    """kubectl drain's evictPods: evict every pod ("evicting pod ns/name"), each retried
    every EVICTION_RETRY while its budget answers 429 (said on stderr), until `timeout`
    (None: no limit). The pods evicted (or already gone) and an error for each that was
    refused or still blocked at the timeout (naming the budget's last refusal)."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout

    async def evict(pod: Message) -> str | None:
        namespace, name = _key(pod)
        what = f'pods/"{name}" -n "{namespace}"'
        while True:
            try:
                await client.evict(name, namespace, grace_period_seconds=grace)
                return None
            except NotFoundError:
                return None  # gone already: the watch reports it
            except TooManyRequestsError as e:
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    return (
                        f"error when evicting {what}: global timeout reached: "
                        f"{go_duration(timeout or 0)} (last refusal: {e.message})"
                    )
                err(
                    f"error when evicting {what} (will retry after "
                    f"{go_duration(EVICTION_RETRY)}): {e.message}"
                )
                await asyncio.sleep(EVICTION_RETRY if left is None else min(EVICTION_RETRY, left))
            except UnavailableError:
                raise
            except ApiError as e:
                return f"error when evicting {what}: {e.message}"

    for pod in pods:
        print(f"evicting pod {'/'.join(_key(pod))}")
    results = await asyncio.gather(*(evict(p) for p in pods))
    evicted = [p for p, e in zip(pods, results, strict=True) if e is None]
    return evicted, [e for e in results if e is not None]


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
        if deleted or object_meta(obj).uid != object_meta(pod).uid:
            del pending[key]
            on_gone(pod)

    async def watch() -> None:
        rv = resource_version
        while pending:
            try:
                # Client.watch is an async generator (annotated as an AsyncIterator)
                stream = client.watch(
                    PODS, options=ListOptions(field_selector=selector, resource_version=rv)
                )
                async with contextlib.aclosing(cast(AsyncGenerator[WatchEvent], stream)) as events:
                    async for ev in events:
                        if ev.type != "BOOKMARK":
                            check(ev.object, ev.type == "DELETED")
                            if not pending:
                                return
                        rv = object_meta(ev.object).resource_version or rv
            except GoneError:
                # The history since `rv` is gone: what is not in a fresh list has gone.
                current, rv = await client.list(PODS, options=ListOptions(field_selector=selector))
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


@command
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

        pods, rv = await client.list(
            PODS, options=ListOptions(field_selector=f"spec.nodeName={node}")
        )
        pods.sort(key=_key)
        plan = plan_drain(pods, opts)
        if plan.errors:
            return _unable_to_drain(node, plan.errors, pending=[])
        if plan.warnings:
            err(f"Warning: {plan.warnings}")
        if dry_run:
            for pod in plan.pods:
                print(f"evicting pod {'/'.join(_key(pod))} (dry run)")
            print(f"node/{node} drained (dry run)")
            return 0

        started = asyncio.get_running_loop().time()
        if args.disable_eviction:
            deleted, errors = await _delete_pods(client, plan.pods, grace=grace)
        else:
            deleted, errors = await _evict_pods(
                client, plan.pods, grace=grace, timeout=args.timeout or None
            )
        spent = asyncio.get_running_loop().time() - started
        verb = "deleted" if args.disable_eviction else "evicted"
        remaining = await wait_until_gone(
            client,
            deleted,
            node=node,
            resource_version=rv,
            timeout=max(args.timeout - spent, 0.001) if args.timeout else None,
            on_gone=lambda pod: print(f"pod/{object_meta(pod).name} {verb}"),
        )
        if remaining:
            # kubectl's wait checks once before its deadline counts: a pod that went while
            # other pods' evictions were retried is gone, not pending.
            now = {
                _key(p): object_meta(p).uid
                for p in (
                    await client.list(
                        PODS, options=ListOptions(field_selector=f"spec.nodeName={node}")
                    )
                )[0]
            }
            for pod in [p for p in remaining if now.get(_key(p)) != object_meta(p).uid]:
                print(f"pod/{object_meta(pod).name} {verb}")
                remaining.remove(pod)
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

Pods are evicted through the Eviction API, which honours PodDisruptionBudgets: a pod whose
budget allows no disruption now is asked again every 5s until --timeout, then drain fails
naming the pods left and the budgets blocking them (the node stays cordoned).
--disable-eviction deletes the pods instead, bypassing budgets. Evicted pods turn
Terminating and are removed by their kubelet after their grace period.

When the node is back in service, `kubera uncordon NODE` makes it schedulable again."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for verb, flag in (("cordon", True), ("uncordon", False)):
        p = sub.add_parser(
            verb, help="mark a node unschedulable" if flag else "mark a node schedulable"
        )
        p.add_argument("node")
        p.set_defaults(func=cmd_cordon, unschedulable=flag)
    t = sub.add_parser(
        "taint", help="add or remove node taints: key=value:Effect, key:Effect, key-, key:Effect-"
    )
    t.add_argument("args", nargs="+", metavar="[nodes] NODE TAINT")
    t.add_argument(
        "--overwrite", action="store_true", help="replace a taint with the same key and effect"
    )
    t.set_defaults(func=cmd_taint)
    p = sub.add_parser(
        "drain",
        help="cordon a node and evict its pods (honouring PodDisruptionBudgets)",
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
        "--disable-eviction",
        action="store_true",
        help="delete the pods instead of evicting them: PodDisruptionBudgets are bypassed",
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
