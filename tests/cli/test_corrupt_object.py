"""A corrupt stored object through the CLI: `kubera get` lists the rest and warns of it
on stderr as kubectl shows warnings, a get of it names its key, and only the unsafe
delete option removes it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kubera.fuzz.harness import ServerThread
from services.api.machinery.kinds import BY_KIND
from services.storage import Put
from tests.cli.helpers import kubera, pod, write

KEY = BY_KIND["Pod"].key("default", "bad")
GARBAGE = b"\x0a\xff\xff\xff\xff\x0f"
UNSAFE = "--ignore-store-read-error-with-cluster-breaking-potential"


@pytest.fixture
def server(tmp_path, capsys: pytest.CaptureFixture[str]) -> Iterator[str]:
    """An apiserver holding a good pod and, under /registry/pods/default/bad, garbage."""
    s = ServerThread()
    address = s.start()
    try:
        assert (
            kubera(capsys, address, "apply", "-f", write(tmp_path, "p.yaml", pod("good"))).rc == 0
        )
        assert s.api is not None
        put = s.api.storage.txn([], [Put(KEY, GARBAGE)])
        asyncio.run_coroutine_threadsafe(put, s.loop).result(timeout=10)
        yield address
    finally:
        s.stop()


def test_get_pods_lists_the_good_ones_and_warns_of_the_corrupt_key(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = kubera(capsys, server, "get", "pods")

    assert r.rc == 0
    assert [line.split()[0] for line in r.out.splitlines()] == ["NAME", "good"]
    assert r.err.startswith(f"Warning: corrupt object: key {KEY} (revision ")
    assert r.err.rstrip().endswith("(left out of the list)") and r.err.count("\n") == 1


def test_get_of_the_corrupt_pod_names_its_key(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = kubera(capsys, server, "get", "pod", "bad")

    assert r.rc == 1
    assert r.err.startswith(f"Error from server (StorageReadError): corrupt object: key {KEY} ")
    assert UNSAFE in r.err and "Traceback" not in r.err


def test_delete_removes_the_corrupt_pod_only_with_the_unsafe_option(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = kubera(capsys, server, "delete", "pod", "bad")
    deleted = kubera(capsys, server, "delete", "pod", "bad", UNSAFE)
    after = kubera(capsys, server, "get", "pods")

    assert refused.rc == 1 and "(StorageReadError)" in refused.err
    assert deleted.rc == 0 and deleted.out == 'pod "bad" deleted\n'
    assert after.rc == 0 and after.err == ""
