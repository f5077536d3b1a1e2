"""What every object verb of the CLI shares: kubectl's error lines, running an async
command so that expected failures are one line on stderr, the client for `--server`, kind
lookup, manifest loading with namespace resolution, and the `-n` / `-f` flags.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from google.protobuf.message import Message

from kubera.cli import manifests
from kubera.cli.manifests import Manifest
from kubera.errors import CliError
from kubera.launch.context import apiserver_address
from services.api.machinery import codec, kinds
from services.api.machinery.errors import (
    ApiError,
    BadRequestError,
    PreconditionError,
    UnavailableError,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.client import Client

# ------------------------------------------------------------------ errors


def reason(e: ApiError) -> str:
    """The Status reason kubectl prints. It crosses the wire beside the gRPC code; from a
    server that does not send it, Invalid arrives as BadRequest and Forbidden as
    PreconditionFailed (they share gRPC codes), and the message tells them apart."""
    if isinstance(e, BadRequestError) and " is invalid: " in e.message:
        return "Invalid"
    if isinstance(e, PreconditionError) and " is forbidden: " in e.message:
        return "Forbidden"
    return e.reason


def server_error(e: ApiError, context: str = "") -> str:
    """`Error from server (NotFound): pods "x" not found`, optionally with kubectl's
    `error when creating "x.yaml": ` context."""
    return f"Error from server ({reason(e)}): {context}{e.message}"


def err(line: str) -> None:
    print(line, file=sys.stderr)


def warn(message: str) -> None:
    """A warning from the apiserver, printed as kubectl prints them."""
    err(f"Warning: {message}")


def command(
    fn: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
) -> Callable[[argparse.Namespace], int]:
    """Run an async command; expected failures become one line on stderr, never a traceback."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return asyncio.run(fn(args))
        except UnavailableError as e:
            if not e.message.startswith("apiserver unavailable:"):
                err(server_error(e))  # the apiserver answered: its storage is down
                return 1
            address = getattr(args, "server", None) or "the apiserver"
            detail = e.message.removeprefix("apiserver unavailable:").strip()
            raise CliError(f"unable to connect to the server {address}: {detail}") from None
        except ApiError as e:
            err(server_error(e))
            return 1
        except kinds.UnknownKindError as e:
            raise CliError(str(e)) from None
        except codec.DecodeError as e:
            raise CliError(str(e)) from None
        except OSError as e:
            raise CliError(str(e)) from None

    return run


def client_for(args: argparse.Namespace) -> Client:
    return Client(apiserver_address(args.server), warning_handler=warn)


def meta_of(obj: Message) -> Any:
    return object_meta(obj)


def lookup_kind(name: str) -> Kind:
    try:
        return kinds.lookup(name)
    except kinds.UnknownKindError as e:
        raise CliError(str(e)) from None


# -------------------------------------------------------------- namespaces


def resolve_namespace(m: Manifest, explicit: str | None) -> None:
    """A manifest's own namespace wins over the default; a different explicit -n is an error
    (kubectl's words). Cluster-scoped kinds have none."""
    meta = meta_of(m.obj)
    if not m.kind.namespaced:
        meta.namespace = ""
        return
    own = meta.namespace
    if own and explicit and own != explicit:
        raise CliError(
            f'the namespace from the provided object "{own}" does not match the namespace '
            f"\"{explicit}\". You must pass '--namespace={own}' to perform this operation."
        )
    meta.namespace = own or explicit or "default"


def load_manifests(args: argparse.Namespace, validate: str) -> list[Manifest]:
    docs = manifests.load(args.filename, recursive=args.recursive)
    found = manifests.decode_all(docs, validate)
    for m in found:
        resolve_namespace(m, args.namespace)
    return found


# -------------------------------------------------------------------- flags


def add_namespace_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namespace", help='the namespace (default: "default")')


def add_file_args(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        required=required,
        metavar="FILE",
        help="a manifest file, a directory of them, or - for stdin (repeatable)",
    )
    p.add_argument("-R", "--recursive", action="store_true", help="process directories recursively")
