"""HTTP: health, readiness and metrics, JSON errors, and the admission endpoints in front of them.

`POST /validate` and `POST /mutate` are served by webhook.admission's plain WSGI layer, ahead of Flask;
everything else (/healthz, /readyz, /metrics, 404s) is ordinary Flask."""
from __future__ import annotations

import logging

from flask import Flask, Response
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import HTTPException

from webhook import review
from webhook.admission import JSON, AdmissionEndpoints, where
from webhook.server import tls
from webhook.server.logs import LOGGER
from webhook.version import package_version

log = logging.getLogger(f"{LOGGER}.admission")


def register(app: Flask, runtime) -> None:
    """Health, readiness and metrics routes, JSON errors, and the admission endpoints in front."""
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
                status = tls.reloader_for(settings.tls_cert, settings.tls_key).status
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                status = tls.CertificateStatus(False, error=str(exc))
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
        if getattr(exc, "valid_methods", None):
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response

    @app.errorhandler(Exception)
    def internal_error(exc: Exception):
        log.error("request failed", extra={"fields": {"event": "internal-error", "error": type(exc).__name__,
                                                      "where": where(exc)}})
        return _status_response(500, "InternalError", "internal error; see the gpu-admission log")

    app.wsgi_app = AdmissionEndpoints(app.wsgi_app, runtime.admission, settings.max_body_bytes)


def _status_response(code: int, reason: str, message: str) -> Response:
    return Response(review.dumps(review.status_body(code, reason, message)), status=code, content_type=JSON)
