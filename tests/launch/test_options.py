"""The launcher's options (kubera/launch/options.py) through the detached supervisor's
argument (JSON) — without Ray."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from kubera.cli.cluster import cmd_up
from kubera.cli.main import build_parser
from kubera.errors import CliError
from kubera.launch.options import ClusterOptions, SchedulingOptions, UpOptions, options_json


def test_apiservers_survive_the_detached_supervisors_options() -> None:
    opts = UpOptions(cluster=ClusterOptions(apiservers=3))
    assert UpOptions.from_dict(asdict(opts)).cluster.apiservers == 3
    assert UpOptions().cluster.apiservers == 1


def test_disabled_admission_plugins_survive_the_json_as_a_tuple() -> None:
    opts = UpOptions(
        cluster=ClusterOptions(disable_admission_plugins=("Priority", "ServiceAccount"))
    )
    back = UpOptions.from_dict(json.loads(options_json(opts)))
    assert back.cluster.disable_admission_plugins == ("Priority", "ServiceAccount")
    assert back == opts and UpOptions().cluster.disable_admission_plugins == ()


def test_kubera_up_refuses_an_unknown_admission_plugin_before_starting() -> None:
    args = build_parser().parse_args(["up", "--disable-admission-plugins", "Priority,Nope"])
    with pytest.raises(CliError, match=r"--disable-admission-plugins: unknown Nope \(known: "):
        cmd_up(args)


def test_scheduler_feature_gates_survive_the_json() -> None:
    gates = {"SchedulerAsyncAPICalls": True, "OpportunisticBatching": False}
    opts = UpOptions(scheduling=SchedulingOptions(feature_gates=gates))
    back = UpOptions.from_dict(json.loads(options_json(opts)))
    assert back.scheduling.feature_gates == gates
    assert back == opts and UpOptions().scheduling.feature_gates == {}


def test_kubera_up_refuses_an_unknown_feature_gate_before_starting() -> None:
    args = build_parser().parse_args(
        ["up", "--feature-gates", "SchedulerAsyncAPICalls=true,Nope=1"]
    )
    with pytest.raises(CliError, match="--feature-gates: unrecognized feature gate: Nope"):
        cmd_up(args)
