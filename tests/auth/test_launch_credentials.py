"""What `kubera up` issues (kubera/launch/credentials.py): files and modes under
$KUBERA_HOME/pki, the kubeconfig, the CLI's credentials from the context, and tokens for
exactly the components the supervisor starts."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
import yaml

from kubera.launch.context import Context
from kubera.launch.credentials import (
    admin_token,
    issue_credentials,
    kubeconfig,
    owns_pki,
    pool_nodes,
    use_context_credentials,
    write_kubeconfig,
)
from services.auth import node_names
from services.auth.grpcauth import TOKEN_ENV
from services.auth.tokens import TokenAuthenticator, issue_tokens
from services.kubelet import default_template, plan_nodes
from services.storage.etcd import ENV_CAFILE, ENV_CERTFILE, ENV_KEYFILE


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KUBERA_HOME", str(tmp_path))
    for var in (TOKEN_ENV, ENV_CAFILE, ENV_CERTFILE, ENV_KEYFILE):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_secrets_are_owner_only_and_the_token_file_authenticates_the_admin(home: Path) -> None:
    creds = issue_credentials(schedulers=["scheduler"], pools={"pool-0": ["n1"]})
    for p in (creds.token_file, creds.admin_token_file, creds.files.etcd_client_key):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    assert stat.S_IMODE((home / "pki").stat().st_mode) == 0o700
    authn = TokenAuthenticator.from_file(creds.token_file)
    admin = authn.authenticate(Path(creds.admin_token_file).read_text().strip())
    assert admin is not None and admin.name == "kubera-admin"


def test_kubeconfig_names_the_server_ca_and_admin_token() -> None:
    doc = kubeconfig("https://127.0.0.1:6443", b"PEM", "tok")
    (cluster,) = doc["clusters"]
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == b"PEM"
    assert doc["users"][0]["user"] == {"token": "tok"}
    assert doc["current-context"] == doc["contexts"][0]["name"]
    plain = kubeconfig("http://127.0.0.1:8080", b"", "")
    assert "certificate-authority-data" not in plain["clusters"][0]["cluster"]


def test_write_kubeconfig_from_the_context(home: Path) -> None:
    creds = issue_credentials()
    ctx = Context(
        apiserver="x",
        etcd="y",
        token_file=creds.admin_token_file,
        ca_file=creds.files.ca_cert,
        http="https://127.0.0.1:1234",
    )
    path = write_kubeconfig(ctx)
    assert path is not None and stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = yaml.safe_load(path.read_text())
    assert doc["users"][0]["user"]["token"] == creds.tokens.admin


def test_the_cli_takes_the_admin_token_and_etcd_files_from_the_context(home: Path) -> None:
    creds = issue_credentials()
    f = creds.files
    ctx = Context(
        apiserver="x",
        etcd="https://127.0.0.1:1",
        token_file=creds.admin_token_file,
        etcd_ca_file=f.etcd_ca_cert,
        etcd_cert_file=f.etcd_client_cert,
        etcd_key_file=f.etcd_client_key,
    )
    use_context_credentials(ctx)
    assert os.environ[TOKEN_ENV] == creds.tokens.admin == admin_token(ctx)
    assert os.environ[ENV_CERTFILE] == f.etcd_client_cert


def test_each_pool_acts_for_exactly_the_nodes_it_will_run() -> None:
    pools = pool_nodes("", 5, 2)
    names = [p.name for p in plan_nodes(default_template(), 5)]
    assert pools == {"pool-0": names[0:2], "pool-1": names[2:4], "pool-2": names[4:5]}
    issued = issue_tokens(pools=pools)
    authn = TokenAuthenticator.from_text(issued.csv())
    for pool, nodes in pools.items():
        user = authn.authenticate(issued.token_for(pool))
        assert user is not None and node_names(user) == set(nodes)


def test_a_new_cluster_replaces_the_last_ones_credentials_only_when_asked(home: Path) -> None:
    first = issue_credentials()
    ctx1 = Context(apiserver="x", etcd="y", token_file=first.admin_token_file)
    use_context_credentials(ctx1)
    second = issue_credentials()  # a second `up` in the same home: new tokens
    ctx2 = Context(apiserver="x", etcd="y", token_file=second.admin_token_file)
    use_context_credentials(ctx2)
    assert os.environ[TOKEN_ENV] == first.tokens.admin  # the CLI: what is set wins
    use_context_credentials(ctx2, override=True)
    assert os.environ[TOKEN_ENV] == second.tokens.admin  # a bench's next cluster
    assert ENV_CAFILE not in os.environ  # that cluster's etcd is plain


def test_a_cluster_owns_its_pki_until_a_later_up_replaces_it(home: Path) -> None:
    first = issue_credentials()
    assert owns_pki(first)
    second = issue_credentials()
    assert not owns_pki(first) and owns_pki(second)
