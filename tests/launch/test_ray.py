"""The Ray bootstrap (kubera/launch/ray.py): the processes a local head runs, named as
`kubera down` and the experiments find them, and Ray's actor table read from the GCS —
checked against what a real local Ray and its actors say about themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kubera.launch import procs
from kubera.launch import ray as kray
from kubera.launch.options import ClusterOptions
from tests.waiting import until


def test_head_processes_are_named_by_program_or_script(tmp_path: Path) -> None:
    script = tmp_path / "log_monitor.py"
    script.write_text("import time\ntime.sleep(60)\n")
    sleeper = subprocess.Popen(["sleep", "60"])
    python = subprocess.Popen([sys.executable, "-u", str(script), "--flag=x.py"])
    try:
        # A child's /proc cmdline is empty until its exec has set up the new arguments,
        # which on a loaded machine can be after Popen returns: wait for both names.
        until(
            lambda: (
                kray.process_name(python.pid) == "log_monitor"
                and kray.process_name(sleeper.pid) == "sleep"
            ),
            timeout=10,
            interval=0.05,
        )
        named = kray.head_processes([python.pid, sleeper.pid])
        assert sorted(named) == ["ray-log_monitor-0", "ray-sleep-0"]
        assert named["ray-sleep-0"] == sleeper.pid
        twice = kray.head_processes([sleeper.pid, sleeper.pid])
        assert sorted(twice) == ["ray-sleep-0", "ray-sleep-1"]
        assert os.getpid() not in kray.children(os.getpid())
        assert {sleeper.pid, python.pid} <= set(kray.children(os.getpid()))
    finally:
        for p in (sleeper, python):
            p.kill()
            p.wait()
    assert kray.process_name(sleeper.pid) == ""  # gone


def test_the_namespace_is_the_flag_else_the_environment_else_kubera(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERA_RAY_NAMESPACE", raising=False)
    assert kray.ray_namespace(ClusterOptions()) == kray.DEFAULT_RAY_NAMESPACE == "kubera"
    monkeypatch.setenv("KUBERA_RAY_NAMESPACE", "env")
    assert kray.ray_namespace(ClusterOptions()) == "env"
    assert kray.ray_namespace(ClusterOptions(ray_namespace="flag")) == "flag"


class _Probe:
    def where(self) -> tuple[int, str]:
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()


@pytest.mark.ray
def test_a_local_head_and_its_actor_table_through_public_api() -> None:
    import ray

    me = os.getpid()
    before = set(procs.descendants(me))
    temp = tempfile.mkdtemp(prefix="kray-", dir="/tmp")
    try:
        head = kray.start_local_head(temp, "kubera-test-launch-ray")
        # what ray.init() started: its GCS, raylet and helpers, as this process's children
        assert {"ray-gcs_server-0", "ray-raylet-0"} <= set(head), head
        assert all(procs.alive(pid) and pid in kray.children(me) for pid in head.values())

        (node,) = kray.ray_nodes()
        assert node["alive"] and node["head"] and node["ip"] == kray.node_ip() == "127.0.0.1"

        probe: Any = ray.remote(max_restarts=1, num_cpus=0)(_Probe).remote()
        pid, node_id = ray.get(probe.where.remote(), timeout=120)
        assert node_id == node["id"] and pid not in head.values()
        key = kray.actor_id(probe)

        def row(**want: Any) -> dict[str, Any] | None:
            got = kray.actor_table().get(key)
            return got if got is not None and want.items() <= got.items() else None

        assert until(lambda: row(state="alive"), timeout=30) == {
            "state": "alive",
            "node_id": node_id,
            "node_ip": "127.0.0.1",
            "pid": pid,
            "restarts": 0,
        }
        # Ray re-creates it: one restart, another process
        ray.kill(probe, no_restart=False)
        again = until(lambda: row(state="alive", restarts=1), timeout=120)
        assert again["pid"] != pid
        assert ray.get(probe.where.remote(), timeout=120) == (again["pid"], node_id)
        ray.kill(probe, no_restart=True)
        until(lambda: row(state="dead"), timeout=60)
    finally:
        ray.shutdown()
        procs.stop_all(procs.started_below(me, before))
        shutil.rmtree(temp, ignore_errors=True)
    assert not any(procs.alive(pid) for pid in head.values())
