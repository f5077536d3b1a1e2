"""The certificates `kubera up` makes: a CA for the apiservers with their serving
certificate, and etcd's own CA with etcd's server certificate and one client certificate
for kubera's components (etcd runs with --client-cert-auth, so only holders of that
client certificate reach it).

Two CAs, as kubeadm has (its cluster CA and its etcd CA): a certificate the apiserver CA
signed (a kubeconfig's, any serving one) must never be a valid etcd client.

With component TLS (`kubera up` on a Ray cluster of several nodes, or
`--component-tls`), the cluster CA also signs one serving certificate per component
(`issue_serving`: a scheduler or controller-manager replica, a node pool; made at `up`,
handed over as contents, never written), so every gRPC server of the cluster serves TLS and
its clients verify it against ca.crt: bearer tokens never cross a network in plaintext.

Keys are ECDSA P-256 (small, fast, what kubeadm can use); certificates last a year.
Files: `<dir>/ca.crt`, `ca.key`, `apiserver.crt`, `apiserver.key`, `etcd/ca.crt`,
`etcd/ca.key`, `etcd/server.crt`, `etcd/server.key`, `etcd/client.crt`, `etcd/client.key`;
every key 0600 (`write_pki`). The serving certificate's SANs: 127.0.0.1, ::1, localhost,
and every bind/advertise address given.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from services.auth.tokens import write_private

VALIDITY = datetime.timedelta(days=365)
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, PEM."""

    cert: bytes
    key: bytes

    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert)

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        k = serialization.load_pem_private_key(self.key, password=None)
        assert isinstance(k, ec.EllipticCurvePrivateKey)
        return k


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def server_credentials(pair: KeyPair | None) -> grpc.ServerCredentials | None:
    """What a gRPC server serves TLS with (None: plaintext, for `pair` None)."""
    if pair is None:
        return None
    return grpc.ssl_server_credentials([(pair.key, pair.cert)])


def new_ca(common_name: str) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _san(hosts: Iterable[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    seen: set[str] = set()
    for h in hosts:
        h = h.strip().strip("[]")
        if not h or h in seen or h in ("0.0.0.0", "::"):
            continue
        seen.add(h)
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def issue(
    ca: KeyPair,
    common_name: str,
    *,
    server_hosts: Iterable[str] = (),
    client: bool = False,
    organization: str = "",
) -> KeyPair:
    """A leaf certificate `ca` signs: for serving `server_hosts` (SANs) and/or, with
    `client`, for client authentication. `organization` is the O= (upstream's group)."""
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    hosts = list(server_hosts)
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if hosts else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    )
    if not usages:
        raise ValueError("a certificate for neither serving nor client authentication")
    now = _now()
    ca_cert = ca.certificate()
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key().public_key()),
            critical=False,
        )
    )
    if hosts:
        builder = builder.add_extension(_san(hosts), critical=False)
    cert = builder.sign(ca.private_key(), hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_serving(ca: KeyPair, component: str, hosts: Iterable[str] = ()) -> KeyPair:
    """A component's gRPC serving certificate: CN the component's name, SANs loopback (its
    relays and the embedded cluster dial 127.0.0.1) and `hosts` (the Ray nodes it may run
    on: Ray re-creates a component on another node)."""
    return issue(ca, component, server_hosts=[*LOOPBACK, *hosts])


@dataclass(frozen=True)
class Pki:
    """Every certificate of one cluster (see the module docstring)."""

    ca: KeyPair
    apiserver: KeyPair
    etcd_ca: KeyPair
    etcd_server: KeyPair
    etcd_client: KeyPair


def new_pki(hosts: Iterable[str] = ()) -> Pki:
    """A fresh CA pair and leaves; serving certificates for loopback and `hosts`."""
    names = [*LOOPBACK, *hosts]
    ca = new_ca("kubera-ca")
    etcd_ca = new_ca("kubera-etcd-ca")
    return Pki(
        ca=ca,
        apiserver=issue(ca, "kube-apiserver", server_hosts=names),
        etcd_ca=etcd_ca,
        etcd_server=issue(etcd_ca, "kubera-etcd", server_hosts=names, client=True),
        etcd_client=issue(
            etcd_ca, "kube-apiserver-etcd-client", client=True, organization=MASTERS_ORG
        ),
    )


#: kubeadm's organization for the apiserver's etcd client certificate.
MASTERS_ORG = "system:masters"


@dataclass(frozen=True)
class PkiFiles:
    ca_cert: str
    apiserver_cert: str
    apiserver_key: str
    etcd_ca_cert: str
    etcd_server_cert: str
    etcd_server_key: str
    etcd_client_cert: str
    etcd_client_key: str
    #: The cluster CA's key (it signs the components' serving certificates at `up`).
    ca_key: str = ""


def write_pki(pki: Pki, directory: str | Path) -> PkiFiles:
    """Write every certificate and key under `directory` (0700); keys 0600."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    (d / "etcd").mkdir(exist_ok=True, mode=0o700)

    def pair(kp: KeyPair, stem: str) -> tuple[str, str]:
        cert = d / f"{stem}.crt"
        cert.write_bytes(kp.cert)
        key = write_private(d / f"{stem}.key", kp.key)
        return str(cert), str(key)

    ca_cert, ca_key = pair(pki.ca, "ca")
    api_cert, api_key = pair(pki.apiserver, "apiserver")
    etcd_ca_cert, _ = pair(pki.etcd_ca, "etcd/ca")
    srv_cert, srv_key = pair(pki.etcd_server, "etcd/server")
    cli_cert, cli_key = pair(pki.etcd_client, "etcd/client")
    return PkiFiles(
        ca_cert, api_cert, api_key, etcd_ca_cert, srv_cert, srv_key, cli_cert, cli_key, ca_key
    )
