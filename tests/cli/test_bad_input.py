"""Bad input is one clear line on stderr, exit 1, no traceback, and nothing is applied.

Each manifest case is written as a two-document file whose FIRST document is a good pod:
the case passes only if that pod was not created either (an apply is all or nothing for
what can be checked before writing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import kubera, pod, write

GOOD = pod("good-first")

POD_WITH = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n{spec}"
    "  containers:\n  - name: app\n    image: nginx\n{container}"
)


#: How a problem found before sending starts (kubectl's client-side wording), and how one
#: the apiserver reported does; a line may say "Error from server" only in the second case.
#: `{file}` stands for the manifest's path.
LOCAL = 'error: error validating "{file} (document 2)": '
SERVER = 'Error from server ({}): error when creating "{{file}} (document 2)": '
BAD_POD_INVALID = LOCAL + 'Pod "bad" is invalid: '


def bad_pod(spec: str = "", container: str = "") -> str:
    return POD_WITH.format(spec=spec, container=container)


# (id, second document or None, extra argv, substrings stderr must contain)
CASES: list[tuple[str, str | None, list[str], list[str]]] = [
    (
        "malformed-yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: a: b\n",
        [],
        ["bad.yaml: line 14, column 12: mapping values are not allowed here"],
    ),
    (
        "replicas-is-a-string",
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: "three"\n',
        [],
        ["bad.yaml (document 2)", 'Deployment "d"', 'spec.replicas: Invalid value: "three"'],
    ),
    (
        "containers-is-an-object",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers: {}\n",
        [],
        ['Pod "bad"', "spec.containers: Invalid value: {}: expected array, got object"],
    ),
    (
        "bad-quantity",
        bad_pod(container="    resources:\n      requests:\n        cpu: 1x\n"),
        [],
        [
            LOCAL + 'Pod "bad" is invalid: ',
            'spec.containers[0].resources.requests[cpu]: Invalid value: "1x"',
        ],
    ),
    (
        "apiversion-mismatch",
        "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: d\n",
        [],
        ['no matches for kind "Deployment" in version "v1"'],
    ),
    (
        "missing-namespace",
        pod("bad", namespace="nope"),
        [],
        [SERVER.format("NotFound") + 'namespaces "nope" not found'],
    ),
    (
        "name-too-long",
        pod("a" * 254),
        [],
        [
            LOCAL + f'Pod "{"a" * 254}" is invalid: ',
            "metadata.name",
            "must be no more than 253 characters",
        ],
    ),
    (
        "invalid-name",
        pod("Bad_Name"),
        [],
        [
            LOCAL + 'Pod "Bad_Name" is invalid: ',
            'metadata.name: Invalid value: "Bad_Name"',
        ],
    ),
    (
        "invalid-taint-effect",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nspec:\n  taints:\n  - key: a\n"
        "    effect: Sometimes\n",
        [],
        [
            LOCAL + 'Node "n1" is invalid: ',
            'spec.taints[0].effect: Unsupported value: "Sometimes"',
        ],
    ),
    (
        "toleration-operator-maybe",
        bad_pod(spec="  tolerations:\n  - key: a\n    operator: Maybe\n"),
        [],
        [BAD_POD_INVALID, 'spec.tolerations[0].operator: Unsupported value: "Maybe"'],
    ),
    (
        "gt-with-two-values",
        bad_pod(
            spec="  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        nodeSelectorTerms:\n        - matchExpressions:\n          - key: cores\n"
            '            operator: Gt\n            values: ["1", "2"]\n'
        ),
        [],
        [BAD_POD_INVALID, "nodeSelectorTerms[0].matchExpressions[0].values", "single value"],
    ),
    (
        "max-skew-zero",
        bad_pod(
            spec="  topologySpreadConstraints:\n  - maxSkew: 0\n    topologyKey: zone\n"
            "    whenUnsatisfiable: DoNotSchedule\n"
        ),
        [],
        [BAD_POD_INVALID, "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0"],
    ),
    (
        "min-domains-with-schedule-anyway",
        bad_pod(
            spec="  topologySpreadConstraints:\n  - maxSkew: 1\n    minDomains: 2\n"
            "    topologyKey: zone\n    whenUnsatisfiable: ScheduleAnyway\n"
        ),
        [],
        [BAD_POD_INVALID, "spec.topologySpreadConstraints[0].minDomains", "ScheduleAnyway"],
    ),
    (
        "weight-101",
        bad_pod(
            spec="  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
            "      - weight: 101\n        preference:\n          matchExpressions:\n"
            "          - key: a\n            operator: Exists\n"
        ),
        [],
        [
            BAD_POD_INVALID,
            "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101",
        ],
    ),
    (
        "strict-unknown-field",
        bad_pod(spec="  foo: 1\n"),
        ["--validate=strict"],
        ['Pod "bad"', 'strict decoding error: unknown field "spec.foo"'],
    ),
    (
        "unknown-priority-class",
        bad_pod(spec="  priorityClassName: nope\n"),
        [],
        [
            SERVER.format("Forbidden") + 'pods "bad" is forbidden: ',
            "no PriorityClass with name nope was found",
        ],
    ),
    (
        "overhead-set-by-the-user",
        bad_pod(spec="  overhead:\n    cpu: 100m\n"),
        [],
        [
            SERVER.format("Forbidden") + 'pods "bad" is forbidden: ',
            "Pod Overhead set without corresponding RuntimeClass",
        ],
    ),
    (
        "document-is-a-list",
        "- a\n- b\n",
        [],
        ["bad.yaml (document 2): expected a Kubernetes object (a mapping), got array"],
    ),
    (
        "list-items-not-an-array",
        "apiVersion: v1\nkind: List\nitems: {a: 1}\n",
        [],
        ["a List's items must be an array"],
    ),
    (
        "no-kind",
        "apiVersion: v1\nmetadata:\n  name: x\n",
        [],
        ["Object 'Kind' is missing"],
    ),
    (
        "duplicate-key",
        "apiVersion: v1\nkind: Pod\nkind: Pod\n",
        [],
        ['line 12, column 1: mapping key "kind" already defined at line 11'],
    ),
    (
        "namespace-conflicts-with-n",
        pod("bad", namespace="a"),
        ["-n", "b"],
        [
            'the namespace from the provided object "a" does not match the namespace "b". '
            "You must pass '--namespace=a' to perform this operation."
        ],
    ),
    (
        "generate-name-with-apply",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: x-\nspec:\n"
        "  containers:\n  - name: a\n    image: b\n",
        [],
        ["cannot use generate name with apply"],
    ),
    # values kubera cannot represent (issue 10: these once stopped the scheduler)
    (
        "cpu-1e17",
        bad_pod(container="    resources:\n      requests:\n        cpu: 1e17\n"),
        [],
        [
            BAD_POD_INVALID,
            'spec.containers[0].resources.requests[cpu]: Invalid value: "100e15": '
            "must be at most 9223372036854775807m (kubera holds quantities as int64 milli-units)",
        ],
    ),
    (
        "cpu-32-digits",
        bad_pod(
            container="    resources:\n      requests:\n        cpu: 99999999999999999999999999999999\n"
        ),
        [],
        [
            BAD_POD_INVALID,
            'spec.containers[0].resources.requests[cpu]: Invalid value: "99999999999999999999999999999999": '
            "must be at most 9223372036854775807m",
        ],
    ),
    (
        "memory-1e400",
        bad_pod(container="    resources:\n      limits:\n        memory: 1e400\n"),
        [],
        [
            BAD_POD_INVALID,
            'spec.containers[0].resources.limits[memory]: Invalid value: "10e399": '
            "must be at most 9223372036854775807m",
        ],
    ),
    (
        "node-capacity-beyond-int64",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  capacity:\n    cpu: 1e17\n",
        [],
        [
            LOCAL + 'Node "n1" is invalid: ',
            'status.capacity[cpu]: Invalid value: "100e15": must be at most 9223372036854775807m',
        ],
    ),
    (
        "termination-grace-1e18",
        bad_pod(spec="  terminationGracePeriodSeconds: 1000000000000000000\n"),
        [],
        [
            BAD_POD_INVALID,
            "spec.terminationGracePeriodSeconds: Invalid value: 1000000000000000000: "
            "must be at most 2147483647 (kubera holds durations in seconds as int32",
        ],
    ),
    (
        "toleration-seconds-1e18",
        bad_pod(
            spec="  tolerations:\n  - key: a\n    operator: Exists\n    effect: NoExecute\n"
            "    tolerationSeconds: 1000000000000000000\n"
        ),
        [],
        [
            BAD_POD_INVALID,
            "spec.tolerations[0].tolerationSeconds: Invalid value: 1000000000000000000: "
            "must be at most 2147483647",
        ],
    ),
    (
        "usage-annotation-beyond-int64",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\n  annotations:\n"
        '    kubera.io/usage: \'{"memory": "1e400"}\'\n'
        "spec:\n  containers:\n  - name: app\n    image: nginx\n",
        [],
        [
            SERVER.format("Invalid") + 'Pod "bad" is invalid: ',
            'metadata.annotations[kubera.io/usage]: Invalid value: memory: "1e400": '
            "must be at most 9223372036854775807m",
        ],
    ),
    (
        "invalid-validate-mode",
        bad_pod(),
        ["--validate=maybe"],
        ["invalid value for --validate"],
    ),
]

# Commands that fail without a manifest: (id, argv with {tmp} for the temp dir, substrings).
COMMAND_CASES: list[tuple[str, list[str], list[str]]] = [
    (
        "missing-file",
        ["apply", "-f", "{tmp}/nope.yaml"],
        ['the path "', 'nope.yaml" does not exist'],
    ),
    ("directory-without-manifests", ["apply", "-f", "{tmp}/empty"], ["no objects passed", "empty"]),
    (
        "json-list-of-wrong-shape",
        ["apply", "-f", "{tmp}/wrong.json"],
        ["wrong.json: a List's items must be an array of objects, got object"],
    ),
    ("malformed-json", ["apply", "-f", "{tmp}/broken.json"], ["broken.json: line 1, column"]),
    ("bad-label-selector", ["get", "pods", "-l", "a in b"], ["unable to parse requirement", "'('"]),
    (
        "bad-field-selector-field",
        ["get", "pods", "--field-selector", "spec.foo=bar"],
        ["(BadRequest)", "field label not supported: spec.foo"],
    ),
    ("unknown-kind", ["get", "foo"], ['the server doesn\'t have a resource type "foo"']),
    ("unknown-kind-slash", ["get", "foo/bar"], ['the server doesn\'t have a resource type "foo"']),
    (
        "get-missing-object",
        ["get", "pod", "nope"],
        ['Error from server (NotFound): pods "nope" not found'],
    ),
    (
        "delete-without-names",
        ["delete", "pods"],
        ["resource(s) were provided, but no name was specified"],
    ),
    ("delete-nothing", ["delete"], ["You must provide one or more resources"]),
    (
        "delete-missing-object",
        ["delete", "pod", "nope"],
        ['Error from server (NotFound): pods "nope" not found'],
    ),
    ("describe-unknown-kind", ["describe", "widgets", "x"], ['resource type "widgets"']),
    (
        "delete-grace-beyond-int32",
        ["delete", "pod", "nope", "--grace-period", "9223372036854775807"],
        ["gracePeriodSeconds: Invalid value: 9223372036854775807: must be at most 2147483647"],
    ),
]


def _assert_nothing_created(capsys: pytest.CaptureFixture[str], apiserver: str) -> None:
    for kind in ("pods", "nodes", "deployments"):
        r = kubera(capsys, apiserver, "get", kind, "-A", "-o", "name")
        assert r.out == "", f"{kind} were created: {r.out}"


@pytest.mark.parametrize(
    ("second", "extra", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_clear_line(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    second: str,
    extra: list[str],
    expected: list[str],
) -> None:
    path = write(tmp_path, "bad.yaml", GOOD + "---\n" + second)
    r = kubera(capsys, apiserver, "apply", "-f", path, *extra)
    assert r.rc in (1, 2)  # 2: argparse's usage error (--validate=maybe)
    assert r.out == ""
    assert "Traceback" not in r.err
    for text in expected:
        text = text.replace("{file}", path)
        assert text in r.err, f"{text!r} not in {r.err!r}"
    if not any(text.startswith("Error from server") for text in expected):
        assert "Error from server" not in r.err, r.err
    if r.rc == 1:
        problem = [line for line in r.err.splitlines() if not line.startswith("Warning")]
        assert len(problem) == 1, r.err
    _assert_nothing_created(capsys, apiserver)


@pytest.mark.parametrize(
    ("argv", "expected"), [c[1:] for c in COMMAND_CASES], ids=[c[0] for c in COMMAND_CASES]
)
def test_bad_command_is_one_clear_line(
    apiserver: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    expected: list[str],
) -> None:
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty", "README.md", "no manifests here")
    write(tmp_path, "wrong.json", '{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}')
    write(tmp_path, "broken.json", '{"apiVersion": "v1", "kind": ')
    r = kubera(capsys, apiserver, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert r.rc == 1
    assert "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    for text in expected:
        assert text in r.err, f"{text!r} not in {r.err!r}"


def test_a_bad_document_anywhere_stops_the_whole_apply(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n"
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: hi\nvalue: 10\n"
    uses_both = pod("ok", namespace="team", extra="  priorityClassName: hi\n")
    bad = bad_pod(spec="  tolerations:\n  - key: a\n    operator: Maybe\n")
    path = write(tmp_path, "x.yaml", "---\n".join([ns, pc, uses_both, bad]))
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert r.rc == 1 and "x.yaml (document 4)" in r.err and r.out == ""
    assert kubera(capsys, apiserver, "get", "ns", "team").rc == 1
    assert kubera(capsys, apiserver, "get", "pc", "hi").rc == 1
    # Without the bad document, objects that depend on earlier ones in the file apply.
    path = write(tmp_path, "x.yaml", "---\n".join([ns, pc, uses_both]))
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert r.rc == 0, r.err
    assert r.out.splitlines() == [
        "namespace/team created",
        "priorityclass.scheduling.k8s.io/hi created",
        "pod/ok created",
    ]


def test_an_unreachable_server_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    r = kubera(capsys, "127.0.0.1:1", "get", "pods")
    assert r.rc == 1 and "Traceback" not in r.err
    assert r.err.startswith("error: unable to connect to the server 127.0.0.1:1")


def test_an_invalid_change_to_an_existing_object_is_reported_as_found_locally(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "p.yaml", pod("p"))
    assert kubera(capsys, apiserver, "apply", "-f", path).rc == 0
    write(tmp_path, "p.yaml", pod("p", extra="  tolerations:\n  - key: a\n    operator: Maybe\n"))
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out) == (1, "")
    assert r.err.startswith(f'error: error validating "{path}": Pod "p" is invalid: '), r.err
    assert 'spec.tolerations[0].operator: Unsupported value: "Maybe"' in r.err
    assert len(r.err.splitlines()) == 1 and "Error from server" not in r.err
    r = kubera(capsys, apiserver, "get", "pod", "p", "-o", "json")
    assert all(t["key"] != "a" for t in json.loads(r.out)["spec"]["tolerations"])
