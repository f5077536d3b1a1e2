"""A hollow kubelet's status.declaredFeatures (NodeDeclaredFeatures, alpha): none with the
gate off; with it on, those discovered from the node kind's cpuManagerPolicy (as a kubelet
discovers them from its configuration), or the kind's `declaredFeatures` as given."""

from __future__ import annotations

import pytest

from services.api import features
from services.kubelet.nodestatus import declared_features
from services.kubelet.template import TemplateError, parse_template

ON = {features.NODE_DECLARED_FEATURES: True}


def _kind(**fields: object):
    return parse_template({"nodes": [{"name": "n", **fields}]}).kinds[0]


@pytest.mark.parametrize(
    ("rule", "fields", "gates", "want"),
    [
        ("the gate off declares nothing", {}, None, []),
        (
            "the default policy none declares the resize feature",
            {},
            ON,
            ["GuaranteedQoSPodCPUResize"],
        ),
        (
            "static without the exclusive-CPUs gate declares nothing",
            {"cpuManagerPolicy": "static"},
            ON,
            [],
        ),
        (
            "a kind's list is declared as given, sorted",
            {"declaredFeatures": ["B", "A", "B"]},
            ON,
            ["A", "B"],
        ),
        ("an empty list declares nothing", {"declaredFeatures": []}, ON, []),
    ],
)
def test_declared_features(rule: str, fields: dict, gates: dict | None, want: list[str]) -> None:
    assert declared_features(_kind(**fields), gates) == want, rule


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"cpuManagerPolicy": "dynamic"},
            'cpuManagerPolicy: .dynamic.: expected "none" or "static"',
        ),
        ({"declaredFeatures": "A"}, "declaredFeatures: expected a list of feature names"),
        ({"declaredFeatures": [""]}, "declaredFeatures: expected a list of feature names"),
    ],
)
def test_template_refuses_bad_fields(fields: dict, error: str) -> None:
    with pytest.raises(TemplateError, match=error):
        _kind(**fields)
