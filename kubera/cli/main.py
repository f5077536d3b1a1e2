"""The `kubera` command: kubectl-shaped verbs plus `up`/`down` for the cluster itself.

Each command module registers its subcommands in `COMMANDS` order; `main` turns every
expected failure into one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType

from kubera.errors import CliError
from kubera.launch.context import ContextError, load_context
from kubera.launch.credentials import use_context_credentials

#: Modules (under kubera.cli) with `register(subparsers)`, in `kubera --help`'s order, and
#: the subcommands each registers; each subcommand sets `func(args) -> int`. A command
#: line that names one of them imports that module alone: a `kubera get` does not pay for
#: importing the experiment runner (tests/cli/test_main.py checks the table).
COMMANDS: dict[str, tuple[str, ...]] = {
    "cluster": ("up", "kubeconfig", "down", "components"),
    "apply": ("apply",),
    "objects": ("get", "delete", "describe"),
    "nodes": ("cordon", "uncordon", "taint", "drain"),
    "scheduling": ("explain", "schedulers"),
    "whatif": ("whatif",),
    "chaos": ("chaos",),
    "check": ("check",),
    "bench": ("bench",),
    "experiment": ("experiment",),
    "ui": ("ui",),
}


def command_modules(names: Iterable[str] | None = None) -> list[ModuleType]:
    """The modules of COMMANDS (those named: all by default), imported."""
    chosen = COMMANDS if names is None else [m for m in COMMANDS if m in set(names)]
    return [importlib.import_module(f"kubera.cli.{m}") for m in chosen]


def build_parser(modules: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The `kubera` parser with the subcommands of `modules` (COMMANDS' keys; all by
    default)."""
    parser = argparse.ArgumentParser(
        prog="kubera", description="A Kubernetes control plane in Python, on etcd and Ray."
    )
    parser.add_argument(
        "--server", help="apiserver address host:port (default: from `kubera up`'s context)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in command_modules(modules):
        module.register(sub)
    return parser


def module_of(argv: Sequence[str]) -> str | None:
    """The COMMANDS module that registers the subcommand `argv` names (None: it names
    none, or asks for the top-level help, so every module is needed)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--server":
            i += 2
            continue
        if arg.startswith("-"):
            if arg in ("-h", "--help"):
                return None
            i += 1
            continue
        return next((m for m, names in COMMANDS.items() if arg in names), None)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    module = module_of(argv)
    parser = build_parser(None if module is None else [module])
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
