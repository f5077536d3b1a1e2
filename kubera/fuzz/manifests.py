"""The CLI's manifest decoder under fuzz: random YAML/JSON text, bent examples from
examples/ and alias trees through `kubera.cli.manifests.parse` + `decode_all`; only a
one-line CliError or a decoded object may come out."""

from __future__ import annotations

import io
import json
import traceback
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubera.fuzz.grpc_inputs import example_texts, json_values

# ------------------------------------------------------------- the CLI decoder


@dataclass
class DecoderTally:
    tried: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: dict[str, tuple[str, str]] = field(default_factory=dict)

    def report(self) -> str:
        lines = [
            f"manifest fuzz: {self.tried} inputs: "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        ]
        for head, (text, tb) in sorted(self.failures.items()):
            lines.append(f"  {head}\n      traceback: {tb}\n      input: {text[:200]!r}")
        if not self.failures:
            lines.append("every input decoded or ended in one CliError line")
        return "\n".join(lines)


def decode_text(tally: DecoderTally, name: str, text: str) -> None:
    """Parse and decode `text` as the CLI does; only a one-line CliError may escape."""
    from kubera.cli import manifests
    from kubera.errors import CliError

    tally.tried += 1
    try:
        docs = manifests.parse(name, text)
        for validate in ("strict", "ignore"):
            manifests.decode_all(docs, validate, warn=io.StringIO())
        tally.outcomes["decoded"] += 1
    except CliError as e:
        if "\n" in str(e) or not str(e):
            _decoder_failure(tally, "CliError of more than one line", text, str(e)[:200])
        else:
            tally.outcomes["CliError"] += 1
    except Exception as e:  # noqa: BLE001 - the failure being looked for
        frames = traceback.extract_tb(e.__traceback__)
        where = (
            f"{frames[-1].filename.split('/kubera/')[-1]}:{frames[-1].lineno} in {frames[-1].name}"
            if frames
            else ""
        )
        _decoder_failure(
            tally, f"{type(e).__name__} @ {where}", text, f"{type(e).__name__}: {str(e)[:150]}"
        )


def _decoder_failure(tally: DecoderTally, head: str, text: str, tb: str) -> None:
    tally.outcomes["failure"] += 1
    old = tally.failures.get(head)
    if old is None or len(text) < len(old[0]):
        tally.failures[head] = (text, tb)


@st.composite
def mutated_text(draw: st.DrawFn, texts: list[tuple[str, str]]) -> tuple[str, str]:
    name, text = draw(st.sampled_from(texts))
    chars = list(text)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["replace", "delete", "insert", "duplicate-line", "indent"]))
        if not chars:
            chars.extend(draw(st.text(min_size=1, max_size=5)))
            continue
        i = draw(st.integers(0, len(chars) - 1))
        if op == "replace":
            chars[i] = draw(
                st.sampled_from(list(":-[]{}&*!|>'\"#%@`, \n\t0") + [draw(st.characters())])
            )
        elif op == "delete":
            del chars[i : i + draw(st.integers(1, 20))]
        elif op == "insert":
            chars[i:i] = list(
                draw(
                    st.one_of(
                        st.text(max_size=10),
                        st.sampled_from(
                            [
                                "&a ",
                                "*a",
                                "<<: ",
                                "!!binary ",
                                "!!python/object ",
                                "? ",
                                "---\n",
                                "1e400",
                                "99999999999999999999999",
                                "\x00",
                            ]
                        ),
                    )
                )
            )
        elif op == "duplicate-line":
            j = "".join(chars).find("\n", i)
            line_start = "".join(chars).rfind("\n", 0, i) + 1
            if j > 0:
                chars[j + 1 : j + 1] = chars[line_start : j + 1]
        else:
            chars[i:i] = list("  ")
    return (name, "".join(chars))


@st.composite
def alias_trees(draw: st.DrawFn) -> tuple[str, str]:
    """A pod whose labels, annotations or spec hold levels of anchors each aliasing the
    level below `fanout` times (a billion-laughs shape; most are over the budget)."""
    levels, fanout = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    where, indent = draw(
        st.sampled_from(
            [
                ("metadata:\n  labels:\n", "    "),
                ("metadata:\n  annotations:\n", "    "),
                ("spec:\n", "  "),
            ]
        )
    )
    lines = [f"l0: &l0 [{', '.join(['x'] * fanout)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]")
    body = "".join(f"{indent}{line}\n" for line in lines)
    return ("bomb.yaml", f"apiVersion: v1\nkind: Pod\n{where}{body}")


def manifest_texts() -> st.SearchStrategy[tuple[str, str]]:
    texts = example_texts() or [("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n")]
    yaml_docs = json_values(max_leaves=30)
    import yaml

    return st.one_of(
        mutated_text(texts),
        alias_trees(),
        st.tuples(st.sampled_from(["x.yaml", "x.json"]), st.text(max_size=300)),
        yaml_docs.map(lambda d: ("x.json", json.dumps(d))),
        yaml_docs.map(lambda d: ("x.yaml", yaml.safe_dump(d))),
        # Secrets and ConfigMaps: their data maps (base64 bytes for a Secret's)
        st.builds(
            lambda kind, field, data: (
                "x.yaml",
                yaml.safe_dump(
                    {"apiVersion": "v1", "kind": kind, "metadata": {"name": "a"}, field: data}
                ),
            ),
            st.sampled_from(["Secret", "ConfigMap"]),
            st.sampled_from(["data", "stringData", "binaryData", "type", "immutable"]),
            json_values(max_leaves=10),
        ),
        st.builds(
            lambda kind, body: (
                "x.yaml",
                yaml.safe_dump(
                    {"apiVersion": "v1", "kind": kind, "metadata": {"name": "a"}, "spec": body}
                ),
            ),
            st.sampled_from(
                ["Pod", "Node", "Deployment", "List", "Namespace", "PriorityClass", "Service"]
            ),
            json_values(max_leaves=30),
        ),
    )


def fuzz_decoder(tally: DecoderTally, examples: int, *, derandomize: bool = False) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
    )
    @given(manifest_texts())
    def run(item: tuple[str, str]) -> None:
        decode_text(tally, *item)

    run()
