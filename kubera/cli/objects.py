"""`kubera apply|get|delete|describe`: kubectl's object verbs against the kubera apiserver.

They behave like kubectl where users will notice: `apply` creates or updates with
kubectl's three-way merge of the last applied manifest (the `last-applied-configuration`
annotation), the new manifest and the live object: what the manifest says is set on the
live object (so drift is undone), what an earlier manifest had and this one dropped is
removed, and everything else (fields the server set, such as a pod's priority or default
tolerations, the status, fields others set) survives; it reports created / configured /
unchanged. `get` prints kubectl's tables and Kubernetes-shaped JSON/YAML. Refusals from
the apiserver come out as `Error from server (Reason): ...` lines; problems found here
before sending use kubectl's client-side wording (`error: error validating "x.yaml":
...`). An apply is all or nothing for what can be known beforehand: every document is
decoded and validated client-side, then checked by the apiserver in a dry run, before
the first object is written.

`apply` (the verb and its three-way merge) is `kubera.cli.apply`; the helpers the verbs
share (error lines, the client, manifest loading, flags) are `kubera.cli.common`; this
module registers and runs get, delete and describe.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from kubera.cli import components
from kubera.cli.common import (
    add_file_args,
    add_namespace_arg,
    client_for,
    command,
    err,
    load_manifests,
    lookup_kind,
    meta_of,
    server_error,
)
from kubera.errors import CliError
from kubera.launch.context import cluster_clock
from kubera.printing import describe, describe_resources, describe_storage, output, tables
from protos.kubera.v1 import core_pb2
from services.api.dra.claims import ClaimNotCreatedError, claim_name
from services.api.machinery import kinds, labels
from services.api.machinery.errors import (
    ApiError,
    NotFoundError,
    UnavailableError,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import narrow
from services.api.machinery.listoptions import ListOptions
from services.client import Client

# --------------------------------------------------------------------- get


@dataclass(frozen=True)
class _Request:
    """What `get`/`describe`/`delete` positional arguments name: kinds and, per kind, names."""

    kinds: tuple[Kind, ...]
    names: dict[str, list[str]]  # kind name -> object names (empty: all)
    #: `get KIND NAME` or `get KIND/NAME` of exactly one object.
    single: bool


def parse_resources(args: Sequence[str]) -> _Request:
    """`KIND[,KIND] [NAME ...]` or `KIND/NAME ...`, as kubectl's resource builder reads them."""
    if not args:
        raise CliError(
            'You must specify the type of resource to get. Use "kubera get pods", '
            '"kubera get nodes", ...'
        )
    if "/" in args[0]:
        order: list[Kind] = []
        names: dict[str, list[str]] = {}
        for arg in args:
            kind_name, sep, name = arg.partition("/")
            if not sep or not name or not kind_name:
                raise CliError(
                    f'arguments in resource/name form must have a single resource and name: "{arg}"'
                )
            kind = lookup_kind(kind_name)
            if kind.name not in names:
                order.append(kind)
                names[kind.name] = []
            names[kind.name].append(name)
        return _Request(tuple(order), names, single=len(args) == 1)
    kind_list: list[Kind] = []
    for part in args[0].split(","):
        if not part:
            continue
        kind = lookup_kind(part)
        if kind not in kind_list:
            kind_list.append(kind)
    if not kind_list:
        raise CliError(f'the server doesn\'t have a resource type "{args[0]}"')
    for name in args[1:]:
        if "/" in name:
            raise CliError(
                "there is no need to specify a resource type as a separate argument when "
                "passing arguments in resource/name form (e.g. 'kubera get resource/<name>' "
                "instead of 'kubera get resource resource/<name>')"
            )
    rest = list(args[1:])
    return _Request(
        tuple(kind_list),
        {k.kind: list(rest) for k in kind_list},
        single=len(kind_list) == 1 and len(rest) == 1,
    )


def _label_selector(args: argparse.Namespace) -> str:
    """-l, parsed here first so a typo is one clear error before any request."""
    text = getattr(args, "selector", None) or ""
    if text:
        try:
            labels.Selector.parse(text)
        except labels.SelectorError as e:
            raise CliError(str(e)) from None
    return text


def _namespace_arg(args: argparse.Namespace) -> str:
    if getattr(args, "all_namespaces", False):
        return ""
    return args.namespace or "default"


async def _fetch(
    client: Client,
    req: _Request,
    namespace: str,
    *,
    label_selector: str = "",
    field_selector: str = "",
) -> tuple[list[tuple[Kind, list[Message]]], list[str]]:
    """The objects per kind, and `Error from server` lines for names that are not there."""
    groups: list[tuple[Kind, list[Message]]] = []
    errors: list[str] = []
    for kind in req.kinds:
        ns = namespace if kind.namespaced else ""
        names = req.names.get(kind.name) or []
        objs: list[Message] = []
        if names:
            for name in names:
                try:
                    objs.append(await client.get(kind, name, ns or "default"))
                except NotFoundError as e:
                    errors.append(server_error(e))
        else:
            objs, _ = await client.list(
                kind,
                namespace=ns,
                options=ListOptions(label_selector=label_selector, field_selector=field_selector),
            )
            objs.sort(key=lambda o: (meta_of(o).namespace, meta_of(o).name))
        groups.append((kind, objs))
    return groups, errors


def get_or_components(args: argparse.Namespace) -> int:
    """`kubera get components` is `kubera components`: kubera's own processes, not objects."""
    if args.resources[0] in ("components", "component"):
        return components.cmd_components(args)
    return cmd_get(args)


@command
async def cmd_get(args: argparse.Namespace) -> int:
    req = parse_resources(args.resources)
    namespace = _namespace_arg(args)
    async with client_for(args) as client:
        groups, errors = await _fetch(
            client,
            req,
            namespace,
            label_selector=_label_selector(args),
            field_selector=args.field_selector or "",
        )
        fmt = args.output or ""
        usage = None
        nodes = [meta_of(o).name for kind, group in groups if kind.kind == "Node" for o in group]
        if fmt == "wide" and nodes:
            # One list for every node's CPU / MEMORY / PODS columns, never one per node.
            pods, _ = await client.list(
                kinds.BY_KIND["Pod"],
                options=ListOptions(field_selector=tables.bound_pods_selector(nodes)),
            )
            usage = tables.node_usage(narrow(p, core_pb2.Pod) for p in pods)
    objs = [o for _, group in groups for o in group]
    if fmt in ("json", "yaml"):
        if objs or not req.single:
            output.print_documents(objs, fmt, single=req.single)
    elif fmt == "name":
        for kind, group in groups:
            for o in group:
                print(output.object_name(o, kind))
    else:
        now = cluster_clock(args.server).now()
        first = True
        for kind, group in groups:
            if not group:
                continue
            if not first:
                print()
            first = False
            headers, rows = tables.table(
                kind,
                group,
                now=now,
                wide=fmt == "wide",
                all_namespaces=args.all_namespaces,
                prefix_names=len(req.kinds) > 1,
                usage=usage,
            )
            tables.print_table(headers, rows)
    if not objs and not errors and fmt not in ("json", "yaml"):
        namespaced = any(k.namespaced for k in req.kinds)
        err(output.no_resources(namespace if namespaced and namespace else None))
    for line in errors:
        err(line)
    return 1 if errors else 0


# ------------------------------------------------------------------ delete


def _grace(args: argparse.Namespace) -> int | None:
    if args.now:
        return 1
    if args.grace_period is None or args.grace_period < 0:
        return None
    return args.grace_period


#: kubectl's --cascade values -> DeleteOptions.propagationPolicy.
CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}


async def _delete_one(
    client: Client,
    kind: Kind,
    name: str,
    namespace: str,
    grace: int | None,
    *,
    context: str = "",
    ignore_not_found: bool = False,
    unsafe: bool = False,
    cascade: str = "",
) -> bool:
    try:
        await client.delete(
            kind,
            name,
            namespace,
            grace_period_seconds=grace,
            ignore_store_read_error=unsafe,
            propagation_policy=CASCADE.get(cascade, ""),
        )
    except NotFoundError as e:
        if ignore_not_found:
            return True
        err(server_error(e, context))
        return False
    except UnavailableError:
        raise
    except ApiError as e:
        err(server_error(e, context))
        return False
    print(f'{output.resource_name(kind)} "{name}" deleted')
    return True


@command
async def cmd_delete(args: argparse.Namespace) -> int:
    grace = _grace(args)
    ok = True
    if args.filename:
        if args.resources:
            raise CliError("cannot specify both resource names and --filename")
        found = load_manifests(args, "ignore")
        async with client_for(args) as client:
            for m in found:
                ok &= await _delete_one(
                    client,
                    m.kind,
                    m.name,
                    m.namespace,
                    grace,
                    context=f'error when deleting "{m.document.where}": ',
                    ignore_not_found=args.ignore_not_found,
                    unsafe=args.ignore_store_read_error_with_cluster_breaking_potential,
                    cascade=args.cascade,
                )
        return 0 if ok else 1
    if not args.resources:
        raise CliError("You must provide one or more resources by argument or filename.")
    req = parse_resources(args.resources)
    everything = args.all or bool(args.selector)
    if not any(req.names.values()) and not everything:
        raise CliError("resource(s) were provided, but no name was specified")
    if any(req.names.values()) and everything:
        raise CliError("names cannot be provided when a selector or --all is specified")
    namespace = args.namespace or "default"
    async with client_for(args) as client:
        if everything:
            groups, _ = await _fetch(client, req, namespace, label_selector=_label_selector(args))
            if not any(g for _, g in groups):
                err(output.no_resources(namespace))
            for kind, group in groups:
                for obj in group:
                    ok &= await _delete_one(
                        client,
                        kind,
                        meta_of(obj).name,
                        meta_of(obj).namespace,
                        grace,
                        cascade=args.cascade,
                    )
            return 0 if ok else 1
        for kind in req.kinds:
            ns = namespace if kind.namespaced else ""
            for name in req.names[kind.name]:
                ok &= await _delete_one(
                    client,
                    kind,
                    name,
                    ns,
                    grace,
                    ignore_not_found=args.ignore_not_found,
                    unsafe=args.ignore_store_read_error_with_cluster_breaking_potential,
                    cascade=args.cascade,
                )
    return 0 if ok else 1


# ---------------------------------------------------------------- describe


async def _events(client: Client, kind: Kind, obj: Message) -> list[Message]:
    meta = meta_of(obj)
    selector = f"involvedObject.name={meta.name},involvedObject.kind={kind.kind}"
    if kind.namespaced:
        selector += f",involvedObject.namespace={meta.namespace}"
    events, _ = await client.list(
        kinds.BY_KIND["Event"],
        namespace=meta.namespace if kind.namespaced else "",
        options=ListOptions(field_selector=selector),
    )
    return events


async def _pod_claims(client: Client, pod: Message) -> dict[str, Message]:
    """The ResourceClaims the pod's entries name, by name (those that exist)."""
    p: Any = pod
    out: dict[str, Message] = {}
    for entry in p.spec.resource_claims:
        try:
            ref = claim_name(p, entry)
        except (ClaimNotCreatedError, ValueError):
            continue
        if ref.name is None or ref.name in out:
            continue
        with contextlib.suppress(NotFoundError):
            out[ref.name] = await client.get(
                kinds.BY_KIND["ResourceClaim"], ref.name, p.metadata.namespace
            )
    return out


async def _describe(client: Client, kind: Kind, obj: Message, now: float) -> str:
    events = await _events(client, kind, obj)
    if kind.kind == "Pod":
        return describe.describe_pod(obj, events, now, await _pod_claims(client, obj))
    if kind.kind == "ResourceClaim":
        return describe_resources.describe_resource_claim(obj, events, now)
    if kind.kind == "PersistentVolume":
        return describe_storage.describe_persistent_volume(obj, events, now)
    if kind.kind == "PersistentVolumeClaim":
        pods, _ = await client.list(kinds.BY_KIND["Pod"], namespace=meta_of(obj).namespace)
        users = describe_storage.claim_users(obj, pods)
        return describe_storage.describe_persistent_volume_claim(obj, events, now, users)
    if kind.kind == "StorageClass":
        return describe_storage.describe_storage_class(obj, events, now)
    if kind.kind == "CSINode":
        return describe_storage.describe_csi_node(obj, events, now)
    if kind.kind == "ResourceQuota":
        return describe_resources.describe_resource_quota(obj)
    if kind.kind == "LimitRange":
        return describe_resources.describe_limit_range(obj)
    if kind.kind == "Node":
        name = meta_of(obj).name
        pods, _ = await client.list(
            kinds.BY_KIND["Pod"],
            options=ListOptions(
                field_selector=f"spec.nodeName={name},status.phase!=Succeeded,status.phase!=Failed"
            ),
        )
        pods.sort(key=lambda p: (meta_of(p).namespace, meta_of(p).name))
        lease, lease_error = None, ""
        try:
            lease = await client.get(kinds.BY_KIND["Lease"], name, "kube-node-lease")
        except NotFoundError:
            lease_error = f'leases.coordination.k8s.io "{name}" not found'  # kubectl's words
        except UnavailableError:
            raise
        except ApiError as e:
            lease_error = e.message
        return describe.describe_node(obj, pods, events, now, lease=lease, lease_error=lease_error)
    return describe.describe_object(obj, events, now)


@command
async def cmd_describe(args: argparse.Namespace) -> int:
    req = parse_resources(args.resources)
    namespace = _namespace_arg(args)
    now = cluster_clock(args.server).now()
    texts: list[str] = []
    async with client_for(args) as client:
        groups, errors = await _fetch(client, req, namespace, label_selector=_label_selector(args))
        for kind, group in groups:
            for obj in group:
                texts.append(await _describe(client, kind, obj, now))
    if texts:
        sys.stdout.write("\n\n".join(t.rstrip("\n") for t in texts) + "\n")
    elif not errors:
        namespaced = any(k.namespaced for k in req.kinds)
        err(output.no_resources(namespace if namespaced and namespace else None))
    for line in errors:
        err(line)
    return 1 if errors else 0


# ---------------------------------------------------------------- register


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("get", help="list objects, or show some by name")
    p.add_argument("resources", nargs="+", metavar="KIND[,KIND] [NAME ...] | KIND/NAME")
    add_namespace_arg(p)
    p.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    p.add_argument("-l", "--selector", help="label selector, e.g. app=web,tier!=db")
    p.add_argument("--field-selector", help="field selector, e.g. spec.nodeName=node-a")
    p.add_argument("-o", "--output", choices=output.OUTPUT_FORMATS, help="output format")
    p.set_defaults(func=get_or_components)

    p = sub.add_parser("delete", help="delete objects by name, selector or manifest")
    p.add_argument("resources", nargs="*", metavar="KIND [NAME ...] | KIND/NAME")
    add_file_args(p, required=False)
    add_namespace_arg(p)
    p.add_argument("-l", "--selector", help="delete the objects matching this label selector")
    p.add_argument("--all", action="store_true", help="delete every object of the kinds given")
    p.add_argument(
        "--grace-period",
        type=int,
        default=None,
        metavar="SECONDS",
        help="seconds a pod gets to terminate (default: its own terminationGracePeriodSeconds)",
    )
    p.add_argument("--now", action="store_true", help="terminate at once (grace period 1)")
    p.add_argument(
        "--cascade",
        choices=tuple(CASCADE),
        default="background",
        help="what happens to the dependents (kubectl's): background deletes them after the "
        "object, foreground before it, orphan keeps them without their owner reference",
    )
    p.add_argument(
        "--ignore-not-found", action="store_true", help="no error for objects that are not there"
    )
    p.add_argument(
        "--ignore-store-read-error-with-cluster-breaking-potential",
        action="store_true",
        help="remove an object whose stored value does not decode (the apiserver answers "
        "StorageReadError for it) as it is: no grace period, finalizers or preconditions. "
        "Only for corrupt objects; what relied on the object's normal deletion may break",
    )
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("describe", help="show an object in detail, with its events")
    p.add_argument("resources", nargs="+", metavar="KIND [NAME ...] | KIND/NAME")
    add_namespace_arg(p)
    p.add_argument(
        "-A", "--all-namespaces", action="store_true", help="describe across all namespaces"
    )
    p.add_argument("-l", "--selector", help="label selector")
    p.set_defaults(func=cmd_describe)
