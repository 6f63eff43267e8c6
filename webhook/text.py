"""The one sanitizer of text that users and logs read: denial messages, warnings, audit annotations and
log fields all go through `safe` (and `one_line`, which also folds whitespace).

A value from the object (a hostPath path, a container name: the apiserver restricts few of them) could
otherwise carry characters that change what a reader sees: C0 and C1 controls (the apiserver drops a
warning holding one), NEL, the Unicode line and paragraph separators (a terminal or a browser starts a
new line: a forged `[rule] ...` line), and the bidirectional controls (the text reads reversed). Each is
written as a visible escape, `\\u2028`, so the reader sees that it was there."""
from __future__ import annotations

import re
from unicodedata import east_asian_width

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SPACE = re.compile("[\t\n\v\f\r ]+")


def _escape(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe(text: object) -> str:
    """Valid UTF-8 (a lone surrogate becomes "?"), every unsafe character escaped."""
    value = str(text)
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    elif value.isprintable():
        return value
    return _UNSAFE.sub(_escape, value)


def one_line(text: object) -> str:
    """`safe`, with runs of whitespace (newlines and tabs included) folded into one space, trimmed."""
    return safe(_SPACE.sub(" ", str(text)).strip(" "))  # str.strip would also take NEL and U+2028 away unseen


def capped(text: object, limit: int) -> str:
    """`safe`, cut to at most `limit` UTF-8 bytes (never inside a character), saying how many more bytes
    there were: for names and values quoted in log fields, whose size log pipelines count in bytes."""
    value = safe(text)
    raw = value.encode()
    if len(raw) <= limit:
        return value
    kept = raw[:limit].decode("utf-8", "ignore")
    return f"{kept}...({len(raw) - len(kept.encode())} more bytes)"


def columns(text: str) -> int:
    """Terminal columns of `text`: East Asian wide characters (Japanese words) take two."""
    return sum(2 if east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, width: int) -> str:
    """`text` left-aligned in `width` terminal columns."""
    return text + " " * max(0, width - columns(text))
