"""The launcher's options (kubera/launch/options.py) through the detached supervisor's
argument (JSON) — without Ray."""

from __future__ import annotations

from dataclasses import asdict

from kubera.launch.options import ClusterOptions, UpOptions


def test_apiservers_survive_the_detached_supervisors_options() -> None:
    opts = UpOptions(cluster=ClusterOptions(apiservers=3))
    assert UpOptions.from_dict(asdict(opts)).cluster.apiservers == 3
    assert UpOptions().cluster.apiservers == 1
