"""The Kubernetes docs' example manifests (kubernetes/website content/en/examples/, kept
byte for byte under tests/e2e/manifests/website/, see its README) applied unchanged with
real kubectl to one `kubera up`, each behaving as on a real cluster.

The table `CASES` is the whole test: each row names the files applied (in order, with
`kubectl apply -n NS` in a namespace of the row's own unless the manifest names its
namespace) and the check of what must then hold. Rows that create quotas or limit ranges
delete them after, so a later module sharing the cluster sees none.

What kubera cannot reproduce is left out of the checks and said in docs/differences.md:
hollow containers do not run their commands, so a Job whose command decides its exit code
(job-pod-failure-policy-example.yaml exits 42) completes as its pods exit 0."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.e2e.website.configs import (
    basic_auth_secret,
    config_maps,
    container_limit_defaults,
    dotfile_secret,
    env_from_a_missing_config_map,
    exposed_load_balancer,
    guaranteed_qos,
    immutable_config_map,
    init_container,
    labelled_namespace,
    limit_request_ratio,
    load_balancer_app,
    named_target_port,
    object_quota,
    optional_secret,
    placeholder_secret,
    pod_count_quota,
    pod_limit,
    pod_waits_for_its_config_map,
    priority_class_quotas,
    redis_with_config,
    replica_set_acquires_bare_pods,
    scheduling_gates,
    secret_volume,
    service_for_a_deployment,
    services_without_pods,
    storage_limits,
    toleration,
    too_much_cpu,
)
from tests.e2e.website.run import NODES, WEBSITE, Run
from tests.e2e.website.storage import (
    claim_of_the_default_class,
    redis_with_empty_dir,
    single_instance_mysql,
)
from tests.e2e.website.workloads import (
    backoff_limit_per_index_job,
    cronjob_and_jobs_from_it,
    daemonset_on_labelled_nodes,
    daemonsets_and_cascade,
    deployment,
    deployment_rollout_and_undo,
    indexed_job,
    pi_job,
    pod_failure_policy_job,
    replicaset_and_cascade,
    sidecar_job,
    statefulset_with_claims,
    strategic_merge_patch,
    success_policy_job,
    web_statefulset,
    zookeeper,
    zookeeper_budget_alone,
)

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


#: A cluster of its own (tests/e2e/conftest.py): rows cordon and taint nodes and run DaemonSets on every node.
EXCLUSIVE = True
UP_ARGS = ("--nodes", str(NODES), "--time-scale", "20")


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
    Case(("pods/storage/redis.yaml",), redis_with_empty_dir, ("pod/redis",)),
    Case(
        ("pods/storage/expandable-pvc.yaml", "pods/storage/expandable-pvc-pod.yaml"),
        claim_of_the_default_class,
        ("persistentvolumeclaim/expandable-pvc", "pod/expandable-pvc-pod"),
    ),
    Case(
        ("application/mysql/mysql-pv.yaml", "application/mysql/mysql-deployment.yaml"),
        single_instance_mysql,
        ("persistentvolumeclaim/mysql-pv-claim", "deployment.apps/mysql"),
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
        # every object the row made prints with kubectl's get and describe, once what
        # the row deleted is gone (describe gets each listed object again)
        run = Run(cluster, ns)
        run.until(
            lambda: (
                not any(p["metadata"].get("deletionTimestamp") for p in run.json("pods")["items"])
            )
        )
        kinds = "all,cm,secrets,pvc,quota,limits,pdb,endpointslices,controllerrevisions"
        listed = kubectl(cluster, "get", kinds, "-n", ns, "-o", "wide").stdout
        described = kubectl(cluster, "describe", kinds, "-n", ns).stdout
        for name in case.names:  # "kind/name" as get lists it; describe names it bare
            assert name in listed and f" {name.split('/')[-1]}\n" in described, name
    finally:
        # quotas and limit ranges must not outlive the row (the cluster may be shared)
        kubectl(cluster, "delete", "resourcequotas,limitranges", "--all", "-n", ns, check=False)
