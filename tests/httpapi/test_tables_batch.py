"""kubectl's columns for Job and CronJob (upstream printers.go printJob / printCronJob,
and their cases in printers_test.go TestPrintJob / TestPrintCronJob), as the HTTP Table
prints them."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.apiserver import ApiServer
from services.clock import FakeClock, parse_rfc3339
from services.httpapi import tables
from services.storage.memory import MemoryStorage
from tests.httpapi.conftest import client_for

CREATED = "2030-01-01T00:00:00Z"
NOW = parse_rfc3339("2030-01-01T00:05:00Z")


def _cells(doc: dict[str, Any], *, wide: bool = False) -> list[Any]:
    obj = codec.decode(doc).obj
    kind = BY_KIND[doc["kind"]]
    (row,) = tables.to_table(kind, [obj], wide=wide, now=NOW)["rows"]
    return row["cells"]  # type: ignore[no-any-return]


def job(
    spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job1", "creationTimestamp": CREATED, **meta},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "fake-job-container1", "image": "fake-job-image1"}]
                }
            },
            "selector": {"matchLabels": {"job-label": "job-label-value"}},
            **(spec or {}),
        },
        "status": status or {},
    }


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        (
            "Job",
            [
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
        (
            "CronJob",
            [
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
    ],
)
def test_columns_are_upstreams(kind: str, columns: list[str]) -> None:
    defs = tables.to_table(BY_KIND[kind], [], wide=True)["columnDefinitions"]
    assert [c["name"] for c in defs] == columns


@pytest.mark.parametrize(
    ("doc", "cells"),
    [
        pytest.param(
            job({"completions": 2}, {"succeeded": 1, "startTime": "2030-01-01T00:01:00Z"}),
            ["job1", "Running", "1/2", "4m", "5m"],
            id="running: succeeded of completions, duration to now",
        ),
        pytest.param(
            job({"parallelism": 2}, {"succeeded": 0}),
            ["job1", "Running", "0/1 of 2", "", "5m"],
            id="no completions, parallel; not started",
        ),
        pytest.param(
            job({}, {"succeeded": 0}),
            ["job1", "Running", "0/1", "", "5m"],
            id="no completions",
        ),
        pytest.param(
            job(
                {"completions": 1},
                {
                    "succeeded": 1,
                    "startTime": "2030-01-01T00:01:00Z",
                    "completionTime": "2030-01-01T00:01:30Z",
                    "conditions": [{"type": "Complete", "status": "True"}],
                },
            ),
            ["job1", "Complete", "1/1", "30s", "5m"],
            id="complete: duration to completion",
        ),
        pytest.param(
            job({"completions": 1}, {"conditions": [{"type": "Failed", "status": "True"}]}),
            ["job1", "Failed", "0/1", "", "5m"],
            id="failed",
        ),
        pytest.param(
            job({"completions": 1}, {"conditions": [{"type": "Suspended", "status": "True"}]}),
            ["job1", "Suspended", "0/1", "", "5m"],
            id="suspended",
        ),
        pytest.param(
            job({"completions": 1}, {"conditions": [{"type": "FailureTarget", "status": "True"}]}),
            ["job1", "FailureTarget", "0/1", "", "5m"],
            id="failure target",
        ),
        pytest.param(
            job(
                {"completions": 1},
                {"conditions": [{"type": "Suspended", "status": "True"}]},
                deletionTimestamp=CREATED,
            ),
            ["job1", "Terminating", "0/1", "", "5m"],
            id="terminating before suspended",
        ),
    ],
)
def test_job_cells(doc: dict[str, Any], cells: list[Any]) -> None:
    assert _cells(doc) == cells


def test_job_wide_cells_name_the_template() -> None:
    cells = _cells(job({"completions": 1}), wide=True)
    assert cells[5:] == ["fake-job-container1", "fake-job-image1", "job-label=job-label-value"]


def cronjob(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cronjob1", "creationTimestamp": CREATED},
        "spec": {"schedule": "0/5 * * * ?", **spec},
        "status": status or {},
    }


@pytest.mark.parametrize(
    ("doc", "cells"),
    [
        pytest.param(
            cronjob({"suspend": False}, {"lastScheduleTime": "2030-01-01T00:04:00Z"}),
            ["cronjob1", "0/5 * * * ?", "<none>", "False", 0, "60s", "5m"],
            id="last scheduled a minute ago",
        ),
        pytest.param(
            cronjob({"suspend": True, "timeZone": "Europe/Paris"}),
            ["cronjob1", "0/5 * * * ?", "Europe/Paris", "True", 0, "<none>", "5m"],
            id="never scheduled, a time zone",
        ),
        pytest.param(
            cronjob({}, {"active": [{"name": "j1"}, {"name": "j2"}]}),
            ["cronjob1", "0/5 * * * ?", "<none>", "<unset>", 2, "<none>", "5m"],
            id="suspend unset, two active",
        ),
    ],
)
def test_cronjob_cells(doc: dict[str, Any], cells: list[Any]) -> None:
    assert _cells(doc) == cells


async def test_server_side_ages_count_from_the_apiservers_clock() -> None:
    """Under the time scale the apiserver stamps and counts in the cluster's time: a
    table's AGE and LAST SCHEDULE (what `kubectl get` prints) come from its clock, not
    the wall's, which is behind the simulated timestamps (`<invalid>` upstream)."""
    clock = FakeClock(start=parse_rfc3339(CREATED))
    api = ApiServer(MemoryStorage(), clock=clock)
    await api.start()
    client = await client_for(api)
    try:
        template = {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
        doc = cronjob({"jobTemplate": {"spec": {"template": {"spec": template}}}})
        del doc["metadata"]["creationTimestamp"], doc["status"]
        resp = await client.post("/apis/batch/v1/namespaces/default/cronjobs", json=doc)
        assert resp.status == 201, await resp.text()
        clock.advance(300)
        resp = await client.get(
            "/apis/batch/v1/namespaces/default/cronjobs",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        )
        table = await resp.json()
    finally:
        await client.close()
        await api.stop()
    names = [c["name"] for c in table["columnDefinitions"]]
    (row,) = table["rows"]
    assert row["cells"][names.index("Age")] == "5m"
