"""`kubera up --ray-namespace`: two control planes on one Ray cluster keep their named
actors apart (the compose file's experiment service runs beside its kubera service)."""

from __future__ import annotations

import pytest

from kubera.cli.main import build_parser
from kubera.launch.options import ClusterOptions
from kubera.launch.ray import ray_namespace


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        ("", None, "kubera"),
        ("", "kubera-experiment", "kubera-experiment"),
        ("mine", "kubera-experiment", "mine"),
        ("mine", None, "mine"),
    ],
    ids=["default", "environment", "flag-over-environment", "flag"],
)
def test_the_flag_wins_over_the_environment_over_the_default(
    monkeypatch: pytest.MonkeyPatch, flag: str, env: str | None, expected: str
):
    if env is None:
        monkeypatch.delenv("KUBERA_RAY_NAMESPACE", raising=False)
    else:
        monkeypatch.setenv("KUBERA_RAY_NAMESPACE", env)
    args = build_parser().parse_args(["up", *([f"--ray-namespace={flag}"] if flag else [])])
    assert args.ray_namespace == flag
    assert ray_namespace(ClusterOptions(ray_namespace=args.ray_namespace)) == expected
