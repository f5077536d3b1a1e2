"""What `kubera up` issues so the cluster is not open to whoever reaches its ports, and
how later commands use it.

At `up` (`issue_credentials`), under $KUBERA_HOME/pki (0700; keys and tokens 0600):

    ca.crt, apiserver.crt/.key      the apiservers' serving certificate (HTTPS; gRPC TLS)
    etcd/ca.crt, server.*, client.* etcd's own CA: etcd serves https:// and requires the
                                    client certificate (--client-cert-auth)
    tokens.csv                      the static token file (kube-apiserver's format):
                                    admin, each scheduler and controller-manager replica,
                                    each node pool (acting for its nodes), each node
    admin.token                     the admin's token, for the kubera CLI

and $KUBERA_HOME/kubeconfig (the HTTP API's address, the CA, the admin's token) for
kubectl and the official client. Components get what they need in their configs as
contents, never paths (an actor may run on another machine): their token, etcd's CA and
client certificate, and the sha256 of the admin's token (their own servers' chaos
methods are the admin's). The apiserver gets the whole token file's contents.

With component TLS (`component_tls`: a Ray cluster of several nodes, or `--component-tls`)
every component's gRPC server serves TLS: the apiservers with apiserver.crt (as their
HTTPS does), each scheduler and controller-manager replica and node pool with a
certificate of its own the cluster CA signs at `up` (`Credentials.serving`, never
written), and every client of theirs verifies it against ca.crt (components: `apiserver_ca`
in their configs; the CLI: $KUBERA_CA_FILE). The certificates name loopback and the
addresses of the Ray nodes of `up`'s time.

Later commands (`use_context_credentials`, once at CLI start) put the admin's token and
etcd's client files in the environment ($KUBERA_TOKEN, $KUBERA_ETCD_CAFILE/_CERTFILE/
_KEYFILE; with component TLS the CA, $KUBERA_CA_FILE), which every Client and EtcdStorage
the CLI makes reads by default, as kubectl reads $KUBECONFIG; `admin_channel` is a raw
gRPC channel carrying the admin's token (the chaos controls, a node pool's API).
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import yaml

from kubera.launch.context import Context, home
from kubera.launch.etcd import EtcdTLSFiles
from services.auth.certs import KeyPair, PkiFiles, issue_serving, new_pki, write_pki
from services.auth.grpcauth import CA_ENV, TOKEN_ENV, env_ca, token_channel, token_hash
from services.auth.tokens import IssuedTokens, issue_tokens, write_private
from services.storage.etcd import ENV_CAFILE, ENV_CERTFILE, ENV_KEYFILE, EtcdTLS


def pki_dir() -> Path:
    return home() / "pki"


def kubeconfig_path() -> Path:
    return home() / "kubeconfig"


@dataclass(frozen=True)
class Credentials:
    """Everything `issue_credentials` made, for the supervisor to hand out."""

    files: PkiFiles
    tokens: IssuedTokens
    token_file: str
    admin_token_file: str
    #: The addresses the serving certificates name beside loopback (the Ray nodes').
    hosts: tuple[str, ...] = ()

    @property
    def admin_sha256(self) -> str:
        return token_hash(self.tokens.admin)

    @property
    def ca_pem(self) -> bytes:
        """The cluster CA's certificate: what component TLS clients trust."""
        return Path(self.files.ca_cert).read_bytes()

    def serving(self, component: str) -> KeyPair:
        """A fresh gRPC serving certificate for `component`, the cluster CA's."""
        ca = KeyPair(self.ca_pem, Path(self.files.ca_key).read_bytes())
        return issue_serving(ca, component, self.hosts)

    def etcd_server(self) -> EtcdTLSFiles:
        f = self.files
        return EtcdTLSFiles(
            f.etcd_ca_cert,
            f.etcd_server_cert,
            f.etcd_server_key,
            f.etcd_client_cert,
            f.etcd_client_key,
        )

    def etcd_client(self) -> EtcdTLS:
        f = self.files
        return EtcdTLS.from_files(f.etcd_ca_cert, f.etcd_client_cert, f.etcd_client_key)


def issue_credentials(
    *,
    hosts: Sequence[str] = (),
    schedulers: Sequence[str] = (),
    controller_managers: Sequence[str] = (),
    pools: Mapping[str, Sequence[str]] | None = None,
) -> Credentials:
    """A fresh $KUBERA_HOME/pki (what an earlier `up` left is replaced)."""
    d = pki_dir()
    if d.exists():
        shutil.rmtree(d)
    files = write_pki(new_pki(hosts), d)
    tokens = issue_tokens(
        schedulers=schedulers, controller_managers=controller_managers, pools=pools
    )
    token_file = write_private(d / "tokens.csv", tokens.csv())
    admin = write_private(d / "admin.token", tokens.admin + "\n")
    return Credentials(files, tokens, str(token_file), str(admin), tuple(hosts))


# -- the components `up` starts, by the names their tokens are issued to ---------------------


def owns_pki(creds: Credentials) -> bool:
    """Whether $KUBERA_HOME/pki is still the one `creds` wrote (its admin token there)."""
    try:
        return Path(creds.admin_token_file).read_text().strip() == creds.tokens.admin
    except OSError:
        return False


def scheduler_name(deployment: int, replica: int) -> str:
    return "scheduler" if deployment == replica == 0 else f"scheduler-{deployment}-{replica}"


def controller_manager_name(replica: int) -> str:
    return "controller-manager" if replica == 0 else f"controller-manager-{replica}"


def pool_nodes(template_yaml: str, count: int, per_pool: int) -> dict[str, list[str]]:
    """pool name -> the nodes it runs: the supervisor's slices of the template's plan, as
    each pool plans them itself (services/hosts/nodepool.py)."""
    from services.kubelet import default_template, load_template, plan_nodes

    if not count:
        return {}
    template = load_template(template_yaml) if template_yaml else default_template()
    names = [p.name for p in plan_nodes(template, count)]
    per = max(1, per_pool)
    return {f"pool-{i}": names[first : first + per] for i, first in enumerate(range(0, count, per))}


def apiserver_fields(
    creds: Credentials | None,
    etcd_tls: EtcdTLS | None,
    bind_address: str,
    *,
    component_tls: bool = False,
) -> dict[str, Any]:
    """The ApiServerHostConfig fields of the cluster's security: the token file's contents,
    etcd's client TLS, the bind address, and the HTTPS serving certificate and key (as
    contents: an apiserver on another machine has no such path); with `component_tls`,
    gRPC serves TLS with the same certificate."""
    out: dict[str, Any] = {"etcd_tls": etcd_tls}
    if bind_address:
        out["bind_address"] = bind_address
    if creds is None:
        return out
    out["token_csv"] = creds.tokens.csv()
    out["tls_cert"] = Path(creds.files.apiserver_cert).read_bytes()
    out["tls_key"] = Path(creds.files.apiserver_key).read_bytes()
    if component_tls:
        out["grpc_tls_cert"], out["grpc_tls_key"] = out["tls_cert"], out["tls_key"]
    return out


def component_fields(
    creds: Credentials | None, name: str, *, component_tls: bool
) -> dict[str, Any]:
    """The fields of a replica's or pool's config for component TLS: the CA its apiserver
    client trusts and its own servers' certificate ({} without)."""
    if creds is None or not component_tls:
        return {}
    return {"apiserver_ca": creds.ca_pem, "serving_tls": creds.serving(name)}


def context_fields(
    creds: Credentials | None,
    *,
    embedded_etcd: bool,
    etcd_files: tuple[str, str, str],
    component_tls: bool = False,
) -> dict[str, Any]:
    """The Context fields later commands read their credentials from."""
    out: dict[str, Any] = {}
    if creds is not None:
        out.update(token_file=creds.admin_token_file, ca_file=creds.files.ca_cert)
        out["component_tls"] = component_tls
        if embedded_etcd:
            f = creds.files
            etcd_files = (f.etcd_ca_cert, f.etcd_client_cert, f.etcd_client_key)
    if embedded_etcd and creds is None:
        return out
    if etcd_files[0]:
        out.update(
            etcd_ca_file=etcd_files[0], etcd_cert_file=etcd_files[1], etcd_key_file=etcd_files[2]
        )
    return out


def kubeconfig(server: str, ca_pem: bytes, token: str, *, name: str = "kubera") -> dict:
    """A kubeconfig (clientcmd v1) for one cluster, user and context."""
    cluster: dict = {"server": server}
    if server.startswith("https://"):
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    user = {"token": token} if token else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": f"{name}-admin", "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(ctx: Context) -> Path | None:
    """$KUBERA_HOME/kubeconfig for the cluster of `ctx` (its first apiserver's HTTP API);
    None when the cluster serves no HTTP API."""
    server = str(getattr(ctx, "http", "") or "")
    if not server:
        return None
    ca = Path(ctx.ca_file).read_bytes() if ctx.ca_file else b""
    text = yaml.safe_dump(kubeconfig(server, ca, admin_token(ctx)), sort_keys=False)
    return write_private(kubeconfig_path(), text)


def admin_token(ctx: Context | None = None) -> str:
    """$KUBERA_TOKEN, else the admin's token `up` wrote ("" for a cluster without)."""
    explicit = os.environ.get(TOKEN_ENV)
    if explicit:
        return explicit
    if ctx is not None and ctx.token_file and Path(ctx.token_file).exists():
        return Path(ctx.token_file).read_text().strip()
    return ""


#: The environment variables a cluster's credentials travel in (see the module docstring).
CREDENTIAL_ENV = (TOKEN_ENV, CA_ENV, ENV_CAFILE, ENV_CERTFILE, ENV_KEYFILE)


def use_context_credentials(ctx: Context, *, override: bool = False) -> None:
    """Put the cluster's admin token and etcd client files in this process's environment,
    for every Client / EtcdStorage / admin_channel made later: unless already set (the
    CLI: $KUBERA_TOKEN given by the user wins), or, with `override`, replacing what an
    earlier cluster put there (a bench or an experiment that starts clusters in turn)."""
    if override:
        for var in CREDENTIAL_ENV:
            os.environ.pop(var, None)
    token = "" if override else admin_token(ctx)
    if override and ctx.token_file and Path(ctx.token_file).exists():
        token = Path(ctx.token_file).read_text().strip()
    if token:
        os.environ.setdefault(TOKEN_ENV, token)
    if ctx.component_tls and ctx.ca_file:
        os.environ.setdefault(CA_ENV, ctx.ca_file)
    if ctx.etcd_ca_file:
        os.environ.setdefault(ENV_CAFILE, ctx.etcd_ca_file)
        os.environ.setdefault(ENV_CERTFILE, ctx.etcd_cert_file)
        os.environ.setdefault(ENV_KEYFILE, ctx.etcd_key_file)


def admin_channel(address: str) -> grpc.aio.Channel:
    """A channel to a component's own server (chaos control, a pool's API) whose calls
    carry the admin's token ($KUBERA_TOKEN): TLS trusting $KUBERA_CA_FILE when set (the
    cluster's components serve TLS), else plaintext."""
    return token_channel(address, os.environ.get(TOKEN_ENV, ""), ca=env_ca())
