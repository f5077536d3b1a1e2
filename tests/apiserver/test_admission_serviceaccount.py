"""The ServiceAccount admission plugin (services/apiserver/admission.py), with the cases of
upstream's plugin/pkg/admission/serviceaccount/admission_test.go (TestIgnoresMirrorPod,
TestRejectsMirrorPodWithServiceAccount, TestAssignsDefaultServiceAccountAndBoundToken...,
TestFetchesUncachedServiceAccount, TestDeniesInvalidServiceAccount) and the v1 PodSpec
conversion of the deprecated `serviceAccount` field (pkg/apis/core/v1/conversion.go).
kubera's difference: a pod naming `default` is admitted before that account exists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import service_pb2
from services.api.helpers.wellknown import MIRROR_POD_ANNOTATION
from services.api.machinery import codec
from services.api.machinery.errors import ForbiddenError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from services.storage.memory import MemoryStorage
from tests.apiserver.conftest import obj, running_apiserver
from tests.builders import MakePod

PODS = BY_KIND["Pod"]


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with running_apiserver(MemoryStorage()) as server:
        yield server


def _pod(name: str = "p", **spec: Any) -> Any:
    return MakePod().name(name).namespace("default").container("c", "x").spec(spec).obj()


async def _account(api: ApiServer, name: str) -> None:
    sa = service_pb2.ServiceAccount(api_version="v1", kind="ServiceAccount")
    sa.metadata.name, sa.metadata.namespace = name, "default"
    await api.create(sa)


async def test_a_pod_without_an_account_gets_default_in_both_fields(api: ApiServer) -> None:
    created = await api.create(_pod())
    spec = codec.encode(created)["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    stored = await api.get(PODS, "default", "p")
    assert stored.spec.service_account_name == "default"  # type: ignore[attr-defined]


async def test_a_pod_naming_a_missing_account_is_refused_403(api: ApiServer) -> None:
    with pytest.raises(ForbiddenError) as e:
        await api.create(_pod(serviceAccountName="builder"))
    assert str(e.value) == (
        'pods "p" is forbidden: error looking up service account default/builder: '
        'serviceaccount "builder" not found'
    )
    assert await api.get_or_none(PODS, "default", "p") is None


async def test_a_pod_naming_an_existing_account_is_admitted(api: ApiServer) -> None:
    await _account(api, "builder")
    created = await api.create(_pod(serviceAccountName="builder"))
    assert created.spec.service_account == "builder"  # type: ignore[attr-defined]


async def test_the_deprecated_field_alone_names_the_account(api: ApiServer) -> None:
    await _account(api, "builder")
    created = await api.create(_pod(serviceAccount="builder"))
    assert created.spec.service_account_name == "builder"  # type: ignore[attr-defined]


async def test_the_new_field_wins_over_the_deprecated_one(api: ApiServer) -> None:
    await _account(api, "builder")
    created = await api.create(_pod(serviceAccountName="builder", serviceAccount="other"))
    spec = created.spec  # type: ignore[attr-defined]
    assert (spec.service_account_name, spec.service_account) == ("builder", "builder")


async def test_a_mirror_pod_is_not_given_an_account(api: ApiServer) -> None:
    mirror = _pod()
    mirror.metadata.annotations[MIRROR_POD_ANNOTATION] = "hash"
    created = await api.create(mirror)
    spec = created.spec  # type: ignore[attr-defined]
    assert (spec.service_account_name, spec.service_account) == ("", "")


async def test_a_mirror_pod_naming_an_account_is_refused(api: ApiServer) -> None:
    await _account(api, "default")
    mirror = _pod(serviceAccountName="default")
    mirror.metadata.annotations[MIRROR_POD_ANNOTATION] = "hash"
    with pytest.raises(ForbiddenError) as e:
        await api.create(mirror)
    assert str(e.value) == 'pods "p" is forbidden: a mirror pod may not reference service accounts'


async def test_a_template_mirrors_its_account_but_is_not_defaulted(api: ApiServer) -> None:
    def deployment(name: str, **template_spec: Any) -> Any:
        return obj(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": "c", "image": "x"}], **template_spec},
                    },
                },
            }
        )

    named = await api.create(deployment("named", serviceAccountName="builder"))
    assert named.spec.template.spec.service_account == "builder"  # type: ignore[attr-defined]
    plain = await api.create(deployment("plain"))
    spec = plain.spec.template.spec  # type: ignore[attr-defined]
    assert (spec.service_account_name, spec.service_account) == ("", "")
