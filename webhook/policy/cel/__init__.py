"""CEL text, for the rules' in-tree exports: each exported rule's module writes its coverage and its validations
(or its mutation's JSONPatch) in CEL with these pure string builders (literals and what every expression shares
here; catalogue texts as CEL strings, text.py; where the matched kinds keep the pod spec or claim spec,
shapes.py; what several pod-spec rules read, pods.py), and webhook/intree assembles the admissionregistration
objects from them. Nothing here runs on a request: the engine never calls a rule's export."""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Validation:
    """One validation of a rule's ValidatingAdmissionPolicy: `expression` is true where the object passes,
    `message` a CEL string (a placeholder of the policy's text.Lines until the exporter resolves it)."""

    expression: str
    message: str


def lit(value: str) -> str:
    """A CEL string literal: JSON's escapes are CEL's for every character JSON escapes."""
    return json.dumps(value, ensure_ascii=False)


def strings(values: Iterable[str]) -> str:
    return "[" + ", ".join(lit(v) for v in sorted(values)) + "]"


def any_of(clauses: Iterable[str]) -> str:
    clauses = list(clauses)
    return " || ".join(f"({c})" for c in clauses) if clauses else "false"


def fnmatch_regex(pattern: str) -> str:
    """fnmatch's pattern (the config's `names`) as an RE2 expression matching the whole name."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        i += 1
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = i + 1 if i < len(pattern) and pattern[i] in "!]" else i
            end = pattern.find("]", end + (1 if end < len(pattern) and pattern[end] == "]" else 0))
            if end < 0:
                out.append(r"\[")
                continue
            body = pattern[i:end]
            i = end + 1
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", r"\\") + "]")
        else:
            out.append(_escape(ch))
    return "^(?s:" + "".join(out) + ")$"


def _escape(ch: str) -> str:
    return "\\" + ch if ch in r".^$*+?()[]{}|\-/" else ch


def add(path: str, value: str) -> str:
    """CEL: a JSONPatch that adds `value` (CEL) at `path` (CEL of a string)."""
    return f"JSONPatch{{op: \"add\", path: {path}, value: {value}}}"


def json_value(value: Any) -> str:
    """A JSON value as a CEL literal (bools, ints, strings, lists and maps of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return lit(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{lit(k)}: {json_value(v)}" for k, v in value.items()) + "}"
