"""`kubera up` against an external etcd that requires client certificates (--etcd URL
--etcd-cafile/--etcd-certfile/--etcd-keyfile): the components and the CLI reach it with
the given client certificate; without the files, up fails in one line. Real etcd, real
`kubera up` (Ray), loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubera.launch.etcd import EtcdProcess, EtcdTLSFiles
from services.auth.certs import PkiFiles, new_pki, write_pki
from tests.e2e.helpers import kubera_in
from tests.rayhead import on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


@pytest.fixture
def tls_etcd(tmp_path: Path) -> Iterator[tuple[EtcdProcess, PkiFiles]]:
    files = write_pki(new_pki(), tmp_path / "pki")
    tls = EtcdTLSFiles(
        files.etcd_ca_cert,
        files.etcd_server_cert,
        files.etcd_server_key,
        files.etcd_client_cert,
        files.etcd_client_key,
    )
    proc = EtcdProcess(tmp_path / "etcd", log_path=tmp_path / "etcd.log", tls=tls).start()
    try:
        yield proc, files
    finally:
        proc.stop()


def test_up_on_an_external_etcd_with_client_certificates(
    tmp_path: Path, tls_etcd, shared_ray: str
) -> None:
    etcd, files = tls_etcd
    k = kubera_in(tmp_path / "home")
    up = k(
        "up",
        "--detach",
        *on_ray(k.home, shared_ray),
        "--no-scheduler",
        "--etcd",
        etcd.endpoint,
        "--etcd-cafile",
        files.etcd_ca_cert,
        "--etcd-certfile",
        files.etcd_client_cert,
        "--etcd-keyfile",
        files.etcd_client_key,
    )
    try:
        assert up.returncode == 0, up.stderr
        ctx = json.loads((k.home / "context.json").read_text())
        assert ctx["etcd_cert_file"] == files.etcd_client_cert
        r = k("apply", "-f", "-", stdin="apiVersion: v1\nkind: Namespace\nmetadata: {name: tls}\n")
        assert r.returncode == 0, r.stderr
        assert "tls" in k("get", "namespaces").stdout
        # the CLI's own etcd reads (the checker) go through the client certificate too
        check = k("check")
        assert check.returncode == 0, check.stderr
    finally:
        down = k("down")
    assert down.returncode == 0


def test_up_on_a_tls_etcd_without_its_files_fails_in_one_line(
    tmp_path: Path, tls_etcd, shared_ray: str
) -> None:
    etcd, _files = tls_etcd
    k = kubera_in(tmp_path / "home")
    on = on_ray(k.home, shared_ray)
    up = k("up", "--detach", *on, "--no-scheduler", "--no-controllers", "--etcd", etcd.endpoint)
    try:
        assert up.returncode == 1
        assert "kubera up failed" in up.stderr and "Traceback" not in up.stderr
    finally:
        k.stop()
