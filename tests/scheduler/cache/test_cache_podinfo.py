"""The cache derives a pod's PodInfo (requests, affinity terms, ports) once: the
informer's copy of an assumed pod, and status-only updates, share what was derived; a
change to what it is derived from (spec, labels, namespace) derives it again."""

from __future__ import annotations

from services.scheduler.cache.cache import Cache
from services.scheduler.framework.types import PodInfo
from tests.builders import MakeNode, MakePod


def setup() -> tuple[Cache, PodInfo]:
    cache = Cache()
    cache.add_node(MakeNode().name("n1").allocatable({"cpu": "4", "memory": "8Gi"}).obj())
    pod = MakePod().name("p").namespace("default").uid("p").req({"cpu": "1"}).obj()
    pod.metadata.labels["app"] = "web"
    return cache, PodInfo(pod).assigned("n1")


def cached(cache: Cache, uid: str) -> PodInfo:
    return cache._pod_states[uid].pod_info


def test_the_confirmation_of_an_assumed_pod_and_status_updates_share_what_was_derived() -> None:
    cache, assumed = setup()
    cache.assume_pod(assumed)
    confirmed = assumed.pod.__class__()
    confirmed.CopyFrom(assumed.pod)
    confirmed.metadata.resource_version = "7"
    cache.add_pod(confirmed)
    got = cached(cache, "p")
    assert got.pod is confirmed and got.requests is assumed.requests
    running = confirmed.__class__()
    running.CopyFrom(confirmed)
    running.status.phase = "Running"
    cache.update_pod(confirmed, running)
    assert cached(cache, "p").pod is running
    assert cached(cache, "p").requests is assumed.requests
    assert cache.get_pod(running) is running


def test_a_changed_spec_or_labels_is_derived_again() -> None:
    cache, assumed = setup()
    cache.assume_pod(assumed)
    resized = assumed.pod.__class__()
    resized.CopyFrom(assumed.pod)
    resized.spec.containers[0].resources.requests["cpu"] = "2"
    cache.add_pod(resized)
    got = cached(cache, "p")
    assert got.requests.milli_cpu == 2000 and got.requests is not assumed.requests
    fresh = PodInfo(resized)
    relabelled = resized.__class__()
    relabelled.CopyFrom(resized)
    relabelled.metadata.labels["app"] = "db"
    cache.update_pod(resized, relabelled)
    again = cached(cache, "p")
    assert again.requests is not got.requests
    assert again.requests.milli_cpu == fresh.requests.milli_cpu
    snap_pods = [pi.pod.metadata.labels["app"] for pi in cache._nodes["n1"].info.pods]
    assert snap_pods == ["db"]
