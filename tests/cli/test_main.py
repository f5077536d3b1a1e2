"""`kubera`'s command table (kubera/cli/main.py COMMANDS): it names every subcommand its
modules register, and a command line imports the module of its command alone."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from kubera.cli.main import COMMANDS, build_parser, module_of


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_the_table_names_what_each_module_registers(module: str) -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    importlib.import_module(f"kubera.cli.{module}").register(sub)
    assert tuple(sub.choices) == COMMANDS[module]


def test_the_full_parser_has_every_command_once() -> None:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    names = [n for names in COMMANDS.values() for n in names]
    assert sorted(sub.choices) == sorted(names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["get", "pods"], "objects"),
        (["--server", "127.0.0.1:1", "describe", "node", "n"], "objects"),
        (["--server=127.0.0.1:1", "apply", "-f", "x.yaml"], "apply"),
        (["up", "--detach"], "cluster"),
        (["experiment", "run", "f.yaml"], "experiment"),
        (["--help"], None),
        ([], None),
        (["no-such-command"], None),
    ],
)
def test_the_command_line_picks_its_module(argv: list[str], module: str | None) -> None:
    assert module_of(argv) == module


def test_a_get_does_not_import_the_experiment_runner_or_the_bench() -> None:
    code = (
        "import sys\n"
        "from kubera.cli.main import main\n"
        "try:\n"
        "    main(['get', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kubera.cli.', 'kubera.experiment', 'kubera.bench'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "kubera.cli.objects" in out
    for absent in (
        "kubera.cli.experiment",
        "kubera.cli.bench",
        "kubera.experiment",
        "kubera.bench",
    ):
        assert f"'{absent}" not in out, out


def test_an_unknown_command_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from kubera.cli.main import main

    with pytest.raises(SystemExit):
        main(["no-such-command"])
    err = capsys.readouterr().err
    assert "invalid choice" in err and "experiment" in err and "get" in err
