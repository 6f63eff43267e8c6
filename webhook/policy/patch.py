"""JSON Patch (RFC 6902) from the original and the mutated object.

Equivalent to `jsonpatch.make_patch` (applying either yields the mutated object; tests prove it) but
specialised for copy-on-write mutations: subtrees shared by identity are skipped without comparison,
and lists that only grew get `add` operations. Which keys or items of a container differ by identity is
found in C (`map`/`compress` over the values), so a copied dict of twenty keys with one changed costs
the eval loop one iteration, not twenty."""
from __future__ import annotations

from itertools import compress, repeat
from operator import is_not
from typing import Any

_ABSENT = object()


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
        # the keys of new whose value is not old's (absent from old included), in new's order
        for key in compress(new, map(is_not, new.values(), map(old.get, new, repeat(_ABSENT)))):
            value = new[key]
            before = old.get(key, _ABSENT)
            if before is _ABSENT:
                added += 1
                ops.append({"op": "add", "path": f"{path}/{_escape(key)}", "value": value})
            else:
                _diff(before, value, f"{path}/{_escape(key)}", ops)
        if len(old) + added != len(new):  # some key of old is gone (mutations only add: rare)
            ops.extend({"op": "remove", "path": f"{path}/{_escape(key)}"} for key in old if key not in new)
        return
    if told is list and tnew is list and len(new) >= len(old):
        for i in compress(range(len(old)), map(is_not, old, new)):
            _diff(old[i], new[i], f"{path}/{i}", ops)
        for i in range(len(old), len(new)):
            ops.append({"op": "add", "path": f"{path}/{i}", "value": new[i]})
        return
    if not _same(old, new):
        ops.append({"op": "replace", "path": path, "value": new})
