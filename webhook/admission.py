"""The admission endpoints' request path: one AdmissionReview body in, (HTTP status, JSON body) out,
behind a plain WSGI layer in front of Flask.

`POST /validate` and `POST /mutate` bypass Flask: the apiserver calls them for every matching object, and
Flask's per-request machinery (request context, routing, response object) costs more than the whole
policy decision."""
from __future__ import annotations

import logging
import time
import traceback
from pathlib import Path
from typing import Callable, Iterable

from webhook import dispatch, review
from webhook.handlers.outcome import Outcome
from webhook.lookups.base import Resolver
from webhook.metrics import Metrics, outcome_label
from webhook.policy.messages import T, render
from webhook.policy.results import Evaluation
from webhook.server.logs import LOGGER
from webhook.server.reload import PolicyStore
from webhook.text import capped

log = logging.getLogger(f"{LOGGER}.admission")
ENDPOINTS = {"/validate": "validate", "/mutate": "mutate"}
JSON = "application/json"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_STATUS_LINES = {200: "200 OK", 400: "400 Bad Request", 405: "405 Method Not Allowed",
                 413: "413 Content Too Large", 500: "500 Internal Server Error"}
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
            payload = review.dumps(review.response(request["uid"], outcome, mutating=mutating))
        except Exception as exc:
            result = "error"
            outcome = self._failure(endpoint, request, exc)
            payload = review.dumps(review.response(request["uid"], outcome, mutating=mutating, code=500))
        if result != "error" and not outcome.allowed:
            result = "denied"
        elapsed = time.perf_counter() - started
        try:
            self.metrics.observe_request(endpoint, request["kind"]["kind"], result, elapsed,
                                         operation=request.get("operation"), dry_run=request.get("dryRun") is True)
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
                    extra={"fields": {"event": "bad-request", "endpoint": endpoint, "status": status, "error": message}})
        reason = {413: "RequestEntityTooLarge", 405: "MethodNotAllowed"}.get(status, "BadRequest")
        return status, review.dumps(review.status_body(status, reason, message))

    def _failure(self, endpoint: str, request: dict, exc: Exception) -> Outcome:
        # The exception's text is not logged: it may quote a value from the object (an env var's).
        log.error("evaluation failed; answered per the failure mode", extra={"fields": {
            "event": "internal-error", "endpoint": endpoint, **_identity(request), "failure_mode": self.failure_mode,
            "error": type(exc).__name__, "where": where(exc)}})
        try:
            language = self.store.policy.language_for(request.get("namespace"))
        except Exception:  # the answer must still be given, in English at worst
            language = "en"
        if self.failure_mode == "deny":
            return Outcome(allowed=False, message=render(T(
                "gpu-admission could not evaluate this request (internal error); it was refused. Retry, or ask the "
                "cluster admins to check the gpu-admission log"), language))
        return Outcome(allowed=True, warnings=(render(T(
            "gpu-admission could not evaluate this request (internal error); it was allowed without checks"),
            language),))

    def _log_rule_errors(self, request: dict, evaluation: Evaluation) -> None:
        for e in evaluation.errors:
            # "Type: text" from the engine; the text may quote a value from the object, so only the type.
            log.error("rule failed internally; answered per its onError", extra={"fields": {
                "event": "rule-error", "rule": e.rule.value, "decision": "deny" if e.denied else "allow",
                "error": e.error.split(":", 1)[0], **_identity(request)}})

    def _log_decision(self, endpoint: str, request: dict, outcome: Outcome, elapsed: float) -> None:
        ev = outcome.evaluation
        notable = not outcome.allowed or outcome.warnings or outcome.patch or (ev is not None and ev.violations)
        level = logging.INFO if notable else logging.DEBUG
        if not log.isEnabledFor(level):
            return
        fields: dict[str, object] = {"event": "admission", "endpoint": endpoint, **_identity(request), "allowed": outcome.allowed,
                  "duration_ms": round(elapsed * 1000, 3)}
        if outcome.reason:
            fields["reason"] = outcome.reason
        if ev is not None:
            if ev.dry_run:
                fields["mode"] = "dry-run"
            if ev.cohort:
                fields["cohort"] = ev.cohort
            if ev.violations:  # what each finding did, or in a dry run would have done
                fields["violations"] = [{"rule": v.rule.value, "action": v.action.value, "path": capped(v.path, NAME_MAX),
                                         "outcome": outcome_label(v.rule.is_mutation, v.action, ev.dry_run)}
                                        for v in ev.violations[:LOGGED_VIOLATIONS]]
                if len(ev.violations) > LOGGED_VIOLATIONS:
                    fields["violations_not_logged"] = len(ev.violations) - LOGGED_VIOLATIONS
        if outcome.patch and endpoint == "mutate":
            fields["patch_ops"] = len(outcome.patch)
        log.log(level, "admission decision", extra={"fields": fields})


class AdmissionEndpoints:
    """WSGI: POST /validate and /mutate; any other path goes on to Flask."""

    def __init__(self, flask_wsgi: Callable, admission: Admission, max_body_bytes: int):
        self._next = flask_wsgi
        self._admission = admission
        self._max_body = max_body_bytes

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        endpoint = ENDPOINTS.get(environ.get("PATH_INFO", ""))
        if endpoint is None:
            return self._next(environ, start_response)
        headers: list[tuple[str, str]] = [("Content-Type", JSON)]
        try:
            if environ.get("REQUEST_METHOD") != "POST":
                status, payload = self._admission.reject(endpoint, 405, f"{environ.get('REQUEST_METHOD')} is not "
                                                         f"allowed on /{endpoint}; POST an AdmissionReview")
                headers.append(("Allow", "POST"))
            else:
                status, payload = self._post(endpoint, environ)
        except Exception as exc:  # a bug of ours: one log line and a clear 500, never a stack trace
            log.error("request failed", extra={"fields": {"event": "internal-error", "endpoint": endpoint,
                                                          "error": type(exc).__name__, "where": where(exc)}})
            status, payload = 500, review.dumps(review.status_body(500, "InternalError",
                                                             "internal error; see the gpu-admission log"))
        headers.append(("Content-Length", str(len(payload))))
        start_response(_STATUS_LINES[status], headers)
        return [payload]

    def _post(self, endpoint: str, environ: dict) -> tuple[int, bytes]:
        content_type = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if content_type != JSON:
            return self._admission.reject(endpoint, 400, f"Content-Type must be {JSON}, not "
                                          f"{content_type[:60] or 'absent'}")
        try:
            body = _read_body(environ, self._max_body)
        except _TooLarge as large:  # (a name of its own: see Admission.answer)
            return self._admission.reject(endpoint, 413, f"the body{large} exceeds the limit of {self._max_body} bytes")
        except ValueError as exc:
            return self._admission.reject(endpoint, 400, str(exc))
        return self._admission.answer(endpoint, body)


class _TooLarge(Exception):
    """Its text is the size when known: " (N bytes)"."""


def _read_body(environ: dict, limit: int) -> bytes:
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    if length:
        try:
            size = int(length)
        except ValueError:
            raise ValueError("Content-Length is not a number") from None
        if size > limit:
            raise _TooLarge(f" ({size} bytes)")
        return stream.read(size)
    # No length (chunked): read one byte past the limit to tell a full-limit body from a larger one.
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = stream.read(min(65536, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise _TooLarge("")
    return b"".join(chunks)


def _identity(request: dict) -> dict[str, object]:
    """Who the request is about, for log lines: ids and names only, each capped (a name of a megabyte must
    not make a log line of a megabyte) and escaped as every text users read is."""
    obj = request.get("object") or request.get("oldObject") or {}
    metadata = obj.get("metadata")
    meta: dict = metadata if isinstance(metadata, dict) else {}
    name = request.get("name") or meta.get("name") or (f"{meta['generateName']}*" if isinstance(
        meta.get("generateName"), str) else "")
    return {"uid": capped(request["uid"], NAME_MAX), "kind": capped(request["kind"]["kind"], NAME_MAX),
            "namespace": capped(request.get("namespace", ""), NAME_MAX),
            "name": capped(name, NAME_MAX) if isinstance(name, str) else "", "operation": request["operation"]}


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
