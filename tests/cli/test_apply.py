"""`apply` is kubectl's three-way merge: the manifest's fields are set on the live object
(undoing drift), fields dropped since the last apply are removed, and everything else on
the live object stays."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from tests.cli.helpers import kubera, pod, write

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: front
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.8
        resources:
          requests: {cpu: 100m, memory: 1024Mi}
"""


def _patch(server: str, name: str, patch: dict[str, Any]) -> None:
    async def run() -> None:
        async with Client(server) as c:
            await c.patch(BY_KIND["Deployment"], name, json.dumps(patch), namespace="default")

    asyncio.run(run())


def _get(capsys: pytest.CaptureFixture[str], server: str) -> dict[str, Any]:
    r = kubera(capsys, server, "get", "deployment", "web", "-o", "json")
    assert r.rc == 0, r.err
    return json.loads(r.out)


def test_reapplying_restores_what_was_changed_on_the_live_object(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "web.yaml", DEPLOY)
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "deployment.apps/web created\n"
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "deployment.apps/web unchanged\n"
    _patch(
        apiserver,
        "web",
        {
            "metadata": {"labels": {"tier": "back", "owner": "ops"}},
            "spec": {
                "replicas": 1,
                "minReadySeconds": 7,
                "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}]}},
            },
        },
    )
    drifted = _get(capsys, apiserver)
    assert drifted["spec"]["replicas"] == 1

    r = kubera(capsys, apiserver, "apply", "-f", path, "--dry-run=client")
    assert (r.rc, r.out) == (0, "deployment.apps/web configured (dry run)\n")
    assert _get(capsys, apiserver)["spec"]["replicas"] == 1

    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out, r.err) == (0, "deployment.apps/web configured\n", "")
    got = _get(capsys, apiserver)
    assert got["spec"]["replicas"] == 3
    # Maps merge: the manifest's label is restored, a label only others set stays.
    assert got["metadata"]["labels"] == {"app": "web", "tier": "front", "owner": "ops"}
    # Lists are replaced whole: the manifest's container is back (with server defaults).
    (container,) = got["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.k8s.io/pause:3.8"
    assert container["imagePullPolicy"] == "IfNotPresent"
    # A field no manifest ever had, and the server's defaults, are left alone.
    assert got["spec"]["minReadySeconds"] == 7
    assert got["spec"]["revisionHistoryLimit"] == 10
    assert got["spec"]["strategy"]["type"] == "RollingUpdate"

    assert kubera(capsys, apiserver, "apply", "-f", path).out == "deployment.apps/web unchanged\n"


def test_a_field_dropped_from_the_manifest_is_removed_even_after_drift(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "web.yaml", DEPLOY)
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    _patch(apiserver, "web", {"metadata": {"labels": {"tier": "back"}}})
    write(tmp_path, "web.yaml", DEPLOY.replace("    tier: front\n", "").replace("3", "2"))
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out) == (0, "deployment.apps/web configured\n")
    got = _get(capsys, apiserver)
    assert got["metadata"]["labels"] == {"app": "web"}
    assert got["spec"]["replicas"] == 2
    last = json.loads(
        got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert last["spec"]["replicas"] == 2 and "tier" not in last["metadata"]["labels"]


def test_an_object_created_without_apply_takes_the_manifest_without_losing_its_fields(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    async def create() -> None:
        obj = codec.decode(yaml.safe_load(DEPLOY), validate="strict").obj
        obj.metadata.namespace = "default"  # type: ignore[attr-defined]
        obj.metadata.labels["extra"] = "kept"  # type: ignore[attr-defined]
        obj.spec.replicas = 5  # type: ignore[attr-defined]
        async with Client(apiserver) as c:
            await c.create(obj)

    asyncio.run(create())
    path = write(tmp_path, "web.yaml", DEPLOY)
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out) == (0, "deployment.apps/web configured\n")
    got = _get(capsys, apiserver)
    assert got["spec"]["replicas"] == 3
    assert got["metadata"]["labels"] == {"app": "web", "tier": "front", "extra": "kept"}
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "deployment.apps/web unchanged\n"


def test_the_output_of_get_applies_back_cleanly(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A manifest saved from `get -o yaml` (uid, creationTimestamp, status and all)."""
    path = write(tmp_path, "web.yaml", DEPLOY)
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    saved = kubera(capsys, apiserver, "get", "deployment", "web", "-o", "yaml").out
    path = write(tmp_path, "saved.yaml", saved.replace("replicas: 3", "replicas: 4"))
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out, r.err) == (0, "deployment.apps/web configured\n", "")
    assert _get(capsys, apiserver)["spec"]["replicas"] == 4
    got = _get(capsys, apiserver)
    assert got["metadata"]["uid"] == yaml.safe_load(saved)["metadata"]["uid"]
    # Its stale `generation` differs from the live one, so kubectl would send it again
    # (and the server ignore it): "configured", but nothing else moves.
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.err) == (0, "")
    assert _get(capsys, apiserver)["spec"] == got["spec"]


# The bomb of the issue: under 400 bytes, 10 levels of 10 (10^10 nodes if expanded).
BOMB = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 10)}]\n"
    for p, c in zip("abcdefghi", "bcdefghij", strict=True)
)


def _apply_bomb(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> tuple[Any, Path, float, int]:
    """`kubera apply -f good -f bomb`: its result, the bomb's path, the seconds it took and
    the peak of the bytes allocated meanwhile."""
    assert len(BOMB) < 400
    good = write(tmp_path, "good.yaml", pod("first"))
    bomb = write(tmp_path, "bomb.yaml", pod("second") + "---\n" + BOMB)
    tracemalloc.start()
    start = time.monotonic()
    try:
        r = kubera(capsys, apiserver, "apply", "-f", good, "-f", bomb)
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return r, bomb, elapsed, peak


def test_a_yaml_alias_bomb_is_refused_in_one_line_and_nothing_is_applied(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r, bomb, _, peak = _apply_bomb(apiserver, capsys, tmp_path)
    assert r.rc == 1
    assert r.out == ""
    assert r.err.startswith(f"error: {bomb} (document 2): line 13, column ")
    assert "document contains excessive aliasing" in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert peak < 5 * 1024 * 1024  # bytes allocated at the peak of the command
    assert kubera(capsys, apiserver, "get", "pods", "-o", "name").out == ""


@pytest.mark.bench  # a wall-clock bound: run with -m bench on a quiet machine
def test_a_yaml_alias_bomb_is_refused_fast(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r, _, elapsed, _ = _apply_bomb(apiserver, capsys, tmp_path)
    assert r.rc == 1
    assert elapsed < 5


def test_anchors_and_aliases_in_a_manifest_are_applied(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = DEPLOY.replace("  labels:\n    app: web\n    tier: front\n", "  labels: &l {app: web}\n")
    text = text.replace("    matchLabels: {app: web}", "    matchLabels: *l")
    text = text.replace("      labels: {app: web}", "      labels: *l")
    assert text.count("*l") == 2
    path = write(tmp_path, "web.yaml", text)
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out, r.err) == (0, "deployment.apps/web created\n", "")
    live = _get(capsys, apiserver)
    assert live["spec"]["selector"]["matchLabels"] == {"app": "web"}
    assert live["spec"]["template"]["metadata"]["labels"] == {"app": "web"}
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "deployment.apps/web unchanged\n"


@pytest.mark.parametrize(
    ("flags", "rc", "out", "err"),
    [
        ([], 1, "", 'strict decoding error: unknown field "spec.foo"'),
        (["--validate=strict"], 1, "", 'strict decoding error: unknown field "spec.foo"'),
        (["--validate=true"], 1, "", 'strict decoding error: unknown field "spec.foo"'),
        (["--validate"], 1, "", 'strict decoding error: unknown field "spec.foo"'),
        (["--validate=warn"], 0, "pod/p created\n", 'Warning: unknown field "spec.foo"'),
        (["--validate=ignore"], 0, "pod/p created\n", ""),
        (["--validate=false"], 0, "pod/p created\n", ""),
    ],
    ids=[
        "default-is-strict",
        "strict",
        "true-is-strict",
        "alone-is-strict",
        "warn",
        "ignore",
        "false-is-ignore",
    ],
)
def test_unknown_fields_are_refused_by_default_as_in_kubectl(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flags: list[str],
    rc: int,
    out: str,
    err: str,
) -> None:
    path = write(tmp_path, "p.yaml", pod("p", extra="  foo: 1\n"))
    r = kubera(capsys, apiserver, "apply", "-f", path, *flags)
    assert (r.rc, r.out) == (rc, out), r.err
    assert err in r.err if err else r.err == ""
    created = kubera(capsys, apiserver, "get", "pods", "-o", "name").out
    assert created == ("pod/p\n" if rc == 0 else "")


def test_a_last_applied_annotation_nested_too_deeply_reads_as_none(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Someone else wrote a 50,000-level last-applied annotation: apply treats the live
    object as never applied (as with one that is not JSON) instead of a traceback."""
    path = write(tmp_path, "web.yaml", DEPLOY)
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    deep = "[" * 50_000 + "]" * 50_000
    key = "kubectl.kubernetes.io/last-applied-configuration"
    _patch(apiserver, "web", {"metadata": {"annotations": {key: deep}}})
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out) == (0, "deployment.apps/web configured\n"), r.err
    assert (
        json.loads(_get(capsys, apiserver)["metadata"]["annotations"][key])["kind"] == "Deployment"
    )


SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - {port: 80, targetPort: 8080}
"""


def test_a_service_reapplies_unchanged_and_keeps_its_allocations(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The manifest names no cluster IP or node port: re-applying it neither moves nor
    drops the allocated ones (upstream's patchAllocatedValues)."""
    path = write(tmp_path, "svc.yaml", SERVICE)
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "service/web created\n"
    before = json.loads(kubera(capsys, apiserver, "get", "service", "web", "-o", "json").out)
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "service/web unchanged\n"
    changed = SERVICE.replace("{app: web}", "{app: web2}")
    path = write(tmp_path, "svc.yaml", changed)
    assert kubera(capsys, apiserver, "apply", "-f", path).out == "service/web configured\n"
    after = json.loads(kubera(capsys, apiserver, "get", "service", "web", "-o", "json").out)
    assert after["spec"]["clusterIP"] == before["spec"]["clusterIP"]
    assert after["spec"]["ports"][0]["nodePort"] == before["spec"]["ports"][0]["nodePort"]
    assert after["spec"]["selector"] == {"app": "web2"}
    table = kubera(capsys, apiserver, "get", "svc").out.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    row = next(line.split() for line in table if line.startswith("web "))
    node_port = after["spec"]["ports"][0]["nodePort"]
    assert row[1:5] == ["NodePort", after["spec"]["clusterIP"], "<none>", f"80:{node_port}/TCP"]
