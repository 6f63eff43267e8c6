"""HTTP of the admission endpoints: `POST /validate` and `POST /mutate`, each a Phase. A request is read
(method, Content-Type, a body within its limit), decoded, handled and encoded in `Admission.answer`, as
controller-runtime's webhook does (pkg/webhook/admission/http.go).

The endpoints are a plain WSGI layer in front of Flask (webhook.app), which the server enters first: the
apiserver calls them for every matching object, and Flask's per-request machinery (request context, routing,
response object) costs more than the whole policy decision. Every other path goes on to Flask."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from webhook.admission import codec, handlers, record, render
from webhook.admission.response import Outcome, allow, error
from webhook.config.store import PolicyStore
from webhook.metrics import Metrics
from webhook.objects.lookup import Resolver
from webhook.policy.phase import Phase

ENDPOINTS = {"/validate": Phase.VALIDATE, "/mutate": Phase.MUTATE}
JSON = "application/json"
_STATUS_LINES = {200: "200 OK", 400: "400 Bad Request", 405: "405 Method Not Allowed",
                 413: "413 Content Too Large", 500: "500 Internal Server Error"}
_REASONS = {413: "RequestEntityTooLarge", 405: "MethodNotAllowed"}


class Admission:
    """WSGI: POST /validate and /mutate; any other path goes on to `next_app` (Flask's WSGI app, which this
    replaces as app.wsgi_app: Flask's documented way to put WSGI in front of it).

    Never raises: an internal error becomes a well-formed AdmissionReview per `failure_mode`, or a 500."""

    def __init__(self, next_app: Callable, *, store: PolicyStore, resolver: Resolver, metrics: Metrics,
                 failure_mode: str, max_body_bytes: int):
        self._next = next_app
        self.store = store
        self.resolver = resolver  # replaced as a whole when a reloaded policy changes its lookups
        self.lookups = store.policy.lookups  # the lookups `resolver` serves
        self.metrics = metrics
        self.failure_mode = failure_mode
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        phase = ENDPOINTS.get(environ.get("PATH_INFO", ""))
        if phase is None:
            return self._next(environ, start_response)
        headers: list[tuple[str, str]] = [("Content-Type", JSON)]
        try:
            if environ.get("REQUEST_METHOD") != "POST":
                status, payload = self.reject(phase, 405, f"{environ.get('REQUEST_METHOD')} is not allowed on "
                                                          f"/{phase.endpoint}; POST an AdmissionReview")
                headers.append(("Allow", "POST"))
            else:
                status, payload = self._post(phase, environ)
        except Exception as exc:  # a bug of ours: one log line and a clear 500, never a stack trace
            record.internal_error("request failed", exc, endpoint=phase.endpoint)
            status, payload = 500, status_body(500, "InternalError", "internal error; see the gpu-admission log")
        headers.append(("Content-Length", str(len(payload))))
        start_response(_STATUS_LINES[status], headers)
        return [payload]

    def _post(self, phase: Phase, environ: dict) -> tuple[int, bytes]:
        content_type = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if content_type != JSON:
            return self.reject(phase, 400, f"Content-Type must be {JSON}, not {content_type[:60] or 'absent'}")
        try:
            body = _read_body(environ, self.max_body_bytes)
        except _TooLarge as large:  # a name of its own: any other ValueError is a 400
            return self.reject(phase, 413, f"the body{large} exceeds the limit of {self.max_body_bytes} bytes")
        except ValueError as exc:
            return self.reject(phase, 400, str(exc))
        return self.answer(phase, body)

    def answer(self, phase: Phase, body: bytes) -> tuple[int, bytes]:
        """One AdmissionReview body in, (HTTP status, JSON body) out: decode, handle, encode."""
        started = time.perf_counter()
        try:
            request = codec.parse(body)
        except codec.BadReview as bad:
            return self.reject(phase, bad.status, bad.message, started)
        try:
            outcome = handlers.handle(request, phase, policy=self.store.policy, resolver=self.resolver)
            payload = codec.dumps(codec.response(request.uid, outcome, phase))
            result = "allowed" if outcome.allowed else "denied"
        except Exception as exc:
            outcome, result = self._failed(phase, request, exc), "error"
            payload = codec.dumps(codec.response(request.uid, outcome, phase))
        record.answered(self.metrics, phase, request, outcome, result, time.perf_counter() - started)
        return 200, payload

    def reject(self, phase: Phase, status: int, message: str, started: float | None = None) -> tuple[int, bytes]:
        """A body that is not an answerable AdmissionReview: a Kubernetes Status, and one log line."""
        record.refused(self.metrics, phase, status, message,
                       time.perf_counter() - started if started is not None else 0.0)
        return status, status_body(status, _REASONS.get(status, "BadRequest"), message)

    def _failed(self, phase: Phase, request: codec.AdmissionRequest, exc: Exception) -> Outcome:
        record.evaluation_failed(phase, request, exc, self.failure_mode)
        try:
            language = self.store.policy.language_for(request.namespace)
        except Exception:  # the answer must still be given, in English at worst
            language = "en"
        refused = self.failure_mode == "deny"
        text = render.evaluation_failed(refused, language)
        return error(text) if refused else allow(warnings=(text,))


def status_body(code: int, reason: str, message: str) -> bytes:
    return codec.dumps(codec.status_body(code, reason, message))


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
