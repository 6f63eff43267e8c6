"""What a handler answers for one admission request, before the review layer shapes it for HTTP."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from webhook.policy.results import Evaluation

_NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})  # read-only, so one shared empty map will do


@dataclass(slots=True, kw_only=True)
class Outcome:
    allowed: bool
    message: str = ""  # the denial: one line per violation, joined by "\n"
    warnings: tuple[str, ...] = ()  # one line each; the review layer enforces the apiserver's limits
    audit_annotations: Mapping[str, str] = field(default_factory=lambda: _NO_ANNOTATIONS)
    patch: tuple[dict, ...] = ()  # JSON Patch operations; only /mutate returns them
    evaluation: Evaluation | None = None  # for metrics and logs
    reason: str = ""  # why no rule ran ("DELETE is never blocked", "exempt namespace", ...)
