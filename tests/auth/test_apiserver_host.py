"""The apiserver process's security settings (services/hosts/apiserver.py): the token file
by path or contents, --bind-address, the HTTP edge's pair; real etcd, loopback only."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubera.launch.etcd import EtcdProcess
from services.api.machinery.errors import UnauthorizedError
from services.api.machinery.kinds import BY_KIND
from services.auth import ALLOW_ALL
from services.auth.tokens import issue_tokens, write_private
from services.client import Client
from services.hosts.apiserver import ApiServerHost, ApiServerHostConfig

PODS = BY_KIND["Pod"]


@pytest.mark.parametrize("by", ["path", "contents"])
def test_the_token_file_by_path_or_contents_authenticates(tmp_path: Path, by: str) -> None:
    tokens = issue_tokens(schedulers=["scheduler"])
    path = write_private(tmp_path / "tokens.csv", tokens.csv())
    cfg = (
        ApiServerHostConfig(etcd="http://127.0.0.1:1", token_file=str(path))
        if by == "path"
        else ApiServerHostConfig(etcd="http://127.0.0.1:1", token_csv=tokens.csv())
    )
    authn = cfg.authenticator()
    assert authn is not None
    user = authn.authenticate(tokens.token_for("scheduler"))
    assert user is not None and user.name == "system:kube-scheduler"
    assert authn.authenticate("nope") is None


def test_no_token_file_means_no_authentication() -> None:
    host = ApiServerHost(ApiServerHostConfig(etcd="http://127.0.0.1:1"))
    assert host.authn is None
    assert host.http_auth(object()) == (ALLOW_ALL, ALLOW_ALL)  # type: ignore[arg-type]


def bound_host(etcd: EtcdProcess, bind_address: str, token_csv: str) -> ApiServerHost:
    return ApiServerHost(
        ApiServerHostConfig(
            etcd=etcd.endpoint,
            bind_address=bind_address,
            token_csv=token_csv,
            bookmark_interval=0.2,
        )
    )


@pytest.mark.integration
async def test_bind_address_is_where_it_listens_and_what_it_advertises(
    etcd_server: EtcdProcess,
) -> None:
    tokens = issue_tokens()
    host = bound_host(etcd_server, "127.0.0.2", tokens.csv())
    await host.start()
    try:
        assert host.address.startswith("127.0.0.2:")
        async with Client(host.address, timeout=5, token=tokens.admin) as c:
            await c.list(PODS)
        async with Client(host.address, timeout=5, token="") as anon:
            with pytest.raises(UnauthorizedError):
                await anon.list(PODS)
        assert host.api is not None
        authn, authz = host.http_auth(host.api)
        assert authn.authenticate(tokens.admin) is not None and authz is not ALLOW_ALL
    finally:
        await host.stop()


@pytest.mark.integration
async def test_a_wide_bind_address_takes_the_http_api_and_leaves_plaintext_grpc_on_loopback(
    etcd_server: EtcdProcess,
) -> None:
    import socket

    tokens = issue_tokens()
    host = bound_host(etcd_server, "0.0.0.0", tokens.csv())
    await host.start()
    try:
        grpc_port = int(host.address.rsplit(":", 1)[1])
        assert host.address.startswith("127.0.0.1:")

        def reachable(addr: str, port: int) -> bool:
            with socket.socket() as s:
                s.settimeout(2)
                return s.connect_ex((addr, port)) == 0

        # 127.0.0.2 is loopback too, but only a wildcard listener answers there
        assert reachable("127.0.0.2", host.http_port)
        assert not reachable("127.0.0.2", grpc_port)
        assert reachable("127.0.0.1", grpc_port)
        async with Client(host.address, timeout=5, token=tokens.admin) as c:
            await c.list(PODS)
    finally:
        await host.stop()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.1.2.3", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    from services.hosts.address import is_loopback

    assert is_loopback(host) is loopback
