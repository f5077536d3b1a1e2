"""End to end: one cluster clock under `kubera up --time-scale 60` (a simulated minute is
a wall second). The apiserver stamps, the controllers schedule and the kubelets run in
the same simulated time, so a CronJob "*/1 * * * *" runs once per simulated minute from
its creation on (never a "missed" run at once), its concurrencyPolicy and history limits
hold, and the ages kubectl gets from the apiserver's tables are not `<invalid>`.

Every assertion is about simulated timestamps the objects carry, or polls with a bound;
none measures wall time. Each test works in a namespace of its own."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubera.testing import Cluster
from services.clock import parse_rfc3339
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

#: Simulated seconds per wall second.
SCALE = 60
#: Polls wait at most this long (wall seconds): several simulated hours.
WAIT = 60


UP_ARGS = ("--nodes", "2", "--time-scale", str(SCALE))


def cronjob(name: str, run: str, **spec: Any) -> str:
    """A CronJob every simulated minute whose pods run `run` (simulated) and succeed."""
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": name},
            "spec": {
                "schedule": "*/1 * * * *",
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "metadata": {
                                "annotations": {
                                    "kubera.io/stages": json.dumps({"runDuration": run})
                                }
                            },
                            "spec": {
                                "containers": [{"name": "c", "image": "busybox:1.28"}],
                                "restartPolicy": "Never",
                            },
                        }
                    }
                },
                **spec,
            },
        }
    )


def get(k: Cluster, ns: str, *what: str) -> Any:
    return json.loads(kubectl(k, "get", "-n", ns, *what, "-o", "json").stdout)


def jobs(k: Cluster, ns: str) -> list[dict]:
    items = get(k, ns, "jobs")["items"]
    return sorted(
        (j for j in items if not j["metadata"].get("deletionTimestamp")),
        key=lambda j: j["metadata"]["name"],
    )


def scheduled_at(job: dict) -> float:
    return parse_rfc3339(
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    )


def has(job: dict, cond: str) -> bool:
    return any(
        c["type"] == cond and c["status"] == "True"
        for c in job.get("status", {}).get("conditions", [])
    )


def last_schedule(k: Cluster, ns: str, name: str) -> float:
    text = get(k, ns, "cronjob", name).get("status", {}).get("lastScheduleTime")
    return parse_rfc3339(text) if text else 0.0


def start(k: Cluster, ns: str, manifest: str) -> dict:
    kubectl(k, "create", "namespace", ns)
    kubectl(k, "apply", "-n", ns, "-f", "-", stdin=manifest)
    return get(k, ns, "cronjob", json.loads(manifest)["metadata"]["name"])


def test_jobs_run_each_simulated_minute_from_the_creation_on(cluster: Cluster) -> None:
    ns = "clock-cadence"
    cj = start(cluster, ns, cronjob("tick", "5s"))
    created = parse_rfc3339(cj["metadata"]["creationTimestamp"])
    made = until(lambda: js if len(js := jobs(cluster, ns)) >= 3 else None, timeout=WAIT)
    times = sorted(scheduled_at(j) for j in made)
    # no run "missed" at the creation: the first is the first minute after it
    assert created < times[0] <= created + 60
    assert [b - a for a, b in zip(times, times[1:], strict=False)] == [60.0] * (len(times) - 1)
    for j in made:
        # the apiserver stamped the Job when the controller made it: at its scheduled time,
        # on the same clock (a wall-clock apiserver would stamp it long before)
        at = parse_rfc3339(j["metadata"]["creationTimestamp"])
        assert scheduled_at(j) <= at < scheduled_at(j) + 60
    # ages from the apiserver's table are counted on the cluster clock
    table = kubectl(cluster, "get", "-n", ns, "cronjobs,jobs,events").stdout
    assert "<invalid>" not in table
    assert "<invalid>" not in cluster("get", "-n", ns, "cronjobs").stdout
    # kubera's own printers count on the cluster clock too (kubectl describe cannot:
    # docs/differences.md)
    described = cluster("describe", "cronjob", "tick", "-n", ns)
    assert described.returncode == 0, described.stderr
    assert "SuccessfulCreate" in described.stdout and "<invalid>" not in described.stdout


def test_forbid_skips_the_times_a_job_still_runs(cluster: Cluster) -> None:
    ns = "clock-forbid"
    start(cluster, ns, cronjob("forbid", "1h", concurrencyPolicy="Forbid"))
    [first] = until(lambda: jobs(cluster, ns), timeout=WAIT)

    def skipped_twice() -> bool:
        events = get(cluster, ns, "events")["items"]
        return any(e["reason"] == "JobAlreadyActive" and e.get("count", 1) >= 2 for e in events)

    until(skipped_twice, timeout=WAIT)
    assert [j["metadata"]["name"] for j in jobs(cluster, ns)] == [first["metadata"]["name"]]
    assert last_schedule(cluster, ns, "forbid") == scheduled_at(first)


def test_replace_deletes_the_running_job_for_the_next(cluster: Cluster) -> None:
    ns = "clock-replace"
    start(cluster, ns, cronjob("replace", "1h", concurrencyPolicy="Replace"))
    [first] = until(lambda: jobs(cluster, ns), timeout=WAIT)
    until(lambda: last_schedule(cluster, ns, "replace") >= scheduled_at(first) + 120, timeout=WAIT)

    def only_the_newest() -> bool:
        js = jobs(cluster, ns)
        last = last_schedule(cluster, ns, "replace")
        return len(js) == 1 and scheduled_at(js[0]) == last

    until(only_the_newest, timeout=WAIT)
    active = get(cluster, ns, "cronjob", "replace")["status"]["active"]
    assert len(active) == 1


def test_history_limits_keep_the_newest_finished_jobs(cluster: Cluster) -> None:
    ns = "clock-history"
    start(cluster, ns, cronjob("history", "1s", successfulJobsHistoryLimit=1))
    first = until(lambda: jobs(cluster, ns), timeout=WAIT)[0]
    until(lambda: last_schedule(cluster, ns, "history") >= scheduled_at(first) + 180, timeout=WAIT)

    def trimmed() -> list[dict] | None:
        done = [j for j in jobs(cluster, ns) if has(j, "Complete")]
        return done if len(done) == 1 else None

    [kept] = until(trimmed, timeout=WAIT)
    assert scheduled_at(kept) > scheduled_at(first)
    assert get(cluster, ns, "cronjob", "history")["status"].get("lastSuccessfulTime")
