"""The benchmark's plumbing, with tiny counts (the real figures come from `make bench`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.helpers import kubera_in

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def test_bench_apiserver_prints_every_figure_with_its_etcd_baseline(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    args = [
        "--repeat",
        "1",
        "--serial",
        "5",
        "--concurrent",
        "5",
        "--inflight",
        "2",
        "--batched",
        "6",
        "--batch-size",
        "3",
        "--watch-events",
        "5",
    ]
    r = kubera_in(tmp_path / "home").run(
        "bench", "apiserver", *args, "--output", str(out), timeout=300
    )
    assert r.returncode == 0, r.stderr
    for line in ("kubera up → ready", "pod creates, serial", "watch latency p99", "raw etcd put"):
        assert line in r.stdout
    figures = json.loads(out.read_text())
    assert set(figures["ratios"]) >= {
        "create_serial_vs_etcd_put_serial",
        "watch_p50_vs_etcd_watch_p50",
    }
    assert all(v > 0 for v in figures["median"].values())
