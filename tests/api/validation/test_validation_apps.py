"""Validation of DaemonSet, StatefulSet, ControllerRevision and PersistentVolumeClaim: one
row per upstream rule (cases of pkg/apis/apps/validation/validation_test.go
TestValidateDaemonSet, TestValidateStatefulSet(Update), TestValidateControllerRevision(Update)
and pkg/apis/core/validation's claim cases), each asserting upstream's wording.

Objects go through admission's defaults first, as the apiserver does, so a row states
what a user's manifest holds."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.validation import validate_create, validate_update
from services.apiserver.admission import apply_defaults
from tests.api.validation.test_validation import DELETE, edit

LABELS = {"app": "web"}
TEMPLATE = {
    "metadata": {"labels": LABELS},
    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
}
DAEMON_SET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "default"},
    "spec": {"selector": {"matchLabels": LABELS}, "template": TEMPLATE},
}
STATEFUL_SET = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "serviceName": "nginx",
        "replicas": 2,
        "selector": {"matchLabels": LABELS},
        "template": TEMPLATE,
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "www"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
    },
}
REVISION = {
    "apiVersion": "apps/v1",
    "kind": "ControllerRevision",
    "metadata": {"name": "web-abc", "namespace": "default"},
    "data": {"spec": {"template": {"$patch": "replace"}}},
    "revision": 1,
}
CLAIM = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "www-web-0", "namespace": "default"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def admitted(doc: dict[str, Any]) -> Any:
    obj = codec.decode(doc).obj
    apply_defaults(BY_KIND[doc["kind"]], obj)
    return obj


def errors_of(doc: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_create(doc["kind"], admitted(doc))]


@pytest.mark.parametrize(
    "doc",
    [DAEMON_SET, STATEFUL_SET, REVISION, CLAIM],
    ids=["DaemonSet", "StatefulSet", "ControllerRevision", "PersistentVolumeClaim"],
)
def test_the_minimal_objects_are_valid(doc: dict[str, Any]) -> None:
    assert errors_of(doc) == []


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(
            edit(DAEMON_SET, spec__selector=DELETE),
            'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`',
            id="ds-nil-selector",
        ),
        pytest.param(
            edit(DAEMON_SET, spec__selector={}),
            "spec.selector: Invalid value: {}: empty selector is invalid for daemonset",
            id="ds-empty-selector",
        ),
        pytest.param(
            edit(DAEMON_SET, spec__selector={"matchLabels": {"app": "db"}}),
            "`selector` does not match template `labels`",
            id="ds-selector-mismatch",
        ),
        pytest.param(
            edit(DAEMON_SET, spec__template__spec__restartPolicy="Never"),
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
            id="ds-restartPolicy-Never",
        ),
        pytest.param(
            edit(DAEMON_SET, spec__template__spec__activeDeadlineSeconds=10),
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
            id="ds-activeDeadlineSeconds",
        ),
        pytest.param(
            edit(DAEMON_SET, spec__updateStrategy={"type": "Foo"}),
            "spec.updateStrategy: Unsupported value:",
            id="ds-unknown-strategy",
        ),
        pytest.param(
            edit(
                DAEMON_SET,
                spec__updateStrategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0},
                },
            ),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
            id="ds-both-zero",
        ),
        pytest.param(
            edit(
                DAEMON_SET,
                spec__updateStrategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1},
                },
            ),
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero",
            id="ds-both-non-zero",
        ),
        pytest.param(
            edit(
                DAEMON_SET,
                spec__updateStrategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "150%"},
                },
            ),
            'spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%',
            id="ds-over-100-percent",
        ),
        pytest.param(
            edit(DAEMON_SET, spec__revisionHistoryLimit=-1),
            "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            id="ds-negative-history",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__podManagementPolicy="Foo"),
            "spec.podManagementPolicy: Invalid value: \"Foo\": must be 'OrderedReady' or 'Parallel'",
            id="sts-bad-pod-management",
        ),
        pytest.param(
            edit(
                STATEFUL_SET,
                spec__updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}},
            ),
            "spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":1}: only allowed for updateStrategy 'RollingUpdate'",
            id="sts-OnDelete-with-rollingUpdate",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__updateStrategy={"type": "Foo"}),
            "spec.updateStrategy: Invalid value: {\"type\":\"Foo\"}: must be 'RollingUpdate' or 'OnDelete'",
            id="sts-unknown-strategy",
        ),
        pytest.param(
            edit(
                STATEFUL_SET,
                spec__updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1}},
            ),
            "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
            id="sts-negative-partition",
        ),
        pytest.param(
            edit(
                STATEFUL_SET,
                spec__updateStrategy={
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 0},
                },
            ),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0",
            id="sts-maxUnavailable-0",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep"}),
            'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: "Retain", "Delete"',
            id="sts-bad-retention",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__replicas=-1),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            id="sts-negative-replicas",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__ordinals={"start": -2}),
            "spec.ordinals.start: Invalid value: -2: must be greater than or equal to 0",
            id="sts-negative-ordinal-start",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__selector={}),
            "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
            id="sts-empty-selector",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__selector=DELETE),
            "spec.selector: Required value",
            id="sts-nil-selector",
        ),
        pytest.param(
            edit(STATEFUL_SET, spec__template__spec__activeDeadlineSeconds=5),
            "activeDeadlineSeconds in StatefulSet is not Supported",
            id="sts-activeDeadlineSeconds",
        ),
        pytest.param(
            edit(STATEFUL_SET, metadata__name="web.v2"),
            'metadata.name: Invalid value: "web.v2"',
            id="sts-name-is-a-dns-label",
        ),
        pytest.param(
            edit(REVISION, data=DELETE),
            "data: Required value: data is mandatory",
            id="revision-without-data",
        ),
        pytest.param(
            edit(REVISION, revision=-1),
            "revision: Invalid value: -1: must be greater than or equal to 0",
            id="revision-negative",
        ),
        pytest.param(
            edit(CLAIM, spec__accessModes=[]),
            "spec.accessModes: Required value: at least 1 access mode is required",
            id="pvc-no-access-mode",
        ),
        pytest.param(
            edit(CLAIM, spec__accessModes=["ReadWriteSometimes"]),
            'spec.accessModes: Unsupported value: "ReadWriteSometimes"',
            id="pvc-bad-access-mode",
        ),
        pytest.param(
            edit(CLAIM, spec__resources={}),
            "spec.resources.requests[storage]: Required value",
            id="pvc-no-storage-request",
        ),
        pytest.param(
            edit(CLAIM, spec__resources={"requests": {"storage": "0"}}),
            'spec.resources.requests[storage]: Invalid value: "0": must be greater than zero',
            id="pvc-zero-storage",
        ),
        pytest.param(
            edit(CLAIM, spec__volumeMode="Fancy"),
            'spec.volumeMode: Unsupported value: "Fancy": supported values: "Block", "Filesystem"',
            id="pvc-bad-volume-mode",
        ),
    ],
)
def test_invalid_objects_get_upstreams_field_errors(doc: dict[str, Any], want: str) -> None:
    errs = errors_of(doc)
    assert any(want in e for e in errs), errs


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            STATEFUL_SET,
            edit(STATEFUL_SET, spec__serviceName="other"),
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            id="sts-serviceName-is-immutable",
        ),
        pytest.param(
            STATEFUL_SET,
            edit(STATEFUL_SET, spec__replicas=5, spec__template__spec__containers__0__image="x:2"),
            None,
            id="sts-replicas-and-template-may-change",
        ),
        pytest.param(
            DAEMON_SET,
            edit(
                DAEMON_SET,
                spec__selector={"matchLabels": {"app": "web", "x": "y"}},
                spec__template__metadata__labels={"app": "web", "x": "y"},
            ),
            "spec.selector: Invalid value:",
            id="ds-selector-is-immutable",
        ),
        pytest.param(
            REVISION,
            edit(REVISION, data={"spec": {}}),
            "data: Invalid value:",
            id="revision-data-is-immutable",
        ),
        pytest.param(
            REVISION,
            edit(REVISION, revision=4),
            None,
            id="revision-number-may-change",
        ),
        pytest.param(
            CLAIM,
            edit(CLAIM, spec__accessModes=["ReadWriteMany"]),
            "spec: Forbidden: spec is immutable after creation except resources.requests",
            id="pvc-spec-is-immutable",
        ),
        pytest.param(
            CLAIM,
            edit(CLAIM, spec__resources={"requests": {"storage": "2Gi"}}),
            None,
            id="pvc-requests-may-grow",
        ),
    ],
)
def test_updates(old: dict[str, Any], new: dict[str, Any], want: str | None) -> None:
    errs = [str(e) for e in validate_update(old["kind"], admitted(new), admitted(old))]
    if want is None:
        assert errs == []
    else:
        assert any(want in e for e in errs), errs
