"""`kubera up` and `kubera down`: the cluster's lifecycle, and nothing left behind."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kubera.cli import components
from kubera.errors import CliError
from kubera.launch import procs
from kubera.launch.context import Context, context_path, home, load_context
from kubera.launch.credentials import kubeconfig_path, write_kubeconfig
from kubera.launch.options import (
    ClusterOptions,
    NodeOptions,
    SchedulingOptions,
    UpOptions,
    options_json,
)
from kubera.launch.placement import CONTROL_PLANE, NODE_POOL
from kubera.launch.supervisor import FAILED_MARK, StartupError, run_foreground
from services.apiserver import (
    DISABLEABLE,
    SCHEDULER_PERF_DISABLED,
    ServiceNetwork,
    parse_node_port_range,
)
from services.leaderelection import TimingOverrides


def register(sub: argparse._SubParsersAction) -> None:
    up = sub.add_parser("up", help="start a cluster: etcd, Ray and the control-plane actors")
    up.add_argument(
        "--detach", "-d", action="store_true", help="return once ready; the cluster keeps running"
    )
    up.add_argument(
        "--etcd", default="", metavar="URL", help="use an existing etcd instead of starting one"
    )
    up.add_argument("--ray-address", default="", metavar="ADDR", help="use an existing Ray cluster")
    up.add_argument(
        "--ray-namespace",
        default="",
        metavar="NS",
        help="the Ray namespace of kubera's named actors (default: $KUBERA_RAY_NAMESPACE, else "
        "kubera); give each control plane sharing a Ray cluster its own",
    )
    up.add_argument(
        "--control-plane-resource",
        default=None,
        metavar="NAME",
        help="the Ray custom resource of the nodes for the apiserver, schedulers and "
        f"controller-managers (default {CONTROL_PLANE}; ignored, with a warning when given, "
        "when no node has it)",
    )
    up.add_argument(
        "--node-pool-resource",
        default=None,
        metavar="NAME",
        help=f"the Ray custom resource of the nodes for the node pools (default {NODE_POOL}; "
        "ignored, with a warning when given, when no node has it)",
    )
    up.add_argument(
        "--nodes",
        type=int,
        default=None,
        metavar="N",
        help="hollow nodes to start (default: the template's counts, or 0 without one; 0: none)",
    )
    up.add_argument(
        "--node-template",
        default="",
        metavar="FILE",
        help="a NodeTemplate (YAML): node kinds, capacity, labels, taints, stages, usage, eviction",
    )
    up.add_argument(
        "--nodes-per-pool",
        type=int,
        default=1000,
        metavar="M",
        help="hollow nodes per node-pool actor (default 1000)",
    )
    up.add_argument(
        "--watch-per-node",
        action="store_true",
        help="one pod watch per hollow node (realistic apiserver load) instead of one per pool",
    )
    up.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="S",
        help="divide every simulated duration by S (S=10: a 300s toleration runs in 30s)",
    )
    up.add_argument("--no-controllers", action="store_true", help="start no controller-manager")
    up.add_argument(
        "--controllers",
        default="*",
        metavar="LIST",
        help="the controllers to run, as kube-controller-manager's --controllers: names, "
        "'*' for all, '-name' to leave one out (default '*'; e.g. '*,-nodelifecycle')",
    )
    up.add_argument(
        "--service-cluster-ip-range",
        default="10.96.0.0/12",
        metavar="CIDR",
        help="the IPv4 range services' cluster IPs come from (default 10.96.0.0/12, kubeadm's)",
    )
    up.add_argument(
        "--service-node-port-range",
        default="30000-32767",
        metavar="LO-HI",
        help="the ports NodePort services get (default 30000-32767)",
    )
    up.add_argument(
        "--disable-admission-plugins",
        default="",
        metavar="NAMES",
        help="admission plugins the apiserver does not run, comma-separated (of "
        + ", ".join(sorted(DISABLEABLE))
        + "; kubera experiment passes upstream scheduler_perf's: "
        + ",".join(SCHEDULER_PERF_DISABLED)
        + ")",
    )
    up.add_argument(
        "--apiserver-port",
        type=int,
        default=0,
        metavar="PORT",
        help="apiserver port (0: any free; with --apiservers K, the first replica's)",
    )
    up.add_argument(
        "--apiservers",
        type=int,
        default=1,
        metavar="K",
        help="active-active apiserver replicas on the one etcd, each with its own watch cache; "
        "components spread over them and fail over when one dies",
    )
    up.add_argument(
        "--scheduler-config",
        action="append",
        default=[],
        metavar="FILE",
        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), replacing the "
        "default's two profiles (default-scheduler; scheduler-plugins-scheduler, with "
        "Coscheduling); repeat it to run separate scheduler deployments side by side, each "
        "with its own schedulerNames and Lease",
    )
    up.add_argument("--scheduler-seed", type=int, default=None, help=argparse.SUPPRESS)
    up.add_argument(
        "--feature-gates",
        default="",
        metavar="LIST",
        help="feature gates of the schedulers, as kube-scheduler's --feature-gates: "
        "'Name=true,Name=false' (e.g. 'OpportunisticBatching=false', "
        "'SchedulerAsyncAPICalls=true')",
    )
    up.add_argument(
        "--no-default-storage-class",
        action="store_true",
        help="make no default StorageClass (by default a new cluster gets `standard`: hollow "
        "volumes, WaitForFirstConsumer, as kind ships one)",
    )
    up.add_argument(
        "--no-scheduler",
        action="store_true",
        help="start no scheduler (bring your own schedulerName)",
    )
    up.add_argument(
        "--schedulers",
        type=int,
        default=1,
        metavar="K",
        help="scheduler replicas per deployment: one leader, K-1 warm standbys (shared-state: all active)",
    )
    up.add_argument(
        "--controller-managers",
        type=int,
        default=1,
        metavar="K",
        help="controller-manager replicas: one leader, K-1 standbys",
    )
    up.add_argument(
        "--scheduler-mode",
        choices=("leader", "shared-state"),
        default="leader",
        help="leader: one elected scheduler per deployment binds, fenced; shared-state: "
        "all replicas schedule (Omega), binds checked against node allocation records",
    )
    up.add_argument(
        "--shared-state-partition",
        choices=("none", "hash"),
        default="none",
        help="shared-state: every replica competes for every pod (none) or pods are split by UID hash",
    )
    for flag, what in (
        ("lease-duration", "how long standbys wait before taking a silent leader's lease"),
        ("renew-deadline", "how long a leader retries renewing before it steps down"),
        ("retry-period", "the pause between campaign and renewal attempts"),
    ):
        up.add_argument(
            f"--leader-elect-{flag}",
            default=None,
            metavar="D",
            help=f"{what} (e.g. 2s, 1500ms; default: the configuration's, else 15s/10s/2s)",
        )
    up.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for the cluster to be ready"
    )
    up.add_argument(
        "--bind-address",
        default="",
        metavar="IP",
        help="where the apiservers listen, gRPC and HTTP (default 127.0.0.1; on a Ray cluster "
        "the node's address; 0.0.0.0: every interface)",
    )
    up.add_argument(
        "--insecure",
        action="store_true",
        help="issue no credentials: no tokens, plain HTTP, etcd without TLS (tests, demos)",
    )
    up.add_argument(
        "--component-tls",
        action="store_true",
        help="TLS on every component's gRPC server, even on one Ray node (always on when the "
        "Ray cluster has several nodes; needs the credentials --insecure drops)",
    )
    for flag, what in (
        ("--etcd-cafile", "the CA that signed the --etcd server's certificate"),
        ("--etcd-certfile", "a client certificate for the --etcd (PEM)"),
        ("--etcd-keyfile", "the key of --etcd-certfile (PEM)"),
    ):
        up.add_argument(flag, default="", metavar="FILE", help=what)
    up.set_defaults(func=cmd_up)
    kc = sub.add_parser(
        "kubeconfig", help="print the kubeconfig of the running cluster (kubectl, client libraries)"
    )
    kc.set_defaults(func=cmd_kubeconfig)
    down = sub.add_parser(
        "down", help="stop everything `kubera up` started and remove what it wrote"
    )
    down.add_argument("--timeout", type=float, default=60.0)
    down.set_defaults(func=cmd_down)
    components.register(sub)  # where each of the cluster's processes runs


def _print_ready(ctx: Context, elapsed: float) -> None:
    print(f"kubera is up ({elapsed:.1f}s)")
    print(f"  apiserver: {ctx.apiserver}")
    if ctx.http:
        print(f"  http api:  {ctx.http}")
    print(f"  etcd:      {ctx.etcd}")
    print(f"  ray:       {ctx.ray_address}")
    if ctx.component_tls:
        print("  grpc:      TLS on every component's server (the cluster CA's certificates)")
    roles = {"control_plane": "control plane", "node_pool": "pools"}
    placed = [f"{role} on {ctx.placement[k]}" for k, role in roles.items() if ctx.placement.get(k)]
    if ctx.placement.get("missing"):
        print(f"  warning:   no Ray node has {ctx.placement['missing']}: placed as if not given")
    if placed:
        nodes = {c["node_id"] for c in ctx.components if c.get("node_id")}
        print(f"  placement: {', '.join(placed)}; {len(nodes)} Ray node(s) in use")
        print("             (kubera components: where each runs)")
    if ctx.scheduler:
        print(f"  scheduler: {ctx.scheduler} (metrics: http://{ctx.scheduler_metrics}/metrics)")
    if ctx.node_pools:
        nodes = sum(p["count"] for p in ctx.node_pools)
        print(f"  nodes:     {nodes} hollow nodes in {len(ctx.node_pools)} pool(s)")
    if ctx.time_scale != 1:
        print(f"  time:      simulated, {ctx.time_scale:g}x")
    print(f"  context:   {context_path()}")
    if kubeconfig_path().exists():
        print(f"  kubeconfig: {kubeconfig_path()} (kubectl --kubeconfig ...; `kubera kubeconfig`)")
    elif ctx.token_file:
        print(f"  admin token: {ctx.token_file}")


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    """Print the kubeconfig `kubera up` wrote (written again from the context if gone)."""
    ctx = load_context()
    path = kubeconfig_path()
    if not path.exists() and write_kubeconfig(ctx) is None:
        raise CliError("the cluster serves no HTTP API: there is no kubeconfig to print")
    sys.stdout.write(path.read_text())
    return 0


def _check_not_running() -> None:
    if not context_path().exists():
        return
    try:
        ctx = load_context()
    except Exception:  # noqa: BLE001 - an unreadable context is replaced
        return
    if procs.alive(ctx.supervisor_pid, ctx.started.get(str(ctx.supervisor_pid), 0)):
        raise CliError(
            f"a kubera cluster is already running (apiserver at {ctx.apiserver}); run `kubera down` first"
        )
    _cleanup(ctx)  # left over from a crash


def _read_scheduler_configs(paths: list[str]) -> list[str]:
    """The files' texts, checked here so a bad config is one clear line before anything
    starts; deployments must not share a schedulerName or a Lease."""
    from services.scheduler.config import ConfigError, load_config

    texts: list[str] = []
    names: dict[str, str] = {}
    leases: dict[str, str] = {}
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise CliError(f"--scheduler-config: cannot read {path}: {e.strerror}") from None
        try:
            cfg = load_config(text)
        except ConfigError as e:
            raise CliError(f"--scheduler-config {path}: {e}") from None
        for p in cfg.profiles:
            if p.scheduler_name in names:
                raise CliError(
                    f"--scheduler-config {path}: schedulerName {p.scheduler_name!r} is already "
                    f"served by {names[p.scheduler_name]}; each deployment needs its own names"
                )
            names[p.scheduler_name] = path
        le = cfg.leader_election
        lease = f"{le.resource_namespace}/{le.resource_name}"
        if le.leader_elect and lease in leases:
            raise CliError(
                f"--scheduler-config {path}: leaderElection Lease {lease} is already used by "
                f"{leases[lease]}; set leaderElection.resourceName to give this deployment its own"
            )
        leases[lease] = path
        texts.append(text)
    return texts or [""]


def _lease_flags(args: argparse.Namespace) -> TimingOverrides:
    """--leader-elect-* as seconds, checked by client-go's rules against each other and
    the defaults they do not override (lease > renew > 1.2 × retry)."""
    from services.api.machinery.duration import parse_duration

    out: dict[str, float | None] = {}
    for name in ("lease_duration", "renew_deadline", "retry_period"):
        raw = getattr(args, f"leader_elect_{name}")
        flag = f"--leader-elect-{name.replace('_', '-')}"
        if raw is None:
            out[name] = None
            continue
        try:
            out[name] = parse_duration(raw)
        except ValueError as e:
            raise CliError(f"{flag}: {e}") from None
    overrides = TimingOverrides(**out)
    try:
        overrides.check()
    except ValueError as e:
        raise CliError(f"--leader-elect-*: {e}") from None
    return overrides


def _read_node_template(path: str, nodes: int | None) -> tuple[str, int]:
    """The template's text (checked here: one clear line before anything starts) and the
    node count: --nodes, else the template's counts, else 0."""
    if not path:
        return "", nodes or 0
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise CliError(f"--node-template: cannot read {path}: {e.strerror}") from None
    from services.api.helpers.stages import TemplateError
    from services.kubelet import EvictionConfig, load_template

    try:
        template = load_template(text)
        for kind in template.kinds:
            EvictionConfig.from_dict(kind.eviction)
    except (TemplateError, ValueError) as e:
        raise CliError(f"--node-template {path}: {e}") from None
    return text, template.total if nodes is None else nodes


def _controllers(spec: str) -> tuple[str, ...]:
    """--controllers as the names to run; () when it names all of them (the default)."""
    from services.controllers import ALL_CONTROLLERS, select_controllers

    try:
        chosen = select_controllers(spec)
    except ValueError as e:
        raise CliError(str(e)) from None
    return () if chosen == ALL_CONTROLLERS else chosen


def _feature_gates(spec: str) -> dict[str, bool]:
    """--feature-gates as a mapping of overrides."""
    from services.api import features

    try:
        return features.parse(spec)
    except ValueError as e:
        raise CliError(f"--feature-gates: {e}") from None


def cmd_up(args: argparse.Namespace) -> int:
    if args.nodes is not None and args.nodes < 0:
        raise CliError(f"--nodes: must be >= 0, got {args.nodes}")
    if args.nodes_per_pool < 1:
        raise CliError(f"--nodes-per-pool: must be >= 1, got {args.nodes_per_pool}")
    if not args.time_scale > 0:
        raise CliError(f"--time-scale: must be > 0, got {args.time_scale}")
    try:
        ServiceNetwork(
            cidr=args.service_cluster_ip_range,
            node_ports=parse_node_port_range(args.service_node_port_range),
        )
    except ValueError as e:
        raise CliError(f"--service-cluster-ip-range / --service-node-port-range: {e}") from None
    disabled = tuple(p.strip() for p in args.disable_admission_plugins.split(",") if p.strip())
    unknown = sorted(set(disabled) - DISABLEABLE)
    if unknown:
        raise CliError(
            f"--disable-admission-plugins: unknown {', '.join(unknown)} "
            f"(known: {', '.join(sorted(DISABLEABLE))})"
        )
    for flag, value in (
        ("--apiservers", args.apiservers),
        ("--schedulers", args.schedulers),
        ("--controller-managers", args.controller_managers),
    ):
        if value < 1:
            raise CliError(f"{flag}: must be >= 1, got {value}")
    etcd_tls = (args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile)
    if any(etcd_tls) and not args.etcd:
        raise CliError("--etcd-cafile/--etcd-certfile/--etcd-keyfile need --etcd URL")
    if bool(args.etcd_certfile) != bool(args.etcd_keyfile):
        raise CliError("--etcd-certfile and --etcd-keyfile go together")
    for path in etcd_tls:
        if path and not os.path.isfile(path):
            raise CliError(f"{path}: no such file")
    feature_gates = _feature_gates(args.feature_gates)
    _check_not_running()
    scheduler_configs = _read_scheduler_configs(args.scheduler_config)
    election = _lease_flags(args)
    template, nodes = _read_node_template(args.node_template, args.nodes)
    opts = UpOptions(
        cluster=ClusterOptions(
            etcd=args.etcd,
            ray_address=args.ray_address,
            ray_namespace=args.ray_namespace,
            apiserver_port=args.apiserver_port,
            apiservers=args.apiservers,
            time_scale=args.time_scale,
            service_cluster_ip_range=args.service_cluster_ip_range,
            service_node_port_range=args.service_node_port_range,
            default_storage_class="" if args.no_default_storage_class else "standard",
            disable_admission_plugins=disabled,
            with_controllers=not args.no_controllers,
            controller_managers=args.controller_managers,
            controllers=_controllers(args.controllers),
            control_plane_resource=args.control_plane_resource,
            node_pool_resource=args.node_pool_resource,
            secure=not args.insecure,
            component_tls=args.component_tls,
            bind_address=args.bind_address,
            etcd_cafile=os.path.abspath(args.etcd_cafile) if args.etcd_cafile else "",
            etcd_certfile=os.path.abspath(args.etcd_certfile) if args.etcd_certfile else "",
            etcd_keyfile=os.path.abspath(args.etcd_keyfile) if args.etcd_keyfile else "",
        ),
        scheduling=SchedulingOptions(
            enabled=not args.no_scheduler,
            config=scheduler_configs[0],
            extra_configs=tuple(scheduler_configs[1:]),
            replicas=args.schedulers,
            seed=args.scheduler_seed,
            feature_gates=feature_gates,
            mode=args.scheduler_mode,
            partition=args.shared_state_partition,
        ),
        election=election,
        nodes=NodeOptions(
            count=nodes,
            template=template,
            per_pool=args.nodes_per_pool,
            watch_per_node=args.watch_per_node,
        ),
    )
    t0 = time.monotonic()
    if not args.detach:

        def ready(ctx: Context) -> None:
            _print_ready(ctx, time.monotonic() - t0)
            print("press Ctrl-C to stop", flush=True)

        try:
            return run_foreground(opts, on_ready=ready)
        except StartupError as e:
            raise CliError(f"kubera up failed: {e}") from None
    logs = home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / "supervisor.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubera.launch.supervisor", options_json(opts)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=os.getcwd(),
        )
    leader_started = procs.start_time(proc.pid)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            # It stopped what it started; what outlived it (a Ray worker whose raylet was
            # killed a moment ago) is still in its session.
            procs.sweep_session(proc.pid, leader_started)
            lines = log_path.read_text(errors="replace").strip().splitlines()
            said = [ln for ln in lines if ln.startswith(FAILED_MARK)]
            if said:
                raise CliError(f"{said[-1]} (log: {log_path})")
            raise CliError(f"kubera up failed: {(lines or ['no output'])[-1]} (log: {log_path})")
        if context_path().exists():
            with contextlib.suppress(Exception):
                ctx = load_context()
                if ctx.supervisor_pid == proc.pid:
                    _print_ready(ctx, time.monotonic() - t0)
                    return 0
        time.sleep(0.1)
    procs.stop(proc.pid, leader_started, 60)  # SIGTERM: it stops what it started
    procs.sweep_session(proc.pid, leader_started)
    raise CliError(f"kubera up: not ready after {args.timeout:.0f}s; see {log_path}")


def _cleanup(ctx: Context) -> None:
    """Stop by PID whatever the supervisor left, and remove what kubera wrote."""
    for pid in ctx.pids.values():
        procs.stop(pid, ctx.started.get(str(pid), 0), 5)
    procs.sweep_session(ctx.supervisor_pid, ctx.started.get(str(ctx.supervisor_pid), 0))
    for d in ctx.dirs:
        shutil.rmtree(d, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        context_path().unlink()
    logs = home() / "logs"
    with contextlib.suppress(FileNotFoundError):
        (logs / "supervisor.log").unlink()
    with contextlib.suppress(OSError):
        logs.rmdir()  # only when empty: other files there are not ours


def cmd_down(args: argparse.Namespace) -> int:
    ctx = load_context()
    procs.stop(ctx.supervisor_pid, ctx.started.get(str(ctx.supervisor_pid), 0), args.timeout)
    _cleanup(ctx)
    print("kubera is down")
    return 0
