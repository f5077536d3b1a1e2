"""The process `kubera up` runs (in the foreground, or detached with --detach): it starts
etcd, Ray and the actors, writes the context file, and on SIGTERM/SIGINT stops them all
and removes what it wrote. `kubera down` signals it, then stops by PID whatever is left.

    kubera up ─┬─ (foreground) Supervisor.run()
               └─ (--detach) python -m kubera.supervisor … in its own session; the
                  parent waits for context.json to name it ready, prints, exits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass

from kubera import procs
from kubera.context import Context, context_path, home
from kubera.etcd import EtcdProcess

# Keep the embedded Ray on loopback and quiet, before ray is imported anywhere.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


#: The line prefix with which a detached supervisor reports why it could not start.
FAILED_MARK = "kubera up failed: "


@dataclass(frozen=True)
class UpOptions:
    etcd: str = ""
    ray_address: str = ""
    nodes: int = 0
    apiserver_port: int = 0
    bookmark_interval: float = 5.0
    #: KubeSchedulerConfiguration YAML text ("" = the defaults).
    scheduler_config: str = ""
    scheduler_seed: int | None = None
    #: False: no scheduler actor (bring your own, or profile one in-process).
    with_scheduler: bool = True


class Supervisor:
    def __init__(self, opts: UpOptions) -> None:
        self.opts = opts
        self.cluster_dir = home() / "cluster"
        self.etcd: EtcdProcess | None = None
        self.ray_tmp = ""
        self.actor = None
        self.scheduler = None
        self.context: Context | None = None
        self._stop = threading.Event()

    def start(self) -> Context:
        import ray

        from actors.apiserver import ApiServerActor, ApiServerConfig

        if self.cluster_dir.exists():
            shutil.rmtree(self.cluster_dir)
        self.cluster_dir.mkdir(parents=True, mode=0o700)
        etcd_endpoint = self.opts.etcd
        pids: dict[str, int] = {}
        if not etcd_endpoint:
            # Assigned before it starts, so stop() can end a half-started etcd too.
            self.etcd = EtcdProcess(
                self.cluster_dir / "etcd", log_path=self.cluster_dir / "etcd.log"
            )
            self.etcd.start()
            etcd_endpoint = self.etcd.endpoint
            pids["etcd"] = self.etcd.pid
        if self.opts.ray_address:
            ray.init(
                address=self.opts.ray_address,
                namespace="kubera",
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            self.ray_tmp = ray_temp_dir()
            ray.init(
                include_dashboard=False,
                _temp_dir=self.ray_tmp,
                _node_ip_address="127.0.0.1",
                namespace="kubera",
                log_to_driver=False,
                configure_logging=False,
            )
            node = ray._private.worker._global_node  # the head we started
            for name, running in node.all_processes.items():
                for i, p in enumerate(running):
                    pids[f"ray-{name}-{i}"] = p.process.pid
        config = ApiServerConfig(
            etcd=etcd_endpoint,
            port=self.opts.apiserver_port,
            bookmark_interval=self.opts.bookmark_interval,
        )
        self.actor = ApiServerActor.options(name="apiserver").remote(config)
        address = ray.get(self.actor.start.remote(), timeout=120)
        scheduler_address = scheduler_metrics = ""
        if self.opts.with_scheduler:
            from actors.scheduler import SchedulerActor, SchedulerHostConfig

            sched_config = SchedulerHostConfig(
                apiserver=address,
                config_yaml=self.opts.scheduler_config,
                seed=self.opts.scheduler_seed,
            )
            self.scheduler = SchedulerActor.options(name="scheduler").remote(sched_config)
            scheduler_address = ray.get(self.scheduler.start.remote(), timeout=120)
            scheduler_metrics = ray.get(self.scheduler.health.remote(), timeout=30)["metrics"]
        dirs = [str(self.cluster_dir)] + ([self.ray_tmp] if self.ray_tmp else [])
        me = os.getpid()
        self.context = Context(
            apiserver=address,
            etcd=etcd_endpoint,
            supervisor_pid=me,
            pids=pids,
            started={str(pid): procs.start_time(pid) for pid in [me, *pids.values()]},
            dirs=dirs,
            ray_address=self.opts.ray_address or "local",
            started_at=time.time(),
            scheduler=scheduler_address,
            scheduler_metrics=scheduler_metrics,
        )
        self.context.save()
        return self.context

    def wait(self) -> None:
        while not self._stop.wait(0.5):
            pass

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        import ray

        if self.scheduler is not None:
            with contextlib.suppress(Exception):
                ray.get(self.scheduler.stop.remote(), timeout=15)
            with contextlib.suppress(Exception):
                ray.kill(self.scheduler)
        if self.actor is not None:
            with contextlib.suppress(Exception):
                ray.get(self.actor.stop.remote(), timeout=10)
            with contextlib.suppress(Exception):
                ray.kill(self.actor)
        with contextlib.suppress(Exception):
            ray.shutdown()
        if self.etcd is not None:
            self.etcd.stop()
        if self.context is not None:
            with contextlib.suppress(FileNotFoundError):
                data = json.loads(context_path().read_text())
                if data.get("supervisor_pid") == os.getpid():
                    context_path().unlink()
        for d in (self.cluster_dir, self.ray_tmp):
            if d:
                shutil.rmtree(d, ignore_errors=True)


class StartupInterrupted(BaseException):
    """SIGTERM/SIGINT arrived while the cluster was still starting."""


class StartupError(Exception):
    """The cluster could not start; the message is one line for the user."""


def ray_temp_dir() -> str:
    """Ray's temp dir: under $KUBERA_HOME when the path is short enough for the unix
    sockets Ray puts inside it (107 bytes in all), else a fresh one directly in /tmp."""
    candidate = home() / "ray"
    if len(str(candidate)) <= 32:
        candidate.mkdir(parents=True, exist_ok=True, mode=0o700)
        return str(candidate)
    return tempfile.mkdtemp(prefix="kray-", dir="/tmp")


def run_foreground(opts: UpOptions, *, on_ready=None) -> int:
    """Start, wait for SIGTERM/SIGINT, stop — stopping also when a signal or an error
    interrupts the start, so nothing is left running either way."""
    sup = Supervisor(opts)
    starting = True

    def on_signal(signum: int, frame: object) -> None:
        if starting:
            raise StartupInterrupted()
        sup.request_stop()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            ctx = sup.start()
        except StartupInterrupted:
            return 130
        except Exception as e:  # noqa: BLE001 - one line for the user; the log has the rest
            raise StartupError(f"{type(e).__name__}: {e}".splitlines()[0]) from e
        starting = False
        if on_ready is not None:
            on_ready(ctx)
        sup.wait()
    finally:
        starting = False
        sup.stop()
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the detached supervisor (`python -m kubera.supervisor OPTIONS_JSON`)."""
    parser = argparse.ArgumentParser(prog="kubera.supervisor")
    parser.add_argument("options_json")
    args = parser.parse_args(argv)
    opts = UpOptions(**json.loads(args.options_json))
    try:
        return run_foreground(opts)
    except StartupError as e:
        import traceback

        traceback.print_exc()
        print(f"{FAILED_MARK}{e}", file=sys.stderr, flush=True)
        return 1


def options_json(opts: UpOptions) -> str:
    return json.dumps(asdict(opts))


if __name__ == "__main__":
    sys.exit(main())
