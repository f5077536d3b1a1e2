"""Generate the reference tables of docs/ from the code, so they cannot drift.

    python scripts/gendocs.py           rewrite the generated blocks in place
    python scripts/gendocs.py --check   exit 1 (and say which block) if any is stale

Two blocks, each between a pair of markers in its page:

* docs/cli.md, ``cli``: every `kubera` subcommand, walked from the argparse parser that
  `kubera.cli.main.build_parser` builds (no subcommand is named here: a new one, or one
  removed, changes the table by itself), with its help and every option's help;
* docs/kinds.md, ``kinds``: every kind the apiserver serves, read from the kinds table
  (`KINDS`) and the HTTP API's subresources (`services.httpapi.discovery`).

The markers are ``<!-- BEGIN GENERATED: NAME -->`` and ``<!-- END GENERATED: NAME -->``;
everything outside them is hand-written and left alone. tests/test_docs.py runs the check,
as kwok's CI fails when its generated CLI and API references differ from the code.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: import this checkout
    sys.path.insert(0, str(ROOT))

BEGIN = "<!-- BEGIN GENERATED: {name} (scripts/gendocs.py; do not edit by hand) -->"
END = "<!-- END GENERATED: {name} -->"


def _cell(text: str | None) -> str:
    """Text fit for one markdown table cell: one line, pipes escaped."""
    return " ".join((text or "").split()).replace("|", "\\|")


# -- the CLI ------------------------------------------------------------------------------


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each subcommand of `parser`, in the order they were added."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        seen: set[int] = set()
        for name, sub in action.choices.items():
            if id(sub) in seen:  # an alias of a subcommand already listed
                continue
            seen.add(id(sub))
            yield name, helps.get(name) or "", sub


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...], help_: str
) -> Iterator[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    yield path, help_, parser
    for name, sub_help, sub in _subcommands(parser):
        yield from _walk(sub, (*path, name), sub_help)


def _invocation(formatter: argparse.HelpFormatter, action: argparse.Action) -> str:
    """`-o, --output FILE` or `NAME [NAME ...]`, the same on every Python (3.13 changed
    argparse's own spelling of options with aliases)."""
    if not action.option_strings:
        return formatter._format_args(action, action.dest)
    flags = ", ".join(action.option_strings)
    if action.nargs == 0:
        return flags
    return f"{flags} {formatter._format_args(action, action.dest.upper())}"


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(invocation, help) of each documented argument: positionals first, as usage shows."""
    formatter = parser._get_formatter()
    rows: list[tuple[str, str]] = []
    actions = [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]
    actions.sort(key=lambda a: bool(a.option_strings))  # stable: positionals, then options
    for action in actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        invocation = _invocation(formatter, action)
        help_ = formatter._expand_help(action) if action.help else ""
        if action.choices and "{" not in invocation:
            help_ = f"{help_} (one of: {', '.join(map(str, action.choices))})".strip()
        rows.append((invocation, help_))
    return rows


def cli_block() -> str:
    from kubera.cli.main import build_parser

    root = build_parser()
    out: list[str] = []
    commands = list(_walk(root, ("kubera",), root.description or ""))
    out.append("| command | what it does |")
    out.append("|---|---|")
    for path, help_, _ in commands[1:]:
        anchor = "-".join(path)
        out.append(f"| [`{' '.join(path)}`](#{anchor}) | {_cell(help_)} |")
    for path, help_, parser in commands:
        out += ["", f"### {' '.join(path)}"]
        if help_:
            out += ["", _cell(help_)]
        rows = _options(parser)
        if rows:
            out += ["", "| argument | help |", "|---|---|"]
            out.extend(f"| `{_cell(inv)}` | {_cell(h)} |" for inv, h in rows)
    return "\n".join(out)


# -- the kinds ----------------------------------------------------------------------------


def kinds_block() -> str:
    kinds = importlib.import_module("services.api.machinery.kinds")
    discovery = importlib.import_module("services.httpapi.discovery")
    out = [
        "| group/version | kind | resource | namespaced | short names | subresources |",
        "|---|---|---|---|---|---|",
    ]
    for k in kinds.KINDS:
        subs = ", ".join(s.name for s in discovery.subresources_of(k)) or "—"
        short = ", ".join(f"`{n}`" for n in k.short_names) or "—"
        scoped = "yes" if k.namespaced else "no"
        out.append(
            f"| `{k.api_version}` | {k.kind} | `{k.resource}` | {scoped} | {short} | {subs} |"
        )
    return "\n".join(out)


#: (page under docs/, block name, its generator)
BLOCKS: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("cli.md", "cli", cli_block),
    ("kinds.md", "kinds", kinds_block),
)


def render(text: str, name: str, body: str) -> str:
    """`text` with the block `name` replaced by `body` (ValueError if its markers are missing)."""
    begin, end = BEGIN.format(name=name), END.format(name=name)
    start = text.find(begin)
    stop = text.find(end, start + len(begin))
    if start < 0 or stop < 0:
        raise ValueError(f"the markers of block {name!r} are missing: {begin} … {end}")
    return f"{text[: start + len(begin)]}\n{body}\n{text[stop:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a block is stale")
    parser.add_argument("--docs", default=str(ROOT / "docs"), help="the docs directory")
    args = parser.parse_args(argv)
    stale = 0
    for page, name, generate in BLOCKS:
        path = Path(args.docs) / page
        old = path.read_text(encoding="utf-8")
        new = render(old, name, generate())
        if new == old:
            continue
        if args.check:
            stale += 1
            diff = difflib.unified_diff(
                old.splitlines(), new.splitlines(), str(path), "generated", lineterm="", n=1
            )
            print("\n".join(list(diff)[:40]), file=sys.stderr)
            print(
                f"{path}: block {name!r} is stale; run: python scripts/gendocs.py", file=sys.stderr
            )
        else:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path} ({name})")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
