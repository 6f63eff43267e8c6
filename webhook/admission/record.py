"""What one admission answer leaves behind: its metrics and its log lines (the decision, the rules that failed,
the webhook's own errors). Log lines carry ids, names and rule ids only, each capped, never a value from the
object (an env var's)."""
from __future__ import annotations

import logging
import traceback
from pathlib import Path

from webhook.admission.codec import AdmissionRequest
from webhook.admission.response import Outcome
from webhook.logs import LOGGER
from webhook.metrics import Metrics, outcome_label
from webhook.policy.phase import Phase
from webhook.text import capped

log = logging.getLogger(f"{LOGGER}.admission")
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent
# Kubernetes names are at most 253 characters (a DNS subdomain); what the request says is capped there.
NAME_MAX = 253
LOGGED_VIOLATIONS = 20  # per decision line; the count of the rest is logged with it


def answered(metrics: Metrics, phase: Phase, request: AdmissionRequest, outcome: Outcome, result: str,
             elapsed: float) -> None:
    """`result`: "allowed", "denied" or "error". Never raises: the answer stands whatever its bookkeeping does."""
    try:
        metrics.observe_request(phase.endpoint, request.kind, result, elapsed, operation=request.operation,
                                dry_run=request.dry_run)
        ev = outcome.evaluation
        if ev is not None:
            metrics.observe_evaluation(ev)
            for e in ev.errors:
                # "Type: text" from the engine; the text may quote a value from the object, so only the type.
                log.error("rule failed internally; answered per its onError", extra={"fields": {
                    "event": "rule-error", "rule": e.rule.value, "decision": "deny" if e.denied else "allow",
                    "error": e.error.split(":", 1)[0], **_identity(request)}})
        _decision(phase, request, outcome, elapsed)
    except Exception as exc:
        internal_error("recording the decision failed", exc, endpoint=phase.endpoint)


def refused(metrics: Metrics, phase: Phase, status: int, message: str, elapsed: float) -> None:
    """A body that is not an answerable AdmissionReview."""
    metrics.observe_request(phase.endpoint, "", "invalid", elapsed)
    log.warning("request refused: not an answerable AdmissionReview",
                extra={"fields": {"event": "bad-request", "endpoint": phase.endpoint, "status": status,
                                  "error": message}})


def evaluation_failed(phase: Phase, request: AdmissionRequest, exc: Exception, failure_mode: str) -> None:
    # The exception's text is not logged: it may quote a value from the object (an env var's).
    log.error("evaluation failed; answered per the failure mode", extra={"fields": {
        "event": "internal-error", "endpoint": phase.endpoint, **_identity(request), "failure_mode": failure_mode,
        "error": type(exc).__name__, "where": where(exc)}})


def internal_error(message: str, exc: Exception, **fields: object) -> None:
    """A bug of ours: one log line naming the error's type and where it was raised, never its text."""
    log.error(message, extra={"fields": {"event": "internal-error", **fields, "error": type(exc).__name__,
                                         "where": where(exc)}})


def _decision(phase: Phase, request: AdmissionRequest, outcome: Outcome, elapsed: float) -> None:
    ev = outcome.evaluation
    notable = not outcome.allowed or outcome.warnings or outcome.patch or (ev is not None and ev.violations)
    level = logging.INFO if notable else logging.DEBUG
    if not log.isEnabledFor(level):
        return
    fields: dict[str, object] = {"event": "admission", "endpoint": phase.endpoint, **_identity(request),
                                 "allowed": outcome.allowed, "duration_ms": round(elapsed * 1000, 3)}
    if outcome.reason:
        fields["reason"] = outcome.reason
    if ev is not None:
        if ev.dry_run:
            fields["mode"] = "dry-run"
        if ev.cohort:
            fields["cohort"] = ev.cohort
        if ev.violations:  # what each finding did, or in a dry run would have done
            fields["violations"] = [{"rule": v.rule.value, "action": v.action.value,
                                     "path": capped(v.path, NAME_MAX),
                                     "outcome": outcome_label(v.rule.is_mutation, v.action, ev.dry_run)}
                                    for v in ev.violations[:LOGGED_VIOLATIONS]]
            if len(ev.violations) > LOGGED_VIOLATIONS:
                fields["violations_not_logged"] = len(ev.violations) - LOGGED_VIOLATIONS
    if outcome.patch and phase is Phase.MUTATE:
        fields["patch_ops"] = len(outcome.patch)
    log.log(level, "admission decision", extra={"fields": fields})


def _identity(request: AdmissionRequest) -> dict[str, object]:
    """Who the request is about, for log lines: ids and names only, each capped (a name of a megabyte must
    not make a log line of a megabyte) and escaped as every text users read is."""
    obj = request.object or request.old_object or {}
    metadata = obj.get("metadata")
    meta: dict = metadata if isinstance(metadata, dict) else {}
    name = request.name or meta.get("name") or (f"{meta['generateName']}*" if isinstance(
        meta.get("generateName"), str) else "")
    return {"uid": capped(request.uid, NAME_MAX), "kind": capped(request.kind, NAME_MAX),
            "namespace": capped(request.namespace, NAME_MAX),
            "name": capped(name, NAME_MAX) if isinstance(name, str) else "", "operation": request.operation}


def where(exc: BaseException) -> list[str]:
    """The innermost frames, as `path:line in function` (paths relative to the package)."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    out: list[str] = []
    for f in frames:
        path = Path(f.filename)
        try:
            path = path.relative_to(_PACKAGE_ROOT)
        except ValueError:
            path = Path(path.name)
        out.append(f"{path}:{f.lineno} in {f.name}")
    return out
