"""CEL text: literals and the pieces every exported expression shares."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping


def lit(value: str) -> str:
    """A CEL string literal: JSON's escapes are CEL's for every character JSON escapes."""
    return json.dumps(value, ensure_ascii=False)


def strings(values: Iterable[str]) -> str:
    return "[" + ", ".join(lit(v) for v in sorted(values)) + "]"


def any_of(clauses: Iterable[str]) -> str:
    clauses = list(clauses)
    return " || ".join(f"({c})" for c in clauses) if clauses else "false"


_FIELD = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, args: Mapping[str, str]) -> str:
    """CEL: the message template (a msgid, str.format fields) with each `{field}` the CEL string args[field]."""
    parts, at = [], 0
    for m in _FIELD.finditer(template):
        if m.start() > at:
            parts.append(lit(template[at:m.start()]))
        parts.append(args[m.group(1)])
        at = m.end()
    if at < len(template):
        parts.append(lit(template[at:]))
    return "(" + " + ".join(parts) + ")"


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
