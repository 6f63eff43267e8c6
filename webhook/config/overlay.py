"""Policy overlays: files that hold only a team's differences, merged over the shipped default the way
the Helm chart's `policy:` value is merged (Helm coalescing user values over the chart's values.yaml,
`pkg/chart/common/util/coalesce.go`): maps are merged key by key, lists and scalars are replaced,
and a null drops the key. Several files are first merged among themselves, later over earlier, as
Helm merges several `-f` files (`mergeMaps` in `pkg/cli/values/options.go`); `--set` then edits the
merged document. The chart's tests predict its policy ConfigMap with `overlay_policy`, so the CLI's
overlays and the chart's values can only agree."""
from __future__ import annotations

import copy
import re
from typing import Any

import yaml


def merge_maps(a: dict, b: dict) -> dict:
    """`b` over `a`, as Helm merges its values files: maps recursively, anything else (null too) replaced."""
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_maps(out[key], value)
        else:
            out[key] = value
    return out


def coalesce(base: dict, overlay: dict) -> dict:
    """`overlay` over `base`, as Helm coalesces user values over a chart's (the overlay wins): a key
    the overlay lacks comes from `base`, maps present in both are coalesced, a null in the overlay
    removes a key `base` sets, and a value of another shape than the base's is kept as the overlay's
    (Helm warns; the loader then names the field)."""
    out = copy.deepcopy(overlay)
    for key, value in base.items():
        if key not in out:
            if value is not None:
                out[key] = copy.deepcopy(value)
        elif out[key] is None:
            if value is not None:
                del out[key]
        elif isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = coalesce(value, out[key])
    return out


def overlay_policy(base: dict, overlays: list[dict]) -> dict:
    merged: dict = {}
    for layer in overlays:
        merged = merge_maps(merged, layer)
    return coalesce(base, merged)


class SetError(ValueError):
    """A `--set` expression that cannot be applied; the message names it."""


_SEGMENT = re.compile(r"((?:[^.\[\\]|\\.)+)|\[(\d+)\]")


def parse_path(path: str) -> list[str | int]:
    """`cohorts[0].nodeLabels.example\\.com/pool` -> ["cohorts", 0, "nodeLabels", "example.com/pool"]:
    dots separate keys (`\\.` is a dot inside a key, as in Helm's --set), `[n]` indexes a list."""
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        if path[pos] == "." and out and pos + 1 < len(path):
            pos += 1
        m = _SEGMENT.match(path, pos)
        if not m:
            raise SetError(f"{path!r}: not a path like cohorts[0].migStrategy")
        out.append(int(m.group(2)) if m.group(2) is not None else re.sub(r"\\(.)", r"\1", m.group(1)))
        pos = m.end()
    if not out or not isinstance(out[0], str):
        raise SetError(f"{path!r}: not a path like cohorts[0].migStrategy")
    return out


def apply_set(document: dict, expression: str) -> dict:
    """`path=value` on a copy of `document`. The value is read as YAML (`true`, `4`, `null`, `[a, b]`,
    `{k: v}`); null removes the key. Maps on the way are created; list indices must exist (the
    element is edited in place, unlike Helm's --set, which would replace the whole list)."""
    path_text, sep, raw = expression.partition("=")
    if not sep:
        raise SetError(f"{expression!r}: expected path=value")
    try:
        value: Any = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    path = parse_path(path_text.strip())
    out = copy.deepcopy(document)
    node: Any = out
    for i, segment in enumerate(path[:-1]):
        nxt = path[i + 1]
        node = _step(node, segment, create=dict if isinstance(nxt, str) else None, where=path_text, upto=path[:i + 1])
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise SetError(f"{path_text}: {_show(path)} is not an element of a list")
        node[last] = value
    elif not isinstance(node, dict):
        raise SetError(f"{path_text}: {_show(path[:-1])} is not a mapping")
    elif value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return out


def _step(node: Any, segment: str | int, *, create, where: str, upto: list) -> Any:
    if isinstance(segment, int):
        if not isinstance(node, list) or segment >= len(node):
            raise SetError(f"{where}: {_show(upto)} is not an element of a list")
        return node[segment]
    if not isinstance(node, dict):
        raise SetError(f"{where}: {_show(upto[:-1])} is not a mapping")
    if node.get(segment) is None:
        if create is None:
            raise SetError(f"{where}: {_show(upto)} is not a list")
        node[segment] = create()
    return node[segment]


def _show(path: list) -> str:
    out = ""
    for segment in path:
        out += f"[{segment}]" if isinstance(segment, int) else (f".{segment}" if out else segment)
    return out or "the policy"
