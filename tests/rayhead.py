"""A Ray for the clusters tests start with `kubera up`: one head on loopback, shared by
every cluster of the session that neither kills Ray nor tests the Ray `kubera up` starts
itself (the `shared_ray` fixture of tests/conftest.py). Each cluster puts its actors in a
Ray namespace of its own (`on_ray`), and `kubera down` removes them, leaving the head
running for the next cluster; a Ray head costs a cluster most of its `kubera up`."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def on_ray(home: Path, ray_address: str) -> tuple[str, ...]:
    """The `kubera up` flags that put the cluster whose KUBERA_HOME is `home` on the Ray
    at `ray_address` ("": none, the cluster starts its own), in a Ray namespace of its
    own, so clusters on one Ray never see each other's named actors."""
    if not ray_address:
        return ()
    return ("--ray-address", ray_address, "--ray-namespace", ray_namespace_of(home))


def ray_namespace_of(home: Path) -> str:
    """The Ray namespace of the clusters whose KUBERA_HOME is `home`, on a shared Ray."""
    return f"kubera-{home.parent.name}-{home.name}"


@contextlib.contextmanager
def ray_head() -> Iterator[str]:
    """A Ray cluster of one head on loopback (`ray start --head --block`, with the
    environment of this process, so its workers import this checkout); yields its address.
    Stopped by its PID (SIGTERM: `--block` tears its own processes down; SIGKILL to its
    process group if it does not) and its temporary directory removed."""
    tmp = tempfile.mkdtemp(prefix="krh-", dir="/tmp")  # Ray's socket paths must stay short
    ray_cli = str(Path(sys.executable).with_name("ray"))
    head = subprocess.Popen(
        [
            ray_cli,
            "start",
            "--head",
            "--block",
            "--port=0",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={tmp}",
            "--include-dashboard=false",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        marker = Path(tmp) / "ray_current_cluster"
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline and head.poll() is None:
            time.sleep(0.1)
        assert marker.exists(), "ray start --head did not come up"
        yield marker.read_text().strip()
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
