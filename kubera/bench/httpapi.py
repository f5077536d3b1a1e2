"""`kubera bench http`: what the Kubernetes HTTP API costs next to the gRPC API, on the
same cluster in the same run (these machines are shared and noisy, so ratios).

It starts a real `kubera up` (TLS, bearer tokens) in a private KUBERA_HOME and talks to
it as kubectl would, with the admin credentials of the kubeconfig `up` wrote:

- **list**: `--pods` pods in one namespace, listed whole over gRPC (the baseline), as
  JSON over HTTP, as a Table (what `kubectl get pods` asks for), in pages of `--limit`,
  and by real `kubectl get pods` (the whole command, as a user waits for it);
- **watch fan-out**: `--watchers` HTTP watches of the namespace's pods while `--events`
  pods are created; for every (watcher, pod) pair the time from the create call's start
  to the event's arrival, and the time until every watcher has every event. The same
  with as many gRPC watches, in the same run, is the baseline.

Every figure is the median of `--repeat` runs, each on a fresh `kubera up`; loops are
bounded in count and time (`--timeout` per phase). The bench's own process parses every
event of every watcher, so at 100 watchers its client is part of what is measured: the
apiserver's CPU seconds per phase are printed beside it (from /proc) so the two can be
told apart.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import ssl
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from kubera.bench.harness import pod
from kubera.errors import CliError
from kubera.launch import procs
from kubera.testing import Cluster

TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser("http", help="the Kubernetes HTTP API: list and watch fan-out vs gRPC")
    p.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    p.add_argument("--pods", type=int, default=10_000, help="pods in the listed namespace")
    p.add_argument("--lists", type=int, default=5, help="lists of each kind per run (median)")
    p.add_argument("--limit", type=int, default=500, help="page size of the paged list")
    p.add_argument("--watchers", type=int, default=100, help="concurrent watches")
    p.add_argument("--events", type=int, default=1_000, help="pods created while watched")
    p.add_argument("--inflight", type=int, default=16, help="creates in flight while watched")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per phase at most")
    p.add_argument("--output", default="", help="also write the figures as JSON here")
    p.set_defaults(func=cmd_bench_http)


class Http:
    """An aiohttp session with the kubeconfig's server, CA and admin token."""

    def __init__(self, kubeconfig: Path) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        self.server = cluster["server"].rstrip("/")
        self.headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
        self.ssl: ssl.SSLContext | bool = False
        if "certificate-authority-data" in cluster:
            ctx = ssl.create_default_context(
                cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
            )
            self.ssl = ctx
        self.session: Any = None

    async def __aenter__(self) -> Http:
        import aiohttp

        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self.ssl, limit=0),
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()

    async def get(self, path: str, *, accept: str = "application/json") -> bytes:
        async with self.session.get(self.server + path, headers={"Accept": accept}) as r:
            body = await r.read()
            if r.status != 200:
                raise CliError(f"bench http: GET {path} answered {r.status}: {body[:300]!r}")
            return bytes(body)


def _cpu(pid: int) -> float:
    used = procs.usage(pid) if pid else None  # (CPU seconds, RSS MB)
    return used[0] if used else 0.0


async def _timed(n: int, fn: Any) -> tuple[float, Any]:
    """The median seconds of `n` awaits of fn(), and the last result."""
    times, last = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        last = await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), last


async def _lists(ctx: dict, http: Http, client: Any, ns: str, args: argparse.Namespace) -> dict:
    from services.api.machinery.kinds import BY_KIND

    pods_kind = BY_KIND["Pod"]
    api_pid = int(ctx.get("apiserver_pid") or 0)
    out: dict[str, float] = {}
    path = f"/api/v1/namespaces/{ns}/pods"

    cpu0 = _cpu(api_pid)
    s, (listed, _) = await _timed(args.lists, lambda: client.list(pods_kind, namespace=ns))
    if len(listed) != args.pods:
        raise CliError(f"bench http: gRPC list gave {len(listed)} of {args.pods} pods")
    out["grpc_list_s"] = s
    out["grpc_list_apiserver_cpu_s"] = (_cpu(api_pid) - cpu0) / args.lists

    cpu0 = _cpu(api_pid)
    s, body = await _timed(args.lists, lambda: http.get(path))
    items = json.loads(body)["items"]
    if len(items) != args.pods:
        raise CliError(f"bench http: HTTP list gave {len(items)} of {args.pods} pods")
    out["http_list_s"] = s
    out["http_list_mib"] = len(body) / 2**20
    out["http_list_apiserver_cpu_s"] = (_cpu(api_pid) - cpu0) / args.lists
    t0 = time.perf_counter()
    json.loads(body)
    out["http_list_client_parse_s"] = time.perf_counter() - t0

    cpu0 = _cpu(api_pid)
    s, body = await _timed(args.lists, lambda: http.get(path, accept=TABLE_ACCEPT))
    rows = json.loads(body).get("rows") or []
    if len(rows) != args.pods:
        raise CliError(f"bench http: Table list gave {len(rows)} of {args.pods} rows")
    out["http_table_s"] = s
    out["http_table_mib"] = len(body) / 2**20
    out["http_table_apiserver_cpu_s"] = (_cpu(api_pid) - cpu0) / args.lists

    async def paged() -> int:
        got, cont = 0, ""
        for _ in range(args.pods // args.limit + 2):
            q = f"?limit={args.limit}" + (f"&continue={cont}" if cont else "")
            doc = json.loads(await http.get(path + q))
            got += len(doc["items"])
            cont = doc["metadata"].get("continue", "")
            if not cont:
                return got
        raise CliError("bench http: the paged list did not end")

    s, got = await _timed(args.lists, paged)
    if got != args.pods:
        raise CliError(f"bench http: paged list gave {got} of {args.pods} pods")
    out["http_paged_s"] = s

    def kubectl() -> None:
        r = subprocess.run(
            ["kubectl", "get", "pods", "-n", ns, "--no-headers"],
            env={
                "KUBECONFIG": str(http_kubeconfig(ctx)),
                "HOME": ctx["_home"],
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            },
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
        lines = r.stdout.count("\n")
        if r.returncode != 0 or lines != args.pods:
            raise CliError(
                f"bench http: kubectl get pods: rc {r.returncode}, {lines} rows: {r.stderr[:300]}"
            )

    times = []
    for _ in range(args.lists):
        t0 = time.perf_counter()
        await asyncio.to_thread(kubectl)
        times.append(time.perf_counter() - t0)
    out["kubectl_get_s"] = statistics.median(times)
    return out


def http_kubeconfig(ctx: dict) -> Path:
    return Path(ctx["_home"]) / "kubeconfig"


async def _http_watch(
    http: Http, path: str, rv: str, names: set[str], arrivals: dict, stop: asyncio.Event
) -> None:
    """One HTTP watch from `rv`: the arrival time of each ADDED pod in `names`."""
    url = f"{http.server}{path}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
    async with http.session.get(url) as r:
        if r.status != 200:
            raise CliError(f"bench http: watch answered {r.status}")
        buf = b""
        async for chunk in r.content.iter_any():
            now = time.perf_counter()
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                ev = json.loads(line)
                if ev["type"] == "ADDED":
                    name = ev["object"]["metadata"]["name"]
                    if name in names and name not in arrivals:
                        arrivals[name] = now
            if len(arrivals) == len(names) or stop.is_set():
                return


async def _grpc_watch(
    client: Any, ns: str, rv: str, names: set[str], arrivals: dict, stop: asyncio.Event
) -> None:
    from services.api.machinery.kinds import BY_KIND
    from services.api.machinery.listoptions import ListOptions

    options = ListOptions(resource_version=rv)
    async for batch in client.watch_batches(BY_KIND["Pod"], namespace=ns, options=options):
        now = time.perf_counter()
        for ev in batch:
            name = ev.object.metadata.name
            if ev.type == "ADDED" and name in names and name not in arrivals:
                arrivals[name] = now
        if len(arrivals) == len(names) or stop.is_set():
            return


async def _fanout(
    ctx: dict, which: str, http: Http, client: Any, args: argparse.Namespace, run: int
) -> dict:
    """`--watchers` watches of a fresh namespace while `--events` pods are created there."""
    from protos.kubera.v1 import core_pb2

    ns = f"watch-{which}-{run}"
    await client.create(core_pb2.Namespace(metadata={"name": ns}))
    _, rv = await client.list(_pods_kind(), namespace=ns)
    names = {f"w{i}" for i in range(args.events)}
    arrivals: list[dict[str, float]] = [{} for _ in range(args.watchers)]
    stop = asyncio.Event()
    path = f"/api/v1/namespaces/{ns}/pods"
    if which == "http":
        tasks = [asyncio.create_task(_http_watch(http, path, rv, names, a, stop)) for a in arrivals]
    else:
        tasks = [asyncio.create_task(_grpc_watch(client, ns, rv, names, a, stop)) for a in arrivals]
    await asyncio.sleep(0)  # let every watch send its request before the first create
    sent: dict[str, float] = {}
    sem = asyncio.Semaphore(args.inflight)
    api_pid = int(ctx.get("apiserver_pid") or 0)
    cpu0 = _cpu(api_pid)
    t_start = time.perf_counter()

    async def create(i: int) -> None:
        async with sem:
            sent[f"w{i}"] = time.perf_counter()
            await client.create(pod(f"w{i}", ns))

    try:
        await asyncio.wait_for(
            asyncio.gather(*(create(i) for i in range(args.events))), args.timeout
        )
        await asyncio.wait_for(asyncio.gather(*tasks), args.timeout)
    finally:
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    t_all = max(max(a.values()) for a in arrivals) - t_start
    lat = sorted((a[n] - sent[n]) * 1000 for a in arrivals for n in names)
    return {
        f"{which}_watch_latency_p50_ms": lat[len(lat) // 2],
        f"{which}_watch_latency_p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        f"{which}_watch_all_delivered_s": t_all,
        f"{which}_watch_events_per_s": args.watchers * args.events / t_all,
        f"{which}_watch_apiserver_cpu_s": _cpu(api_pid) - cpu0,
    }


def _client(ctx: dict) -> Any:
    """A gRPC client of the cluster, as the kubera CLI makes one (the admin's token)."""
    from services.client import Client

    return Client(ctx["apiserver"], timeout=120)


def _pods_kind() -> Any:
    from services.api.machinery.kinds import BY_KIND

    return BY_KIND["Pod"]


async def _measure(ctx: dict, args: argparse.Namespace, run: int) -> dict[str, float]:
    from protos.kubera.v1 import core_pb2

    client = _client(ctx)
    out: dict[str, float] = {}
    try:
        ns = f"list-{run}"
        await client.create(core_pb2.Namespace(metadata={"name": ns}))
        for start in range(0, args.pods, 500):
            res = await client.batch_create(
                [pod(f"p{i}", ns) for i in range(start, min(start + 500, args.pods))]
            )
            bad = [r.error for r in res if r.error is not None]
            if bad:
                raise CliError(f"bench http: creating the listed pods failed: {bad[0]}")
        async with Http(http_kubeconfig(ctx)) as http:
            out.update(await _lists(ctx, http, client, ns, args))
            out.update(await _fanout(ctx, "grpc", http, client, args, run))
            out.update(await _fanout(ctx, "http", http, client, args, run))
    finally:
        await client.close()
    return out


ROWS = (
    ("list, gRPC (baseline)", "grpc_list_s", "s"),
    ("list, HTTP JSON", "http_list_s", "s"),
    ("list, HTTP Table (kubectl's)", "http_table_s", "s"),
    ("list, HTTP pages of --limit", "http_paged_s", "s"),
    ("kubectl get pods (whole command)", "kubectl_get_s", "s"),
    ("HTTP JSON list size", "http_list_mib", "MiB"),
    ("apiserver CPU per HTTP JSON list", "http_list_apiserver_cpu_s", "s"),
    ("apiserver CPU per gRPC list", "grpc_list_apiserver_cpu_s", "s"),
    ("watch latency p50, gRPC (baseline)", "grpc_watch_latency_p50_ms", "ms"),
    ("watch latency p50, HTTP", "http_watch_latency_p50_ms", "ms"),
    ("watch latency p99, gRPC (baseline)", "grpc_watch_latency_p99_ms", "ms"),
    ("watch latency p99, HTTP", "http_watch_latency_p99_ms", "ms"),
    ("all events at all watchers, gRPC", "grpc_watch_all_delivered_s", "s"),
    ("all events at all watchers, HTTP", "http_watch_all_delivered_s", "s"),
    ("events delivered /s, gRPC", "grpc_watch_events_per_s", "/s"),
    ("events delivered /s, HTTP", "http_watch_events_per_s", "/s"),
    ("apiserver CPU, gRPC fan-out", "grpc_watch_apiserver_cpu_s", "s"),
    ("apiserver CPU, HTTP fan-out", "http_watch_apiserver_cpu_s", "s"),
)


def cmd_bench_http(args: argparse.Namespace) -> int:
    if (
        min(
            args.repeat,
            args.pods,
            args.lists,
            args.limit,
            args.watchers,
            args.events,
            args.inflight,
        )
        < 1
    ):
        raise CliError("bench http: every count must be >= 1")
    runs: list[dict[str, float]] = []
    for r in range(args.repeat):
        cluster = Cluster()
        try:
            up_s = cluster.up()
            print(f"run {r + 1}/{args.repeat}: up in {up_s:.2f}s", flush=True)
            ctx = {**cluster.context, "_home": str(cluster.home)}
            runs.append(asyncio.run(_measure(ctx, args, r)))
        finally:
            cluster.down()
    med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    ratios = {
        "http_list_vs_grpc_list": med["http_list_s"] / med["grpc_list_s"],
        "http_table_vs_grpc_list": med["http_table_s"] / med["grpc_list_s"],
        "http_watch_p99_vs_grpc": med["http_watch_latency_p99_ms"]
        / med["grpc_watch_latency_p99_ms"],
        "http_watch_all_vs_grpc": med["http_watch_all_delivered_s"]
        / med["grpc_watch_all_delivered_s"],
    }
    print(
        f"\nkubera bench http — median of {args.repeat} runs, {args.pods} pods listed, "
        f"{args.watchers} watchers × {args.events} events"
    )
    width = max(len(r[0]) for r in ROWS)
    for name, key, unit in ROWS:
        v = med[key]
        print(
            f"  {name:<{width}}  {v:>10.3f} {unit}"
            if unit in ("s", "MiB")
            else f"  {name:<{width}}  {v:>10.1f} {unit}"
        )
    print("ratios (HTTP / gRPC, same run): " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    if args.output:
        Path(args.output).write_text(
            json.dumps({"median": med, "ratios": ratios, "runs": runs}, indent=2) + "\n"
        )
        print(f"\nfigures written to {args.output}")
    return 0
