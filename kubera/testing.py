"""A running cluster for tests and benches: the `kubera` CLI run as a user runs it, in a
private KUBERA_HOME, so each holder gets its own etcd, Ray and actors and nothing is shared.

    cluster = Cluster()                 # a fresh temporary home (removed by down())
    cluster.up("--nodes", "3")          # `kubera up --detach …`; raises ClusterError if it fails
    cluster("get", "pods", "-o", "json")  # any CLI command, as a CompletedProcess
    cluster.down()                      # `kubera down`, then stop by PID whatever is left

`start()` is `up()` without the raise, for callers that check the result themselves (the e2e
tests assert on it). Stopping never looks processes up by name: only the PIDs (and their start
times) that `kubera up` recorded in the context file are signalled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubera.errors import CliError
from kubera.launch import procs
from kubera.launch.context import Context
from kubera.launch.credentials import CREDENTIAL_ENV, use_context_credentials


class ClusterError(CliError):
    """`kubera up` failed; the message carries its stderr."""


def alive(pid: int) -> bool:
    """Whether `pid` runs and is not a zombie."""
    return procs.alive(pid)


class Cluster:
    """The kubera CLI in its own KUBERA_HOME (a temporary directory unless `home` is given)."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        cwd: str | Path | None = None,
        timeout: float = 300,
        apiservers: int = 1,
    ) -> None:
        """`apiservers`: `kubera up --apiservers K` on every start (1: up's default)."""
        self.owns_home = home is None
        self.apiservers = apiservers
        self.home = Path(tempfile.mkdtemp(prefix="kubera-home-") if home is None else home)
        # Its own cluster's credentials, not whatever cluster this process used before:
        # the CLI reads them from this home's context (a test may set them to others).
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in CREDENTIAL_ENV},
            "KUBERA_HOME": str(self.home),
        }
        self.cwd = cwd
        self.timeout = timeout
        #: The context file `kubera up` wrote (endpoints, PIDs), once it is up.
        self.context: dict[str, Any] = {}
        self.up_stdout = ""

    @property
    def context_file(self) -> Path:
        return self.home / "context.json"

    def run(
        self, *args: str, stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`kubera ARGS` in this cluster's home; the result, whatever the exit code."""
        return subprocess.run(
            [sys.executable, "-m", "kubera.cli", *args],
            env=self.env,
            cwd=self.cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=self.timeout if timeout is None else timeout,
        )

    __call__ = run

    def start(self, *up_args: str) -> subprocess.CompletedProcess[str]:
        """`kubera up --detach UP_ARGS`; on success the context is loaded."""
        extra = ("--apiservers", str(self.apiservers)) if self.apiservers != 1 else ()
        r = self.run("up", "--detach", *extra, *up_args)
        self.up_stdout = r.stdout
        if r.returncode == 0:
            self.context = json.loads(self.context_file.read_text())
            # this process's own clients (a bench's, an experiment's) talk to it now
            use_context_credentials(Context(**self.context), override=True)
        return r

    def up(self, *up_args: str) -> float:
        """`start()`, raising ClusterError when it fails; returns the seconds it took."""
        t0 = time.monotonic()
        r = self.start(*up_args)
        elapsed = time.monotonic() - t0
        if r.returncode != 0:
            raise ClusterError(f"kubera up failed: {r.stderr.strip()}")
        return elapsed

    def stop(self) -> None:
        """`kubera down` if it is up, then SIGKILL any process of the context still running
        (by PID and start time), so nothing is left behind even when down fails."""
        if self.context_file.exists():
            self.run("down")
        if not self.context:
            return
        started = self.context.get("started", {})
        for pid in [self.context["supervisor_pid"], *self.context["pids"].values()]:
            if procs.alive(pid, started.get(str(pid), 0)):
                os.kill(pid, signal.SIGKILL)

    def down(self) -> None:
        """`stop()`, and remove the home when this object made it."""
        self.stop()
        if self.owns_home:
            shutil.rmtree(self.home, ignore_errors=True)
