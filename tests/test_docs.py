"""The docs stay true to the code: the generated tables of docs/ match what the code says
(scripts/gendocs.py), the README stays a door (at most 200 lines), and no relative link in
README.md or docs/*.md points at nothing."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def _gendocs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gendocs", ROOT / "scripts" / "gendocs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gendocs", module)
    spec.loader.exec_module(module)
    return module


gendocs = _gendocs()


@pytest.mark.parametrize("block", gendocs.BLOCKS, ids=[name for _, name, _ in gendocs.BLOCKS])
def test_generated_block_matches_the_code(block: tuple[str, str, Callable[[], str]]) -> None:
    page, name, generate = block
    path = ROOT / "docs" / page
    text = path.read_text(encoding="utf-8")
    assert gendocs.render(text, name, generate()) == text, (
        f"docs/{page}: the generated block {name!r} is stale; run: python scripts/gendocs.py"
    )


def test_check_mode_fails_on_a_stale_block(tmp_path: Path) -> None:
    for page, name, _ in gendocs.BLOCKS:
        stale = gendocs.render((ROOT / "docs" / page).read_text(encoding="utf-8"), name, "old")
        (tmp_path / page).write_text(stale, encoding="utf-8")
    assert gendocs.main(["--check", "--docs", str(tmp_path)]) == 1
    assert gendocs.main(["--docs", str(tmp_path)]) == 0  # rewrites them
    assert gendocs.main(["--check", "--docs", str(tmp_path)]) == 0


def test_a_page_without_its_markers_is_an_error() -> None:
    with pytest.raises(ValueError, match="markers"):
        gendocs.render("# no markers here\n", "cli", "body")


def test_the_cli_table_names_every_subcommand_of_the_parser() -> None:
    from kubera.cli.main import build_parser

    block = gendocs.cli_block()
    for name, _, sub in gendocs._subcommands(build_parser()):
        assert f"### kubera {name}\n" in block
        for sub_name, _, _ in gendocs._subcommands(sub):
            assert f"### kubera {name} {sub_name}\n" in block


def test_the_kinds_table_has_a_row_per_kind_served() -> None:
    from services.api.machinery import kinds

    block = gendocs.kinds_block()
    for k in kinds.KINDS:
        assert f"| {k.kind} | `{k.resource}` |" in block


def test_the_readme_is_a_door_not_the_house() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move reference material to docs/"


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", _FENCE.sub("", text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def _links(text: str) -> list[str]:
    text = _FENCE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [a or b for a, b in _LINK.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_something(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in _links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, …
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text("utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_reader_finds_links_and_skips_code() -> None:
    text = "see [a](docs/a.md) and ![img](p.png)\n```\n[not](x.md)\n```\n`[no](y.md)`"
    assert _links(text) == ["docs/a.md", "p.png"]
    assert _anchors("# kubera bench http\n## What's `this`?\n") == {
        "kubera-bench-http",
        "whats-this",
    }
