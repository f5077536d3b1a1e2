"""Where kubera keeps what `kubera up` wrote, so later commands find the cluster.

Everything lives under $KUBERA_HOME (default ~/.kubera): `context.json` (endpoints and the
PIDs `kubera down` stops), and the cluster's state directory (etcd data, logs).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from services.clock import Clock, clock_for


class ContextError(Exception):
    pass


def home() -> Path:
    return Path(os.environ.get("KUBERA_HOME") or Path.home() / ".kubera")


def context_path() -> Path:
    return home() / "context.json"


@dataclass
class Context:
    #: The apiserver's address (host:port); with several replicas, theirs, comma-separated.
    apiserver: str
    etcd: str
    #: The first apiserver replica's Kubernetes HTTP API ("http(s)://host:port"; the
    #: kubeconfig's server).
    http: str = ""
    #: The supervisor process that `kubera down` signals (it stops everything else).
    supervisor_pid: int = 0
    #: Processes kubera started itself: etcd, the local Ray's processes; stopped by PID.
    pids: dict[str, int] = field(default_factory=dict)
    #: Start time (kubera.launch.procs.start_time) of each PID above and of the supervisor, so a
    #: reused PID is never signalled.
    started: dict[str, int] = field(default_factory=dict)
    #: Directories kubera created and `down` removes.
    dirs: list[str] = field(default_factory=list)
    ray_address: str = ""
    started_at: float = 0.0
    #: The scheduler's own gRPC API (traces for `kubera explain`).
    scheduler: str = ""
    #: The scheduler's Prometheus endpoint (host:port, path /metrics).
    scheduler_metrics: str = ""
    #: The node pools' gRPC APIs: {"name", "address", "first", "count", "pid"} each, with
    #: the process as it reports itself ("start_ticks", "host", "boot_id", "pid_ns": whether
    #: its pid is ours to signal; its start time is in `started` too).
    node_pools: list[dict] = field(default_factory=list)
    #: The cluster clock (services/clock.py): scale and the wall time at which it equals
    #: the wall clock.
    time_scale: float = 1.0
    time_origin: float = 0.0
    #: The (first) apiserver actor's process (`kubera chaos kill-apiserver`); the supervisor
    #: records the new one when Ray re-creates the actor. Not stopped by `down` (Ray is).
    apiserver_pid: int = 0
    #: Each apiserver replica ({"name", "address", "pid"}; `kubera up --apiservers K`,
    #: replica 0 first); `apiserver` above is their addresses, comma-separated, which every
    #: client takes (services/client/endpoints.py).
    apiservers: list[dict] = field(default_factory=list)
    #: Every component the supervisor started, where it runs and how it is
    #: (kubera.launch.components; refreshed when something restarts or moves).
    components: list[dict] = field(default_factory=list)
    #: The Ray custom resources the control plane and the pools were placed by ("": none).
    placement: dict[str, str] = field(default_factory=dict)
    #: The credentials `up` issued (kubera/launch/credentials.py; "": an open cluster):
    #: the admin's token file, the apiservers' CA, etcd's CA and client certificate.
    token_file: str = ""
    ca_file: str = ""
    etcd_ca_file: str = ""
    etcd_cert_file: str = ""
    etcd_key_file: str = ""
    #: Every component's gRPC server serves TLS (`ca_file` signed them): clients dial
    #: TLS trusting it ($KUBERA_CA_FILE, set by `use_context_credentials`).
    component_tls: bool = False

    def clock(self) -> Clock:
        """The cluster clock: what every component of this cluster stamps and reads."""
        return clock_for(self.time_scale, self.time_origin or None)

    def save(self) -> None:
        p = context_path()
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(p)


def load_context() -> Context:
    p = context_path()
    if not p.exists():
        raise ContextError(f"no kubera cluster found ({p} does not exist): run `kubera up` first")
    try:
        data = json.loads(p.read_text())
        return Context(**data)
    except (ValueError, TypeError) as e:
        raise ContextError(
            f"{p} is not a kubera context file ({e}); remove it and run `kubera up`"
        ) from None


def cluster_clock(explicit: str | None = None) -> Clock:
    """The clock a command counts ages by (AGE, LAST SCHEDULE, event ages): the cluster
    clock of the context's cluster, which objects are stamped with; the wall clock when
    the command talks to another apiserver (`explicit`, $KUBERA_SERVER) or no context
    exists (a cluster kubera did not start runs on wall time, or says nothing of its own)."""
    server = explicit or os.environ.get("KUBERA_SERVER")
    try:
        ctx = load_context()
    except ContextError:
        return clock_for(1)
    if server and server != ctx.apiserver:
        return clock_for(1)
    return ctx.clock()


def apiserver_address(explicit: str | None = None) -> str:
    """--server, $KUBERA_SERVER, or the context file's apiserver."""
    return explicit or os.environ.get("KUBERA_SERVER") or load_context().apiserver
