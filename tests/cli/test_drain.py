"""`kubera drain`: kubectl's filters, words and exit codes; waiting on a watch.

No kubelet runs here: `kubelet` stands in for one (a pod marked for deletion is removed at
once), and the tests without it see drain time out or pass --grace-period 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubera.cli import nodes
from kubera.cli.drainplan import DrainOptions, aggregate, go_duration, plan_drain
from kubera.cli.nodes import wait_until_gone
from protos.kubera.v1 import core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import GoneError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.client import Client, WatchEvent
from tests.cli.helpers import kubera, write

PODS = BY_KIND["Pod"]

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
"""

RS = "{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8, uid: u-rs, controller: true}"
DS = "{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u-ds, controller: true}"


def pod_yaml(
    name: str, node: str = "n1", *, owner: str = "", emptydir: bool = False, mirror: bool = False
) -> str:
    meta = f"  ownerReferences: [{owner}]\n" if owner else ""
    if mirror:
        meta += "  annotations: {kubernetes.io/config.mirror: abc123}\n"
    volumes = "  volumes: [{name: scratch, emptyDir: {}}]\n" if emptydir else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{meta}"
        f"spec:\n  nodeName: {node}\n{volumes}"
        "  containers: [{name: app, image: registry.k8s.io/pause:3.8}]\n"
    )


def setup(server: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, *pods: str) -> None:
    path = write(tmp_path, "cluster.yaml", "---\n".join([NODES, *pods]))
    r = kubera(capsys, server, "apply", "-f", path)
    assert r.rc == 0, r.err


def pod_names(capsys: pytest.CaptureFixture[str], server: str) -> list[str]:
    return kubera(capsys, server, "get", "pods", "-o", "name").out.split()


def pod_status(capsys: pytest.CaptureFixture[str], server: str, name: str) -> str:
    row = kubera(capsys, server, "get", "pod", name).out.splitlines()[1]
    return row.split()[2]


def unschedulable(capsys: pytest.CaptureFixture[str], server: str, node: str) -> bool:
    out = kubera(capsys, server, "get", "node", node, "-o", "json").out
    return json.loads(out).get("spec", {}).get("unschedulable", False)


class FakeKubelet:
    """The kubelet's end of a graceful deletion, at once: a pod marked for deletion is
    removed (grace 0). It runs on its own event loop in a thread, since the CLI under test
    owns the main thread's."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    async def _start(self) -> None:
        self.client = Client(self.server)
        _, rv = await self.client.list(PODS)
        self.task = asyncio.create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        async for ev in self.client.watch(PODS, options=ListOptions(resource_version=rv)):
            meta = ev.object.metadata  # type: ignore[attr-defined]
            if ev.type == "MODIFIED" and meta.deletion_timestamp:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(
                        PODS, meta.name, meta.namespace, grace_period_seconds=0
                    )

    async def _stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self.client.close()

    def __enter__(self) -> FakeKubelet:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()


@pytest.fixture
def kubelet(apiserver: str) -> Iterator[FakeKubelet]:
    with FakeKubelet(apiserver) as k:
        yield k


# ------------------------------------------------------- filters, offline


def _pod(
    name: str,
    *,
    owner: str = "",
    controller: bool = True,
    emptydir: bool = False,
    mirror: bool = False,
    phase: str = "Running",
) -> core_pb2.Pod:
    p = core_pb2.Pod()
    p.metadata.name, p.metadata.namespace = name, "default"
    if owner:
        p.metadata.owner_references.add(kind=owner, name="x", uid="u", controller=controller)
    if mirror:
        p.metadata.annotations["kubernetes.io/config.mirror"] = "abc"
    if emptydir:
        p.spec.volumes.add().update({"name": "scratch", "emptyDir": {}})
    p.spec.node_name = "n1"
    p.status.phase = phase
    return p


NO_CONTROLLER = "cannot delete Pods that declare no controller (use --force to override)"
LOCAL_STORAGE = "cannot delete Pods with local storage (use --delete-emptydir-data to override)"
DAEMONSET = "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"


@pytest.mark.parametrize(
    ("pod", "opts", "deleted", "warnings", "errors"),
    [
        (_pod("p", owner="ReplicaSet"), DrainOptions(), True, "", []),
        (_pod("p"), DrainOptions(), False, "", [f"{NO_CONTROLLER}: default/p"]),
        (
            _pod("p"),
            DrainOptions(force=True),
            True,
            "deleting Pods that declare no controller: default/p",
            [],
        ),
        (
            _pod("p", owner="ReplicaSet", controller=False),
            DrainOptions(),
            False,
            "",
            [f"{NO_CONTROLLER}: default/p"],
        ),
        (_pod("p", phase="Succeeded"), DrainOptions(), True, "", []),
        (_pod("p", phase="Failed", emptydir=True), DrainOptions(), True, "", []),
        (
            _pod("p", owner="ReplicaSet", emptydir=True),
            DrainOptions(),
            False,
            "",
            [f"{LOCAL_STORAGE}: default/p"],
        ),
        (
            _pod("p", owner="ReplicaSet", emptydir=True),
            DrainOptions(delete_emptydir_data=True),
            True,
            "deleting Pods with local storage: default/p",
            [],
        ),
        (
            _pod("p", emptydir=True),
            DrainOptions(force=True, delete_emptydir_data=True),
            True,
            "deleting Pods with local storage: default/p; "
            "deleting Pods that declare no controller: default/p",
            [],
        ),
        (_pod("p", owner="DaemonSet"), DrainOptions(), False, "", [f"{DAEMONSET}: default/p"]),
        (
            _pod("p", owner="DaemonSet"),
            DrainOptions(ignore_daemonsets=True),
            False,
            "ignoring DaemonSet-managed Pods: default/p",
            [],
        ),
        (_pod("p", owner="DaemonSet", phase="Succeeded"), DrainOptions(), True, "", []),
        (_pod("p", mirror=True, emptydir=True), DrainOptions(), False, "", []),
    ],
    ids=[
        "controller-owned-pod-is-deleted",
        "pod-without-controller-is-refused",
        "force-deletes-pod-without-controller-with-a-warning",
        "owner-that-is-not-controller-does-not-count",
        "finished-pod-needs-no-controller",
        "finished-pod-may-have-emptydir",
        "emptydir-pod-is-refused",
        "delete-emptydir-data-deletes-it-with-a-warning",
        "every-warning-is-kept-unlike-kubectl",
        "daemonset-pod-is-refused",
        "ignore-daemonsets-leaves-it-in-place-with-a-warning",
        "finished-daemonset-pod-is-deleted",
        "mirror-pod-is-skipped-silently",
    ],
)
def test_drain_filters_follow_kubectl(
    pod: core_pb2.Pod, opts: DrainOptions, deleted: bool, warnings: str, errors: list[str]
) -> None:
    plan = plan_drain([pod], opts)
    assert (bool(plan.pods), plan.warnings, list(plan.errors)) == (deleted, warnings, errors)


def test_refusals_group_pods_per_reason_in_order_of_first_pod() -> None:
    pods = [
        _pod("a"),
        _pod("b", owner="ReplicaSet", emptydir=True),
        _pod("c"),
        _pod("d", owner="ReplicaSet"),
    ]
    plan = plan_drain(pods, DrainOptions())
    assert list(plan.errors) == [
        f"{NO_CONTROLLER}: default/a, default/c",
        f"{LOCAL_STORAGE}: default/b",
    ]
    assert [p.metadata.name for p in plan.pods] == ["d"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.3, "300ms"),
        (1, "1s"),
        (1.5, "1.5s"),
        (90, "1m30s"),
        (300, "5m0s"),
        (3600, "1h0m0s"),
        (5400.25, "1h30m0.25s"),
    ],
)
def test_timeouts_print_as_go_durations(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


@pytest.mark.parametrize(
    ("errors", "text"),
    [(["a"], "a"), (["a", "b"], "[a, b]"), (["a", "a"], "a")],
    ids=["one-as-is", "several-bracketed", "duplicates-once"],
)
def test_errors_aggregate_as_utilerrors(errors: list[str], text: str) -> None:
    assert aggregate(errors) == text


# ------------------------------------------------------- waiting, offline


def _running(name: str, uid: str = "") -> core_pb2.Pod:
    p = _pod(name, owner="ReplicaSet")
    p.metadata.uid = uid or f"uid-{name}"
    return p


class ScriptedClient:
    """A client whose watches replay a script: each session is "gone" (history compacted)
    or events, after which the watch stays open with nothing to say."""

    def __init__(self, sessions: list, listed: tuple[core_pb2.Pod, ...] = ()) -> None:
        self.sessions = list(sessions)
        self.listed = list(listed)

    async def watch(self, kind, **kw):  # type: ignore[no-untyped-def]
        session = self.sessions.pop(0)
        if session == "gone":
            raise GoneError("too old resource version")
        for ev in session:
            yield ev
        await asyncio.Event().wait()

    async def list(self, kind, **kw):  # type: ignore[no-untyped-def]
        return list(self.listed), "42"


@pytest.mark.parametrize(
    ("sessions", "listed", "gone", "remaining"),
    [
        (
            [[WatchEvent("DELETED", _running("web-1")), WatchEvent("DELETED", _running("web-2"))]],
            (),
            ["web-1", "web-2"],
            [],
        ),
        (
            [
                [
                    WatchEvent("ADDED", _running("web-1", "new")),
                    WatchEvent("DELETED", _running("web-2")),
                ]
            ],
            (),
            ["web-1", "web-2"],
            [],
        ),
        (
            ["gone", [WatchEvent("DELETED", _running("web-2"))]],
            (_running("web-2"),),
            ["web-1", "web-2"],
            [],
        ),
        ([[WatchEvent("MODIFIED", _running("web-1"))]], (), [], ["web-1", "web-2"]),
    ],
    ids=[
        "deleted-events",
        "same-name-new-uid-means-the-old-pod-is-gone",
        "compacted-history-relists-and-watches-on",
        "still-terminating-at-the-timeout-remains",
    ],
)
def test_wait_until_gone_follows_the_watch(
    sessions: list, listed: tuple[core_pb2.Pod, ...], gone: list[str], remaining: list[str]
) -> None:
    seen: list[str] = []
    left = asyncio.run(
        wait_until_gone(
            ScriptedClient(sessions, listed),  # type: ignore[arg-type]
            [_running("web-1"), _running("web-2")],
            node="n1",
            resource_version="7",
            timeout=0.2,
            on_gone=lambda pod: seen.append(pod.metadata.name),
        )
    )
    assert (seen, [p.metadata.name for p in left]) == (gone, remaining)


# ------------------------------------------------------ against a server


def test_drain_deletes_pods_and_waits_until_the_kubelet_removed_them(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, kubelet: FakeKubelet
) -> None:
    setup(
        apiserver,
        capsys,
        tmp_path,
        pod_yaml("web-1", owner=RS),
        pod_yaml("web-2", owner=RS),
        pod_yaml("agent-x", owner=DS),
        pod_yaml("static-n1", mirror=True),
        pod_yaml("elsewhere", node="n2"),
    )
    r = kubera(capsys, apiserver, "drain", "n1", "--ignore-daemonsets")
    assert (r.rc, r.out, r.err) == (
        0,
        "node/n1 cordoned\n"
        "evicting pod default/web-1\n"
        "evicting pod default/web-2\n"
        "pod/web-1 evicted\n"
        "pod/web-2 evicted\n"
        "node/n1 drained\n",
        "Warning: ignoring DaemonSet-managed Pods: default/agent-x\n",
    )
    assert pod_names(capsys, apiserver) == ["pod/agent-x", "pod/elsewhere", "pod/static-n1"]
    assert unschedulable(capsys, apiserver, "n1")


def test_drain_refuses_pods_without_controller_as_kubectl_and_deletes_nothing(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    setup(
        apiserver,
        capsys,
        tmp_path,
        pod_yaml("bare"),
        pod_yaml("scratch", owner=RS, emptydir=True),
        pod_yaml("web", owner=RS),
    )
    r = kubera(capsys, apiserver, "drain", "n1")
    assert (r.rc, r.out) == (1, "node/n1 cordoned\n")
    assert r.err.splitlines() == [
        f'error: unable to drain node "n1" due to error:[{NO_CONTROLLER}: default/bare, '
        f"{LOCAL_STORAGE}: default/scratch], continuing command...",
        "There are pending nodes to be drained:",
        " n1",
        f"{NO_CONTROLLER}: default/bare",
        f"{LOCAL_STORAGE}: default/scratch",
    ]
    assert pod_status(capsys, apiserver, "web") == "Pending"  # not even marked for deletion
    assert unschedulable(capsys, apiserver, "n1")  # kubectl cordons first, and so do we


def test_force_deletes_pods_without_controller_with_kubectls_warning(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, kubelet: FakeKubelet
) -> None:
    setup(apiserver, capsys, tmp_path, pod_yaml("bare"))
    r = kubera(capsys, apiserver, "drain", "n1", "--force")
    assert (r.rc, r.out, r.err) == (
        0,
        "node/n1 cordoned\nevicting pod default/bare\npod/bare evicted\nnode/n1 drained\n",
        "Warning: deleting Pods that declare no controller: default/bare\n",
    )
    assert pod_names(capsys, apiserver) == []


def test_grace_period_zero_removes_pods_without_a_kubelet(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    setup(apiserver, capsys, tmp_path, pod_yaml("web", owner=RS))
    r = kubera(capsys, apiserver, "drain", "n1", "--grace-period", "0")
    assert (r.rc, r.err) == (0, "")
    assert r.out.splitlines()[-2:] == ["pod/web evicted", "node/n1 drained"]


def test_timeout_names_the_pods_still_there_and_exits_1(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    setup(apiserver, capsys, tmp_path, pod_yaml("web-1", owner=RS), pod_yaml("web-2", owner=RS))
    r = kubera(capsys, apiserver, "drain", "n1", "--timeout", "300ms")
    assert (r.rc, r.out) == (
        1,
        "node/n1 cordoned\nevicting pod default/web-1\nevicting pod default/web-2\n",
    )
    waited = [
        f'error when waiting for pod "{name}" in namespace "default" to terminate: '
        "global timeout reached: 300ms"
        for name in ("web-1", "web-2")
    ]
    both = f"[{waited[0]}, {waited[1]}]"
    assert r.err.splitlines() == [
        f'There are pending pods in node "n1" when an error occurred: {both}',
        "pod/web-1",
        "pod/web-2",
        f'error: unable to drain node "n1" due to error:{both}, continuing command...',
        "There are pending nodes to be drained:",
        " n1",
        *waited,
    ]
    assert pod_status(capsys, apiserver, "web-1") == "Terminating"  # a kubelet would finish


@pytest.mark.parametrize(
    "argv",
    [["--dry-run", "n1"], ["n1", "--dry-run"], ["n1", "--dry-run=client"]],
    ids=["bare-flag-before-node", "bare-flag-after-node", "client-value"],
)
def test_dry_run_prints_the_plan_and_changes_nothing(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    setup(apiserver, capsys, tmp_path, pod_yaml("bare"))
    r = kubera(capsys, apiserver, "drain", *argv, "--force")
    assert (r.rc, r.out, r.err) == (
        0,
        "node/n1 cordoned (dry run)\n"
        "evicting pod default/bare (dry run)\n"
        "node/n1 drained (dry run)\n",
        "Warning: deleting Pods that declare no controller: default/bare\n",
    )
    assert not unschedulable(capsys, apiserver, "n1")
    assert pod_status(capsys, apiserver, "bare") == "Pending"


def test_drain_of_a_cordoned_empty_node_says_already_cordoned(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    setup(apiserver, capsys, tmp_path)
    assert kubera(capsys, apiserver, "cordon", "n1").rc == 0
    r = kubera(capsys, apiserver, "drain", "n1")
    assert (r.rc, r.out, r.err) == (0, "node/n1 already cordoned\nnode/n1 drained\n", "")


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (["nope"], 'Error from server (NotFound): nodes "nope" not found\n'),
        (
            ["n1", "--dry-run=sometimes"],
            'error: Invalid dry-run value (sometimes). Must be "none", "server", or "client".\n',
        ),
        ([], "error: USAGE: drain NODE [flags] (see `kubera drain --help`)\n"),
    ],
    ids=["unknown-node", "bad-dry-run-value", "no-node"],
)
def test_bad_drains_are_one_clear_line_and_exit_1(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], err: str
) -> None:
    setup(apiserver, capsys, tmp_path)
    r = kubera(capsys, apiserver, "drain", *argv)
    assert (r.rc, r.out, r.err) == (1, "", err)


def test_help_says_drain_evicts_through_budgets(
    apiserver: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = kubera(capsys, apiserver, "drain", "--help")
    assert r.rc == 0
    text = " ".join(r.out.split())
    assert "evicted through the Eviction API, which honours PodDisruptionBudgets" in text
    assert "--disable-eviction deletes the pods instead, bypassing budgets" in text
    assert "0 waits forever (default 5m; kubectl's default is 0)" in text


# ------------------------------------------------- eviction and PodDisruptionBudgets

PDB = BY_KIND["PodDisruptionBudget"]
WEB = "{app: web}"


def web_pod(name: str, node: str = "n1") -> str:
    return pod_yaml(name, node, owner=RS).replace(
        f"  name: {name}\n", f"  name: {name}\n  labels: {WEB}\n", 1
    )


def budget(server: str, *, allowed: int, healthy: int = 2, desired: int = 2) -> None:
    """A PodDisruptionBudget over app=web with the status its controller would write (no
    controller runs here)."""

    async def go() -> None:
        async with Client(server) as c:
            pdb = codec.decode(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"minAvailable": desired, "selector": {"matchLabels": {"app": "web"}}},
                },
                validate="strict",
            ).obj
            try:
                pdb = await c.get(PDB, "web", "default")
            except NotFoundError:
                pdb = await c.create(pdb)
            st = pdb.status  # type: ignore[attr-defined]
            st.observed_generation = pdb.metadata.generation  # type: ignore[attr-defined]
            st.disruptions_allowed, st.current_healthy, st.desired_healthy = (
                allowed,
                healthy,
                desired,
            )
            st.expected_pods = healthy
            await c.update_status(pdb)

    asyncio.run(go())


def running(server: str, *names: str) -> None:
    async def go() -> None:
        async with Client(server) as c:
            for name in names:
                pod = await c.get(PODS, name, "default")
                pod.status.phase = "Running"  # type: ignore[attr-defined]
                pod.status.conditions.add(type="Ready", status="True")  # type: ignore[attr-defined]
                await c.update_status(pod)

    asyncio.run(go())


BLOCKED = (
    "Cannot evict pod as it would violate the pod's disruption budget. "
    "The disruption budget web needs 2 healthy pods and has 2 currently"
)


def test_budget_blocking_eviction_fails_the_drain_naming_pods_and_budget(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 429 is retried until --timeout, said on stderr each time; then drain exits 1
    naming the pods left and the budget's refusal; the pods are untouched."""
    monkeypatch.setattr(nodes, "EVICTION_RETRY", 0.1)
    setup(apiserver, capsys, tmp_path, web_pod("web-1"), web_pod("web-2"))
    running(apiserver, "web-1", "web-2")
    budget(apiserver, allowed=0)
    r = kubera(capsys, apiserver, "drain", "n1", "--timeout", "350ms", "--grace-period", "0")
    assert (r.rc, r.out) == (
        1,
        "node/n1 cordoned\nevicting pod default/web-1\nevicting pod default/web-2\n",
    )
    lines = r.err.splitlines()
    retry = f'error when evicting pods/"web-1" -n "default" (will retry after 100ms): {BLOCKED}'
    assert retry in lines
    timed_out = [
        f'error when evicting pods/"{n}" -n "default": global timeout reached: 350ms '
        f"(last refusal: {BLOCKED})"
        for n in ("web-1", "web-2")
    ]
    assert lines[-3:] == [" n1", *timed_out]
    assert "pod/web-1" in lines and "pod/web-2" in lines  # the pending pods
    assert pod_status(capsys, apiserver, "web-1") == "Running"
    assert pod_status(capsys, apiserver, "web-2") == "Running"
    assert unschedulable(capsys, apiserver, "n1")


def test_budget_allowing_one_disruption_lets_one_pod_go_and_blocks_the_other(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nodes, "EVICTION_RETRY", 0.1)
    setup(apiserver, capsys, tmp_path, web_pod("web-1"), web_pod("web-2"), pod_yaml("db", owner=RS))
    running(apiserver, "web-1", "web-2")
    budget(apiserver, allowed=1, desired=1)
    r = kubera(capsys, apiserver, "drain", "n1", "--timeout", "300ms", "--grace-period", "0")
    assert r.rc == 1
    assert "pod/web-1 evicted" in r.out and "pod/db evicted" in r.out
    assert "pod/web-2 evicted" not in r.out
    assert r.err.splitlines()[-1].startswith(
        'error when evicting pods/"web-2" -n "default": global timeout reached: 300ms'
    )
    assert pod_names(capsys, apiserver) == ["pod/web-2"]


def test_eviction_retried_until_the_budget_allows_it(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nodes, "EVICTION_RETRY", 0.1)
    setup(apiserver, capsys, tmp_path, web_pod("web-1"))
    running(apiserver, "web-1")
    budget(apiserver, allowed=0)
    # The budget allows the eviction once the first one was refused (the retry's message
    # formats its interval with go_duration), not after a fixed time: a slow start of the
    # drain must not find the budget already raised.
    later = threading.Thread(target=lambda: budget(apiserver, allowed=1, healthy=3))
    retry_said = nodes.go_duration

    def on_first_retry(seconds: float) -> str:
        if not later.is_alive() and later.ident is None:
            later.start()
        return retry_said(seconds)

    monkeypatch.setattr(nodes, "go_duration", on_first_retry)
    try:
        r = kubera(capsys, apiserver, "drain", "n1", "--timeout", "10s", "--grace-period", "0")
    finally:
        if later.ident is not None:
            later.join()
    assert r.rc == 0, r.err
    assert r.out.splitlines()[-2:] == ["pod/web-1 evicted", "node/n1 drained"]
    assert "(will retry after 100ms)" in r.err


def test_disable_eviction_deletes_despite_the_budget(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    setup(apiserver, capsys, tmp_path, web_pod("web-1"))
    running(apiserver, "web-1")
    budget(apiserver, allowed=0)
    r = kubera(capsys, apiserver, "drain", "n1", "--disable-eviction", "--grace-period", "0")
    assert (r.rc, r.out, r.err) == (
        0,
        "node/n1 cordoned\ndeleting pod default/web-1\npod/web-1 deleted\nnode/n1 drained\n",
        "",
    )
    assert pod_names(capsys, apiserver) == []


def test_unbudgeted_node_drains_while_another_is_protected(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    setup(apiserver, capsys, tmp_path, web_pod("web-1"), pod_yaml("other", "n2", owner=RS))
    running(apiserver, "web-1")
    budget(apiserver, allowed=0)
    r = kubera(capsys, apiserver, "drain", "n2", "--grace-period", "0")
    assert (r.rc, r.err) == (0, "")
    assert pod_names(capsys, apiserver) == ["pod/web-1"]
