"""Running `kubera.cli.main.main` in-process against the test apiserver, capturing its output."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from kubera.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


def kubera(capsys: pytest.CaptureFixture[str], server: str, *argv: str) -> Result:
    """`kubera --server SERVER ARGV...`; output captured since the last call."""
    capsys.readouterr()
    try:
        rc = main(["--server", server, *argv])
    except SystemExit as e:  # argparse's usage errors
        rc = e.code if isinstance(e.code, int) else 1
    captured = capsys.readouterr()
    return Result(rc, captured.out, captured.err)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def pod(name: str, *, namespace: str = "", labels: str = "", extra: str = "") -> str:
    """A small pod manifest; `labels` is YAML lines ("app: web"), `extra` spec lines."""
    meta = f"  namespace: {namespace}\n" if namespace else ""
    if labels:
        meta += "  labels:\n" + "".join(f"    {line}\n" for line in labels.splitlines())
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n"
        f"  name: {name}\n{meta}"
        "spec:\n"
        f"{extra}"
        "  containers:\n  - name: app\n    image: registry.k8s.io/pause:3.8\n"
    )
