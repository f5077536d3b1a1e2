"""services.api.dra.extended: which DeviceClass serves an extended resource, and the requests
and container mappings of the claim the scheduler makes (upstream
extendeddynamicresources_test.go Test_createRequestsAndMappings_requests / _mappings, rows
and names as upstream's; extendedresourcecache's arbitration), plus DeviceClass
validation of spec.extendedResourceName."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import extended
from services.api.dra.extended import DEVICE_CLASS_PREFIX
from services.api.validation.resource import validate_device_class
from tests.builders import MakePod

ER = "example.com/gpu"
IMPLICIT = DEVICE_CLASS_PREFIX + "classInit"


def make_class(
    name: str, resource: str | None = None, created: str = ""
) -> resource_pb2.DeviceClass:
    dc = resource_pb2.DeviceClass()
    dc.metadata.name = name
    dc.metadata.creation_timestamp = created
    if resource is not None:
        dc.spec.extended_resource_name = resource
    return dc


class Pod:
    """upstream st.MakePod's Res / InitReq / SidecarReq: containers con<i>, init containers
    init-con<i> and sidecars sidecar-con<i> (i: the init containers before it)."""

    def __init__(self) -> None:
        self.b = MakePod().name("pod").namespace("default").uid("1234")

    def res(self, requests: dict[str, str]) -> Pod:
        self.b.container(f"con{len(self.b.obj().spec.containers)}", requests=requests)
        return self

    def init_req(self, requests: dict[str, str]) -> Pod:
        self.b.init_container(
            f"init-con{len(self.b.obj().spec.init_containers)}", requests=requests
        )
        return self

    def sidecar_req(self, requests: dict[str, str]) -> Pod:
        n = len(self.b.obj().spec.init_containers)
        self.b.init_container(f"sidecar-con{n}", requests=requests, restart_policy="Always")
        return self

    def obj(self) -> core_pb2.Pod:
        return self.b.obj()


POD1 = Pod().res({ER: "1", ER + "1": "2"}).obj()
POD2 = Pod().res({ER: "1"}).res({ER + "1": "2"}).obj()
POD_INIT = Pod().res({ER: "1"}).init_req({ER + "init": "2"}).obj()
POD_INIT2 = Pod().res({ER: "1"}).init_req({ER + "init": "1"}).init_req({ER + "init": "2"}).obj()
POD_INIT3 = (
    Pod()
    .res({ER: "1"})
    .init_req({ER + "init": "1"})
    .sidecar_req({ER + "init": "1"})
    .init_req({ER + "init": "2"})
    .obj()
)
POD1_INIT_IMPLICIT = Pod().init_req({ER + "init": "1", IMPLICIT: "2"}).obj()
POD_INIT_IMPLICIT = (
    Pod().res({ER: "1"}).init_req({ER + "init": "1"}).init_req({IMPLICIT: "2"}).obj()
)

RES = {ER: 1}
RES2 = {ER: 1, ER + "1": 2}
RES_INIT = {ER: 1, ER + "init": 2}
RES_INIT_IMPLICIT = {ER: 1, ER + "init": 2, IMPLICIT: 2}
DEV_MAP = {ER: make_class("class")}
DEV_MAP2 = {ER: make_class("class"), ER + "1": make_class("class1")}
DEV_MAP_INIT = {
    ER: make_class("class"),
    ER + "init": make_class("classInit"),
    IMPLICIT: make_class("classInit"),
}


@pytest.mark.parametrize(
    ("pod", "resources", "mapping", "want"),
    [
        pytest.param(POD1, {}, {}, [], id="nil"),
        pytest.param(
            POD1, RES, DEV_MAP, [("container-0-request-0", "class", 1)], id="one resource match"
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP,
            [("container-0-request-0", "class", 1)],
            id="one resource match, one resource not match",
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
            id="two resources match",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
            id="two containers match",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
            id="one init container, one regular container",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
            id="two init containers, one regular container",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            id="three init containers, one sidecar, one regular container",
        ),
    ],
)
def test_requests_are_one_exact_count_per_container_and_resource(pod, resources, mapping, want):
    requests, _ = extended.requests_and_mappings(pod, resources, mapping)
    assert [(r.name, r.device_class_name, r.count) for r in requests] == want


def _sorted(mappings: list[core_pb2.ContainerExtendedResourceRequest]) -> list[tuple[str, ...]]:
    return sorted((m.request_name, m.container_name, m.resource_name) for m in mappings)


@pytest.mark.parametrize(
    ("pod", "resources", "mapping", "want"),
    [
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [("con0", ER, "container-0-request-0"), ("con0", ER + "1", "container-0-request-1")],
            id="one container, two requests",
        ),
        pytest.param(
            POD1_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                ("init-con0", IMPLICIT, "container-0-request-0"),
                ("init-con0", ER + "init", "container-0-request-1"),
            ],
            id="one container, one explicit and one implicit request",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [("con0", ER, "container-0-request-0"), ("con1", ER + "1", "container-1-request-0")],
            id="two containers, two requests",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("init-con0", ER + "init", "container-0-request-0"),
                ("con0", ER, "container-1-request-0"),
            ],
            id="one init container, one regular container, one request",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("init-con0", ER + "init", "container-1-request-0"),
                ("init-con1", ER + "init", "container-1-request-0"),
                ("con0", ER, "container-2-request-0"),
            ],
            id="three containers (two are init container), two requests",
        ),
        pytest.param(
            POD_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                ("init-con0", ER + "init", "container-0-request-0"),
                ("init-con1", IMPLICIT, "container-1-request-0"),
                ("con0", ER, "container-2-request-0"),
            ],
            id="three containers (two are init container), both explicit and implicit resources",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("init-con0", ER + "init", "container-1-request-0"),
                ("sidecar-con1", ER + "init", "container-1-request-0"),
                ("init-con2", ER + "init", "container-2-request-0"),
                ("con0", ER, "container-3-request-0"),
            ],
            id="four containers (two are init container, one sidecar), three requests",
        ),
    ],
)
def test_mappings_name_the_request_serving_each_containers_resource(pod, resources, mapping, want):
    _, mappings = extended.requests_and_mappings(pod, resources, mapping)
    assert _sorted(mappings) == sorted((req, c, r) for c, r, req in want)


# ------------------------------------------------------------------ which class serves a name


def test_every_class_serves_its_implicit_name_and_the_newest_wins_an_explicit_one():
    old = make_class("old", ER, "2026-01-01T00:00:00Z")
    new = make_class("new", ER, "2026-02-01T00:00:00Z")
    plain = make_class("plain")
    got = extended.resolve([old, new, plain])
    assert {k: v.metadata.name for k, v in got.items()} == {
        DEVICE_CLASS_PREFIX + "old": "old",
        DEVICE_CLASS_PREFIX + "new": "new",
        DEVICE_CLASS_PREFIX + "plain": "plain",
        ER: "new",
    }


def test_classes_created_together_give_an_explicit_name_to_the_lower_name():
    at = "2026-01-01T00:00:00Z"
    got = extended.resolve([make_class("b", ER, at), make_class("a", ER, at)])
    assert got[ER].metadata.name == "a"


def test_mapped_requests_keep_only_non_zero_requests_a_class_maps():
    mapping = extended.resolve([make_class("gpu", ER)])
    requests = {ER: 2, "other.com/x": 1, DEVICE_CLASS_PREFIX + "gpu": 0, "cpu": 1000}
    assert extended.mapped_requests(requests, mapping) == {ER: 2}


def test_the_claim_of_an_earlier_attempt_is_the_pods_annotated_controlled_one():
    pod = Pod().res({ER: "1"}).obj()
    mine = extended.new_claim(pod)
    mine.metadata.name = "pod-extended-resources-abcde"
    other = extended.new_claim(MakePod().name("pod").namespace("default").uid("9").obj())
    plain = resource_pb2.ResourceClaim()
    plain.CopyFrom(mine)
    plain.metadata.annotations.clear()
    assert extended.find_claim(pod, [other, plain]) is None
    assert extended.find_claim(pod, [other, plain, mine]) is mine
    assert mine.metadata.generate_name == "pod-extended-resources-"
    assert mine.metadata.owner_references[0].controller


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        # the implicit names are in kubernetes.io/: no class may claim another's
        (DEVICE_CLASS_PREFIX + "gpu", False),
        ("example.kubernetes.io/gpu", False),
        ("gpu", False),
        ("cpu", False),
        ("requests.example.com/gpu", False),
        ("example.com/", False),
        ("example.com/gpu/x", False),
    ],
)
def test_extended_resource_name_must_be_a_valid_extended_resource_name(name, valid):
    errs = validate_device_class(make_class("c", name))
    if valid:
        assert errs == []
    else:
        assert [(e.path, e.type, e.detail) for e in errs] == [
            (
                "spec.extendedResourceName",
                "Invalid value",
                "must be a valid extended resource name",
            )
        ]
