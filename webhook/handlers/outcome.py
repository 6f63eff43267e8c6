"""What a handler answers for one admission request, before the review layer shapes it for HTTP."""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, NamedTuple

from webhook.policy.results import Evaluation


class Outcome(NamedTuple):
    """A NamedTuple, as Evaluation is: one per admission request, cheaper to build than a frozen dataclass."""

    allowed: bool
    message: str = ""  # the denial: one line per violation, joined by "\n"
    warnings: tuple[str, ...] = ()  # one line each; the review layer enforces the apiserver's limits
    audit_annotations: Mapping[str, str] = MappingProxyType({})  # read-only, so one shared empty map will do
    patch: tuple[dict, ...] = ()  # JSON Patch operations; only /mutate returns them
    evaluation: Evaluation | None = None  # for metrics and logs
    reason: str = ""  # why no rule ran ("DELETE is never blocked", "exempt namespace", ...)
