"""A real multi-node Ray cluster on this machine for the tests: a head and workers, each a
separate `ray start --block` process (its own raylet, temp dir and ports) on its own
loopback address (127.0.0.2 for the head, 127.0.0.3, 127.0.0.4 … for the workers; Ray
takes 127.0.0.1 for "this machine" and swaps in the host's address).

Every node leads its own session, so it is stopped — and killed, to simulate losing a
machine — by the PIDs this module started and the processes under them, never by name
(`ray stop` kills every Ray process of the machine by name: never used here).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubera.launch import procs
from kubera.launch.etcd import free_port

RAY = str(Path(sys.executable).parent / "ray")

#: The head notices a dead raylet after failure_threshold × period (Ray's defaults take
#: about 15 s); actors that ran there are re-created elsewhere once it has.
HEALTH_CHECKS = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "4",
}


@dataclass
class RayNode:
    name: str
    ip: str
    resources: dict[str, float]
    temp_dir: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: int = 0
    #: Every process of the node seen so far (the tree under `ray start`), with start times.
    seen: dict[int, int] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else 0

    def start(self, args: list[str], env: dict[str, str]) -> None:
        cmd = [
            RAY,
            "start",
            "--block",
            f"--node-ip-address={self.ip}",
            f"--temp-dir={self.temp_dir}",
            "--num-cpus=2",
            f"--resources={json.dumps(self.resources)}",
            "--object-store-memory=100000000",
            "--include-log-monitor=false",
            "--disable-usage-stats",
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            *args,
        ]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # its own session and process group
            )
        self.started = procs.start_time(self.proc.pid)

    def processes(self) -> list[int]:
        """The node's processes now: `ray start`, the raylet, its agents and workers (and
        the head's GCS); remembered, so a stop reaches the ones that outlive a parent."""
        if procs.alive(self.pid, self.started):
            for p in [self.pid, *procs.descendants(self.pid)]:
                self.seen.setdefault(p, procs.start_time(p))
        return [p for p, t in self.seen.items() if procs.alive(p, t)]

    def kill(self) -> list[int]:
        """SIGKILL every process of the node at once (a machine lost); returns the PIDs."""
        victims = self.processes()
        for p in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        return victims

    def terminate(self) -> None:
        """SIGTERM to `ray start`: it drains, then stops its processes (Ray gives a drain
        up to 30 s; `RayCluster.stop` does not wait that long)."""
        self.processes()
        if procs.alive(self.pid, self.started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)


class RayCluster:
    """`with RayCluster(tmp, head={...}, workers=[{...}, {...}]) as c:` — the head on
    127.0.0.2, worker i on 127.0.0.(i+3); `c.address` is the GCS address for
    `kubera up --ray-address`."""

    def __init__(
        self,
        tmp: Path,
        *,
        head: dict[str, float],
        workers: list[dict[str, float]],
    ) -> None:
        self.port = free_port()
        self.address = f"127.0.0.2:{self.port}"
        # Ray's unix sockets live in the temp dirs (107 bytes a path): short ones in /tmp.
        self.ray_tmp = ray_tmp = Path(tempfile.mkdtemp(prefix="kray-", dir="/tmp"))
        self.head = RayNode("head", "127.0.0.2", head, ray_tmp / "h", tmp / "head.log")
        self.workers = [
            RayNode(
                f"worker-{i + 1}",
                f"127.0.0.{i + 3}",
                res,
                ray_tmp / f"w{i + 1}",
                tmp / f"w{i + 1}.log",
            )
            for i, res in enumerate(workers)
        ]

    @property
    def nodes(self) -> list[RayNode]:
        return [self.head, *self.workers]

    def start(self, timeout: float = 90.0) -> None:
        # Ray takes 127.0.0.1 and "localhost" for "this machine" and swaps in the host's
        # address (unless multi-node clusters are off, as the embedded mode has them), so
        # the nodes live on the other loopback addresses.
        env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "disabled",
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1",
        }
        self.head.start(
            [
                "--head",
                f"--port={self.port}",
                "--include-dashboard=false",
                f"--ray-client-server-port={free_port()}",
            ],
            {**env, **HEALTH_CHECKS},
        )
        self.wait_nodes(1, timeout)
        for w in self.workers:
            w.start([f"--address={self.address}"], env)
        self.wait_nodes(len(self.nodes), timeout)
        for n in self.nodes:
            n.processes()

    def wait_nodes(self, count: int, timeout: float) -> None:
        """Until `count` nodes have joined (each `ray start --block` says so in its log
        once its raylet registered), failing early when one exits."""
        deadline = time.monotonic() + timeout
        while True:
            up = 0
            for n in self.nodes[:count]:
                if n.proc is not None and n.proc.poll() is not None:
                    raise RuntimeError(f"ray start of {n.name} exited: {n.log.read_text()[-2000:]}")
                if n.log.exists() and "Ray runtime started" in n.log.read_text(errors="replace"):
                    up += 1
            if up >= count:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{count - up} Ray node(s) not up after {timeout:g}s")
            time.sleep(0.2)

    def stop(self, grace: float = 5.0) -> None:
        """Every node at once: SIGTERM, and after `grace` seconds SIGKILL to whatever
        process of theirs is left."""
        for n in self.nodes:
            n.terminate()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(n.processes() for n in self.nodes):
            time.sleep(0.1)
        for n in self.nodes:
            n.kill()
            if n.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    n.proc.wait(5)
        shutil.rmtree(self.ray_tmp, ignore_errors=True)

    def __enter__(self) -> RayCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
