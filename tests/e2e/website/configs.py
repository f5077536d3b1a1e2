"""The website rows' checks of services, ConfigMaps and Secrets, scheduling, and quotas
and limit ranges."""

from __future__ import annotations

from tests.e2e.website.run import NODES, Run, serves, slices
from tests.waiting import until

# ------------------------------------------------------------------ services


def load_balancer_app(r: Run) -> None:
    r.apply("application/nginx-app.yaml")
    pods = r.running("app=nginx", 3)
    svc = r.json("service", "my-nginx-svc")
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["clusterIP"].startswith("10.")
    assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767
    serves(r, "my-nginx-svc", pods, 80)
    row = r.kubectl("get", "svc", "my-nginx-svc", "-n", r.ns).stdout.splitlines()[1].split()
    assert row[1:4] == ["LoadBalancer", svc["spec"]["clusterIP"], "<pending>"]


def service_for_a_deployment(r: Run) -> None:
    r.apply("service/networking/run-my-nginx.yaml")
    r.apply("service/networking/nginx-svc.yaml")
    serves(r, "my-nginx", r.running("run=my-nginx", 2), 80)
    endpoints = r.json("endpoints", "my-nginx")
    assert len(endpoints["subsets"][0]["addresses"]) == 2


def named_target_port(r: Run) -> None:
    r.apply("service/access/backend-deployment.yaml")
    r.apply("service/access/backend-service.yaml")
    pods = r.running("app.kubernetes.io/name=hello,tier=backend", 3)
    assert r.json("service", "hello")["spec"]["ports"][0]["targetPort"] == "http"
    serves(r, "hello", pods, 80)  # the pods' port named http


def exposed_load_balancer(r: Run) -> None:
    r.apply("service/load-balancer-example.yaml")
    pods = r.running("app.kubernetes.io/name=load-balancer-example", 5)
    r.kubectl(
        "expose", "deployment", "hello-world", "--type=LoadBalancer", "--name=my-service",
        "-n", r.ns,
    )  # fmt: skip
    serves(r, "my-service", pods, 8080)
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
        (s,) = r.until(lambda name=name: slices(r, name))
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
