"""End to end: the batch kinds on a real `kubera up`, driven by real kubectl with the
Kubernetes docs' own manifests, applied unchanged: the pi Job (content/en/examples/
controllers/job.yaml) completes and `kubectl wait --for=condition=complete` returns;
`kubectl get jobs` prints upstream's columns; the hello CronJob (content/en/examples/
application/job/cronjob.yaml) starts Jobs on its schedule under the time scale, and
`kubectl create job --from=cronjob/hello` makes one by hand.

Pods end through the hollow kubelet's stages: the cluster's node template gives every pod
a 10 s run (1 s of wall time at time scale 10), after which restartPolicy Never and
OnFailure pods succeed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl, running
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

PI_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
"""

HELLO_CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: hello
            image: busybox:1.28
            imagePullPolicy: IfNotPresent
            command:
            - /bin/sh
            - -c
            - date; echo Hello from the Kubernetes cluster
          restartPolicy: OnFailure
"""

TEMPLATE = """\
apiVersion: kubera.io/v1alpha1
kind: NodeTemplate
nodes:
- name: standard
  count: 2
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  stages: {creatingDelay: 500ms, startDelay: 1s, runDuration: 10s}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    template = home / "template.yaml"
    template.write_text(TEMPLATE)
    with running(
        home, "--node-template", str(template), "--time-scale", "10", ray_address=shared_ray
    ) as k:
        yield k


def test_the_docs_pi_job_completes(cluster: Cluster, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(PI_JOB)
    assert "job.batch/pi created" in kubectl(cluster, "apply", "-f", str(manifest)).stdout
    waited = kubectl(cluster, "wait", "--for=condition=complete", "job/pi", "--timeout=60s")
    assert "job.batch/pi condition met" in waited.stdout
    out = kubectl(cluster, "get", "jobs").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert out[1].split()[:3] == ["pi", "Complete", "1/1"]
    job = json.loads(kubectl(cluster, "get", "job", "pi", "-o", "json").stdout)
    assert job["status"]["succeeded"] == 1
    assert (
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]
        == (job["metadata"]["uid"])
    )
    pods = json.loads(kubectl(cluster, "get", "pods", "-l", "job-name=pi", "-o", "json").stdout)
    [pod] = pods["items"]
    assert pod["status"]["phase"] == "Succeeded"
    assert "batch.kubernetes.io/job-tracking" not in pod["metadata"].get("finalizers", [])
    assert "job.batch/pi" in kubectl(cluster, "get", "all").stdout
    described = kubectl(cluster, "describe", "job", "pi").stdout
    assert "Pods Statuses:    0 Active (0 Ready) / 1 Succeeded / 0 Failed" in described
    kubectl(cluster, "delete", "job", "pi")
    until(lambda: not kubectl(cluster, "get", "pods", "-l", "job-name=pi", "-o", "name").stdout)


def test_the_docs_cronjob_runs_on_its_schedule_and_by_hand(
    cluster: Cluster, tmp_path: Path
) -> None:
    manifest = tmp_path / "cronjob.yaml"
    manifest.write_text(HELLO_CRONJOB)
    kubectl(cluster, "apply", "-f", str(manifest))
    made = kubectl(cluster, "create", "job", "by-hand", "--from=cronjob/hello").stdout
    assert "job.batch/by-hand created" in made
    kubectl(cluster, "wait", "--for=condition=complete", "job/by-hand", "--timeout=60s")
    by_hand = json.loads(kubectl(cluster, "get", "job", "by-hand", "-o", "json").stdout)
    [owner] = by_hand["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("CronJob", "hello")

    # "* * * * *" fires every simulated minute: 6 s of wall time at time scale 10.
    def scheduled() -> list[str]:
        jobs = json.loads(kubectl(cluster, "get", "jobs", "-o", "json").stdout)["items"]
        return [
            j["metadata"]["name"]
            for j in jobs
            if j["metadata"]["name"].startswith("hello-")
            and any(c["type"] == "Complete" for c in j.get("status", {}).get("conditions", []))
        ]

    until(scheduled, timeout=60)
    out = kubectl(cluster, "get", "cronjobs").stdout.splitlines()
    assert out[0].split() == [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "ACTIVE",
        "LAST",
        "SCHEDULE",
        "AGE",
    ]
    assert out[1].split()[:4] == ["hello", "*", "*", "*"]
    cj = json.loads(kubectl(cluster, "get", "cronjob", "hello", "-o", "json").stdout)
    assert cj["status"]["lastScheduleTime"]
    assert cj["spec"]["concurrencyPolicy"] == "Allow"
