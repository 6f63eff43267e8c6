"""What a handler answers for one admission request, before the codec encodes it, and the four ways to make
one (as controller-runtime's Allowed, Denied, Patched and Errored)."""
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
    warnings: tuple[str, ...] = ()  # one line each; the codec enforces the apiserver's limits
    audit_annotations: Mapping[str, str] = field(default_factory=lambda: _NO_ANNOTATIONS)
    patch: tuple[dict, ...] = ()  # JSON Patch operations; only /mutate returns them
    evaluation: Evaluation | None = None  # for metrics and logs
    reason: str = ""  # why no rule ran ("DELETE is never blocked", "exempt namespace", ...)
    code: int = 403  # the status a denial carries: 403 Forbidden, 500 when the request could not be evaluated


def allow(*, reason: str = "", warnings: tuple[str, ...] = (), audit_annotations: Mapping[str, str] = _NO_ANNOTATIONS,
          evaluation: Evaluation | None = None) -> Outcome:
    return Outcome(allowed=True, reason=reason, warnings=warnings, audit_annotations=audit_annotations,
                   evaluation=evaluation)


def deny(message: str, *, warnings: tuple[str, ...] = (), audit_annotations: Mapping[str, str] = _NO_ANNOTATIONS,
         evaluation: Evaluation | None = None) -> Outcome:
    return Outcome(allowed=False, message=message, warnings=warnings, audit_annotations=audit_annotations,
                   evaluation=evaluation)


def patch(operations: tuple[dict, ...], *, warnings: tuple[str, ...] = (),
          audit_annotations: Mapping[str, str] = _NO_ANNOTATIONS, evaluation: Evaluation | None = None) -> Outcome:
    """Allowed with these JSON Patch operations (none: allowed as it is)."""
    return Outcome(allowed=True, patch=operations, warnings=warnings, audit_annotations=audit_annotations,
                   evaluation=evaluation)


def error(message: str) -> Outcome:
    """Refused because the request could not be evaluated: a 500 in the answer's status."""
    return Outcome(allowed=False, message=message, code=500)
