"""The cluster clock a kubera command counts ages by (`kubera get`'s AGE, `kubera
describe`'s event ages): the one `kubera up` gave every component, from the context file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubera.launch.context import Context, cluster_clock
from services.clock import RealClock, ScaledClock


@pytest.fixture
def context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Context:
    monkeypatch.setenv("KUBERA_HOME", str(tmp_path))
    monkeypatch.delenv("KUBERA_SERVER", raising=False)
    ctx = Context(apiserver="127.0.0.1:5000", etcd="", time_scale=60, time_origin=1_000.0)
    ctx.save()
    return ctx


def test_the_contexts_cluster_is_counted_in_its_simulated_time(context: Context) -> None:
    for explicit in (None, "127.0.0.1:5000"):
        clock = cluster_clock(explicit)
        assert isinstance(clock, ScaledClock)
        assert (clock.scale, clock.origin) == (60, 1_000.0)


def test_another_apiserver_is_counted_in_wall_time(
    context: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(cluster_clock("10.0.0.1:443"), RealClock)
    monkeypatch.setenv("KUBERA_SERVER", "10.0.0.1:443")
    assert isinstance(cluster_clock(), RealClock)


def test_without_a_context_the_wall_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERA_HOME", str(tmp_path / "none"))
    assert isinstance(cluster_clock(), RealClock)
