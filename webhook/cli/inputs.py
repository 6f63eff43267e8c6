"""Read manifests for the CLI: files, directories, stdin; multi-document YAML, JSON, `List` kinds.
Problems become one-line errors naming the file and document; nothing is ever written back.

A directory is walked as a repository holds manifests beside other YAML and JSON: hidden folders and files
(`.git`, `.github`) are not entered, and a document that is not a Kubernetes object (a `values.yaml`, a
workflow, a `package.json`: no `kind`, or not a mapping) is skipped and counted, not an error. A file named
on the command line is meant to hold manifests, and such a document stays an error there."""
from __future__ import annotations

import fnmatch
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from webhook import yamlread

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Document:
    obj: dict
    file: str
    index: int  # 1-based document index in the file
    item: int | None = None  # index in a List's items

    @property
    def source(self) -> dict:
        out = {"file": self.file, "document": self.index}
        if self.item is not None:
            out["item"] = self.item
        return out

    @property
    def where(self) -> str:
        return f"{self.file}, document {self.index}" + (f", item {self.item}" if self.item is not None else "")


@dataclass(frozen=True, slots=True)
class Inputs:
    documents: tuple[Document, ...]
    errors: tuple[str, ...]
    texts: dict[str, str] = field(default_factory=dict)  # file label -> text, to find a field's line
    not_manifests: int = 0  # documents of a directory walk that are no Kubernetes object, skipped
    ignored: int = 0  # files --ignore left out
    skipped_kinds: int = 0  # documents --skip-kind left out


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def ignored(path: str, patterns) -> bool:
    """--ignore: a glob matched against the path as given or found (`k8s/tests/*`), or its file name."""
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(Path(path).name, p) for p in patterns)


def _files(args: list[str], errors: list[str], ignore, counts: list[int]):
    """(name, path or None for stdin, whether a directory walk found it)."""
    for arg in args:
        if arg == "-":
            yield "-", None, False
            continue
        path = Path(arg)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                           and not _hidden(p, path))
            if not found:
                errors.append(f"{arg}: directory holds no .yaml, .yml or .json file")
            for p in found:
                if ignored(str(p), ignore):
                    counts[0] += 1
                    continue
                yield str(p), p, True
        elif path.exists():
            if ignored(arg, ignore):
                counts[0] += 1
                continue
            yield arg, path, False
        else:
            errors.append(f"{arg}: no such file or directory")


def _parse(text: str, name: str, errors: list[str]) -> list:
    stripped = text.lstrip()
    if not stripped:
        errors.append(f"{name}: file is empty")
        return []
    if stripped[0] in "{[":
        try:
            return [json.loads(text)]
        except json.JSONDecodeError:
            pass  # YAML flow style also starts with { or [
    docs, exc = yamlread.load_all(text)
    if exc is not None:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        errors.append(f"{name}: document {len(docs) + 1}: not valid YAML{where}: "
                      f"{getattr(exc, 'problem', None) or exc}".replace("\n", " "))
    return docs


def _list_item(item: dict, list_kind: str, api_version) -> dict:
    """An item as its own document. `kubectl get pods -o json` gives a PodList whose items carry no kind nor
    apiVersion: items of a typed list take the list's (PodList -> Pod); a plain `List`'s keep their own."""
    if list_kind == "List" or (type(item.get("kind")) is str and item["kind"]):
        return item
    out = {"kind": list_kind[: -len("List")], **item}
    if "apiVersion" not in item and type(api_version) is str:
        out = {"apiVersion": api_version, **out}
    return out


def read_inputs(args: list[str], *, ignore=(), skip_kinds=()) -> Inputs:
    """The documents of `args`; `ignore` globs leave files out, `skip_kinds` leaves documents of those kinds
    out as if absent (counted in `skipped_kinds`)."""
    errors: list[str] = []
    documents: list[Document] = []
    texts: dict[str, str] = {}
    counts = [0]  # files ignored
    not_manifests = skipped = 0
    skip = {k.lower() for k in skip_kinds}
    for name, path, walked in _files(args, errors, ignore, counts):
        try:
            text = sys.stdin.read() if path is None else path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"{name}: cannot read: {getattr(exc, 'strerror', None) or exc}")
            continue
        label = "<stdin>" if name == "-" else name
        texts[label] = text
        if walked and not text.strip():
            not_manifests += 1
            continue
        parsed = _parse(text, label, errors)
        if parsed and all(d is None for d in parsed):
            if walked:
                not_manifests += 1
                continue
            errors.append(f"{label}: holds no document")
        for i, doc in enumerate(parsed, start=1):
            if doc is None:
                continue  # an empty document between separators
            if walked and (type(doc) is not dict or type(doc.get("kind")) is not str or not doc["kind"]):
                not_manifests += 1
                continue
            if type(doc) is dict and type(doc.get("kind")) is str and doc["kind"].lower() in skip:
                skipped += 1
                continue
            if type(doc) is not dict:
                errors.append(f"{label}: document {i}: not an object (a {type(doc).__name__}); expected a Kubernetes "
                              "manifest")
                continue
            kind = doc.get("kind")
            if type(kind) is str and kind.endswith("List") and type(doc.get("items")) is list:
                for j, item in enumerate(doc["items"]):
                    if type(item) is not dict:
                        errors.append(f"{label}: document {i}, item {j}: not an object")
                        continue
                    item = _list_item(item, kind, doc.get("apiVersion"))
                    if type(item.get("kind")) is not str or not item["kind"]:
                        errors.append(f"{label}: document {i}, item {j}: has no kind (items of a List keep their own)")
                        continue
                    if item["kind"].lower() in skip:
                        skipped += 1
                    else:
                        documents.append(Document(item, label, i, j))
                continue
            if type(kind) is not str or not kind:
                errors.append(f"{label}: document {i}: has no kind")
                continue
            documents.append(Document(doc, label, i))
    return Inputs(tuple(documents), tuple(errors), texts, not_manifests, counts[0], skipped)
