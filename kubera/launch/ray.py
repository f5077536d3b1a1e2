"""Kubera's Ray bootstrap, through Ray's public API only: the environment Ray must see before
it is imported, joining an existing cluster or starting a local head on loopback (its temp
dir, the processes it started), and what the supervisor asks the connected cluster — its
nodes and its actor table.

Two things Ray answers only through private API are found another way:

- The processes of a local head (`kubera down` stops them by PID, experiments measure
  their CPU): the processes `ray.init()` started, which are this process's children that
  were not there before it (its workers are the raylet's children, not ours).
- The actor table (where every component runs, and which ones Ray re-created): Ray's state
  API needs the dashboard, which kubera leaves out (`include_dashboard=False` here,
  `--include-dashboard=false` in the compose file), so it is read from the GCS itself —
  its `GetAllActorInfo` call, which the state API and Ray's private state module make — at
  the address `ray.get_runtime_context().gcs_address` gives. Plain gRPC: kubera runs Ray
  with RAY_AUTH_MODE=disabled; with RAY_USE_TLS, Ray's own TLS files are used.
"""

from __future__ import annotations

import functools
import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

from kubera.launch import procs
from kubera.launch.context import home
from kubera.launch.options import ClusterOptions

# Keep the embedded Ray on loopback and quiet, before ray is imported anywhere.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

#: The Ray namespace when neither --ray-namespace nor $KUBERA_RAY_NAMESPACE names one.
DEFAULT_RAY_NAMESPACE = "kubera"

#: Ray's actor states as `kubera components` shows them.
STATES = {
    "ALIVE": "alive",
    "RESTARTING": "restarting",
    "DEAD": "dead",
    "PENDING_CREATION": "pending",
    "DEPENDENCIES_UNREADY": "pending",
}

#: Seconds one read of the actor table may take (the reader thread retries after it).
TABLE_TIMEOUT = 60.0

#: This job's actors by id (hex): state, node_id, node_ip, pid, restarts.
ActorTable = dict[str, dict[str, Any]]


def ray_namespace(opts: ClusterOptions) -> str:
    return opts.ray_namespace or os.environ.get("KUBERA_RAY_NAMESPACE") or DEFAULT_RAY_NAMESPACE


def ray_temp_dir() -> str:
    """Ray's temp dir: under $KUBERA_HOME when the path is short enough for the unix
    sockets Ray puts inside it (107 bytes in all), else a fresh one directly in /tmp."""
    candidate = home() / "ray"
    if len(str(candidate)) <= 32:
        candidate.mkdir(parents=True, exist_ok=True, mode=0o700)
        return str(candidate)
    return tempfile.mkdtemp(prefix="kray-", dir="/tmp")


def join_cluster(address: str, namespace: str) -> None:
    """Connect this process to the existing Ray cluster at `address`, as a driver."""
    import ray

    ray.init(address=address, namespace=namespace, log_to_driver=False, configure_logging=False)


def start_local_head(temp_dir: str, namespace: str) -> dict[str, int]:
    """Start a one-node Ray cluster on loopback, without the dashboard, and connect to it;
    returns the processes it started by name (`ray-NAME-I` → pid)."""
    import ray

    me = os.getpid()
    before = set(children(me))
    ray.init(
        include_dashboard=False,
        _temp_dir=temp_dir,
        _node_ip_address="127.0.0.1",
        namespace=namespace,
        log_to_driver=False,
        configure_logging=False,
    )
    return head_processes([p for p in children(me) if p not in before])


def children(pid: int) -> list[int]:
    """The live processes whose parent is `pid`."""
    out = []
    for p in procs.descendants(pid):
        fields = procs.stat(p)
        if fields is not None and int(fields[1]) == pid:
            out.append(p)
    return out


def head_processes(pids: list[int]) -> dict[str, int]:
    """The processes of a head by name, as `ray-NAME-I` (NAME: the program or Python script
    each runs, as gcs_server, raylet, log_monitor, dashboard; I counts the ones of a name)."""
    out: dict[str, int] = {}
    seen: dict[str, int] = {}
    for pid in sorted(pids):
        name = process_name(pid)
        i = seen.get(name, 0)
        seen[name] = i + 1
        out[f"ray-{name}-{i}"] = pid
    return out


def process_name(pid: int) -> str:
    """The program a process runs (its first argument's base name), or for a Python
    interpreter the script it runs (without .py); "" when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    if not args:
        return ""
    program = os.path.basename(args[0])
    if program.startswith("python"):
        script = next((a for a in args[1:] if a.endswith(".py")), "")
        if script:
            return os.path.basename(script)[: -len(".py")]
    return program


def node_ip() -> str:
    """This process's address as Ray sees it (the driver's node)."""
    import ray

    return str(ray.util.get_node_ip_address())


def ray_nodes() -> list[dict[str, Any]]:
    """The Ray cluster's nodes: id, ip, alive, head, resources (ray.nodes())."""
    import ray

    return [
        {
            "id": n["NodeID"],
            "ip": n.get("NodeManagerAddress", ""),
            "alive": bool(n.get("Alive")),
            "head": "node:__internal_head__" in n.get("Resources", {}),
            "resources": dict(n.get("Resources", {})),
        }
        for n in ray.nodes()
    ]


def actor_table() -> ActorTable:
    """This job's actors by id (hex): state, node id and address, pid, restarts — from the
    GCS (see the module's docstring)."""
    import ray

    # Ray's generated protobuf modules (typed Any here: they ship no stubs)
    gcs_pb2 = importlib.import_module("ray.core.generated.gcs_pb2")
    gcs_service_pb2 = importlib.import_module("ray.core.generated.gcs_service_pb2")
    context = ray.get_runtime_context()
    request = gcs_service_pb2.GetAllActorInfoRequest(
        filters=gcs_service_pb2.GetAllActorInfoRequest.Filters(
            job_id=bytes.fromhex(context.get_job_id())
        )
    )
    # wait_for_ready: a channel between connection attempts waits for the GCS (up to the
    # timeout), as Ray's own GCS client does, instead of failing the read at once
    reply = _actor_info_stub(context.gcs_address).GetAllActorInfo(
        request, timeout=TABLE_TIMEOUT, wait_for_ready=True
    )
    if reply.status.code != 0:
        raise RuntimeError(f"GetAllActorInfo: {reply.status.message or reply.status.code}")
    out: ActorTable = {}
    for actor in reply.actor_table_data:
        state = gcs_pb2.ActorTableData.ActorState.Name(actor.state)
        out[actor.actor_id.hex()] = {
            "state": STATES.get(state, state.lower()),
            "node_id": actor.address.node_id.hex(),
            "node_ip": actor.address.ip_address,
            "pid": int(actor.pid),
            "restarts": int(actor.num_restarts),
        }
    return out


@functools.cache
def _actor_info_stub(gcs_address: str) -> Any:
    """One channel to the GCS per address (per Ray cluster this process joined)."""
    import grpc
    from ray.core.generated import gcs_service_pb2_grpc

    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):

        def read(var: str) -> bytes | None:
            path = os.environ.get(var)
            return Path(path).read_bytes() if path else None

        channel = grpc.secure_channel(
            gcs_address,
            grpc.ssl_channel_credentials(
                root_certificates=read("RAY_TLS_CA_CERT"),
                private_key=read("RAY_TLS_SERVER_KEY"),
                certificate_chain=read("RAY_TLS_SERVER_CERT"),
            ),
        )
    else:
        channel = grpc.insecure_channel(gcs_address)
    return gcs_service_pb2_grpc.ActorInfoGcsServiceStub(channel)


def actor_id(handle: Any) -> str:
    return str(handle._actor_id.hex())
