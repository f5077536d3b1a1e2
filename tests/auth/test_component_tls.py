"""Component TLS (`kubera up` on a Ray cluster of several nodes, or --component-tls): a
component's own gRPC server (here a replica's chaos control, as services/hosts/replica.py
serves it) with a serving certificate the cluster CA signed refuses plaintext, answers a
client that trusts the CA, and is refused by a client that trusts another CA; the
supervisor's rule for when it is on; the certificates `up` signs per component."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from cryptography.x509.oid import NameOID

from kubera.launch.context import Context
from kubera.launch.credentials import (
    admin_channel,
    apiserver_fields,
    component_fields,
    issue_credentials,
    use_context_credentials,
)
from kubera.launch.options import ClusterOptions
from kubera.launch.supervisor import component_tls_wanted
from protos.kubera.v1 import chaos_pb2 as pb
from protos.kubera.v1 import chaos_pb2_grpc as pb_grpc
from services.auth.certs import issue_serving, new_ca, server_credentials
from services.auth.grpcauth import (
    CA_ENV,
    CHAOS_STATUS,
    TOKEN_ENV,
    admin_only,
    token_channel,
    token_hash,
)
from services.chaos import control_status, serve_control
from tests.auth.test_certs import verify_server

ADMIN_TOKEN = "the-admins-token"
CA = new_ca("kubera-ca")


@pytest.fixture
async def tls_control() -> AsyncIterator[str]:
    """A chaos control serving TLS with a certificate CA signed for "scheduler"."""
    server, port = await serve_control(
        [],
        "id",
        "test",
        interceptors=admin_only(token_hash(ADMIN_TOKEN), public=(CHAOS_STATUS,)),
        credentials=server_credentials(issue_serving(CA, "scheduler", ["10.0.0.2"])),
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


async def _heal(address: str, *, ca: bytes) -> grpc.StatusCode:
    async with token_channel(address, ADMIN_TOKEN, ca=ca) as ch:
        try:
            await pb_grpc.ChaosStub(ch).Heal(pb.HealRequest(), timeout=5)
        except grpc.aio.AioRpcError as e:
            return e.code()
    return grpc.StatusCode.OK


async def test_a_tls_component_channel_refuses_plaintext(tls_control: str) -> None:
    # the token would cross in plaintext: the call never gets that far
    assert await _heal(tls_control, ca=b"") == grpc.StatusCode.UNAVAILABLE
    assert await control_status(tls_control, 2, ca=b"") is None


async def test_a_client_trusting_the_cluster_ca_is_answered(tls_control: str) -> None:
    assert await _heal(tls_control, ca=CA.cert) == grpc.StatusCode.OK
    status = await control_status(tls_control, 5, ca=CA.cert)
    assert status is not None and status.pid > 0


async def test_a_client_trusting_another_ca_is_refused(tls_control: str) -> None:
    other = new_ca("someone-elses-ca")
    assert await _heal(tls_control, ca=other.cert) == grpc.StatusCode.UNAVAILABLE


async def test_the_clis_channels_follow_the_context(
    tls_control: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With component TLS in the context, the CLI's admin channel and Status probes dial
    TLS trusting the context's CA ($KUBERA_CA_FILE); without it, plaintext (refused)."""
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(CA.cert)
    monkeypatch.setenv(CA_ENV, "")  # restored after the test, whatever it was
    monkeypatch.delenv(CA_ENV)
    monkeypatch.setenv(TOKEN_ENV, ADMIN_TOKEN)
    use_context_credentials(
        Context(apiserver="", etcd="", ca_file=str(ca_file), component_tls=False)
    )
    assert CA_ENV not in os.environ
    assert await control_status(tls_control, 2) is None

    use_context_credentials(
        Context(apiserver="", etcd="", ca_file=str(ca_file), component_tls=True)
    )
    assert await control_status(tls_control, 5) is not None
    async with admin_channel(tls_control) as ch:
        await pb_grpc.ChaosStub(ch).Heal(pb.HealRequest(), timeout=5)


@pytest.mark.parametrize(
    ("secure", "asked", "nodes", "on"),
    [
        (True, False, 1, False),  # the embedded default: loopback, plaintext
        (True, True, 1, True),  # --component-tls
        (True, False, 2, True),  # several Ray nodes: components talk across machines
        (True, False, 3, True),
        (False, False, 3, False),  # --insecure: as open as asked
    ],
)
def test_component_tls_is_on_when_asked_or_on_several_ray_nodes(
    secure: bool, asked: bool, nodes: int, on: bool
) -> None:
    opts = ClusterOptions(secure=secure, component_tls=asked)
    assert component_tls_wanted(opts, nodes) is on


def test_component_tls_without_credentials_is_refused() -> None:
    with pytest.raises(ValueError, match="drop --insecure"):
        component_tls_wanted(ClusterOptions(secure=False, component_tls=True), 1)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KUBERA_HOME", str(tmp_path))
    return tmp_path


def test_up_signs_a_serving_certificate_per_component(home: Path) -> None:
    creds = issue_credentials(hosts=["127.0.0.2", "10.0.0.3"])
    ca_pem = creds.ca_pem
    fields = component_fields(creds, "scheduler-0-1", component_tls=True)
    assert fields["apiserver_ca"] == ca_pem
    pair = fields["serving_tls"]
    cert = pair.certificate()
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "scheduler-0-1"
    for host in ("127.0.0.1", "localhost", "127.0.0.2", "10.0.0.3"):
        verify_server(ca_pem, pair.cert, host)
    # another component's certificate is its own (its own key)
    assert component_fields(creds, "pool-0", component_tls=True)["serving_tls"].key != pair.key
    assert component_fields(creds, "pool-0", component_tls=False) == {}
    assert component_fields(None, "pool-0", component_tls=True) == {}


def test_the_apiservers_grpc_serves_tls_with_their_https_certificate(home: Path) -> None:
    creds = issue_credentials()
    plain = apiserver_fields(creds, None, "")
    assert "grpc_tls_cert" not in plain
    tls = apiserver_fields(creds, None, "", component_tls=True)
    assert tls["grpc_tls_cert"] == tls["tls_cert"] and tls["grpc_tls_key"] == tls["tls_key"]
