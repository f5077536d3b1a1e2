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
import ssl
import time
from dataclasses import dataclass

import grpc
from aiohttp import web

from services.apiserver import ApiServer, ApiServerConfig, serve
from services.auth import ALLOW_ALL, Authenticator, Authorizer
from services.chaos import add_control, self_report
from services.hosts.address import join, listen_hosts
from services.httpapi import serve_http
from services.storage.etcd import EtcdStorage


@dataclass(frozen=True)
class ApiServerHostConfig:
    #: etcd endpoint (http://host:port).
    etcd: str
    #: Where the gRPC API listens (port 0: any free one); actors/ sets the Ray node's
    #: address, and $KUBERA_BIND_HOST / $KUBERA_ADVERTISE_HOST override it (address.py).
    host: str = "127.0.0.1"
    port: int = 0
    #: Events each resource's watch cache keeps.
    watch_cache_capacity: int = 10_000
    #: Seconds between BOOKMARK events on idle watches.
    bookmark_interval: float = 5.0
    #: The Kubernetes HTTP API (kubectl, the Python client) beside gRPC, on the same
    #: host; port 0: any free one (a re-created actor is given back its first port).
    http_port: int = 0
    serve_http: bool = True
    #: PEM certificate and key for HTTPS; both empty: plain HTTP.
    tls_cert_file: str = ""
    tls_key_file: str = ""


def server_ssl_context(cert_file: str, key_file: str) -> ssl.SSLContext | None:
    """The HTTPS context of the HTTP API; None (plain HTTP) without a certificate."""
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
        storage = EtcdStorage(self.config.etcd)
        await storage.connect()
        api = ApiServer(
            storage,
            ApiServerConfig(
                watch_cache_capacity=self.config.watch_cache_capacity,
                bookmark_interval=self.config.bookmark_interval,
            ),
        )
        bind, advertise = listen_hosts(self.config.host)
        try:
            await api.start()
            self.server, bound = await serve(
                api,
                bind,
                port or self.config.port,
                also=lambda s: add_control(s, [], "apiserver", "apiserver"),
            )
            if self.config.serve_http:
                tls = server_ssl_context(self.config.tls_cert_file, self.config.tls_key_file)
                authn, authz = self.http_auth(api)
                self.http_runner, self.http_port = await serve_http(
                    api,
                    bind,
                    http_port or self.config.http_port,
                    ssl_context=tls,
                    authn=authn,
                    authz=authz,
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
        self.address = join(advertise, bound)
        self.started = True
        self.start_seconds = time.monotonic() - t0
        return self.address

    def http_auth(self, api: ApiServer) -> tuple[Authenticator, Authorizer]:
        """Who may call the HTTP API and what they may do (services/auth): everyone
        everything until the host is configured with identities (issue 15)."""
        return ALLOW_ALL, ALLOW_ALL

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
