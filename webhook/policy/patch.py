"""JSON Patch (RFC 6902) from the original and the mutated object.

Equivalent to `jsonpatch.make_patch` (applying either yields the mutated object; tests prove it) but
specialised for copy-on-write mutations: subtrees shared by identity are skipped without comparison,
and lists that only grew get `add` operations."""
from __future__ import annotations

from typing import Any


def _escape(key: str) -> str:
    if "~" in key or "/" in key:  # RFC 6901; most keys have neither
        return key.replace("~", "~0").replace("/", "~1")
    return key


def _same(a: object, b: object) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def make_patch(old: object, new: object) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    _diff(old, new, "", ops)
    return ops


def _diff(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if old is new:
        return
    told, tnew = type(old), type(new)
    if told is dict and tnew is dict:
        added = 0
        for key, value in new.items():
            if key in old:
                before = old[key]
                if before is not value:  # shared subtrees (most of them) cost one identity test
                    _diff(before, value, f"{path}/{_escape(key)}", ops)
            else:
                added += 1
                ops.append({"op": "add", "path": f"{path}/{_escape(key)}", "value": value})
        if len(old) + added != len(new):  # some key of old is gone (mutations only add: rare)
            ops.extend({"op": "remove", "path": f"{path}/{_escape(key)}"} for key in old if key not in new)
        return
    if told is list and tnew is list and len(new) >= len(old):
        for i, value in enumerate(old):
            if value is not new[i]:
                _diff(value, new[i], f"{path}/{i}", ops)
        for i in range(len(old), len(new)):
            ops.append({"op": "add", "path": f"{path}/{i}", "value": new[i]})
        return
    if not _same(old, new):
        ops.append({"op": "replace", "path": path, "value": new})
