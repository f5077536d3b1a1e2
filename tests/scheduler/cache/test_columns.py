"""Per-node columns beside a Snapshot: built once, then revisiting only changed rows, and
always equal to columns built from scratch."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.scheduler.cache import columns
from services.scheduler.cache.columns import NodeColumns, columns_of
from tests.profiles import examples
from tests.scheduler.plugins import rowcases
from tests.scheduler.plugins.rowcases import Cluster


def spec(**kw: Any) -> dict[str, Any]:
    return {"labels": {}, "taints": [], "unschedulable": False} | kw


def decoded(cols: NodeColumns, keys: list[str]) -> list[tuple[Any, ...]]:
    """Every row's values, read back through the ids."""
    t, p = cols.taints, cols.ports
    for col in (t, p, *(cols.label(k) for k in keys)):
        assert col.rows == [int((col.ids == i).sum()) for i in range(len(col.values))]
        assert col.live == sum(1 for n in col.rows if n)
    out = []
    for i in range(len(cols.row_gen)):
        ts = t.values[t.ids[i]].taints
        row = (
            None if ts is None else tuple((x.key, x.value, x.effect) for x in ts),
            p.values[p.ids[i]],
            bool(cols.unschedulable[i]),
            bool(cols.has_node[i]),
            int(cols.pod_count[i]),
            *(cols.label(k).values[cols.label(k).ids[i]] for k in keys),
        )
        out.append(row)
    return out


def fresh(cluster: Cluster) -> NodeColumns:
    cols = NodeColumns()
    snap = cluster.snapshot
    cols.refresh(snap.list(), snap.row_gen, snap.layout_version)
    return cols


def test_a_bind_revisits_one_row_and_keeps_the_node_values() -> None:
    cluster = Cluster([spec(taints=[{"key": "a", "value": "x", "effect": "NoSchedule"}])] * 3)
    cols = columns_of(cluster.snapshot)
    assert cols is not None and cols.last_refreshed == 3
    assert cols.taints.ids.tolist() == [0, 0, 0]  # one distinct taint list
    zone = cols.label("zone")
    cluster.add_port_pod(1, [{"containerPort": 80, "hostPort": 80}])
    cluster.refresh()
    assert columns_of(cluster.snapshot) is cols
    assert cols.last_refreshed == 1
    assert cols.ports.values[cols.ports.ids[1]] == frozenset({("0.0.0.0", "TCP", 80)})
    assert cols.taints.ids.tolist() == [0, 0, 0]
    assert cols.label("zone") is zone
    # Nothing changed: nothing revisited.
    columns_of(cluster.snapshot)
    assert cols.last_refreshed == 0


def test_a_node_update_changes_its_row_only() -> None:
    cluster = Cluster([spec(labels={"zone": "z1"})] * 3)
    cols = columns_of(cluster.snapshot)
    assert cols is not None
    assert cols.label("zone").values == ["z1"]
    cluster.update_node(2, spec(labels={"zone": "z2"}, unschedulable=True))
    cluster.refresh()
    columns_of(cluster.snapshot)
    assert cols.last_refreshed == 1
    zone = cols.label("zone")
    assert [zone.values[i] for i in zone.ids] == ["z1", "z1", "z2"]
    assert cols.unschedulable.tolist() == [False, False, True]


def test_a_new_node_renumbers_rows_and_computes_only_its_own() -> None:
    cluster = Cluster([spec(labels={"zone": "z1"})] * 3)
    cols = columns_of(cluster.snapshot)
    assert cols is not None
    cols.label("zone")
    cluster.add_node(spec(labels={"zone": "z0"}))
    cluster.refresh()
    columns_of(cluster.snapshot)
    assert cols.last_refreshed == 1
    assert decoded(cols, ["zone"]) == decoded(fresh(cluster), ["zone"])


def test_dead_values_are_compacted() -> None:
    cluster = Cluster([spec()])
    cols = columns_of(cluster.snapshot)
    assert cols is not None
    for v in range(3 * columns._SLACK):
        cluster.update_node(0, spec(taints=[{"key": "k", "value": str(v), "effect": "NoSchedule"}]))
        cluster.refresh()
        columns_of(cluster.snapshot)
    assert len(cols.taints.values) <= 2 * columns._SLACK + 2
    assert decoded(cols, []) == decoded(fresh(cluster), [])


def test_a_fake_snapshot_has_no_columns() -> None:
    class Fake:
        def list(self) -> list[Any]:
            return []

    assert columns_of(Fake()) is None


@settings(max_examples=examples(60), deadline=None)
@given(rowcases.cluster_changes(), st.lists(st.sampled_from(rowcases.KEYS), max_size=2))
def test_incremental_columns_equal_fresh_ones(
    changes: tuple[list[Any], list[Any]], keys: list[str]
) -> None:
    specs, later = changes
    cluster = Cluster(specs)
    cols = columns_of(cluster.snapshot)
    assert cols is not None
    decoded(cols, keys)  # label columns built before the changes are kept up to date
    rowcases.apply(cluster, later)
    assert columns_of(cluster.snapshot) is cols
    assert decoded(cols, keys) == decoded(fresh(cluster), keys)


def test_marked_sets_the_ids_of_known_values_only() -> None:
    col = columns.Interned([("a", "a"), ("b", "b"), (None, None), ("a", "a")])
    assert col.marked(["b", "zz", None]).tolist() == [False, True, True]
    assert col.marked([]).tolist() == [False, False, False]
