"""The Kubernetes docs' example manifests (kubernetes/website content/en/examples/, kept
byte for byte under tests/e2e/manifests/website/, see its README) applied unchanged with
real kubectl to one `kubera up`, each behaving as on a real cluster.

The table `CASES` is the whole test: each row names the files applied (in order, with
`kubectl apply -n NS` in a namespace of the row's own unless the manifest names its
namespace) and the check of what must then hold. Rows that create quotas or limit ranges
delete them after, so a later module sharing the cluster sees none.

What kubera cannot reproduce is left out of the checks and said in docs/differences.md:
hollow containers do not run their commands, so a Job whose command decides its exit code
(job-pod-failure-policy-example.yaml exits 42) completes as its pods exit 0, and claims
stay Pending (no PersistentVolumes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

WEBSITE = Path(__file__).resolve().parent / "manifests" / "website"
NODES = 3


@pytest.fixture(scope="module")
def up_args() -> tuple[str, ...]:
    return ("--nodes", str(NODES), "--time-scale", "20")


@dataclass(frozen=True)
class Run:
    """What a check gets: the cluster and the row's namespace."""

    k: Cluster
    ns: str

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> Any:
        return kubectl(self.k, *args, check=check, stdin=stdin, timeout=120)

    def json(self, *args: str, ns: str | None = None) -> Any:
        return json.loads(self.kubectl("get", *args, "-n", ns or self.ns, "-o", "json").stdout)

    def apply(self, path: str, *, ns: str | None = None, check: bool = True) -> Any:
        where = () if ns == "" else ("-n", ns or self.ns)
        return self.kubectl("apply", *where, "-f", str(WEBSITE / path), check=check)

    def until(self, what: Callable[[], Any], timeout: float = 90.0) -> Any:
        return until(what, timeout=timeout)

    def pods(self, selector: str, ns: str | None = None) -> list[dict[str, Any]]:
        items = self.json("pods", "-l", selector, ns=ns)["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def running(self, selector: str, n: int, ns: str | None = None) -> list[dict[str, Any]]:
        """Wait for exactly `n` Running and Ready pods matching `selector`."""

        def ready() -> list[dict[str, Any]] | None:
            pods = self.pods(selector, ns)
            ok = [p for p in pods if p["status"].get("phase") == "Running" and _ready(p)]
            return ok if len(ok) == n == len(pods) else None

        return self.until(ready)

    def job_condition(self, name: str) -> dict[str, str]:
        """Wait for the Job to finish; its conditions by type."""

        def finished() -> dict[str, str] | None:
            conds = self.json("job", name).get("status", {}).get("conditions", [])
            got = {c["type"]: c["status"] for c in conds}
            return got if got.get("Complete") == "True" or got.get("Failed") == "True" else None

        return self.until(finished)

    def refused(self, path: str, words: str) -> None:
        r = self.apply(path, check=False)
        assert r.returncode != 0, f"{path} was admitted"
        assert "(Forbidden)" in r.stderr and words in r.stderr, r.stderr

    def described(self, *what: str, ns: str | None = None) -> str:
        return str(self.kubectl("describe", *what, "-n", ns or self.ns).stdout)


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])
    )


def _slices(r: Run, service: str) -> list[dict[str, Any]]:
    sel = f"kubernetes.io/service-name={service}"
    return list(r.json("endpointslices", "-l", sel)["items"])


def _endpoint_ips(r: Run, service: str) -> set[str]:
    return {
        a for s in _slices(r, service) for e in s.get("endpoints") or [] for a in e["addresses"]
    }


def _serves(r: Run, service: str, pods: list[dict[str, Any]], port: int) -> None:
    """The service's EndpointSlices hold exactly the pods' IPs, at `port`."""
    want = {p["status"]["podIP"] for p in pods}
    r.until(lambda: _endpoint_ips(r, service) == want)
    assert {p["port"] for s in _slices(r, service) for p in s["ports"]} == {port}


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
    # the newer doc, same name, another selector
    r.apply("controllers/fluentd-daemonset.yaml", ns="")
    _ds_on_every_node(r, "app.kubernetes.io/name=fluentd-elasticsearch")
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
        if _ready(event["object"]) and f"{name} ready" not in order:
            order.append(f"{name} ready")
    want = [f"{sts}-{i} {what}" for i in range(n) for what in ("created", "ready")]
    assert order[: 2 * n] == want, order
    return pods


def statefulset_with_claims(r: Run) -> None:
    pods = _apply_in_order(r, "controllers/statefulset.yaml", "app=nginx", "web", 3)
    claims = r.json("pvc")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["www-web-0", "www-web-1", "www-web-2"]
    assert {c["spec"]["storageClassName"] for c in claims} == {"my-storage-class"}
    svc = r.json("service", "nginx")
    assert svc["spec"]["clusterIP"] == "None"
    _serves(r, "nginx", pods, 80)
    assert r.json("sts", "web")["status"]["availableReplicas"] == 3  # minReadySeconds: 10
    assert "Volume Claims:" in r.described("sts", "web")


def web_statefulset(r: Run) -> None:
    pods = _apply_in_order(r, "application/web/web.yaml", "app=nginx", "web", 2)
    for p in pods:
        assert p["spec"]["hostname"] == p["metadata"]["name"]
        assert p["spec"]["subdomain"] == "nginx"
    _serves(r, "nginx", pods, 80)
    row = r.kubectl("get", "sts", "web", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[:2] == ["web", "2/2"]


def zookeeper(r: Run) -> None:
    pods = _apply_in_order(
        r, "application/zookeeper/zookeeper.yaml", "app.kubernetes.io/name=zk", "zk", 3
    )
    assert r.json("service", "zk-hs")["spec"]["clusterIP"] == "None"
    assert r.json("service", "zk-cs")["spec"]["clusterIP"].startswith("10.")
    _serves(r, "zk-cs", pods, 2181)

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


# ------------------------------------------------------------------ services


def load_balancer_app(r: Run) -> None:
    r.apply("application/nginx-app.yaml")
    pods = r.running("app=nginx", 3)
    svc = r.json("service", "my-nginx-svc")
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["clusterIP"].startswith("10.")
    assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767
    _serves(r, "my-nginx-svc", pods, 80)
    row = r.kubectl("get", "svc", "my-nginx-svc", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[1:4] == ["LoadBalancer", svc["spec"]["clusterIP"], "<pending>"]


def service_for_a_deployment(r: Run) -> None:
    r.apply("service/networking/run-my-nginx.yaml")
    r.apply("service/networking/nginx-svc.yaml")
    _serves(r, "my-nginx", r.running("run=my-nginx", 2), 80)
    endpoints = r.json("endpoints", "my-nginx")
    assert len(endpoints["subsets"][0]["addresses"]) == 2


def named_target_port(r: Run) -> None:
    r.apply("service/access/backend-deployment.yaml")
    r.apply("service/access/backend-service.yaml")
    pods = r.running("app.kubernetes.io/name=hello,tier=backend", 3)
    assert r.json("service", "hello")["spec"]["ports"][0]["targetPort"] == "http"
    _serves(r, "hello", pods, 80)  # the pods' port named http


def exposed_load_balancer(r: Run) -> None:
    r.apply("service/load-balancer-example.yaml")
    pods = r.running("app.kubernetes.io/name=load-balancer-example", 5)
    r.kubectl(
        "expose", "deployment", "hello-world", "--type=LoadBalancer", "--name=my-service",
        "-n", r.ns,
    )  # fmt: skip
    _serves(r, "my-service", pods, 8080)
    described = r.described("service", "my-service")
    assert "Type:                     LoadBalancer" in described and "NodePort:" in described


# ------------------------------------------------------------------ config


def config_maps(r: Run) -> None:
    r.apply("configmap/configmaps.yaml", ns="")  # the file names namespace default
    try:
        got = {
            n: r.json("configmap", n, ns="default")["data"]
            for n in ("special-config", "env-config")
        }
        assert got == {
            "special-config": {"special.how": "very"},
            "env-config": {"log_level": "INFO"},
        }
    finally:
        r.kubectl("delete", "configmap", "special-config", "env-config", "-n", "default")


def _waiting(r: Run, pod: str) -> dict[str, str]:
    """The pod's first container's waiting state (reason, message), once it has one."""

    def state() -> dict[str, str] | None:
        statuses = r.json("pod", pod)["status"].get("containerStatuses") or []
        return statuses[0]["state"].get("waiting") if statuses else None

    return dict(r.until(state))


def pod_waits_for_its_config_map(r: Run) -> None:
    """configure-pod.yaml names ConfigMap game-demo (the docs' page defines it inline): the
    pod waits, ContainerCreating, until it exists, then runs."""
    r.apply("configmap/configure-pod.yaml")
    assert _waiting(r, "configmap-demo-pod")["reason"] == "ContainerCreating"
    r.until(lambda: r.json("pod", "configmap-demo-pod")["status"].get("startTime"))
    pod = r.json("pod", "configmap-demo-pod")
    assert pod["status"]["phase"] == "Pending"
    row = r.kubectl("get", "pod", "configmap-demo-pod", "-n", r.ns).stdout.splitlines()[1]
    assert row.split()[2] == "ContainerCreating"
    r.kubectl(
        "create", "configmap", "game-demo", "-n", r.ns, "--from-literal=player_initial_lives=3",
        "--from-literal=ui_properties_file_name=user-interface.properties",
        "--from-literal=game.properties=enemy.types=aliens",
        "--from-literal=user-interface.properties=color.good=purple",
    )  # fmt: skip
    r.running("!job-name", 1)


def env_from_a_missing_config_map(r: Run) -> None:
    """env-configmap.yaml's envFrom names ConfigMap myconfigmap: CreateContainerConfigError
    with upstream's words until it is created."""
    r.apply("configmap/env-configmap.yaml")
    waiting = r.until(
        lambda: (
            (w := _waiting(r, "env-configmap")).get("reason") == "CreateContainerConfigError" and w
        )
    )
    assert waiting["message"] == 'configmap "myconfigmap" not found'
    row = r.kubectl("get", "pod", "env-configmap", "-n", r.ns).stdout.splitlines()[1]
    assert row.split()[2] == "CreateContainerConfigError"
    r.kubectl("create", "configmap", "myconfigmap", "-n", r.ns, "--from-literal=k=v")

    def started() -> bool:
        (status,) = r.json("pod", "env-configmap")["status"]["containerStatuses"]
        return bool({"running", "terminated"} & set(status["state"]))

    r.until(started)  # (its printenv would exit at once on a real node)


def immutable_config_map(r: Run) -> None:
    r.apply("configmap/immutable-configmap.yaml")
    patch = r.kubectl(
        "patch", "configmap", "company-name-20150801", "-n", r.ns, "-p", '{"data":{"company_name":"x"}}',
        check=False,
    )  # fmt: skip
    assert patch.returncode != 0
    assert "field is immutable when `immutable` is set" in patch.stderr


def redis_with_config(r: Run) -> None:
    r.apply("pods/config/example-redis-config.yaml")
    r.apply("pods/config/redis-pod.yaml")
    until(lambda: r.json("pod", "redis")["status"].get("phase") == "Running")
    data = r.json("configmap", "example-redis-config")["data"]["redis-config"]
    assert data == "maxmemory 2mb\nmaxmemory-policy allkeys-lru\n"
    assert "ConfigMap (a volume populated by a ConfigMap)" in r.described("pod", "redis")


def secret_volume(r: Run) -> None:
    r.apply("pods/inject/secret.yaml")
    r.apply("pods/inject/secret-pod.yaml")
    until(lambda: r.json("pod", "secret-test-pod")["status"].get("phase") == "Running")
    described = r.described("secret", "test-secret")
    assert "password:  12 bytes" in described and "username:  6 bytes" in described


def init_container(r: Run) -> None:
    r.apply("pods/init-containers.yaml")
    (pod,) = r.running("!job-name", 1)
    (init,) = pod["status"]["initContainerStatuses"]
    assert init["name"] == "install" and init["state"]["terminated"]["reason"] == "Completed"
    assert pod["spec"]["dnsPolicy"] == "Default"
    conds = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conds["Initialized"] == "True"


def services_without_pods(r: Run) -> None:
    r.apply("application/mysql/mysql-services.yaml")
    assert r.json("service", "mysql")["spec"]["clusterIP"] == "None"
    assert r.json("service", "mysql-read")["spec"]["clusterIP"].startswith("10.")
    for name in ("mysql", "mysql-read"):
        (s,) = r.until(lambda name=name: _slices(r, name))
        assert not s.get("endpoints")


def optional_secret(r: Run) -> None:
    r.apply("secret/optional-secret.yaml")  # names Secret mysecret, which is not there
    r.running("!job-name", 1)


def dotfile_secret(r: Run) -> None:
    r.apply("secret/dotfile-secret.yaml")
    r.running("!job-name", 1)
    assert r.json("secret", "dotfile-secret")["data"] == {".secret-file": "dmFsdWUtMg0KDQo="}


def placeholder_secret(r: Run) -> None:
    """Its data are placeholders, not base64: refused as upstream's decoder refuses it."""
    bad = r.apply("secret/tls-auth-secret.yaml", check=False)
    assert bad.returncode != 0
    assert (
        'Error from server (BadRequest): error when creating "' in bad.stderr
        and 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
        "input byte 7"
        in bad.stderr
    ), bad.stderr


def basic_auth_secret(r: Run) -> None:
    r.apply("secret/basicauth-secret.yaml")
    secret = r.json("secret", "secret-basic-auth")
    assert secret["type"] == "kubernetes.io/basic-auth" and "stringData" not in secret
    assert secret["data"] == {"username": "YWRtaW4=", "password": "dDBwLVNlY3JldA=="}
    described = r.described("secret", "secret-basic-auth")
    assert "password:  10 bytes" in described and "username:  5 bytes" in described


# ------------------------------------------------------------------ scheduling


def _in_own_namespace(r: Run, ns: str, path: str) -> None:
    """A manifest that names its namespace (the docs' task creates it first)."""
    r.kubectl("create", "namespace", ns)
    r.apply(path, ns="")


def too_much_cpu(r: Run) -> None:
    _in_own_namespace(r, "cpu-example", "pods/resource/cpu-request-limit-2.yaml")
    try:

        def unschedulable() -> str | None:
            events = r.json("events", ns="cpu-example")["items"]
            return next((e["message"] for e in events if e["reason"] == "FailedScheduling"), None)

        message = r.until(unschedulable)
        assert f"0/{NODES} nodes are available: {NODES} Insufficient cpu." in message
        pod = r.json("pod", "cpu-demo-2", ns="cpu-example")
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
        (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    finally:
        r.kubectl("delete", "namespace", "cpu-example", "--wait=false")


def guaranteed_qos(r: Run) -> None:
    _in_own_namespace(r, "qos-example", "pods/qos/qos-pod.yaml")
    try:
        (pod,) = r.running("!job-name", 1, ns="qos-example")
        assert pod["status"]["qosClass"] == "Guaranteed"
    finally:
        r.kubectl("delete", "namespace", "qos-example", "--wait=false")


def scheduling_gates(r: Run) -> None:
    r.apply("pods/pod-with-scheduling-gates.yaml")
    row = r.until(
        lambda: (
            (
                line := r.kubectl("get", "pod", "test-pod", "-n", r.ns).stdout.splitlines()[1]
            ).split()[2]
            == "SchedulingGated"
            and line
        )
    )
    assert row.split()[1] == "0/1"
    r.kubectl(
        "patch", "pod", "test-pod", "-n", r.ns, "--type=json",
        "-p", '[{"op": "remove", "path": "/spec/schedulingGates"}]',
    )  # fmt: skip
    r.running("!job-name", 1)


def toleration(r: Run) -> None:
    r.apply("pods/pod-with-toleration.yaml")
    (pod,) = r.running("env=test", 1)
    assert {"key": "example-key", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"][
        "tolerations"
    ]


def replica_set_acquires_bare_pods(r: Run) -> None:
    """The docs' ReplicaSet page: pods matching frontend's selector are acquired, and, the
    set being full, deleted."""
    r.apply("controllers/frontend.yaml")
    r.running("tier=frontend", 3)
    r.apply("pods/pod-rs.yaml")
    r.until(lambda: r.kubectl("get", "pods", "-n", r.ns, "-o", "name").stdout.count("pod/pod") == 0)
    assert len(r.running("tier=frontend", 3)) == 3


def labelled_namespace(r: Run) -> None:
    r.apply("admin/namespace-dev.yaml", ns="")
    try:
        got = r.json("namespace", "development", ns="default")
        assert got["metadata"]["labels"] == {
            "name": "development",
            "kubernetes.io/metadata.name": "development",
        }
        assert got["status"]["phase"] == "Active"
    finally:
        r.kubectl("delete", "namespace", "development", "--wait=false")


# ------------------------------------------------------------------ quotas and limits


def _quota_used(r: Run, name: str) -> dict[str, str]:
    return dict(r.json("resourcequota", name).get("status", {}).get("used") or {})


def object_quota(r: Run) -> None:
    r.apply("admin/resource/quota-objects.yaml")
    r.until(lambda: _quota_used(r, "object-quota-demo"))
    r.apply("admin/resource/quota-objects-pvc.yaml")
    r.refused(
        "admin/resource/quota-objects-pvc-2.yaml",
        'persistentvolumeclaims "pvc-quota-demo-2" is forbidden: exceeded quota: '
        "object-quota-demo, requested: persistentvolumeclaims=1, used: "
        "persistentvolumeclaims=1, limited: persistentvolumeclaims=1",
    )
    assert _quota_used(r, "object-quota-demo") == {
        "persistentvolumeclaims": "1",
        "services.loadbalancers": "0",
        "services.nodeports": "0",
    }
    nodeport = r.kubectl(
        "create", "service", "nodeport", "np", "--tcp=80:80", "-n", r.ns, check=False
    )
    assert "exceeded quota: object-quota-demo, requested: services.nodeports=1" in nodeport.stderr


def pod_count_quota(r: Run) -> None:
    r.apply("admin/resource/quota-pod.yaml")
    r.until(lambda: _quota_used(r, "pod-demo"))
    r.apply("admin/resource/quota-pod-deployment.yaml")

    def held() -> bool:
        st = r.json("deployment", "pod-quota-demo").get("status", {})
        return any(
            c["type"] == "ReplicaFailure" and "exceeded quota: pod-demo" in c["message"]
            for c in st.get("conditions", [])
        )

    r.until(held)
    assert len(r.pods("purpose=quota-demo")) == 2
    assert _quota_used(r, "pod-demo") == {"pods": "2"}


def priority_class_quotas(r: Run) -> None:
    r.apply("admin/resource/quota-objects-priority.yaml")
    r.until(lambda: all(_quota_used(r, f"pods-{p}") for p in ("high", "medium", "low")))
    assert _quota_used(r, "pods-low") == {"cpu": "0", "memory": "0", "pods": "0"}
    assert "pods        0     10" in r.described("quota", "pods-high")
    r.apply("policy/priority-class-resourcequota.yaml")
    quota = r.json("resourcequota", "pods-cluster-services")
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == ["cluster-services"]


def container_limit_defaults(r: Run) -> None:
    r.apply("admin/resource/limit-mem-cpu-container.yaml")
    r.apply("admin/resource/limit-range-pod-1.yaml")
    got = {c["name"]: c["resources"] for c in r.json("pod", "busybox1")["spec"]["containers"]}
    # the docs' task "Configure ... limit ranges": what each container ends with
    assert got == {
        "busybox-cnt01": {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "500m", "memory": "200Mi"}},
        "busybox-cnt02": {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "700m", "memory": "900Mi"}},
        "busybox-cnt03": {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "500m", "memory": "200Mi"}},
        "busybox-cnt04": {"requests": {"cpu": "110m", "memory": "111Mi"}, "limits": {"cpu": "700m", "memory": "900Mi"}},
    }  # fmt: skip
    described = r.described("limitrange", "limit-mem-cpu-per-container")
    assert "Container   cpu       100m  800m  110m             700m" in described


def pod_limit(r: Run) -> None:
    r.apply("admin/resource/limit-mem-cpu-container.yaml")
    r.apply("admin/resource/limit-mem-cpu-pod.yaml")
    r.refused(
        "admin/resource/limit-range-pod-2.yaml",
        'pods "busybox2" is forbidden: [maximum cpu usage per Pod is 2, but limit is 2400m, '
        "maximum memory usage per Pod is 2Gi, but limit is",
    )


def limit_request_ratio(r: Run) -> None:
    r.apply("admin/resource/limit-memory-ratio-pod.yaml")
    r.refused(
        "admin/resource/limit-range-pod-3.yaml",
        'pods "busybox3" is forbidden: memory max limit to request ratio per Pod is 2, but '
        "provided ratio is 3.000000",
    )


def storage_limits(r: Run) -> None:
    r.apply("admin/resource/storagelimits.yaml")
    r.refused(
        "admin/resource/pvc-limit-lower.yaml",
        'persistentvolumeclaims "pvc-limit-lower" is forbidden: minimum storage usage per '
        "PersistentVolumeClaim is 1Gi, but request is 500Mi",
    )
    r.refused(
        "admin/resource/pvc-limit-greater.yaml",
        'persistentvolumeclaims "pvc-limit-greater" is forbidden: maximum storage usage per '
        "PersistentVolumeClaim is 2Gi, but request is 5Gi",
    )
    assert r.json("pvc")["items"] == []


@dataclass(frozen=True)
class Case:
    """One row: the docs' files it applies (the first names it) and what must then hold."""

    files: tuple[str, ...]
    check: Callable[[Run], None]
    #: Objects the row leaves in its namespace, which get and describe must show.
    names: tuple[str, ...] = ()


CASES = [
    Case(("controllers/job.yaml",), pi_job, ("job.batch/pi",)),
    Case(("application/job/indexed-job.yaml",), indexed_job, ("job.batch/indexed-job",)),
    Case(("application/job/job-sidecar.yaml",), sidecar_job, ("job.batch/myjob",)),
    Case(("controllers/job-success-policy.yaml",), success_policy_job, ("job-success",)),
    Case(
        ("controllers/job-backoff-limit-per-index-example.yaml",),
        backoff_limit_per_index_job,
        ("job.batch/job-backoff-limit-per-index-example",),
    ),
    Case(
        ("controllers/job-pod-failure-policy-example.yaml",),
        pod_failure_policy_job,
        ("job.batch/job-pod-failure-policy-example",),
    ),
    Case(
        ("application/job/cronjob.yaml",),
        cronjob_and_jobs_from_it,
        ("cronjob.batch/pfp", "job.batch/pfp-manual", "job.batch/sp-manual"),
    ),
    Case(
        ("controllers/daemonset.yaml", "controllers/fluentd-daemonset.yaml"),
        daemonsets_and_cascade,
    ),
    Case(
        ("controllers/daemonset-label-selector.yaml",),
        daemonset_on_labelled_nodes,
        ("daemonset.apps/ssd-driver",),
    ),
    Case(("controllers/frontend.yaml",), replicaset_and_cascade),
    Case(
        ("controllers/statefulset.yaml",),
        statefulset_with_claims,
        ("statefulset.apps/web", "service/nginx", "www-web-2", "web-2"),
    ),
    Case(("application/web/web.yaml",), web_statefulset, ("statefulset.apps/web", "web-1")),
    Case(
        ("application/zookeeper/zookeeper.yaml",),
        zookeeper,
        ("statefulset.apps/zk", "zk-pdb", "zk-cs", "zk-hs", "datadir-zk-0"),
    ),
    Case(
        ("policy/zookeeper-pod-disruption-budget-minavailable.yaml",),
        zookeeper_budget_alone,
        ("zk-pdb",),
    ),
    Case(("application/deployment.yaml",), deployment, ("deployment.apps/nginx-deployment",)),
    Case(
        ("controllers/nginx-deployment.yaml", "application/deployment-scale.yaml"),
        deployment_rollout_and_undo,
        ("deployment.apps/nginx-deployment",),
    ),
    Case(
        ("application/deployment-patch.yaml",),
        strategic_merge_patch,
        ("deployment.apps/patch-demo",),
    ),
    Case(("application/nginx-app.yaml",), load_balancer_app, ("my-nginx-svc", "my-nginx")),
    Case(
        ("service/networking/run-my-nginx.yaml", "service/networking/nginx-svc.yaml"),
        service_for_a_deployment,
        ("service/my-nginx", "deployment.apps/my-nginx"),
    ),
    Case(
        ("service/access/backend-deployment.yaml", "service/access/backend-service.yaml"),
        named_target_port,
        ("service/hello", "deployment.apps/backend"),
    ),
    Case(
        ("service/load-balancer-example.yaml",),
        exposed_load_balancer,
        ("service/my-service", "deployment.apps/hello-world"),
    ),
    Case(("configmap/configmaps.yaml",), config_maps),
    Case(
        ("configmap/configure-pod.yaml",),
        pod_waits_for_its_config_map,
        ("configmap-demo-pod", "game-demo"),
    ),
    Case(
        ("configmap/env-configmap.yaml",),
        env_from_a_missing_config_map,
        ("env-configmap", "myconfigmap"),
    ),
    Case(("configmap/immutable-configmap.yaml",), immutable_config_map, ("company-name-20150801",)),
    Case(
        ("pods/config/example-redis-config.yaml", "pods/config/redis-pod.yaml"),
        redis_with_config,
        ("pod/redis", "example-redis-config"),
    ),
    Case(
        ("pods/inject/secret.yaml", "pods/inject/secret-pod.yaml"),
        secret_volume,
        ("secret-test-pod", "test-secret"),
    ),
    Case(("pods/init-containers.yaml",), init_container, ("pod/init-demo",)),
    Case(("pods/resource/cpu-request-limit-2.yaml",), too_much_cpu),
    Case(("pods/qos/qos-pod.yaml",), guaranteed_qos),
    Case(("pods/pod-with-scheduling-gates.yaml",), scheduling_gates, ("pod/test-pod",)),
    Case(("pods/pod-with-toleration.yaml",), toleration, ("pod/nginx",)),
    Case(("pods/pod-rs.yaml",), replica_set_acquires_bare_pods, ("replicaset.apps/frontend",)),
    Case(("admin/namespace-dev.yaml",), labelled_namespace),
    Case(
        ("application/mysql/mysql-services.yaml",),
        services_without_pods,
        ("service/mysql", "service/mysql-read"),
    ),
    Case(("secret/optional-secret.yaml",), optional_secret, ("pod/mypod",)),
    Case(
        ("secret/dotfile-secret.yaml",),
        dotfile_secret,
        ("pod/secret-dotfiles-pod", "secret/dotfile-secret"),
    ),
    Case(("secret/tls-auth-secret.yaml",), placeholder_secret),
    Case(("secret/basicauth-secret.yaml",), basic_auth_secret, ("secret/secret-basic-auth",)),
    Case(
        (
            "admin/resource/quota-objects.yaml",
            "admin/resource/quota-objects-pvc.yaml",
            "admin/resource/quota-objects-pvc-2.yaml",
        ),
        object_quota,
        ("object-quota-demo", "pvc-quota-demo"),
    ),
    Case(
        ("admin/resource/quota-pod.yaml", "admin/resource/quota-pod-deployment.yaml"),
        pod_count_quota,
        ("pod-demo", "deployment.apps/pod-quota-demo"),
    ),
    Case(
        ("admin/resource/quota-objects-priority.yaml", "policy/priority-class-resourcequota.yaml"),
        priority_class_quotas,
        ("pods-high", "pods-medium", "pods-low", "pods-cluster-services"),
    ),
    Case(
        ("admin/resource/limit-mem-cpu-container.yaml", "admin/resource/limit-range-pod-1.yaml"),
        container_limit_defaults,
        ("limit-mem-cpu-per-container", "busybox1"),
    ),
    Case(
        ("admin/resource/limit-mem-cpu-pod.yaml", "admin/resource/limit-range-pod-2.yaml"),
        pod_limit,
        ("limit-mem-cpu-per-pod",),
    ),
    Case(
        ("admin/resource/limit-memory-ratio-pod.yaml", "admin/resource/limit-range-pod-3.yaml"),
        limit_request_ratio,
        ("limit-memory-ratio-pod",),
    ),
    Case(
        (
            "admin/resource/storagelimits.yaml",
            "admin/resource/pvc-limit-lower.yaml",
            "admin/resource/pvc-limit-greater.yaml",
        ),
        storage_limits,
        ("storagelimits",),
    ),
]


def test_every_committed_manifest_has_a_row() -> None:
    """The table and the folder agree: every file under manifests/website is some row's."""
    files = sorted(p.relative_to(WEBSITE).as_posix() for p in WEBSITE.rglob("*.yaml"))
    assert sorted({f for case in CASES for f in case.files}) == files


@pytest.mark.parametrize("case", CASES, ids=[c.files[0] for c in CASES])
def test_the_docs_example_behaves_as_on_a_real_cluster(cluster: Cluster, case: Case) -> None:
    slug = "".join(ch if ch.isalnum() else "-" for ch in case.files[0].removesuffix(".yaml"))
    ns = f"ex-{slug.lower()}"[:63].rstrip("-")
    kubectl(cluster, "create", "namespace", ns)
    try:
        case.check(Run(cluster, ns))
        # every object the row made prints with kubectl's get and describe
        kinds = "all,cm,secrets,pvc,quota,limits,pdb,endpointslices,controllerrevisions"
        listed = kubectl(cluster, "get", kinds, "-n", ns, "-o", "wide").stdout
        described = kubectl(cluster, "describe", kinds, "-n", ns).stdout
        for name in case.names:  # "kind/name" as get lists it; describe names it bare
            assert name in listed and f" {name.split('/')[-1]}\n" in described, name
    finally:
        # quotas and limit ranges must not outlive the row (the cluster may be shared)
        kubectl(cluster, "delete", "resourcequotas,limitranges", "--all", "-n", ns, check=False)
