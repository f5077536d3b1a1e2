"""The layers, read from the source: a walk over the AST of services/, actors/ and kubera/.

The rules (DESIGN.md "Layers", STYLE.md, issue 11):
- no import cycles between modules, imports under ``if TYPE_CHECKING:`` and inside functions
  included (a module that imports its own package while the package imports it back is one);
- ``ray`` is imported only in actors/ and kubera/launch/;
- services/ never imports actors/ or kubera/, actors/ never imports kubera/;
- a component (services/<name>/) imports another component only through its package (the names
  its ``__init__`` re-exports) or a module listed in PUBLIC_MODULES; the shared vocabulary
  (services/api/, services/storage/keys.py, services/clock.py, services/grpcserver.py) is open to
  everyone;
- the benches in kubera/bench/ do not import each other (they share the helper modules in
  BENCH_HELPERS: harness.py);
- a name imported from another module is public (no leading underscore);
- the long halls stay split (issue 25): services/api, services/scheduler and kubera/experiment
  hold at most ``MAX_ROOT_MODULES`` modules at their root, the rest in subpackages.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("services", "actors", "kubera")

#: Modules anyone may import: the vocabulary layer below every component, and the helpers
#: every component's edge shares (gRPC server options, the lazy public-API exports).
VOCABULARY = (
    "services.api",
    # who is calling and what they may do: both API edges and every component's client
    "services.auth",
    "services.storage.keys",
    "services.clock",
    "services.grpcserver",
    "services.exports",
    "services.lifecycle",
)

#: Submodules that are a component's public API beside its package, with why they stand apart.
PUBLIC_MODULES = {
    # the etcd backend pulls in aetcd; the storage package stays importable without it
    "services.storage.etcd": "etcd backend",
    "services.storage.memory": "in-memory fake (the same interface, for unit tests and fuzz)",
    # KubeSchedulerConfiguration loading is the scheduler's configuration API
    "services.scheduler.config": "scheduler configuration",
    # the what-if's caller side (the apiserver's HTTP proxy, the CLI), without the scheduler
    "services.scheduler.whatif.remote": "what-if requests to the scheduler leader",
    # each process is imported on its own: a node pool's process never loads the scheduler
    "services.hosts.apiserver": "the apiserver process",
    "services.hosts.nodepool": "a node pool process",
    "services.hosts.scheduler": "a scheduler replica process",
    "services.hosts.controllermanager": "a controller-manager replica process",
}

#: Only these may import ray.
RAY_ALLOWED = ("actors", "kubera.launch")


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # a module of ours (resolved to the deepest module that exists)
    name: str | None  # the name taken from it, for ``from x import name``
    line: int


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for top in PRODUCT:
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if "protos" in rel.parts or ".venv" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _imports() -> tuple[list[Import], list[tuple[str, str, int]]]:
    """Every import of one of our modules, and every import of an outside top-level package."""
    ours: list[Import] = []
    outside: list[tuple[str, str, int]] = []
    for module, path in MODULES.items():
        package = module if _is_package(module) else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in MODULES:
                        ours.append(Import(module, alias.name, None, node.lineno))
                    else:
                        outside.append((module, alias.name.split(".")[0], node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    if node.level > 1:
                        anchor = anchor[: -(node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                if base not in MODULES and not any(
                    f"{base}.{a.name}" in MODULES for a in node.names
                ):
                    outside.append((module, base.split(".")[0], node.lineno))
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in MODULES:
                        ours.append(Import(module, sub, None, node.lineno))
                    else:
                        ours.append(Import(module, base, alias.name, node.lineno))
    return ours, outside


IMPORTS, OUTSIDE = _imports()


def _component(module: str) -> str:
    """services.<name> for services, actors, and kubera.<subpackage or module>."""
    parts = module.split(".")
    if parts[0] == "services" and len(parts) > 1:
        return ".".join(parts[:2])
    if parts[0] == "kubera" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in IMPORTS:
        if imp.target != imp.importer:
            graph[imp.importer].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    scc = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        scc.append(w)
                        if w == v:
                            break
                    if len(scc) > 1:
                        found.append(sorted(scc))
    return found


def test_the_walk_sees_the_product() -> None:
    assert len(MODULES) > 100
    assert len(IMPORTS) > 500
    assert any(imp.target.startswith("services.api") for imp in IMPORTS)


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_ray_only_in_actors_and_the_launcher() -> None:
    offenders = [
        f"{m}:{line}" for m, top, line in OUTSIDE if top == "ray" and not _within(m, RAY_ALLOWED)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [("services", ("actors", "kubera")), ("actors", ("kubera",))],
    ids=["services-below-actors-and-kubera", "actors-below-kubera"],
)
def test_layers_import_down_only(layer: str, forbidden: tuple[str, ...]) -> None:
    offenders = [
        f"{imp.importer}:{imp.line} -> {imp.target}"
        for imp in IMPORTS
        if _within(imp.importer, (layer,)) and _within(imp.target, forbidden)
    ]
    assert offenders == []


def test_components_meet_through_public_api_or_vocabulary() -> None:
    offenders = []
    for imp in IMPORTS:
        target = imp.target
        if not target.startswith("services.") or _within(target, VOCABULARY):
            continue
        if _component(imp.importer) == _component(target):
            continue
        if target == _component(target) or target in PUBLIC_MODULES:
            continue
        offenders.append(f"{imp.importer}:{imp.line} -> {target}")
    assert offenders == []


#: Modules of kubera/bench/ any bench may use: the shared harness (the scheduling scenarios
#: are experiment files: kubera.experiment.run.bench).
BENCH_HELPERS = ("kubera.bench.harness",)


def test_benches_do_not_import_each_other() -> None:
    benches = [m for m in MODULES if m.startswith("kubera.bench.")]
    assert benches, "kubera/bench/ holds one module per bench"
    offenders = [
        f"{imp.importer}:{imp.line} -> {imp.target}"
        for imp in IMPORTS
        if imp.importer in benches and imp.target in benches and imp.target not in BENCH_HELPERS
    ]
    assert offenders == []


def test_names_imported_across_modules_are_public() -> None:
    offenders = [
        f"{imp.importer}:{imp.line} -> {imp.target}.{imp.name}"
        for imp in IMPORTS
        if imp.name and imp.name.startswith("_") and not imp.name.startswith("__")
    ]
    assert offenders == []


#: Issue 25's bar: a package this long is split into subpackages that show its rooms.
MAX_ROOT_MODULES = 20


@pytest.mark.parametrize(
    "package",
    [
        "services/api",
        "services/scheduler",
        "kubera/experiment",
    ],
)
def test_long_packages_hold_few_modules_at_their_root(package: str) -> None:
    root = ROOT / package
    modules = sorted(p.name for p in root.glob("*.py"))
    assert modules, f"{package} is a package"
    assert len(modules) <= MAX_ROOT_MODULES, f"{package}: {len(modules)} modules: {modules}"
