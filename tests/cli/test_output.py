"""kubectl's printing rules, checked without a server: AGE, pod and node STATUS, layout."""

from __future__ import annotations

import io

import pytest
from google.protobuf import struct_pb2

from kubera.cli.apply import merge_patch, three_way_patch
from kubera.printing import describe, output, tables
from protos.kubera.v1 import core_pb2


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60 * 25, "3h25m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (4 * 86400 + 5 * 3600, "4d5h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400, "3y"),
        (3 * 365 * 86400 + 10 * 86400, "3y10d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_age_is_kubectls_human_duration(seconds: int, shown: str) -> None:
    assert tables.human_duration(seconds) == shown


def test_age_of_a_missing_timestamp_is_unknown() -> None:
    assert tables.age("", 0) == "<unknown>"
    assert (
        tables.age("2030-01-01T00:00:05Z", tables.parse_time("2030-01-01T00:00:10Z") or 0) == "5s"
    )
    assert tables.parse_time("2030-01-01T00:00:00.123456Z") is not None


def _pod(**kw: object) -> core_pb2.Pod:
    p = core_pb2.Pod()
    p.metadata.name = "p"
    p.spec.containers.add(name="app", image="i")
    for k, v in kw.items():
        if k == "phase":
            p.status.phase = str(v)
        elif k == "node":
            p.spec.node_name = str(v)
        elif k == "gates":  # as the apiserver creates a gated pod
            p.spec.scheduling_gates.add(name="g")
            p.status.conditions.add(type="PodScheduled", status="False", reason="SchedulingGated")
        elif k == "spec_gates_only":
            p.spec.scheduling_gates.add(name="g")
        elif k == "deleting":
            p.metadata.deletion_timestamp = "2030-01-01T00:00:00Z"
        elif k == "reason":
            p.status.reason = str(v)
        elif k == "state":
            cs = p.status.container_statuses.add(name="app", restart_count=2)
            cs.state.CopyFrom(struct_pb2.Struct())
            cs.state.update(v)  # type: ignore[arg-type]
            cs.ready = "running" in v  # type: ignore[operator]
    return p


@pytest.mark.parametrize(
    ("pod", "status", "ready"),
    [
        (_pod(phase="Pending"), "Pending", 0),
        (_pod(phase="Pending", gates=True), "SchedulingGated", 0),
        # printPod reads the condition alone, not the spec's gates
        (_pod(phase="Pending", spec_gates_only=True), "Pending", 0),
        (_pod(phase="Running", deleting=True, node="n1"), "Terminating", 0),
        (_pod(phase="Succeeded", deleting=True), "Succeeded", 0),
        (_pod(phase="Failed", reason="Evicted"), "Evicted", 0),
        (_pod(phase="Running", state={"running": {}}), "Running", 1),
        (
            _pod(phase="Pending", state={"waiting": {"reason": "ContainerCreating"}}),
            "ContainerCreating",
            0,
        ),
        (_pod(phase="Failed", state={"terminated": {"exitCode": 137}}), "ExitCode:137", 0),
        (_pod(phase="Succeeded", state={"terminated": {"reason": "Completed"}}), "Completed", 0),
    ],
)
def test_pod_status_follows_kubectl(pod: core_pb2.Pod, status: str, ready: int) -> None:
    shown, ready_count, total, _ = tables.pod_status(pod)
    assert (shown, ready_count, total) == (status, ready, 1)


def _node(ready: str | None, unschedulable: bool = False) -> core_pb2.Node:
    n = core_pb2.Node()
    if ready is not None:
        n.status.conditions.add(type="Ready", status=ready)
    n.spec.unschedulable = unschedulable
    return n


@pytest.mark.parametrize(
    ("node", "status"),
    [
        (_node("True"), "Ready"),
        (_node("False"), "NotReady"),
        (_node("Unknown"), "NotReady"),
        (_node(None), "Unknown"),
        (_node("True", unschedulable=True), "Ready,SchedulingDisabled"),
    ],
)
def test_node_status_follows_kubectl(node: core_pb2.Node, status: str) -> None:
    assert tables.node_status(node) == status


def test_plain_table_is_kubectls_tabwriter_layout() -> None:
    text = tables.plain_table(
        ["NAME", "READY", "AGE"], [["nginx", "1/1", "5s"], ["a", "0/1", "2m"]]
    )
    assert text == "NAME    READY   AGE\nnginx   1/1     5s\na       0/1     2m\n"


def test_a_terminal_gets_a_rich_table_and_a_pipe_plain_text() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    tables.print_table(["NAME", "AGE"], [["nginx", "5s"]], out=tty)
    tables.print_table(["NAME", "AGE"], [["nginx", "5s"]], out=pipe)
    assert "NAME" in tty.getvalue() and "nginx" in tty.getvalue()
    assert pipe.getvalue() == "NAME    AGE\nnginx   5s\n"
    assert "\x1b" not in pipe.getvalue()


def test_tabwrite_aligns_column_blocks_like_go() -> None:
    text = describe.tabwrite(
        "Name:\tweb\nNamespace:\tdefault\nContainers:\n  app:\n    Image:\tnginx"
    )
    assert text.splitlines() == [
        "Name:       web",
        "Namespace:  default",
        "Containers:",
        "  app:",
        "    Image:  nginx",
    ]


def test_tolerations_are_described_like_kubectl() -> None:
    t = core_pb2.Toleration(key="k", operator="Exists", effect="NoExecute", toleration_seconds=300)
    assert describe.format_toleration(t) == "k:NoExecute op=Exists for 300s"
    assert describe.format_toleration(core_pb2.Toleration(operator="Exists")) == "op=Exists"
    t = core_pb2.Toleration(key="k", operator="Equal", value="v", effect="NoSchedule")
    assert describe.format_toleration(t) == "k=v:NoSchedule"


def test_object_names_carry_the_group() -> None:
    from services.api.machinery.kinds import lookup

    assert output.resource_name(lookup("pods")) == "pod"
    assert output.resource_name(lookup("deploy")) == "deployment.apps"
    assert output.resource_name(lookup("pc")) == "priorityclass.scheduling.k8s.io"


@pytest.mark.parametrize(
    ("last", "new", "live", "patch"),
    [
        # No last applied manifest: set what the manifest says, remove nothing.
        (None, {"a": 1}, {"a": 1, "s": 9}, {}),
        (None, {"a": 1}, {"s": 9}, {"a": 1}),
        ({"a": 1}, {"a": 1}, {"a": 1}, {}),
        ({"a": 1, "b": 2}, {"a": 1}, {"a": 1, "b": 2}, {"b": None}),
        ({"m": {"x": 1, "y": 2}}, {"m": {"x": 1}}, {"m": {"x": 1, "y": 2}}, {"m": {"y": None}}),
        ({"l": [1, 2]}, {"l": [1]}, {"l": [1, 2]}, {"l": [1]}),
        # Drift: the live object changed behind the manifest's back; apply restores it.
        ({"a": 3}, {"a": 3}, {"a": 1}, {"a": 3}),
        ({"m": {"x": "f"}}, {"m": {"x": "f"}}, {"m": {"x": "b", "o": 1}}, {"m": {"x": "f"}}),
        ({"l": [1]}, {"l": [1]}, {"l": [1, 2]}, {"l": [1]}),
        # Fields others (or the server) set that no manifest ever had are left alone.
        ({"a": 1}, {"a": 1}, {"a": 1, "s": {"x": 1}}, {}),
        # Removed by the manifest, already gone live: the null is harmless.
        ({"a": 1, "b": 2}, {"a": 1}, {"a": 1}, {"b": None}),
        # A null in the manifest removes the field.
        ({"a": 1}, {"a": 1, "b": None}, {"a": 1, "b": 2}, {"b": None}),
    ],
)
def test_apply_patch_is_the_three_way_merge(
    last: dict | None, new: dict, live: dict, patch: dict
) -> None:
    assert three_way_patch(last, new, live) == patch
    merged = merge_patch(live, patch)
    for k, v in new.items():  # the manifest's fields are set ...
        if v is not None and not isinstance(v, dict):
            assert merged[k] == v
    for k in set(last or {}) - set(new):  # ... the dropped ones gone ...
        assert k not in merged
    for k in set(live) - set(new) - set(last or {}):  # ... and the rest kept
        assert merged[k] == live[k]


def test_merge_patch_keeps_what_the_patch_does_not_name() -> None:
    live = {"spec": {"a": 1, "server": 2}, "status": {"phase": "Running"}}
    assert merge_patch(live, {"spec": {"a": None, "b": 3}}) == {
        "spec": {"server": 2, "b": 3},
        "status": {"phase": "Running"},
    }


def test_map_fields_print_with_sorted_keys_and_struct_fields_in_declared_order() -> None:
    """Go's encoding/json: map keys sorted, struct fields in their declared order."""
    p = core_pb2.Pod()
    p.metadata.name = "p"
    for k in ("zone", "app", "mid"):
        p.metadata.labels[k] = "x"
        p.metadata.annotations[k] = "x"
        p.spec.node_selector[k] = "x"
    c = p.spec.containers.add(name="app", image="nginx")
    for res in ("memory", "cpu", "ephemeral-storage"):
        c.resources.requests[res] = "1"
        c.resources.limits[res] = "1"
        p.spec.overhead[res] = "1"
    d = output.to_dict(p)
    expected = ["app", "mid", "zone"]
    assert list(d["metadata"]["labels"]) == expected
    assert list(d["metadata"]["annotations"]) == expected
    assert list(d["spec"]["nodeSelector"]) == expected
    resources = d["spec"]["containers"][0]["resources"]
    assert list(resources["requests"]) == ["cpu", "ephemeral-storage", "memory"]
    assert list(resources["limits"]) == ["cpu", "ephemeral-storage", "memory"]
    assert list(d["spec"]["overhead"]) == ["cpu", "ephemeral-storage", "memory"]
    assert list(d) == ["apiVersion", "kind", "metadata", "spec", "status"]  # a Go struct: {}
    assert list(d["spec"]["containers"][0]) == ["name", "image", "resources"]
    text = output.dump_yaml(d)
    assert text.index("cpu:") < text.index("ephemeral-storage:") < text.index("memory:")


def test_node_capacity_and_allocatable_print_sorted() -> None:
    n = core_pb2.Node()
    n.metadata.name = "n"
    for res in ("pods", "memory", "cpu"):
        n.status.capacity[res] = "1"
        n.status.allocatable[res] = "1"
    status = output.to_dict(n)["status"]
    assert list(status["capacity"]) == list(status["allocatable"]) == ["cpu", "memory", "pods"]
