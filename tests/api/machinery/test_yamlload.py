"""Every YAML a user hands kubera (manifests, node templates, scheduler configurations) is
read by one loader with go-yaml's alias budget: a billion-laughs document is refused while
it is composed, quickly and in little memory, and too deep a document is one error."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import pytest

from kubera.cli import manifests
from kubera.errors import CliError
from services.api.helpers.stages import TemplateError
from services.api.machinery import yamlload
from services.kubelet.template import load_template
from services.scheduler.config.load import ConfigError, load_config

#: 12 levels of 10 aliases: 10^12 nodes once expanded, under 1 KiB written.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*{prev}'] * 10)}]\n"
    for i, prev in enumerate(["a"] + [f"l{i}" for i in range(11)])
)
DEEP = "[" * 5000 + "\n" + "]" * 5000

READERS: list[tuple[str, Callable[[str], object], type[Exception]]] = [
    ("manifest", lambda text: manifests.parse("x.yaml", text), CliError),
    ("node-template", load_template, TemplateError),
    ("scheduler-config", load_config, ConfigError),
]


def _refuse_bomb(reader: Callable[[str], object], error: type[Exception]) -> tuple[float, int]:
    """Read BOMB with `reader`, which must refuse it; the seconds it took and the peak of
    the bytes allocated meanwhile."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(error, match="excessive aliasing"):
            reader(BOMB)
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return elapsed, peak


BY_READER = pytest.mark.parametrize(
    ("reader", "error"), [(r, e) for _, r, e in READERS], ids=[n for n, *_ in READERS]
)


@BY_READER
def test_an_alias_bomb_is_refused_before_it_is_expanded(
    reader: Callable[[str], object], error: type[Exception]
) -> None:
    _, peak = _refuse_bomb(reader, error)
    assert peak < 4 * 1024 * 1024


@pytest.mark.bench  # a wall-clock bound: run with -m bench on a quiet machine
@BY_READER
def test_an_alias_bomb_is_refused_in_under_a_second(
    reader: Callable[[str], object], error: type[Exception]
) -> None:
    elapsed, _ = _refuse_bomb(reader, error)
    assert elapsed < 1.0


@pytest.mark.parametrize(
    ("reader", "error"), [(r, e) for _, r, e in READERS], ids=[n for n, *_ in READERS]
)
def test_too_deep_a_document_is_one_error(
    reader: Callable[[str], object], error: type[Exception]
) -> None:
    with pytest.raises(error, match="nested too deeply"):
        reader(DEEP)


def test_safe_load_keeps_timestamps_as_strings_and_refuses_duplicate_keys() -> None:
    assert yamlload.safe_load("t: 2026-11-23T10:00:00Z\n") == {"t": "2026-11-23T10:00:00Z"}
    assert yamlload.safe_load("") is None
    with pytest.raises(Exception, match='mapping key "a" already defined'):
        yamlload.safe_load("a: 1\na: 2\n")
