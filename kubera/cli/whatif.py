"""`kubera whatif`: where would the scheduler put these pods, and whom would it preempt?
Asked of the scheduler leader, on a fork of its state; nothing is written
(services/scheduler/whatif; the same request as POST /apis/kubera.io/v1/whatif).

    kubera whatif -f PODS.yaml [--preempt] [-o table|json]
    kubera whatif -f a.yaml --delete-node N -f b.yaml --keep     steps in order; a session
    kubera whatif --session ID --rollback-to 1 -f c.yaml          continue it, back to step 1
    kubera whatif --session ID --close

Each -f is one Schedule step (its Pods, with the PodGroups / Workloads they name);
--delete-node, --delete-pod and --add-node are steps too, taken in command-line order.
Objects go through the apiserver's dry-run create first, as a real create would take them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kubera.cli import manifests
from kubera.cli.common import (
    add_namespace_arg,
    client_for,
    command,
    resolve_namespace,
)
from kubera.errors import CliError
from kubera.launch.context import load_context
from kubera.launch.credentials import admin_channel
from protos.kubera.v1 import core_pb2
from protos.kubera.v1 import scheduler_pb2 as pb
from services.scheduler.whatif import remote
from services.storage.etcd import EtcdStorage

#: Reasons longer than this are cut in the table (-o json has them whole).
REASON_WIDTH = 100


class _Step(argparse.Action):
    """Appends (op, value) to `steps`, so steps keep their command-line order."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        steps = list(getattr(namespace, "steps", None) or [])
        steps.append((self.const, values))
        namespace.steps = steps


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "whatif",
        help="where the scheduler would place pods (and whom it would preempt), on a fork "
        "of the leader's state; nothing is written",
    )
    p.add_argument(
        "-f",
        "--filename",
        action=_Step,
        const="schedule",
        dest="steps",
        metavar="FILE",
        help="a schedule step: the Pods of a manifest (- for stdin), with the PodGroups and "
        "Workloads they name (repeatable: one step each)",
    )
    p.add_argument("--delete-node", action=_Step, const="delete-node", dest="steps", metavar="NODE")
    p.add_argument(
        "--delete-pod",
        action=_Step,
        const="delete-pod",
        dest="steps",
        metavar="[NAMESPACE/]POD",
        help="a step: the pod goes",
    )
    p.add_argument(
        "--add-node",
        action=_Step,
        const="add-node",
        dest="steps",
        metavar="FILE",
        help="a step: the Node of a manifest joins",
    )
    add_namespace_arg(p)
    p.add_argument(
        "--preempt",
        action="store_true",
        help="run preemption for pods that fit nowhere and show its victims",
    )
    p.add_argument("--session", default="", help="continue this session")
    p.add_argument("--keep", action="store_true", help="keep the fork as a session")
    p.add_argument(
        "--rollback-to",
        type=int,
        metavar="STEP",
        help="back to this step of the session first (0: the fork as taken)",
    )
    p.add_argument("--close", action="store_true", help="end the session after answering")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_whatif, steps=[])


def _objects(path: str, namespace: str | None) -> list[Any]:
    found = manifests.decode_all(manifests.load([path]), "strict")
    for m in found:
        resolve_namespace(m, namespace)
    return [m.obj for m in found]


def build_request(args: argparse.Namespace) -> pb.WhatIfRequest:
    req = pb.WhatIfRequest(session=args.session, keep=args.keep, close=args.close)
    if args.rollback_to is not None:
        req.rollback_to = args.rollback_to
    for op, value in args.steps:
        if op == "schedule":
            req.steps.append(
                remote.schedule_step(_objects(value, args.namespace), preempt=args.preempt)
            )
        elif op == "delete-node":
            req.steps.add(delete_node=value)
        elif op == "delete-pod":
            ns, _, name = value.rpartition("/")
            req.steps.add(
                delete_pod=pb.WhatIfPodRef(namespace=ns or args.namespace or "default", name=name)
            )
        else:
            nodes = [o for o in _objects(value, None) if isinstance(o, core_pb2.Node)]
            if len(nodes) != 1:
                raise CliError(f"{value}: expected one Node")
            req.steps.add(add_node=nodes[0])
    if not req.steps and not req.HasField("rollback_to") and not req.close:
        raise CliError("nothing to do: give -f FILE (or another step), --rollback-to or --close")
    return req


def render(resp: pb.WhatIfResponse) -> str:
    """Per step, a table: POD, NODE or REASONS, SCORE, VICTIMS."""
    out: list[str] = []
    for step in resp.steps:
        out.append(f"# step {step.step}: {step.op} {step.target}".rstrip())
        if step.message:
            out.append(f"# {step.message}")
        rows = [["POD", "NODE/REASONS", "SCORE", "VICTIMS"]]
        for r in step.pods:
            if r.node:
                where = r.node
            else:
                reasons = "; ".join(r.reasons) or r.result
                where = f"({r.result}) {reasons}" if r.result != "deleted" else "(deleted)"
                if len(where) > REASON_WIDTH:
                    where = where[: REASON_WIDTH - 1] + "…"
            score = str(r.score) if r.HasField("score") else "-"
            rows.append([r.pod, where, score, ",".join(r.victims) or "-"])
        if len(rows) > 1:
            widths = [max(len(row[i]) for row in rows) for i in range(4)]
            out.extend(
                "   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                for row in rows
            )
    if resp.session:
        out.append(f"session {resp.session} (continue with --session {resp.session})")
    return "\n".join(out)


@command
async def cmd_whatif(args: argparse.Namespace) -> int:
    request = build_request(args)
    ctx = load_context()
    async with client_for(args) as client:
        admitted = await remote.admit(request, client.create)
    storage = EtcdStorage(ctx.etcd, timeout=5)
    try:
        await storage.connect()
        resp = await remote.call_leader(storage, admitted, admin_channel)
    except remote.NoLeaderError as e:
        raise CliError(str(e)) from None
    except Exception as e:  # noqa: BLE001 - the leader's refusal, one line
        details = getattr(e, "details", None)
        if callable(details):
            raise CliError(f"scheduler: {details()}") from None
        raise
    finally:
        await storage.close()
    if args.output == "json":
        print(json.dumps(remote.response_to_json(resp), indent=2))
    else:
        print(render(resp))
    return 0
