"""`kubera check`: replay etcd's history of the run and prove it safe (no double bind, no
overcommit, every bind by the leader of record, no pod lost, no device given twice). Exit 0 when the run is
safe, 1 when it is not; the checks themselves are services/chaos/checker.py."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from kubera.errors import CliError
from kubera.launch.context import ContextError, load_context
from services.api.machinery.duration import parse_duration
from services.chaos import HistoryCompactedError, Verdict, check_history, wait_settled
from services.storage import StorageUnavailableError
from services.storage.etcd import EtcdStorage, parse_endpoint


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="replay etcd's history of the run and prove it safe: each pod bound at most "
        "once, no node overcommitted, every bind by the leader of record, no pod lost, "
        "no DRA device held by two claims at once",
    )
    p.add_argument(
        "--settle",
        default="30s",
        metavar="DURATION",
        help="first wait up to this long for every pod to be bound or reported "
        "unschedulable (default 30s; 0s judges the state as it is)",
    )
    p.add_argument(
        "--allow-unfenced",
        action="store_true",
        help="accept binds without a fencing token or allocation record",
    )
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.add_argument("--etcd", metavar="URL", help="etcd endpoint (default: the cluster's)")
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    try:
        settle = parse_duration(args.settle)
    except ValueError as e:
        raise CliError(f"--settle: {e}") from None
    if settle < 0:
        raise CliError(f"--settle must not be negative, got {args.settle}")
    if args.etcd:
        endpoint = args.etcd
    else:
        try:
            endpoint = load_context().etcd
        except ContextError as e:
            raise CliError(f"{e} (or pass --etcd URL)") from None
    try:
        parse_endpoint(endpoint)
    except ValueError as e:
        raise CliError(str(e)) from None
    verdict, unsettled = asyncio.run(
        _check(endpoint, settle, allow_unfenced=args.allow_unfenced, quiet=args.json)
    )
    if args.json:
        doc = verdict.to_dict()
        doc["settle"] = {"seconds": settle, "unsettled_pods": unsettled}
        print(json.dumps(doc, indent=2))
    else:
        for line in verdict.lines():
            print(line)
    return 0 if verdict.ok else 1


async def _check(
    endpoint: str, settle: float, *, allow_unfenced: bool, quiet: bool
) -> tuple[Verdict, int]:
    storage = EtcdStorage(endpoint)
    try:
        pending = await wait_settled(storage, settle)
        if pending and settle > 0 and not quiet:
            print(
                f"settle: {len(pending)} pods still neither bound nor reported unschedulable "
                f"after {settle:g}s",
                file=sys.stderr,
            )
        return await check_history(storage, allow_unfenced=allow_unfenced), len(pending)
    except HistoryCompactedError as e:
        raise CliError(str(e)) from None
    except (StorageUnavailableError, OSError) as e:
        raise CliError(f"cannot read etcd at {endpoint}: {e}") from None
    finally:
        await storage.close()
