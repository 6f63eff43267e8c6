"""The admission endpoints' request path: one AdmissionReview body in, (HTTP status, JSON body) out.
HTTP is webhook.transport's: it hands this layer the body of a POST to /validate or /mutate."""
from __future__ import annotations

import logging
import time
import traceback
from pathlib import Path

from webhook import dispatch, review
from webhook.config.store import PolicyStore
from webhook.handlers.outcome import Outcome, allow, error
from webhook.handlers.request import AdmissionRequest
from webhook.metrics import Metrics, outcome_label
from webhook.objects.lookup import Resolver
from webhook.policy.messages import T, render
from webhook.policy.results import Evaluation
from webhook.logs import LOGGER
from webhook.text import capped

log = logging.getLogger(f"{LOGGER}.admission")
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
# Kubernetes names are at most 253 characters (a DNS subdomain); what the request says is capped there.
NAME_MAX = 253
LOGGED_VIOLATIONS = 20  # per decision line; the count of the rest is logged with it


class Admission:
    """One AdmissionReview body in, (HTTP status, JSON body) out; metrics and the log line included.

    Never raises: an internal error becomes a well-formed AdmissionReview per `failure_mode`."""

    def __init__(self, *, store: PolicyStore, resolver: Resolver, metrics: Metrics, failure_mode: str):
        self.store = store
        self.resolver = resolver  # replaced as a whole when a reloaded policy changes its lookups
        self.lookups = store.policy.lookups  # the lookups `resolver` serves
        self.metrics = metrics
        self.failure_mode = failure_mode

    def answer(self, endpoint: str, body: bytes) -> tuple[int, bytes]:
        started = time.perf_counter()
        try:
            request = review.parse(body)
        except review.BadReview as bad:
            return self.reject(endpoint, bad.status, bad.message, started)
        mutating = endpoint == "mutate"
        result = "allowed"
        try:
            outcome = dispatch.decide(request, mutating=mutating, policy=self.store.policy, resolver=self.resolver)
            payload = review.dumps(review.response(request.uid, outcome, mutating=mutating))
        except Exception as exc:
            result = "error"
            outcome = self._failure(endpoint, request, exc)
            payload = review.dumps(review.response(request.uid, outcome, mutating=mutating))
        if result != "error" and not outcome.allowed:
            result = "denied"
        elapsed = time.perf_counter() - started
        try:
            self.metrics.observe_request(endpoint, request.kind, result, elapsed, operation=request.operation,
                                         dry_run=request.dry_run)
            if outcome.evaluation is not None:
                self.metrics.observe_evaluation(outcome.evaluation)
                self._log_rule_errors(request, outcome.evaluation)
            self._log_decision(endpoint, request, outcome, elapsed)
        except Exception as exc:  # the answer stands: bookkeeping must not turn it into a failure
            log.error("recording the decision failed", extra={"fields": {
                "event": "internal-error", "endpoint": endpoint, "error": type(exc).__name__, "where": where(exc)}})
        return 200, payload

    def reject(self, endpoint: str, status: int, message: str, started: float | None = None) -> tuple[int, bytes]:
        """A body that is not an answerable AdmissionReview: a Kubernetes Status, and one log line."""
        elapsed = time.perf_counter() - started if started is not None else 0.0
        self.metrics.observe_request(endpoint, "", "invalid", elapsed)
        log.warning("request refused: not an answerable AdmissionReview",
                    extra={"fields": {"event": "bad-request", "endpoint": endpoint, "status": status,
                                      "error": message}})
        reason = {413: "RequestEntityTooLarge", 405: "MethodNotAllowed"}.get(status, "BadRequest")
        return status, review.dumps(review.status_body(status, reason, message))

    def _failure(self, endpoint: str, request: AdmissionRequest, exc: Exception) -> Outcome:
        # The exception's text is not logged: it may quote a value from the object (an env var's).
        log.error("evaluation failed; answered per the failure mode", extra={"fields": {
            "event": "internal-error", "endpoint": endpoint, **_identity(request), "failure_mode": self.failure_mode,
            "error": type(exc).__name__, "where": where(exc)}})
        try:
            language = self.store.policy.language_for(request.namespace)
        except Exception:  # the answer must still be given, in English at worst
            language = "en"
        if self.failure_mode == "deny":
            return error(render(T(
                "gpu-admission could not evaluate this request (internal error); it was refused. Retry, or ask the "
                "cluster admins to check the gpu-admission log"), language))
        return allow(warnings=(render(T(
            "gpu-admission could not evaluate this request (internal error); it was allowed without checks"),
            language),))

    def _log_rule_errors(self, request: AdmissionRequest, evaluation: Evaluation) -> None:
        for e in evaluation.errors:
            # "Type: text" from the engine; the text may quote a value from the object, so only the type.
            log.error("rule failed internally; answered per its onError", extra={"fields": {
                "event": "rule-error", "rule": e.rule.value, "decision": "deny" if e.denied else "allow",
                "error": e.error.split(":", 1)[0], **_identity(request)}})

    def _log_decision(self, endpoint: str, request: AdmissionRequest, outcome: Outcome, elapsed: float) -> None:
        ev = outcome.evaluation
        notable = not outcome.allowed or outcome.warnings or outcome.patch or (ev is not None and ev.violations)
        level = logging.INFO if notable else logging.DEBUG
        if not log.isEnabledFor(level):
            return
        fields: dict[str, object] = {"event": "admission", "endpoint": endpoint, **_identity(request),
                                     "allowed": outcome.allowed,
                  "duration_ms": round(elapsed * 1000, 3)}
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
        if outcome.patch and endpoint == "mutate":
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
