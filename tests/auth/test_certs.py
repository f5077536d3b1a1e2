"""The cluster's certificates (services/auth/certs.py): chains verify with `cryptography`,
serving SANs, usages, two separate CAs, 0600 keys."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from services.auth.certs import new_pki, write_pki


@pytest.fixture(scope="module")
def pki():
    return new_pki(hosts=["10.1.2.3", "kubera.example"])


def verify_server(ca: bytes, leaf: bytes, host: str) -> None:
    store = Store([x509.load_pem_x509_certificate(ca)])
    subject = (
        x509.IPAddress(ipaddress.ip_address(host)) if host[0].isdigit() else x509.DNSName(host)
    )
    verifier = PolicyBuilder().store(store).build_server_verifier(subject)
    verifier.verify(x509.load_pem_x509_certificate(leaf), [])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "10.1.2.3", "kubera.example"])
def test_apiserver_certificate_verifies_for_every_san(pki, host: str) -> None:
    verify_server(pki.ca.cert, pki.apiserver.cert, host)


def test_apiserver_certificate_is_not_valid_for_other_hosts(pki) -> None:
    with pytest.raises(VerificationError):
        verify_server(pki.ca.cert, pki.apiserver.cert, "10.9.9.9")


def test_etcd_chain_is_its_own_ca(pki) -> None:
    verify_server(pki.etcd_ca.cert, pki.etcd_server.cert, "127.0.0.1")
    with pytest.raises(VerificationError):
        verify_server(pki.ca.cert, pki.etcd_server.cert, "127.0.0.1")


def test_etcd_client_certificate_is_for_client_auth_only(pki) -> None:
    cert = pki.etcd_client.certificate()
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.issuer == pki.etcd_ca.certificate().subject
    cert.verify_directly_issued_by(pki.etcd_ca.certificate())
    with pytest.raises(ValueError):
        cert.verify_directly_issued_by(pki.ca.certificate())


def test_written_keys_are_0600(pki, tmp_path: Path) -> None:
    files = write_pki(pki, tmp_path / "pki")
    for key in (files.apiserver_key, files.etcd_server_key, files.etcd_client_key):
        assert stat.S_IMODE(Path(key).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "pki").stat().st_mode) == 0o700
    assert Path(files.ca_cert).read_bytes() == pki.ca.cert
