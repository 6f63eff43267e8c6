"""What a handler answers for one admission request, before the review layer shapes it for HTTP."""
from __future__ import annotations

from types import MappingProxyType
from typing import Final, Mapping

from webhook.policy.results import Evaluation


_NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})  # read-only, so one shared empty map will do


class Outcome:
    """A plain class with Final fields, as Evaluation is: one per admission request."""

    __slots__ = ("allowed", "message", "warnings", "audit_annotations", "patch", "evaluation", "reason")

    def __init__(self, allowed: bool, message: str = "", warnings: tuple[str, ...] = (),
                 audit_annotations: Mapping[str, str] = _NO_ANNOTATIONS, patch: tuple[dict, ...] = (),
                 evaluation: Evaluation | None = None, reason: str = "") -> None:
        self.allowed: Final = allowed
        self.message: Final = message  # the denial: one line per violation, joined by "\n"
        self.warnings: Final = warnings  # one line each; the review layer enforces the apiserver's limits
        self.audit_annotations: Final = audit_annotations
        self.patch: Final = patch  # JSON Patch operations; only /mutate returns them
        self.evaluation: Final = evaluation  # for metrics and logs
        self.reason: Final = reason  # why no rule ran ("DELETE is never blocked", "exempt namespace", ...)
