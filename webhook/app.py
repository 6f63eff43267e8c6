"""The app: one WSGI app serves /validate and /mutate (webhook.admission.http, in front) and, through Flask,
/healthz, /readyz, /metrics and JSON errors for every other path."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from flask import Flask, Response
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.exceptions import HTTPException

from webhook.admission import record
from webhook.admission.http import JSON, Admission, status_body
from webhook.config.store import PolicyStore
from webhook.logs import LOGGER
from webhook.lookups.cluster import ClusterResolver, build_resolver
from webhook.lookups.kubeconfig import ClusterConfigError
from webhook.metrics import Metrics
from webhook.objects.lookup import Resolver
from webhook.settings import Settings
from webhook.tls.reloader import CertificateStatus, reloader_for
from webhook.version import package_version

EXTENSION = "gpu-admission"
log = logging.getLogger(f"{LOGGER}.lookups")


@dataclass(frozen=True, slots=True)
class Runtime:
    """What the app holds, for the routes and for whoever runs it (watchers, tests)."""

    settings: Settings
    store: PolicyStore
    metrics: Metrics
    admission: Admission


def create_app(settings: Settings, *, resolver: Resolver | None = None) -> Flask:
    """Raises ConfigError when the policy file does not load, ClusterConfigError when its lookups are on
    and no cluster can be found: a server never starts half-configured.

    Without `resolver` the app builds the cluster resolver its policy's lookups ask for (none when all
    are off), in this process: informer threads do not survive gunicorn's fork."""
    metrics = Metrics(multiprocess_dir=str(settings.metrics_dir) if settings.metrics_dir else None)
    admission: Admission | None = None

    def reloaded(ok: bool, loaded_at: float | None) -> None:
        metrics.policy_reloaded(ok, loaded_at)
        if ok and owned and admission is not None and store.policy.lookups != admission.lookups:
            _switch_lookups(admission, store.policy)

    store = PolicyStore(settings.policy_path, on_reload=reloaded)
    metrics.policy_loaded(store.status.loaded_at)
    owned = resolver is None
    app = Flask(__name__)
    admission = Admission(app.wsgi_app, store=store, resolver=resolver or build_resolver(store.policy),
                          metrics=metrics, failure_mode=settings.failure_mode, max_body_bytes=settings.max_body_bytes)
    metrics.add_source(lambda m: _export_state(m, settings, admission))
    runtime = Runtime(settings, store, metrics, admission)
    app.extensions[EXTENSION] = runtime
    _routes(app, runtime)
    app.wsgi_app = admission  # type: ignore[method-assign]  # the server calls app.wsgi_app: the endpoints first
    return app


def _routes(app: Flask, runtime: Runtime) -> None:
    """Health, readiness, metrics, and JSON errors: what is not an admission endpoint."""
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
        record.internal_error("request failed", exc)
        return _status_response(500, "InternalError", "internal error; see the gpu-admission log")


def _status_response(code: int, reason: str, message: str) -> Response:
    return Response(status_body(code, reason, message), status=code, content_type=JSON)


def _export_state(metrics: Metrics, settings: Settings, admission: Admission) -> None:
    """What the registry shows of state held elsewhere: the serving certificate's expiry, the lookups'
    counters and health (a ClusterResolver's stats; none without lookups)."""
    if settings.tls and settings.tls_cert is not None and settings.tls_key is not None:
        try:
            metrics.certificate_in_use(reloader_for(settings.tls_cert, settings.tls_key).status.not_after)
        except (OSError, ValueError):  # not loadable: /readyz says so, and no expiry is known
            pass
    if isinstance(admission.resolver, ClusterResolver):
        metrics.lookup_stats(admission.resolver.stats())


def _switch_lookups(admission: Admission, policy) -> None:
    """A reloaded policy turned lookups on, off or changed them: serve from a new resolver, close the old."""
    try:
        new = build_resolver(policy)
    except ClusterConfigError as exc:  # keep the lookups in force rather than lose them
        log.error("lookups of the reloaded policy cannot start; keeping the previous ones",
                  extra={"fields": {"event": "lookups-unchanged", "error": str(exc)}})
        return
    old, admission.resolver, admission.lookups = admission.resolver, new, policy.lookups
    close = getattr(old, "close", None)
    if close is not None:
        close()


def runtime(app: Flask) -> Runtime:
    return app.extensions[EXTENSION]
