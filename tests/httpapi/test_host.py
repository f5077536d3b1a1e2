"""The apiserver host serves the HTTP API beside gRPC: plain HTTP by default, HTTPS with
a certificate and key, and its address in health()."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import time
import urllib.request
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import object_meta
from services.clock import parse_rfc3339
from services.hosts.apiserver import ApiServerHost, ApiServerHostConfig, server_ssl_context

pytestmark = pytest.mark.integration


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubera-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def fetch(url: str, context: ssl.SSLContext | None = None) -> dict:
    with urllib.request.urlopen(url, timeout=10, context=context) as r:  # noqa: S310 - loopback test URL
        return json.loads(r.read())


async def started(config: ApiServerHostConfig) -> ApiServerHost:
    host = ApiServerHost(config)
    await host.start()
    return host


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
async def test_host_serves_http_beside_grpc_and_reports_it(
    etcd_server, tmp_path: Path, tls: bool
) -> None:
    cert = key = ""
    if tls:
        c, k = self_signed(tmp_path)
        cert, key = str(c), str(k)
    host = await started(
        ApiServerHostConfig(etcd=etcd_server.endpoint, tls_cert_file=cert, tls_key_file=key)
    )
    try:
        health = await host.health()
        address = str(health["http_address"])
        assert address.startswith("https://127.0.0.1:" if tls else "http://127.0.0.1:")
        assert health["address"] and health["address"] != address
        ctx = ssl.create_default_context(cafile=cert) if tls else None
        loop_result = await asyncio.to_thread(fetch, f"{address}/api/v1/namespaces/default", ctx)
        assert loop_result["kind"] == "Namespace"
    finally:
        await host.stop()


async def test_serve_http_false_serves_only_grpc(etcd_server) -> None:
    host = await started(ApiServerHostConfig(etcd=etcd_server.endpoint, serve_http=False))
    try:
        assert (await host.health())["http_address"] == "" and host.address
    finally:
        await host.stop()


@pytest.mark.parametrize(("cert", "key"), [("a.crt", ""), ("", "a.key")])
def test_a_certificate_needs_its_key(cert: str, key: str) -> None:
    with pytest.raises(ValueError, match="go together"):
        server_ssl_context(cert, key)


def test_no_certificate_is_plain_http() -> None:
    assert server_ssl_context("", "") is None


async def test_the_host_stamps_objects_in_the_cluster_clocks_time(etcd_server) -> None:
    """Under `--time-scale 60`, started 100 wall seconds after the cluster's origin, the
    apiserver stamps creationTimestamp 6000 simulated seconds past the origin (what the
    controllers' and kubelets' clocks read too), not in wall time."""
    origin = time.time() - 100
    host = await started(
        ApiServerHostConfig(
            etcd=etcd_server.endpoint, serve_http=False, time_scale=60, time_origin=origin
        )
    )
    try:
        assert host.api is not None
        cm = BY_KIND["ConfigMap"].new()
        meta = object_meta(cm)
        meta.name, meta.namespace = f"stamped-{int(origin)}", "default"
        made = await host.api.create(cm)
        created = parse_rfc3339(object_meta(made).creation_timestamp)
        assert created >= origin + 100 * 60 - 1
    finally:
        await host.stop()
