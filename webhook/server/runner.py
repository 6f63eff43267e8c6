"""gunicorn as deployed: its settings derived from ours, its hooks, and the app it serves.

The worker (webhook/server/worker.py) is gunicorn's gevent worker with deadlines and a connection cap:
it keeps HTTP/1.1 connections alive over TLS between requests, as the apiserver expects, and a slow
client costs it a socket, not a thread. gevent patches the worker's `socket`, `ssl` and `threading`
when the worker starts, before the app loads: the watchers below then run as greenlets."""
from __future__ import annotations

import dataclasses
import gc
import logging
import os
import shutil
import socket
import ssl
import tempfile
from pathlib import Path

from flask import Flask
from gunicorn import glogging, util
from gunicorn.app.base import BaseApplication

from webhook.config import ConfigError
from webhook.logs import LOGGER, logging_config, python_level
from webhook.objects.lookup import Resolver
from webhook.server.reload import Watcher
from webhook.server.worker import Limits, configured
from webhook.settings import ENV_METRICS_DIR, Settings
from webhook.tls.reloader import reloader_for

log = logging.getLogger(f"{LOGGER}.server")
METRICS_PREFIX = "gpu-admission-metrics-"
METRICS_FLUSH_SECONDS = 1.0  # how old another worker's request counts may be in a scrape


class MetricsDir:
    """Where the workers write their metrics (prometheus-client's multiprocess mode, which a worker
    picks from the environment): made fresh when gunicorn starts, in the master before it forks, and
    removed when gunicorn exits if it was made here. Counters then add up across workers and survive
    worker restarts. Loading the configuration alone touches nothing."""

    def __init__(self, configured: Path | None):
        self.configured = configured
        self.path = configured

    def create(self) -> None:
        if self.configured is None:
            self.path = Path(tempfile.mkdtemp(prefix=METRICS_PREFIX))
        else:
            self.configured.mkdir(parents=True, exist_ok=True)
            for stale in self.configured.glob("*.db"):  # a previous run's pids would count twice
                stale.unlink()
        os.environ[ENV_METRICS_DIR] = str(self.path)

    def remove(self) -> None:
        if self.configured is None and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


class Logger(glogging.Logger):
    """gunicorn's logger without its access log. gunicorn takes any logging config (ours makes its
    lines JSON) as a sign that access lines may be wanted, and builds one for every request before the
    `gunicorn.access` logger drops it: measured with py-spy, 10-14 % of a worker's time under load.
    The webhook logs each decision worth reading itself."""

    def access(self, resp, req, environ, request_time) -> None:
        return None


def options(settings: Settings, metrics: MetricsDir | None = None) -> dict:
    """gunicorn's settings, by their config-file names."""
    metrics = metrics or MetricsDir(settings.metrics_dir)

    def on_starting(server):
        _refuse_taken_address(settings.bind)
        if settings.health_bind:
            _refuse_taken_address(settings.health_bind)
        metrics.create()

    def post_fork(server, worker):
        # prometheus-client picks its value store when first imported; make sure a worker uses the
        # multiprocess one even if something imported it in the master before on_starting ran.
        # Its default asks os.getpid() (a system call) on every update of every value, to notice a
        # fork; a worker never forks, so its pid is read once here (3 system calls fewer a request).
        from prometheus_client import values

        pid = os.getpid()
        values.ValueClass = values.MultiProcessValue(process_identifier=lambda: pid)

    def worker_exit(server, worker):
        # In the worker, after its last request: what it tallied since the last flush is counted too.
        from webhook.app import runtime

        app = getattr(worker, "wsgi", None)  # unset when the app failed to load
        if isinstance(app, Flask):
            runtime(app).metrics.flush()

    def child_exit(server, worker):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, str(metrics.path))

    def on_exit(server):
        metrics.remove()

    limits = Limits(handshake_timeout=settings.handshake_timeout, header_timeout=settings.header_timeout,
                    body_timeout=settings.body_timeout, idle_timeout=settings.keepalive,
                    max_connections=settings.max_connections, max_body_bytes=settings.max_body_bytes,
                    max_buffered_bytes=settings.max_buffered_bytes,
                    health_port=int(settings.health_bind.rpartition(":")[2]) if settings.health_bind else None)
    out = {
        "bind": [settings.bind] + ([settings.health_bind] if settings.health_bind else []),
        "workers": settings.workers,
        "worker_class": configured(limits),
        "worker_connections": settings.max_connections,
        # With several workers, each listens on its own SO_REUSEPORT socket (gunicorn >= 24), and the kernel
        # spreads new connections over them. On one shared socket, whichever worker wakes first takes the
        # connections that arrive together, and a worker keeps them: the apiserver's few long-lived
        # connections piled onto one or two workers (measured: all 8 of bench/load.py's on one worker in 1
        # run of 5, 7+1 in others), leaving a CPU idle. With one worker the master holds the socket, so
        # that while a crashed worker is replaced, new connections wait in the backlog instead of being
        # refused.
        "reuse_port": settings.workers > 1,
        "keepalive": settings.keepalive,
        "graceful_timeout": settings.graceful_timeout,
        "timeout": 30,
        # The root filesystem is read-only; the heartbeat files go to memory.
        "worker_tmp_dir": "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir(),
        "loglevel": python_level(settings.log_level).lower(),
        "logconfig_dict": logging_config(settings.log_level, settings.log_format),
        "errorlog": "-",
        "accesslog": None,
        "logger_class": Logger,
        "proc_name": "gpu-admission",
        "control_socket_disable": True,  # gunicorn >= 25 would otherwise create a socket under $HOME
        "on_starting": on_starting,
        "post_fork": post_fork,
        "worker_exit": worker_exit,
        "child_exit": child_exit,
        "on_exit": on_exit,
    }
    if settings.tls:
        out.update(certfile=str(settings.tls_cert), keyfile=str(settings.tls_key), ssl_context=ssl_context)
    return out


def _refuse_taken_address(bind: str) -> None:
    """Exit if something already listens on `bind`. SO_REUSEPORT would otherwise let a second server
    (another `make run`, say) share the port silently, each getting part of the connections."""
    host, port = util.parse_address(bind)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind((host, port))
        except OSError as exc:
            log.critical("cannot listen on the address; not serving", extra={"fields": {
                "event": "address-unavailable", "bind": bind, "error": exc.strerror or str(exc)}})
            raise SystemExit(1) from None


def ssl_context(config, default_ssl_context_factory):
    """gunicorn's hook, called for every new connection: the current context of the reloader (which
    makes its own contexts: TLS 1.2 at least, no client certificates)."""
    return reloader_for(Path(config.certfile), Path(config.keyfile)).context()


def build_app(settings: Settings, *, resolver: Resolver | None = None) -> Flask:
    """The app of one worker, with the thread that reloads the policy when its file changes."""
    from webhook.app import create_app, runtime  # imported in the worker, after on_starting

    # The Kubernetes client (urllib3) binds `ssl`'s names when imported: only in the worker, after gevent
    # patched them, or its lookups would block the worker's event loop.
    from webhook.lookups.kubeconfig import ClusterConfigError

    try:
        app = create_app(settings, resolver=resolver)
    except ConfigError as exc:
        log.critical("policy does not load; not serving", extra={"fields": {
            "event": "policy-invalid", "path": exc.source, "errors": exc.errors}})
        raise
    except ClusterConfigError as exc:
        log.critical("the policy's lookups are on but no cluster configuration was found; not serving",
                     extra={"fields": {"event": "lookups-unavailable", "error": str(exc)}})
        raise
    if settings.tls_cert is not None and settings.tls_key is not None:  # TLS: load the pair now, or no worker boots
        try:
            reloader_for(settings.tls_cert, settings.tls_key)
        except ssl.SSLError as exc:
            log.critical("serving certificate does not load; not serving", extra={"fields": {
                "event": "certificate-invalid", "cert": str(settings.tls_cert), "error": str(exc)}})
            raise
    if settings.policy_path is not None:
        Watcher(runtime(app).store.refresh, settings.reload_interval, "policy-watch").start()
    # Requests are tallied in the worker and reach its metrics file here (webhook/metrics.py).
    Watcher(runtime(app).metrics.flush, METRICS_FLUSH_SECONDS, "metrics-flush").start()
    log.info("webhook ready", extra={"fields": {"event": "started", "policy": runtime(app).store.status.source,
                                                "tls": settings.tls}})
    # Everything loaded so far lives as long as the worker: keep the collector from walking it again
    # on every full collection (a measurable share of a request's CPU time: bench/README.md).
    gc.freeze()
    return app


class Server(BaseApplication):
    """gunicorn in this process, configured exactly as the deployed container's (`serve`)."""

    def __init__(self, settings: Settings, *, resolver: Resolver | None = None):
        self.settings = settings
        self.resolver = resolver
        self.metrics = MetricsDir(settings.metrics_dir)
        super().__init__()

    def load_config(self) -> None:
        for name, value in options(self.settings, self.metrics).items():
            if name in self.cfg.settings:
                self.cfg.set(name, value)

    def load(self) -> Flask:  # in the worker, after on_starting made the metrics directory
        return build_app(dataclasses.replace(self.settings, metrics_dir=self.metrics.path), resolver=self.resolver)
