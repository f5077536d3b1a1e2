"""etcd with client-certificate auth (what `kubera up` runs): kubera's storage reaches it
with the client certificate; a client without one, or with one another CA signed, is
refused; real etcd."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubera.launch.etcd import EtcdProcess, EtcdTLSFiles
from services.auth.certs import issue, new_pki, write_pki
from services.storage import Put, StorageUnavailableError
from services.storage.etcd import EtcdStorage, EtcdTLS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secure_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EtcdProcess, Path]]:
    d = tmp_path_factory.mktemp("etcd-tls")
    files = write_pki(new_pki(), d / "pki")
    tls = EtcdTLSFiles(
        files.etcd_ca_cert,
        files.etcd_server_cert,
        files.etcd_server_key,
        files.etcd_client_cert,
        files.etcd_client_key,
    )
    proc = EtcdProcess(d / "data", log_path=d / "etcd.log", tls=tls).start()
    try:
        yield proc, d / "pki"
    finally:
        proc.stop()


async def test_storage_with_the_client_certificate_reads_and_writes(secure_etcd) -> None:
    proc, pki = secure_etcd
    assert proc.endpoint.startswith("https://")
    tls = EtcdTLS.from_files(
        str(pki / "etcd/ca.crt"), str(pki / "etcd/client.crt"), str(pki / "etcd/client.key")
    )
    s = EtcdStorage(proc.endpoint, tls=tls, timeout=5)
    try:
        await s.connect()
        await s.txn([], [Put("/tls/a", b"1")])
        got = await s.get("/tls/a")
        assert got is not None and got.value == b"1"
        # aetcd's own stubs (leases) are on the TLS channel too
        lease = await s.grant_lease(5)
        await s.revoke_lease(lease)
    finally:
        await s.close()


def _client(pki: Path, case: str) -> EtcdTLS | None:
    ca = (pki / "etcd/ca.crt").read_bytes()
    if case == "plaintext":
        return None
    if case == "no client certificate":
        return EtcdTLS(ca)
    stranger = issue(new_pki().etcd_ca, "stranger", client=True)
    return EtcdTLS(ca, stranger.cert, stranger.key)


@pytest.mark.parametrize(
    "case", ["plaintext", "no client certificate", "a certificate another CA signed"]
)
async def test_etcd_refuses_a_client_without_its_cas_certificate(secure_etcd, case: str) -> None:
    proc, pki = secure_etcd
    tls = _client(pki, case)
    endpoint = proc.endpoint if tls is not None else proc.endpoint.replace("https", "http")
    s = EtcdStorage(endpoint, tls=tls, timeout=2)
    try:
        with pytest.raises(StorageUnavailableError):  # refused at the handshake
            await s.get("/tls/a")
    finally:
        await s.close()
