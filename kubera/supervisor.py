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

from kubera.context import Context, context_path, home
from kubera.etcd import EtcdProcess

# Keep the embedded Ray on loopback and quiet, before ray is imported anywhere.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@dataclass(frozen=True)
class UpOptions:
    etcd: str = ""
    ray_address: str = ""
    nodes: int = 0
    apiserver_port: int = 0
    bookmark_interval: float = 5.0


class Supervisor:
    def __init__(self, opts: UpOptions) -> None:
        self.opts = opts
        self.cluster_dir = home() / "cluster"
        self.etcd: EtcdProcess | None = None
        self.ray_tmp = ""
        self.actor = None
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
            self.etcd = EtcdProcess(
                self.cluster_dir / "etcd", log_path=self.cluster_dir / "etcd.log"
            ).start()
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
            # Ray's unix socket paths must stay short: its temp dir lives directly in /tmp.
            self.ray_tmp = tempfile.mkdtemp(prefix="kray-", dir="/tmp")
            ray.init(
                include_dashboard=False,
                _temp_dir=self.ray_tmp,
                _node_ip_address="127.0.0.1",
                namespace="kubera",
                log_to_driver=False,
                configure_logging=False,
            )
            node = ray._private.worker._global_node  # the head we started
            for name, procs in node.all_processes.items():
                for i, p in enumerate(procs):
                    pids[f"ray-{name}-{i}"] = p.process.pid
        config = ApiServerConfig(
            etcd=etcd_endpoint,
            port=self.opts.apiserver_port,
            bookmark_interval=self.opts.bookmark_interval,
        )
        self.actor = ApiServerActor.options(name="apiserver").remote(config)
        address = ray.get(self.actor.start.remote(), timeout=120)
        dirs = [str(self.cluster_dir)] + ([self.ray_tmp] if self.ray_tmp else [])
        self.context = Context(
            apiserver=address,
            etcd=etcd_endpoint,
            supervisor_pid=os.getpid(),
            pids=pids,
            dirs=dirs,
            ray_address=self.opts.ray_address or "local",
            started_at=time.time(),
        )
        self.context.save()
        return self.context

    def wait(self) -> None:
        def on_signal(signum: int, frame: object) -> None:
            self._stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        while not self._stop.wait(0.5):
            pass

    def stop(self) -> None:
        import ray

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


def run_foreground(opts: UpOptions, *, on_ready=None) -> int:
    sup = Supervisor(opts)
    try:
        ctx = sup.start()
        if on_ready is not None:
            on_ready(ctx)
        sup.wait()
    finally:
        sup.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the detached supervisor (`python -m kubera.supervisor OPTIONS_JSON`)."""
    parser = argparse.ArgumentParser(prog="kubera.supervisor")
    parser.add_argument("options_json")
    args = parser.parse_args(argv)
    opts = UpOptions(**json.loads(args.options_json))
    try:
        return run_foreground(opts)
    except Exception as e:  # noqa: BLE001 - reported through the log the parent shows
        print(f"kubera supervisor failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        raise


def options_json(opts: UpOptions) -> str:
    return json.dumps(asdict(opts))


if __name__ == "__main__":
    sys.exit(main())
