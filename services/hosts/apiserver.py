"""The apiserver's process: builds EtcdStorage + ApiServer + the gRPC server inside its
event loop and exposes start/stop/health; actors/apiserver.py runs it in a Ray actor.

A killed apiserver comes back like every other component: Ray re-creates the actor
(`max_restarts=-1`, which calls `__init__` again but not `start`), and the supervisor's
`ensure_started(port)` starts it on the port of its first start. Keeping the address
means no client has to re-resolve it: every gRPC channel (the CLI's, the informers',
the relays in front of the replicas, the node pools') reconnects to the same
host:port by itself once something listens there again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from aiohttp import web

from services.apiserver import (
    ApiServer,
    ApiServerConfig,
    ServiceNetwork,
    parse_node_port_range,
    registry_lookup,
    serve,
)
from services.auth import ALLOW_ALL, Authenticator, Authorizer
from services.auth.authorizer import KuberaAuthorizer
from services.auth.tokens import TokenAuthenticator
from services.chaos import add_control, self_report
from services.clock import RealClock, clock_for
from services.hosts.address import WILDCARDS, is_loopback, join, listen_hosts
from services.httpapi import serve_http
from services.storage.etcd import EtcdStorage, EtcdTLS
from services.ui import build_ui

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApiServerHostConfig:
    #: etcd endpoint (http://host:port).
    etcd: str
    #: Where the gRPC API listens (port 0: any free one); actors/ sets the Ray node's
    #: address, and $KUBERA_BIND_HOST / $KUBERA_ADVERTISE_HOST override it (address.py).
    host: str = "127.0.0.1"
    port: int = 0
    #: The interface to listen on instead of `host` (`kubera up --bind-address`; "":
    #: `host`). A wildcard (0.0.0.0) listens everywhere and still advertises `host`.
    bind_address: str = ""
    #: Events each resource's watch cache keeps.
    watch_cache_capacity: int = 10_000
    #: Seconds between BOOKMARK events on idle watches.
    bookmark_interval: float = 5.0
    #: Services' cluster IPs and node ports come from these (kube-apiserver's
    #: --service-cluster-ip-range and --service-node-port-range).
    service_cluster_ip_range: str = "10.96.0.0/12"
    service_node_port_range: str = "30000-32767"
    #: The default StorageClass a new cluster gets (ApiServerConfig); "": none.
    default_storage_class: str = ""
    #: Admission plugins that do not run (kube-apiserver's --disable-admission-plugins).
    disable_admission_plugins: tuple[str, ...] = ()
    #: The cluster clock (services/clock.py): simulated seconds per wall second, and its
    #: epoch (0: now). Objects are stamped in the cluster's time (creationTimestamp,
    #: deletionTimestamp, conditions, Events, the AGE of server-side tables).
    time_scale: float = 1.0
    time_origin: float = 0.0
    #: The Kubernetes HTTP API (kubectl, the Python client) beside gRPC, on the same
    #: host; port 0: any free one (a re-created actor is given back its first port).
    http_port: int = 0
    serve_http: bool = True
    #: The live web UI at /ui/ of the HTTP API (services/ui; `kubera ui` logs a browser in).
    serve_ui: bool = True
    #: PEM certificate and key for HTTPS, as paths or as contents (`tls_cert`/`tls_key`,
    #: which win; what `kubera up` passes: an actor on another machine has no such path);
    #: all empty: plain HTTP.
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_cert: bytes = b""
    tls_key: bytes = b""

    #: Who may call (both APIs): a static token file (kube-apiserver's --token-auth-file
    #: CSV, services/auth/tokens.py) by path, or its contents (`token_csv`, what `kubera
    #: up` passes: an actor on another machine has no such path); both "": no
    #: authentication, every caller is the admin (the in-process servers of tests).
    token_file: str = ""
    token_csv: str = ""
    #: etcd over TLS with a client certificate: PEM paths (`--etcd-cafile` ...), or the
    #: contents (`etcd_tls`, which wins; what `kubera up` passes).
    etcd_ca_file: str = ""
    etcd_cert_file: str = ""
    etcd_key_file: str = ""
    etcd_tls: EtcdTLS | None = None
    #: Serve gRPC over TLS with this certificate and key (PEM contents; both empty:
    #: plaintext, the embedded default on loopback, where the bearer tokens suffice).
    #: Clients then dial with `Client(..., ca_file=...)`.
    grpc_tls_cert: bytes = b""
    grpc_tls_key: bytes = b""

    def authenticator(self) -> Authenticator | None:
        """The token authenticator of `token_csv` / `token_file`; None when neither."""
        if self.token_csv:
            return TokenAuthenticator.from_text(self.token_csv)
        if self.token_file:
            return TokenAuthenticator.from_file(self.token_file)
        return None

    def etcd_credentials(self) -> EtcdTLS | None:
        if self.etcd_tls is not None:
            return self.etcd_tls
        if self.etcd_ca_file:
            return EtcdTLS.from_files(self.etcd_ca_file, self.etcd_cert_file, self.etcd_key_file)
        return None


def server_ssl_context(
    cert_file: str, key_file: str, cert: bytes = b"", key: bytes = b""
) -> ssl.SSLContext | None:
    """The HTTPS context of the HTTP API; None (plain HTTP) without a certificate.
    Contents win over paths (ssl loads only files: they go through a private temporary
    directory, removed at once)."""
    if cert or key:
        if not cert or not key:
            raise ValueError("tls_cert and tls_key go together: give both or neither")
        with tempfile.TemporaryDirectory(prefix="kubera-tls-") as d:
            cert_path, key_path = Path(d) / "tls.crt", Path(d) / "tls.key"
            cert_path.write_bytes(cert)
            key_path.touch(mode=0o600)
            key_path.write_bytes(key)
            return server_ssl_context(str(cert_path), str(key_path))
    if not cert_file and not key_file:
        return None
    if not cert_file or not key_file:
        raise ValueError("tls_cert_file and tls_key_file go together: give both or neither")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


class ApiServerHost:
    """The apiserver with its storage and gRPC server (unit-testable without Ray)."""

    def __init__(self, config: ApiServerHostConfig) -> None:
        self.config = config
        self.storage: EtcdStorage | None = None
        self.api: ApiServer | None = None
        self.server: grpc.aio.Server | None = None
        self.address = ""
        self.http_runner: web.AppRunner | None = None
        #: "http(s)://host:port" of the HTTP API ("" when not served).
        self.http_address = ""
        self.http_port = 0
        self.started = False
        #: How long the last start took (etcd connect, watch caches filled, port bound).
        self.start_seconds = 0.0
        self._lock = asyncio.Lock()
        #: Who may call (None: anyone, as the admin). The HTTP edge takes the same:
        #: `http_auth()` gives its (authn, authz) pair.
        self.authn: Authenticator | None = config.authenticator()

    async def ensure_started(self, port: int = 0, http_port: int = 0) -> dict[str, object]:
        """start() unless started — on `port` and `http_port` (0: the config's), the
        ports the first incarnation bound, so a re-created actor serves where clients
        dial. Returns health() either way (the supervisor records the new process id from it)."""
        async with self._lock:
            if not self.started:
                await self.start(port, http_port)
        return await self.health()

    async def start(self, port: int = 0, http_port: int = 0) -> str:
        t0 = time.monotonic()
        storage = EtcdStorage(self.config.etcd, tls=self.config.etcd_credentials())
        await storage.connect()
        api = ApiServer(
            storage,
            ApiServerConfig(
                watch_cache_capacity=self.config.watch_cache_capacity,
                bookmark_interval=self.config.bookmark_interval,
                service_network=ServiceNetwork(
                    cidr=self.config.service_cluster_ip_range,
                    node_ports=parse_node_port_range(self.config.service_node_port_range),
                ),
                default_storage_class=self.config.default_storage_class,
                disable_admission_plugins=frozenset(self.config.disable_admission_plugins),
            ),
            clock=clock_for(self.config.time_scale, self.config.time_origin or None),
            wall=RealClock(),
        )
        bind, advertise = listen_hosts(self.config.host)
        grpc_bind, grpc_advertise = bind, advertise
        if self.config.bind_address:
            bind = self.config.bind_address
            if bind not in WILDCARDS:
                advertise = bind
            if self.config.grpc_tls_cert or is_loopback(bind):
                grpc_bind, grpc_advertise = bind, advertise
            else:
                # Plaintext gRPC carries bearer tokens: it stays where the host config
                # puts it (loopback in the embedded mode) unless it serves TLS; the
                # HTTP API (TLS) is what listens on the wider address.
                log.info(
                    "--bind-address %s applies to the HTTP API; gRPC (plaintext) stays on %s",
                    bind,
                    grpc_bind,
                )
        try:
            await api.start()
            self.server, bound = await serve(
                api,
                grpc_bind,
                port or self.config.port,
                also=lambda s: add_control(s, [], "apiserver", "apiserver"),
                authn=self.authn,
                credentials=(
                    grpc.ssl_server_credentials(
                        [(self.config.grpc_tls_key, self.config.grpc_tls_cert)]
                    )
                    if self.config.grpc_tls_cert
                    else None
                ),
            )
            if self.config.serve_http:
                c = self.config
                tls = server_ssl_context(c.tls_cert_file, c.tls_key_file, c.tls_cert, c.tls_key)
                authn, authz = self.http_auth(api)
                subapps = {"/ui": build_ui(api, authn=authn, authz=authz)} if c.serve_ui else {}
                self.http_runner, self.http_port = await serve_http(
                    api,
                    bind,
                    http_port or self.config.http_port,
                    ssl_context=tls,
                    authn=authn,
                    authz=authz,
                    subapps=subapps,
                )
                scheme = "https" if tls is not None else "http"
                self.http_address = f"{scheme}://{join(advertise, self.http_port)}"
        except BaseException:
            if self.server is not None:
                with contextlib.suppress(Exception):
                    await self.server.stop(grace=None)
            if self.http_runner is not None:
                with contextlib.suppress(Exception):
                    await self.http_runner.cleanup()
            with contextlib.suppress(Exception):
                await api.stop()
            with contextlib.suppress(Exception):
                await storage.close()
            raise
        self.storage, self.api = storage, api
        self.address = join(grpc_advertise, bound)
        self.started = True
        self.start_seconds = time.monotonic() - t0
        return self.address

    def http_auth(self, api: ApiServer) -> tuple[Authenticator, Authorizer]:
        """The (authenticator, authorizer) the HTTP edge (services/httpapi) serves `api`
        with, the gRPC edge's rules: ALLOW_ALL for both without a token file. The
        authorizer's `authorize` is a coroutine function (it reads pods:
        services/auth/authorizer.py)."""
        if self.authn is None:
            return ALLOW_ALL, ALLOW_ALL
        return self.authn, KuberaAuthorizer(registry_lookup(api))

    async def stop(self) -> None:
        if self.http_runner is not None:
            await self.http_runner.cleanup()
        if self.server is not None:
            await self.server.stop(grace=1.0)
        if self.api is not None:
            await self.api.stop()
        if self.storage is not None:
            await self.storage.close()

    async def health(self) -> dict[str, object]:
        rev = await self.storage.revision() if self.storage else 0
        return {
            **self_report(),  # pid, CPU seconds, RSS bytes, host, boot id, PID namespace
            "address": self.address,
            "http_address": self.http_address,
            "etcd": self.config.etcd,
            "revision": rev,
            "started": self.started,
            "start_seconds": self.start_seconds,
        }
