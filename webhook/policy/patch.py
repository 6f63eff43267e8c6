"""JSON Patch (RFC 6902) from the original and the mutated object.

Equivalent to `jsonpatch.make_patch` (applying either yields the mutated object; tests prove it) but
specialised for copy-on-write mutations: subtrees shared by identity are skipped without comparison,
and lists that only grew get `add` operations."""
from __future__ import annotations

from typing import Any

_ABSENT = object()  # what old holds at a key it lacks


def _pointer(path: str, key: str) -> str:
    """`path` and then `key`, escaped as RFC 6901 says."""
    return f'{path}/{key.replace("~", "~0").replace("/", "~1")}'


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
            before = old.get(key, _ABSENT)
            if before is value:  # shared subtrees (most of them) cost one lookup and one identity test
                continue
            # most keys need no escaping: tested here, without a call, as this runs for each key that changed
            at = f"{path}/{key}" if "~" not in key and "/" not in key else _pointer(path, key)
            if before is _ABSENT:
                added += 1
                ops.append({"op": "add", "path": at, "value": value})
            else:
                _diff(before, value, at, ops)
        if len(old) + added != len(new):  # some key of old is gone (mutations only add: rare)
            ops.extend({"op": "remove", "path": _pointer(path, key)} for key in old if key not in new)
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
