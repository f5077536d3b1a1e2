#!/usr/bin/env python3
"""Generate scripts/upstream/structfields.json: the struct fields Go's encoding/json always writes.

`omitempty` does not omit a struct: Go's encoder leaves a field out only when it is false, 0,
"", a nil pointer/slice/map/interface, or an empty slice/map. So every field of upstream's API
types whose type is a struct (not a pointer to one) is written whatever its tag says: a
ContainerStatus's `lastState: {}`, a Service's `status: {loadBalancer: {}}`, a container's
`resources: {}`. Only Go 1.24's `omitzero` omits one (metav1.ObjectMeta's creationTimestamp
carries it since Kubernetes 1.34, so a pod template's metadata no longer reads
`creationTimestamp: null`).

Upstream's published OpenAPI does not tell a struct from a pointer to one (both are a `$ref`;
the v3 document's `default: {}` would, but the pinned kubernetes-validate package strips
defaults), so this script reads the Go types themselves: the `types.go` files of a
kubernetes/api checkout and meta/v1's of a kubernetes/apimachinery checkout, at the tag of the
release the zero-value table follows. Types with their own MarshalJSON write their own zero
(metav1.Time null, a Quantity "0", an IntOrString 0); a struct type with a MarshalJSON this
script does not know is an error, so a new one is looked at rather than written as `{}`.

    python scripts/genstructfields.py --api DIR --apimachinery DIR [--check]

The committed file was read at tag v0.37.0-beta.0 of both repositories (release 1.37's API,
frozen from its beta on; the commits are in the file), and `--check` against those
checkouts reproduces it.

The output is keyed by upstream's OpenAPI definition name (io.k8s.api.core.v1.ContainerStatus)
and records the two commits it was read from; scripts/genzerovalues.py folds it into
services/api/machinery/zerovalues.py, and tests/api/machinery/test_structfields.py checks it
against the pinned OpenAPI (every field named is a property of its schema).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "scripts/upstream/structfields.json"

#: Go packages read, relative to their checkout, and their import paths.
API_MODULE = "k8s.io/api"
APIMACHINERY_MODULE = "k8s.io/apimachinery"
APIMACHINERY_PACKAGES = ("pkg/apis/meta/v1", "pkg/api/resource", "pkg/util/intstr", "pkg/runtime")

#: The JSON a struct type with its own MarshalJSON writes for its zero value.
CUSTOM_ZERO: dict[str, Any] = {
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": None,
    "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": None,
    "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": "0s",
    "k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1": None,
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "0",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": 0,
    "k8s.io/apimachinery/pkg/runtime.RawExtension": None,
    # Not API fields' types, but they marshal themselves too.
    "k8s.io/apimachinery/pkg/apis/meta/v1.GroupVersion": None,
    "k8s.io/apimachinery/pkg/apis/meta/v1.GroupVersionKind": None,
    "k8s.io/apimachinery/pkg/runtime.Unknown": None,
    "k8s.io/apimachinery/pkg/api/resource.QuantityValue": "0",
}

_IMPORT_ONE = re.compile(r'^import\s+(?:(\w+)\s+)?"([^"]+)"', re.M)
_IMPORT_BLOCK = re.compile(r"^import\s*\((.*?)^\)", re.M | re.S)
_IMPORT_LINE = re.compile(r'^\s*(?:(\w+|_|\.)\s+)?"([^"]+)"', re.M)
_TYPE = re.compile(r"^type\s+(\w+)(?:\[[^\]]*\])?[ \t]+(struct\s*\{|\S[^\n]*)", re.M)
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\*?[\w.\[\]]+)\s+`([^`]*)`")
_JSON_TAG = re.compile(r'json:"([^"]*)"')
_MARSHAL = re.compile(r"^func\s+\(\w*\s*\*?(\w+)\)\s+MarshalJSON\(", re.M)


@dataclass
class GoField:
    name: str  # the JSON name ("" for an inlined embedded struct)
    type: str  # as written: *Foo, []Foo, metav1.Time, ...
    options: tuple[str, ...]


@dataclass
class Package:
    path: str
    structs: dict[str, list[GoField]] = field(default_factory=dict)
    #: Named types that are not structs (type PodPhase string, type ResourceList map...).
    others: set[str] = field(default_factory=set)
    marshals: set[str] = field(default_factory=set)
    #: Per type, the imports of the file that declares it (alias -> import path).
    imports: dict[str, dict[str, str]] = field(default_factory=dict)


def _imports(src: str) -> dict[str, str]:
    out: dict[str, str] = {}
    blocks = [m.group(1) for m in _IMPORT_BLOCK.finditer(src)]
    pairs = [(a, p) for b in blocks for a, p in _IMPORT_LINE.findall(b)]
    pairs += _IMPORT_ONE.findall(src)
    for alias, path in pairs:
        out[alias or path.rsplit("/", 1)[-1]] = path
    return out


def _struct_body(src: str, start: int) -> str:
    """The text of a struct from just after its `{` to its matching `}`."""
    depth, i = 1, start
    while depth:
        c = src[i]
        depth += c == "{"
        depth -= c == "}"
        i += 1
    return src[start : i - 1]


_LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|`[^`]*`|//[^\n]*|/\*.*?\*/', re.S)


def _strip_comments(src: str) -> str:
    """Go source without its comments (string literals, which may hold `//`, kept)."""
    return _LEXEME.sub(lambda m: "" if m.group(0)[0] == "/" else m.group(0), src)


def parse_go(src: str, pkg: Package) -> None:
    """Add one Go file's type declarations to its package."""
    src = _strip_comments(src)
    imports = _imports(src)
    for m in _TYPE.finditer(src):
        name, rest = m.group(1), m.group(2)
        pkg.imports[name] = imports
        if not rest.startswith("struct"):
            pkg.others.add(name)
            continue
        fields: list[GoField] = []
        depth = 0
        for line in _struct_body(src, m.end()).splitlines():
            if depth == 0 and (f := _FIELD.match(line)):
                tag = _JSON_TAG.search(f.group(3))
                parts = tag.group(1).split(",") if tag else [f.group(1) or ""]
                if parts[0] == "-":
                    continue
                inline = "inline" in parts[1:] or (f.group(1) is None and not tag)
                fields.append(GoField("" if inline else parts[0], f.group(2), tuple(parts[1:])))
            depth += line.count("{") - line.count("}")
        pkg.structs[name] = fields
    pkg.marshals.update(_MARSHAL.findall(src))


def read_packages(api: Path, apimachinery: Path) -> dict[str, Package]:
    pkgs: dict[str, Package] = {}

    def read(path: str, files: list[Path]) -> None:
        pkg = pkgs.setdefault(path, Package(path))
        for f in sorted(files):
            parse_go(f.read_text(), pkg)

    for types_go in sorted(api.glob("*/*/types.go")):
        rel = types_go.parent.relative_to(api).as_posix()
        read(f"{API_MODULE}/{rel}", [types_go])
    for rel in APIMACHINERY_PACKAGES:
        files = [
            f
            for f in (apimachinery / rel).glob("*.go")
            if not f.name.endswith("_test.go") and not f.name.startswith("zz_generated")
        ]
        read(f"{APIMACHINERY_MODULE}/{rel}", files)
    return pkgs


def _resolve(pkgs: dict[str, Package], pkg: Package, owner: str, typ: str) -> str | None:
    """The qualified name (import/path.Type) of a field's named type, or None when it is a
    pointer, slice, map, builtin or a type from a package not read."""
    if typ[:1] in "*[" or typ.startswith("map["):
        return None
    if "." in typ:
        alias, name = typ.split(".", 1)
        path = pkg.imports.get(owner, {}).get(alias)
        if path is None or path not in pkgs:
            return None
        return f"{path}.{name}"
    return f"{pkg.path}.{typ}"


def definition_name(qualified: str) -> str:
    """Upstream's OpenAPI definition name of a Go type (k8s.io/api/core/v1.Pod ->
    io.k8s.api.core.v1.Pod): the reversed domain, then the path."""
    path, name = qualified.rsplit(".", 1)
    domain, _, rest = path.partition("/")
    return ".".join([*reversed(domain.split(".")), *rest.split("/"), name])


def struct_fields(pkgs: dict[str, Package]) -> dict[str, dict[str, Any]]:
    """{definition name: {JSON name: the zero Go writes}} of the struct-typed fields of every
    API struct (inlined embedded structs contribute theirs)."""

    def lookup(q: str) -> tuple[Package, str]:
        path, name = q.rsplit(".", 1)
        return pkgs[path], name

    def zero_of(q: str) -> Any:
        if q in CUSTOM_ZERO:
            return CUSTOM_ZERO[q]
        pkg, name = lookup(q)
        if name in pkg.marshals:
            raise SystemExit(f"{q} has its own MarshalJSON: add its zero to CUSTOM_ZERO")
        return {}

    def fields_of(q: str) -> dict[str, Any]:
        pkg, name = lookup(q)
        out: dict[str, Any] = {}
        for f in pkg.structs[name]:
            target = _resolve(pkgs, pkg, name, f.type)
            if target is None:
                continue
            tpkg, tname = lookup(target)
            if tname not in tpkg.structs:
                continue  # a named string, map, slice... omitempty applies to it
            if not f.name:
                out.update(fields_of(target))
            elif "omitzero" not in f.options:
                out[f.name] = zero_of(target)
        return out

    table: dict[str, dict[str, Any]] = {}
    for path, pkg in pkgs.items():
        if not path.startswith(API_MODULE + "/") and not path.endswith("/meta/v1"):
            continue
        for name in pkg.structs:
            q = f"{path}.{name}"
            if q in CUSTOM_ZERO:
                continue
            written = fields_of(q)
            if written:
                table[definition_name(q)] = dict(sorted(written.items()))
    return dict(sorted(table.items()))


def _commit(checkout: Path) -> str:
    r = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return r.stdout.strip() if r.returncode == 0 else ""


def render(api: Path, apimachinery: Path, *, api_commit: str, apimachinery_commit: str) -> str:
    doc = {
        "source": {
            "k8s.io/api": api_commit or _commit(api),
            "k8s.io/apimachinery": apimachinery_commit or _commit(apimachinery),
        },
        "fields": struct_fields(read_packages(api, apimachinery)),
    }
    return json.dumps(doc, indent=1) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api", type=Path, required=True, help="a kubernetes/api checkout")
    ap.add_argument("--apimachinery", type=Path, required=True, help="kubernetes/apimachinery")
    ap.add_argument("--api-commit", default="", help="its commit, when not a git work tree")
    ap.add_argument("--apimachinery-commit", default="", help="its commit, likewise")
    ap.add_argument("--check", action="store_true", help="exit 1 if the output drifted")
    args = ap.parse_args()
    text = render(
        args.api,
        args.apimachinery,
        api_commit=args.api_commit,
        apimachinery_commit=args.apimachinery_commit,
    )
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} drifted: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
