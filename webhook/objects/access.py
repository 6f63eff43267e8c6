"""Tolerant reads: objects reach the engine from the apiserver (defaulted, quantities as strings) and from
the CLI (as written, integers, fields absent, sometimes plain wrong). A value of the wrong type reads as
absent, so no input can raise inside a rule."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

NO_DICT: Mapping[str, Any] = MappingProxyType({})
NO_LIST: tuple[Any, ...] = ()


def as_dict(value: object) -> Mapping[str, Any]:
    return value if type(value) is dict else NO_DICT


def as_list(value: object) -> Sequence[Any]:
    return value if type(value) is list else NO_LIST


def as_str(value: object) -> str | None:
    return value if type(value) is str else None


_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")
_SUFFIX = {
    None: 1, "": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity ("1", 1, "500m", "2Gi") as a number; None when it is not one."""
    t = type(value)
    if t is int or t is float:
        return float(value)
    if t is not str:
        return None
    if value.isdigit():  # the common case at admission: "1"
        return float(value)
    m = _QUANTITY.match(value.strip())
    if not m:
        return None
    number, exponent, suffix = m.groups()
    if exponent:
        return float(number + exponent)
    return float(number) * _SUFFIX[suffix]


def integer(value: object) -> int | None:
    """An integer field (count, runAsUser): int, or a numeric string written in a manifest."""
    if type(value) is int:
        return value
    if type(value) is str and value.isdigit():
        return int(value)
    return None
