"""The Flask app factory: one app serves /validate, /mutate, /healthz, /readyz and /metrics."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from flask import Flask

from webhook import transport
from webhook.admission import Admission
from webhook.config.store import PolicyStore
from webhook.lookups.cluster import ClusterResolver, build_resolver
from webhook.lookups.kubeconfig import ClusterConfigError
from webhook.metrics import Metrics
from webhook.objects.lookup import Resolver
from webhook.tls.reloader import reloader_for
from webhook.logs import LOGGER
from webhook.settings import Settings

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
    admission = Admission(store=store, resolver=resolver or build_resolver(store.policy), metrics=metrics,
                          failure_mode=settings.failure_mode)
    metrics.add_source(lambda m: _export_state(m, settings, admission))
    app = Flask(__name__)
    runtime = Runtime(settings, store, metrics, admission)
    app.extensions[EXTENSION] = runtime
    transport.register(app, runtime)
    return app


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
