"""The Flask app factory: one app serves /validate, /mutate, /healthz, /readyz and /metrics."""
from __future__ import annotations

from dataclasses import dataclass

from flask import Flask

from webhook import routes
from webhook.lookups.base import NoLookups, Resolver
from webhook.metrics import Metrics
from webhook.server.reload import PolicyStore
from webhook.settings import Settings

EXTENSION = "gpu-admission"


@dataclass(frozen=True, slots=True)
class Runtime:
    """What the app holds, for the routes and for whoever runs it (watchers, tests)."""

    settings: Settings
    store: PolicyStore
    metrics: Metrics
    admission: routes.Admission


def create_app(settings: Settings, *, resolver: Resolver | None = None) -> Flask:
    """Raises ConfigError when the policy file does not load: a server never starts half-configured."""
    metrics = Metrics(multiprocess_dir=str(settings.metrics_dir) if settings.metrics_dir else None)
    store = PolicyStore(settings.policy_path, on_reload=metrics.policy_reloaded)
    metrics.policy_loaded(store.status.loaded_at)
    admission = routes.Admission(store=store, resolver=resolver or NoLookups(), metrics=metrics,
                                 failure_mode=settings.failure_mode)
    app = Flask(__name__)
    runtime = Runtime(settings, store, metrics, admission)
    app.extensions[EXTENSION] = runtime
    routes.register(app, runtime)
    return app


def runtime(app: Flask) -> Runtime:
    return app.extensions[EXTENSION]
