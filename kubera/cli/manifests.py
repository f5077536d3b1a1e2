"""Reading `-f FILE|DIR|-` into decoded objects, the way kubectl's resource builder does.

Everything a manifest can get wrong is found here, before any request is sent: files
that are missing, YAML that does not parse (reported with its line and column),
documents that are not objects, `kind: List` documents whose items are not a list,
documents that alias too much (go-yaml's budget, refused before anything is expanded),
wrong field types (with their field paths, from the codec) and unknown fields (an error
with `--validate=strict`, the default as in kubectl 1.32; a warning with
`--validate=warn`; silent with `--validate=false`). So a bad document stops the whole
invocation and nothing from it reaches the apiserver.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml
from google.protobuf.message import Message

from kubera.errors import CliError
from services.api.machinery import codec
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.limits import DepthError, check_depth
from services.api.machinery.yamlload import KubeLoader

#: What a directory contributes, as kubectl's FileExtensions.
EXTENSIONS = (".yaml", ".yml", ".json")
STDIN = "-"

#: --validate spellings → codec.decode's modes, as kubectl 1.32 reads them: "strict (or
#: true), warn, ignore (or false)".
VALIDATE_MODES = {
    "true": "strict",
    "warn": "warn",
    "strict": "strict",
    "false": "ignore",
    "ignore": "ignore",
}


def validate_mode(text: str) -> str:
    """An argparse `type` for --validate: a codec mode, or an error naming the choices."""
    mode = VALIDATE_MODES.get(text.lower())
    if mode is None:
        raise argparse.ArgumentTypeError(
            f'invalid value for --validate: "{text}" (use one of strict, true, warn, ignore, false)'
        )
    return mode


@dataclass(frozen=True)
class Document:
    """One raw document and where it came from."""

    source: str
    #: 1-based position of the document in its source.
    index: int
    #: How many documents the source held (to say "document 2" only when it helps).
    count: int
    doc: Any
    #: Set for the items of a `kind: List`: their position in `items`.
    item: int | None = None

    @property
    def where(self) -> str:
        """`x.yaml`, `x.yaml (document 2)` or `x.yaml (document 1, items[3])`."""
        parts = []
        if self.count > 1:
            parts.append(f"document {self.index}")
        if self.item is not None:
            parts.append(f"items[{self.item}]")
        return f"{self.source} ({', '.join(parts)})" if parts else self.source

    @property
    def what(self) -> str:
        """`Pod "nginx"` as far as the raw document says, for error messages."""
        if not isinstance(self.doc, dict):
            return ""
        kind = self.doc.get("kind")
        meta = self.doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(kind, str) or not kind:
            return ""
        return f'{kind} "{name}"' if isinstance(name, str) and name else kind


@dataclass(frozen=True)
class Manifest:
    """A decoded document: the object to send, its kind, and its raw form."""

    document: Document
    kind: Kind
    obj: Message
    unknown_fields: tuple[str, ...]

    @property
    def name(self) -> str:
        return object_meta(self.obj).name or object_meta(self.obj).generate_name

    @property
    def namespace(self) -> str:
        return object_meta(self.obj).namespace

    @property
    def what(self) -> str:
        return f'{self.kind.kind} "{self.name}"'


# ------------------------------------------------------------------ YAML


def _yaml_error(source: str, e: yaml.YAMLError, document: int, aliasing: bool) -> CliError:
    """`x.yaml: line 3, column 7: problem`; for an aliasing refusal the document is named
    too (`x.yaml (document 2): ...`): the line alone would read like a syntax error."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    named = f"{source} (document {document})" if aliasing else source
    return CliError(f"{named}: {where}{problem}")


def _parse_yaml(source: str, text: str) -> list[Any]:
    try:
        loader = KubeLoader(text)  # the reader refuses unprintable characters here already
    except yaml.reader.ReaderError as e:
        raise _reader_error(source, text, e) from None
    docs: list[Any] = []
    try:
        while loader.check_data():  # type: ignore[no-untyped-call]
            docs.append(loader.get_data())  # type: ignore[no-untyped-call]
    except yaml.reader.ReaderError as e:
        raise _reader_error(source, text, e) from None
    except yaml.YAMLError as e:
        aliasing = isinstance(e, yaml.composer.ComposerError) and loader.aliasing_refused
        raise _yaml_error(source, e, loader.document_index, aliasing) from None
    except RecursionError:
        raise CliError(f"{source}: {DepthError('the document')}") from None
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]
    return docs


def _reader_error(source: str, text: str, e: yaml.reader.ReaderError) -> CliError:
    """A character YAML does not allow (a control character, a NUL), in one line with
    its position (the reader only knows the offset)."""
    char = e.character
    what = f"#x{ord(char):04x}" if isinstance(char, str) else f"#x{char:04x}"
    line = text.count("\n", 0, e.position) + 1
    column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
    return CliError(
        f"{source}: line {line}, column {column}: unacceptable character {what}: {e.reason}"
    )


def _parse_json(source: str, text: str) -> list[Any]:
    """A .json file: one JSON value, or several one after the other (as kubectl reads them)."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise CliError(f"{source}: line {e.lineno}, column {e.colno}: {e.msg}") from None
        except RecursionError:
            raise CliError(f"{source}: {DepthError('the document')}") from None
        docs.append(doc)


def parse(source: str, text: str) -> list[Document]:
    """The non-empty documents of one source, `kind: List`s expanded into their items."""
    raw = _parse_json(source, text) if source.endswith(".json") else _parse_yaml(source, text)
    for doc in raw:
        try:
            check_depth(doc, "the document")  # the apiserver's cap, services/api/limits
        except DepthError as e:
            raise CliError(f"{source}: {e}") from None
    count = len(raw)
    out: list[Document] = []
    for i, doc in enumerate(raw, start=1):
        if doc is None or doc == {}:
            continue  # an empty document ("---" twice, comments only)
        if isinstance(doc, dict) and doc.get("kind") == "List" and "items" in doc:
            items = doc["items"]
            where = Document(source, i, count, doc).where
            if not isinstance(items, list):
                raise CliError(
                    f"{where}: a List's items must be an array of objects, "
                    f"got {codec._type_name(items)}"
                )
            out.extend(
                Document(source, i, count, item, j)
                for j, item in enumerate(items)
                if item is not None
            )
            continue
        out.append(Document(source, i, count, doc))
    return out


# ----------------------------------------------------------------- files


def _files(path: str, recursive: bool) -> list[Path]:
    p = Path(path)
    if not p.exists():
        raise CliError(f'the path "{path}" does not exist')
    if not p.is_dir():
        return [p]
    pattern = p.rglob("*") if recursive else p.glob("*")
    found = sorted(f for f in pattern if f.is_file() and f.suffix.lower() in EXTENSIONS)
    if not found:
        how = " (recursively)" if recursive else ""
        raise CliError(
            f'no objects passed: the directory "{path}" has no *.yaml, *.yml or *.json files{how}'
        )
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not a text file (expected UTF-8 YAML or JSON)") from None
    except OSError as e:
        raise CliError(f"{path}: {e.strerror or e}") from None


def load(
    paths: Sequence[str], *, recursive: bool = False, stdin: TextIO | None = None
) -> list[Document]:
    """Every document named by `-f` arguments, in order: files as given, a directory's
    manifests sorted by name, `-` read from stdin."""
    docs: list[Document] = []
    for path in paths:
        if path == STDIN:
            docs.extend(parse("STDIN", (stdin or sys.stdin).read()))
            continue
        for f in _files(path, recursive):
            docs.extend(parse(str(f), _read(f)))
    if not docs:
        raise CliError("no objects passed: the manifests hold no documents")
    return docs


# -------------------------------------------------------------- decoding


def one_line(text: str) -> str:
    """`text` with control characters escaped (a field name in a manifest may hold a
    newline; the message naming it must stay one line)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def decode_one(document: Document, validate: str) -> Manifest:
    """One document → its object, or a CliError naming file, object and field path."""
    if not isinstance(document.doc, dict):
        raise CliError(
            f"{document.where}: expected a Kubernetes object (a mapping), "
            f"got {codec._type_name(document.doc)}"
        )
    try:
        d = codec.decode(document.doc, validate=validate)
    except codec.DecodeError as e:
        what = f"{document.what}: " if document.what else ""
        raise CliError(one_line(f"{document.where}: {what}{e}")) from None
    return Manifest(document, d.kind, d.obj, d.unknown_fields)


def decode_all(
    documents: Sequence[Document], validate: str, warn: TextIO | None = None
) -> list[Manifest]:
    """Decode every document first (all or nothing); warn about unknown fields on stderr."""
    manifests = [decode_one(d, validate) for d in documents]
    out = warn or sys.stderr
    for m in manifests:
        for path in m.unknown_fields:
            print(
                one_line(f'Warning: unknown field "{path}" in {m.document.where} ({m.what})'),
                file=out,
            )
    return manifests
