"""The website rows' checks of the batch and apps kinds: Jobs, CronJobs, DaemonSets,
ReplicaSets, StatefulSets, budgets and Deployments."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.e2e.helpers import hollow_storage_class
from tests.e2e.website.run import NODES, WEBSITE, Run, pod_ready, serves

# ------------------------------------------------------------------ batch


def pi_job(r: Run) -> None:
    r.apply("controllers/job.yaml")
    waited = r.kubectl("wait", "-n", r.ns, "--for=condition=complete", "job/pi", "--timeout=60s")
    assert "job.batch/pi condition met" in waited.stdout
    job = r.json("job", "pi")
    assert job["status"]["succeeded"] == 1 and job["spec"]["completions"] == 1
    row = r.kubectl("get", "jobs", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:3] == ["pi", "Complete", "1/1"]
    assert "0 Active (0 Ready) / 1 Succeeded / 0 Failed" in r.described("job/pi")


def indexed_job(r: Run) -> None:
    r.apply("application/job/indexed-job.yaml")
    assert r.job_condition("indexed-job")["Complete"] == "True"
    job = r.json("job", "indexed-job")
    assert job["status"]["completedIndexes"] == "0-4" and job["status"]["succeeded"] == 5
    pods = r.json("pods", "-l", "job-name=indexed-job")["items"]
    indexes = {
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods
    }
    assert indexes == {"0", "1", "2", "3", "4"}
    for p in pods:
        index = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        assert p["spec"]["hostname"] == f"indexed-job-{index}"
        assert p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == index
        for c in (*p["spec"]["initContainers"], *p["spec"]["containers"]):
            (env,) = c["env"]
            assert env["name"] == "JOB_COMPLETION_INDEX"
            assert env["valueFrom"]["fieldRef"]["fieldPath"] == (
                "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            )


def sidecar_job(r: Run) -> None:
    r.apply("application/job/job-sidecar.yaml")
    assert r.job_condition("myjob")["Complete"] == "True"
    (pod,) = r.json("pods", "-l", "job-name=myjob")["items"]
    assert pod["status"]["phase"] == "Succeeded"
    (sidecar,) = pod["status"]["initContainerStatuses"]
    assert sidecar["name"] == "logshipper" and "terminated" in sidecar["state"]


def success_policy_job(r: Run) -> None:
    r.apply("controllers/job-success-policy.yaml")
    conds = r.job_condition("job-success")
    assert conds.get("SuccessCriteriaMet") == "True" and conds["Complete"] == "True"
    job = r.json("job", "job-success")
    assert job["spec"]["successPolicy"] == {
        "rules": [{"succeededIndexes": "0,2-3", "succeededCount": 1}]
    }


def backoff_limit_per_index_job(r: Run) -> None:
    r.apply("controllers/job-backoff-limit-per-index-example.yaml")
    job = r.json("job", "job-backoff-limit-per-index-example")
    # backoffLimit defaults to the int32 max once backoffLimitPerIndex is set
    assert job["spec"]["backoffLimit"] == 2147483647
    assert job["spec"]["podReplacementPolicy"] == "TerminatingOrFailed"
    r.job_condition("job-backoff-limit-per-index-example")


def pod_failure_policy_job(r: Run) -> None:
    r.apply("controllers/job-pod-failure-policy-example.yaml")
    job = r.json("job", "job-pod-failure-policy-example")
    assert job["spec"]["podReplacementPolicy"] == "Failed"  # defaulted with podFailurePolicy
    assert job["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [42]
    r.job_condition("job-pod-failure-policy-example")


def _as_cronjob(path: str, name: str) -> str:
    """The docs' Job as the jobTemplate of a CronJob named `name` (suspended)."""
    job = yaml.safe_load((WEBSITE / path).read_text())
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": name},
            "spec": {"schedule": "@yearly", "suspend": True, "jobTemplate": {"spec": job["spec"]}},
        }
    )


def cronjob_and_jobs_from_it(r: Run) -> None:
    r.apply("application/job/cronjob.yaml")
    row = r.kubectl("get", "cronjob", "hello", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:3] == ["hello", "*", "*"] or row[:2] == ["hello", "*"]
    r.kubectl("create", "job", "hello-manual", "--from=cronjob/hello", "-n", r.ns)
    assert r.job_condition("hello-manual")["Complete"] == "True"
    # kubectl's generator sends the Job as Kubernetes protobuf: a jobTemplate with a
    # podFailurePolicy or a successPolicy must come through whole (it was refused, 415)
    for path, name in (
        ("controllers/job-pod-failure-policy-example.yaml", "pfp"),
        ("controllers/job-success-policy.yaml", "sp"),
    ):
        r.kubectl("apply", "-n", r.ns, "-f", "-", stdin=_as_cronjob(path, name))
        r.kubectl("create", "job", f"{name}-manual", f"--from=cronjob/{name}", "-n", r.ns)
        made = r.json("job", f"{name}-manual")["spec"]
        template = r.json("cronjob", name)["spec"]["jobTemplate"]["spec"]
        for field in ("podFailurePolicy", "successPolicy"):
            assert made.get(field) == template.get(field), field
        r.job_condition(f"{name}-manual")
    # the hello CronJob's Jobs go with it (its schedule would keep making and pruning them)
    r.kubectl("delete", "cronjob", "hello", "-n", r.ns, "--cascade=foreground")
    left = [j["metadata"]["name"] for j in r.json("jobs")["items"]]
    assert sorted(left) == ["pfp-manual", "sp-manual"], left  # kubectl made hello its owner


# ------------------------------------------------------------------ apps


def _ds_on_every_node(r: Run, selector: str) -> None:
    pods = r.until(lambda: r.running(selector, NODES, ns="kube-system"))
    assert len({p["spec"]["nodeName"] for p in pods}) == NODES


def daemonsets_and_cascade(r: Run) -> None:
    r.apply("controllers/daemonset.yaml", ns="")
    _ds_on_every_node(r, "name=fluentd-elasticsearch")
    row = r.kubectl("get", "ds", "fluentd-elasticsearch", "-n", "kube-system").stdout
    assert row.splitlines()[1].split()[1:6] == [str(NODES)] * 5
    # deleting the owner cascades (background: the garbage collector takes the pods)
    r.kubectl("delete", "ds", "fluentd-elasticsearch", "-n", "kube-system")
    r.until(lambda: not r.pods("name=fluentd-elasticsearch", ns="kube-system"))
    # the newer doc, same name, another selector: one pod per schedulable node, where a
    # cordoned node still counts (daemon pods tolerate node.kubernetes.io/unschedulable)
    # and a node tainted NoSchedule with a taint the pods do not tolerate does not
    nodes = [n.split("/")[1] for n in r.kubectl("get", "nodes", "-o", "name").stdout.split()]
    cordoned, tainted = nodes[0], nodes[1]
    r.kubectl("cordon", cordoned)
    r.kubectl("taint", "nodes", tainted, "dedicated=experiment:NoSchedule")
    try:
        r.apply("controllers/fluentd-daemonset.yaml", ns="")
        sel = "app.kubernetes.io/name=fluentd-elasticsearch"
        pods = r.running(sel, NODES - 1, ns="kube-system")
        assert sorted(p["spec"]["nodeName"] for p in pods) == [n for n in nodes if n != tainted]
        ds = r.json("ds", "fluentd-elasticsearch", ns="kube-system")["status"]
        assert ds["desiredNumberScheduled"] == ds["numberReady"] == NODES - 1
    finally:
        r.kubectl("uncordon", cordoned)
        r.kubectl("taint", "nodes", tainted, "dedicated-")
    _ds_on_every_node(r, sel)  # the untainted node gets its pod
    r.kubectl("delete", "ds", "fluentd-elasticsearch", "-n", "kube-system", "--cascade=foreground")
    assert not r.pods("app.kubernetes.io/name=fluentd-elasticsearch", ns="kube-system")


def daemonset_on_labelled_nodes(r: Run) -> None:
    r.apply("controllers/daemonset-label-selector.yaml")
    sel = "app.kubernetes.io/name=ssd-driver-pod"
    ds = r.json("ds", "ssd-driver")
    assert ds["status"]["desiredNumberScheduled"] == 0 and not r.pods(sel)
    node = r.kubectl("get", "nodes", "-o", "name").stdout.split()[0]
    r.kubectl("label", node, "ssd=true")
    try:
        (pod,) = r.until(lambda: r.pods(sel))
        assert f"node/{pod['spec']['nodeName']}" == node
        assert r.json("ds", "ssd-driver")["spec"]["template"]["spec"]["nodeSelector"] == {
            "ssd": "true"
        }
    finally:
        r.kubectl("label", node, "ssd-")
    r.until(lambda: not r.pods(sel))


def replicaset_and_cascade(r: Run) -> None:
    r.apply("controllers/frontend.yaml")
    pods = r.running("tier=frontend", 3)
    for p in pods:
        (ref,) = p["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("ReplicaSet", "frontend", True)
    r.kubectl("delete", "rs", "frontend", "-n", r.ns)
    r.until(lambda: not r.pods("tier=frontend"))


def _apply_in_order(r: Run, path: str, selector: str, sts: str, n: int) -> list[dict[str, Any]]:
    """Apply a StatefulSet's file and check OrderedReady: each ordinal is created only once
    the one before it is Running and Ready (seen on a watch of the set's pods from before
    the apply); its pods, by ordinal."""
    since = r.json("pods")["metadata"]["resourceVersion"]
    r.apply(path)
    pods = sorted(
        r.running(selector, n), key=lambda p: int(p["metadata"]["name"].rsplit("-", 1)[1])
    )
    assert [p["metadata"]["name"] for p in pods] == [f"{sts}-{i}" for i in range(n)]
    url = (
        f"/api/v1/namespaces/{r.ns}/pods?watch=true&resourceVersion={since}&timeoutSeconds=1"
        f"&labelSelector={selector.replace('=', '%3D').replace('/', '%2F')}"
    )
    order: list[str] = []
    for line in r.kubectl("get", "--raw", url).stdout.splitlines():
        event = json.loads(line)
        name = event["object"]["metadata"]["name"]
        if event["type"] == "ADDED":
            order.append(f"{name} created")
        if pod_ready(event["object"]) and f"{name} ready" not in order:
            order.append(f"{name} ready")
    want = [f"{sts}-{i} {what}" for i in range(n) for what in ("created", "ready")]
    assert order[: 2 * n] == want, order
    return pods


def statefulset_with_claims(r: Run) -> None:
    # the docs' class must exist (on any cluster): the scheduler holds pods whose claims
    # cannot bind
    with hollow_storage_class(r.k, "my-storage-class"):
        pods = _apply_in_order(r, "controllers/statefulset.yaml", "app=nginx", "web", 3)
    claims = r.json("pvc")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["www-web-0", "www-web-1", "www-web-2"]
    assert {c["spec"]["storageClassName"] for c in claims} == {"my-storage-class"}
    svc = r.json("service", "nginx")
    assert svc["spec"]["clusterIP"] == "None"
    serves(r, "nginx", pods, 80)
    assert r.json("sts", "web")["status"]["availableReplicas"] == 3  # minReadySeconds: 10
    assert "Volume Claims:" in r.described("sts", "web")


def web_statefulset(r: Run) -> None:
    # "you need a dynamic PersistentVolume provisioner with a default StorageClass":
    # `kubera up` makes one (`standard`), as kind does
    pods = _apply_in_order(r, "application/web/web.yaml", "app=nginx", "web", 2)
    for p in pods:
        assert p["spec"]["hostname"] == p["metadata"]["name"]
        assert p["spec"]["subdomain"] == "nginx"
        # WaitForFirstConsumer: each claim was provisioned on the node its pod landed on
        claim = r.json("pvc", f"www-{p['metadata']['name']}")
        assert claim["status"]["phase"] == "Bound"
        node = p["spec"]["nodeName"]
        assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        pv = r.json("pv", claim["spec"]["volumeName"])
        assert node in json.dumps(pv["spec"]["nodeAffinity"])
    serves(r, "nginx", pods, 80)
    row = r.kubectl("get", "sts", "web", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:2] == ["web", "2/2"]


def zookeeper(r: Run) -> None:
    pods = _apply_in_order(  # its claims name no class: `kubera up`'s default `standard`
        r, "application/zookeeper/zookeeper.yaml", "app.kubernetes.io/name=zk", "zk", 3
    )
    assert r.json("service", "zk-hs")["spec"]["clusterIP"] == "None"
    assert r.json("service", "zk-cs")["spec"]["clusterIP"].startswith("10.")
    serves(r, "zk-cs", pods, 2181)

    def budget() -> dict[str, Any] | None:
        st = r.json("pdb", "zk-pdb").get("status", {})
        return st if st.get("disruptionsAllowed") == 1 else None

    st = r.until(budget)
    assert (st["expectedPods"], st["currentHealthy"], st["desiredHealthy"]) == (3, 3, 2)
    row = r.kubectl("get", "pdb", "zk-pdb", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:4] == ["zk-pdb", "N/A", "1", "1"]


def zookeeper_budget_alone(r: Run) -> None:
    r.apply("policy/zookeeper-pod-disruption-budget-minavailable.yaml")
    r.until(lambda: r.json("pdb", "zk-pdb").get("status", {}).get("observedGeneration") == 1)
    row = r.kubectl("get", "pdb", "zk-pdb", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:4] == ["zk-pdb", "2", "N/A", "0"]


def deployment(r: Run) -> None:
    r.apply("application/deployment.yaml")
    r.running("app=nginx", 2)
    r.kubectl("rollout", "status", "deployment/nginx-deployment", "-n", r.ns, "--timeout=60s")
    row = r.kubectl("get", "deploy", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:4] == ["nginx-deployment", "2/2", "2", "2"]


def deployment_rollout_and_undo(r: Run) -> None:
    """The Deployments concept page: create, update the image, scale by applying
    deployment-scale.yaml (4 replicas of nginx:1.16.1), then roll back to revision 1."""
    dep = ("deployment/nginx-deployment", "-n", r.ns)
    r.apply("controllers/nginx-deployment.yaml")
    r.kubectl("rollout", "status", *dep, "--timeout=60s")
    r.kubectl("set", "image", *dep, "nginx=nginx:1.16.1")
    r.kubectl("rollout", "status", *dep, "--timeout=60s")
    r.apply("application/deployment-scale.yaml")
    r.kubectl("rollout", "status", *dep, "--timeout=60s")
    pods = r.running("app.kubernetes.io/name=nginx", 4)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.16.1"}
    history = r.kubectl("rollout", "history", *dep).stdout.split()
    assert history[history.index("CHANGE-CAUSE") + 1 :: 2] == ["1", "2"]
    r.kubectl("rollout", "undo", *dep, "--to-revision=1")
    r.kubectl("rollout", "status", *dep, "--timeout=60s")
    pods = r.running("app.kubernetes.io/name=nginx", 4)
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.14.2"}
    replica_sets = r.json("rs")["items"]
    assert sorted(rs["spec"]["replicas"] for rs in replica_sets) == [0, 4]


def strategic_merge_patch(r: Run) -> None:
    """The docs' "Update API Objects in Place" task: a strategic merge patch adds a
    container (merged by name, the new one first); tolerations are replaced."""
    r.apply("application/deployment-patch.yaml")
    containers = "spec:\n  template:\n    spec:\n      containers:\n      - name: patch-demo-ctr-2\n        image: redis\n"
    tolerations = "spec:\n  template:\n    spec:\n      tolerations:\n      - effect: NoSchedule\n        key: disktype\n        value: ssd\n"
    for patch in (containers, tolerations):
        r.kubectl(
            "patch",
            "deployment",
            "patch-demo",
            "-n",
            r.ns,
            "--type=strategic",
            "-p",
            json.dumps(yaml.safe_load(patch)),
        )
    spec = r.json("deployment", "patch-demo")["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["patch-demo-ctr-2", "patch-demo-ctr"]
    assert spec["tolerations"] == [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]
    r.running("app.kubernetes.io/name=nginx", 2)
