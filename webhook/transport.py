"""HTTP: the admission endpoints first, then health, readiness, metrics and JSON errors.

`POST /validate` and `POST /mutate` are answered by a plain WSGI layer that the server enters first:
the apiserver calls them for every matching object, and Flask's per-request machinery (request context,
routing, response object) costs more than the whole policy decision. Every other path goes on to Flask
(/healthz, /readyz, /metrics, 404s). The body of an admission POST is handed to webhook.admission, which
answers (HTTP status, JSON body)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from flask import Flask, Response
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import HTTPException

from webhook import review
from webhook.admission import Admission, where
from webhook.tls.reloader import CertificateStatus, reloader_for
from webhook.logs import LOGGER
from webhook.version import package_version

log = logging.getLogger(f"{LOGGER}.admission")
ENDPOINTS = {"/validate": "validate", "/mutate": "mutate"}
JSON = "application/json"
_STATUS_LINES = {200: "200 OK", 400: "400 Bad Request", 405: "405 Method Not Allowed",
                 413: "413 Content Too Large", 500: "500 Internal Server Error"}


def register(app: Flask, runtime) -> None:
    """The admission endpoints in front of Flask, then Flask's health, readiness and metrics routes and its
    JSON errors."""
    settings = runtime.settings

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz():
        # A refused policy file does not make the pod unready: every replica would go at once, and
        # with failurePolicy Fail no pod could be created anywhere. The body and a metric say it.
        body: dict = {"version": package_version(), "policy": runtime.store.status.as_dict()}
        ready = True
        if settings.tls:
            try:
                status = reloader_for(settings.tls_cert, settings.tls_key).status
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                status = CertificateStatus(False, error=str(exc))
            body["certificates"] = status.as_dict()
            ready = status.loaded
        body["ready"] = ready
        return body, 200 if ready else 503

    @app.get("/metrics")
    def metrics():
        return Response(runtime.metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        response = _status_response(exc.code or 500, exc.name.replace(" ", ""), exc.description or exc.name)
        allowed = getattr(exc, "valid_methods", None)  # a MethodNotAllowed's
        if allowed:
            response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.errorhandler(Exception)
    def internal_error(exc: Exception):
        log.error("request failed", extra={"fields": {"event": "internal-error", "error": type(exc).__name__,
                                                      "where": where(exc)}})
        return _status_response(500, "InternalError", "internal error; see the gpu-admission log")

    # Flask's documented way to put WSGI in front of the app: the server calls app.wsgi_app.
    app.wsgi_app = AdmissionEndpoints(  # type: ignore[method-assign]
        app.wsgi_app, runtime.admission, settings.max_body_bytes)


def _status_response(code: int, reason: str, message: str) -> Response:
    return Response(review.dumps(review.status_body(code, reason, message)), status=code, content_type=JSON)


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
        except _TooLarge as large:  # a name of its own: any other ValueError is a 400
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

