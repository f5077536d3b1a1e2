"""The `kubera` command: kubectl-shaped verbs plus `up`/`down` for the cluster itself.

Each command module registers its subcommands in `COMMANDS` order; `main` turns every
expected failure into one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from kubera.cli import (
    apply,
    bench,
    chaos,
    check,
    cluster,
    experiment,
    nodes,
    objects,
    scheduling,
    ui,
)
from kubera.errors import CliError
from kubera.launch.context import ContextError, load_context
from kubera.launch.credentials import use_context_credentials

#: Modules with `register(subparsers)`; each subcommand sets `func(args) -> int`.
COMMANDS = (cluster, apply, objects, nodes, scheduling, chaos, check, bench, experiment, ui)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubera", description="A Kubernetes control plane in Python, on etcd and Ray."
    )
    parser.add_argument(
        "--server", help="apiserver address host:port (default: from `kubera up`'s context)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "up":
        # the running cluster's admin token and etcd client files, for every client made
        with contextlib.suppress(ContextError):
            use_context_credentials(load_context())
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (CliError, ContextError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # python -m kubera.cli.main
    sys.exit(main())
