"""Settings from the deployment's environment (the chart's contract), checked, and read only when asked."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from gunicorn import glogging
from gunicorn.config import Config

from tests.support import REPO
from webhook import settings as s
from webhook.app import create_app, runtime
from webhook.server.runner import MetricsDir, options
from webhook.server.worker import AdmissionWorker, Limits
from webhook.settings import Settings, SettingsError


def test_deployed_defaults():
    got = Settings.from_env({})
    assert got.policy_path == Path("/etc/gpu-admission/policy/policy.yaml")
    assert got.tls_cert == Path("/etc/gpu-admission/tls/tls.crt")
    assert got.tls_key == Path("/etc/gpu-admission/tls/tls.key")
    assert got.bind == "0.0.0.0:8443"
    assert got.workers == 2 * s.available_cpus() >= 2
    assert got.max_body_bytes == 3145728
    assert got.log_level == "info" and got.failure_mode == "allow" and got.metrics_dir is None


def test_every_variable_is_read():
    env = {s.ENV_POLICY: "/p.yaml", s.ENV_TLS_CERT: "/c", s.ENV_TLS_KEY: "/k", s.ENV_BIND: "127.0.0.1:9443",
           s.ENV_WORKERS: "3", s.ENV_MAX_BODY: "1024", s.ENV_LOG_LEVEL: "DEBUG",
           s.ENV_ON_ERROR: "deny", s.ENV_RELOAD_INTERVAL: "0.5", s.ENV_METRICS_DIR: "/tmp/m",
           s.ENV_MAX_CONNECTIONS: "50", s.ENV_HANDSHAKE_TIMEOUT: "1.5", s.ENV_HEADER_TIMEOUT: "2",
           s.ENV_BODY_TIMEOUT: "3", s.ENV_IDLE_TIMEOUT: "100", s.ENV_MAX_BUFFERED: "8192"}
    assert Settings.from_env(env) == Settings(
        policy_path=Path("/p.yaml"), tls_cert=Path("/c"), tls_key=Path("/k"), bind="127.0.0.1:9443", workers=3,
        max_body_bytes=1024, log_level="debug", failure_mode="deny", reload_interval=0.5,
        metrics_dir=Path("/tmp/m"), max_connections=50, handshake_timeout=1.5, header_timeout=2.0,
        body_timeout=3.0, keepalive=100, max_buffered_bytes=8192)


@pytest.mark.parametrize(("env", "message"), [
    pytest.param({s.ENV_WORKERS: "many"}, "GPU_ADMISSION_WORKERS must be a positive integer", id="workers-word"),
    pytest.param({s.ENV_WORKERS: "0"}, "GPU_ADMISSION_WORKERS must be a positive integer", id="workers-zero"),
    pytest.param({s.ENV_MAX_BODY: "-1"}, "GPU_ADMISSION_MAX_BODY_BYTES must be a positive integer", id="body-negative"),
    pytest.param({s.ENV_LOG_LEVEL: "loud"}, "GPU_ADMISSION_LOG_LEVEL must be one of debug", id="log-level"),
    pytest.param({s.ENV_ON_ERROR: "maybe"}, "GPU_ADMISSION_ON_ERROR must be one of allow, deny", id="on-error"),
    pytest.param({s.ENV_RELOAD_INTERVAL: "soon"}, "GPU_ADMISSION_RELOAD_INTERVAL must be a number", id="interval"),
    pytest.param({s.ENV_RELOAD_INTERVAL: "0"}, "reload interval must be > 0", id="interval-zero"),
    pytest.param({s.ENV_BIND: "9443"}, "bind address must be HOST:PORT", id="bind-no-host"),
    pytest.param({s.ENV_MAX_CONNECTIONS: "0"}, "GPU_ADMISSION_MAX_CONNECTIONS must be a positive integer",
                 id="no-connections"),
    pytest.param({s.ENV_BODY_TIMEOUT: "0"}, "body_timeout must be > 0", id="body-timeout-zero"),
    pytest.param({s.ENV_HEADER_TIMEOUT: "later"}, "GPU_ADMISSION_HEADER_TIMEOUT must be a number", id="header-word"),
    pytest.param({s.ENV_BIND: "host:http"}, "bind address must be HOST:PORT", id="bind-port-word"),
    pytest.param({s.ENV_MAX_BUFFERED: "1048576"}, "max_buffered_bytes must be larger than max_body_bytes",
                 id="budget-below-one-body"),
    pytest.param({s.ENV_MAX_BUFFERED: "none"}, "GPU_ADMISSION_MAX_BUFFERED_BYTES must be a positive integer",
                 id="budget-word"),
])
def test_bad_values_are_named_not_echoed(env, message):
    with pytest.raises(SettingsError) as exc:
        Settings.from_env(env)
    assert message in str(exc.value)
    assert not any(v in str(exc.value) for v in env.values() if len(v) > 1)


def test_cert_and_key_go_together():
    with pytest.raises(SettingsError, match="both the TLS certificate and its key"):
        Settings(tls_cert=Path("/c"))


def test_nothing_reads_the_environment_at_import():
    """Importing every module of the server with nonsense in the environment raises nothing; only
    the gunicorn config and wsgi modules, when loaded, read it."""
    code = ("import webhook.app, webhook.admission.http, webhook.admission.record, webhook.admission.codec, "
            "webhook.admission.handlers, "
            "webhook.metrics, "
            "webhook.settings, webhook.server.runner, webhook.tls.reloader, webhook.tls.certs, "
            "webhook.server.reload, webhook.config.store, webhook.logs, webhook.cli.serve, webhook.cli.certs")
    env = {s.ENV_WORKERS: "many", s.ENV_LOG_LEVEL: "loud", s.ENV_BIND: "nowhere", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, check=True, timeout=60)
    failed = subprocess.run([sys.executable, "-c", "import webhook.server.gunicorn_conf"], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert failed.returncode != 0 and "GPU_ADMISSION_WORKERS must be a positive integer" in failed.stderr


@pytest.fixture
def metrics_env(monkeypatch, tmp_path):
    """on_starting sets PROMETHEUS_MULTIPROC_DIR for gunicorn's workers and makes a directory for
    them: undo the one, and keep the other in the test's own directory."""
    monkeypatch.setenv(s.ENV_METRICS_DIR, "")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def _free_bind() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_gunicorn_options_for_the_deployment(tmp_path, metrics_env):
    settings = Settings(tls_cert=tmp_path / "c", tls_key=tmp_path / "k", bind="0.0.0.0:8443", workers=2)
    opts = options(settings)
    worker = opts["worker_class"]  # gevent: a slow client costs a socket, not a thread
    assert issubclass(worker, AdmissionWorker) and worker.limits == Limits(
        handshake_timeout=5.0, header_timeout=5.0, body_timeout=10.0, idle_timeout=120, max_connections=4096,
        max_body_bytes=3 * 1024 * 1024, max_buffered_bytes=64 * 1024 * 1024)
    assert opts["reuse_port"] is True  # a listening socket per worker: the kernel spreads the connections
    # One worker: the master holds the listening socket, so a worker's crash leaves connections queued, not refused.
    assert options(Settings(workers=1))["reuse_port"] is False
    assert opts["keepalive"] > 90  # the apiserver's idle connections live 90 s: it closes them, not us
    assert opts["bind"] == ["0.0.0.0:8443"] and opts["workers"] == 2
    assert opts["certfile"] == str(tmp_path / "c") and callable(opts["ssl_context"])
    assert opts["worker_tmp_dir"] in ("/dev/shm", tempfile.gettempdir())  # the root filesystem is read-only
    assert opts["accesslog"] is None and opts["logconfig_dict"]["formatters"]["json"]
    assert "certfile" not in options(Settings())  # plain HTTP when no certificate is given
    assert list(tmp_path.iterdir()) == []  # loading the configuration touches nothing


def test_no_access_line_is_built(tmp_path, metrics_env):
    """gunicorn builds an access line per request whenever a logging config is set, unless its logger is ours."""
    opts = options(Settings())
    cfg = Config()
    for name in ("logger_class", "logconfig_dict", "accesslog", "errorlog", "loglevel"):
        cfg.set(name, opts[name])
    logger = cfg.logger_class(cfg)
    # The stock logger would read the response and request here (and fail on None); ours reads nothing.
    assert logger.access(None, None, {}, None) is None
    assert issubclass(cfg.logger_class, glogging.Logger)  # gunicorn's error log as before


def test_the_metrics_directory_lives_as_long_as_gunicorn(tmp_path, metrics_env):
    metrics = MetricsDir(None)
    opts = options(Settings(bind=_free_bind()), metrics)
    opts["on_starting"](None)
    assert metrics.path.parent == tmp_path and metrics.path.is_dir()
    assert os.environ[s.ENV_METRICS_DIR] == str(metrics.path)
    opts["on_exit"](None)
    assert not metrics.path.exists()


def test_a_configured_metrics_directory_is_cleared_not_removed(tmp_path, metrics_env):
    (tmp_path / "counter_123.db").write_bytes(b"stale")
    opts = options(Settings(metrics_dir=tmp_path, bind=_free_bind()))
    opts["on_starting"](None)
    assert not list(tmp_path.glob("*.db"))
    opts["on_exit"](None)
    assert tmp_path.is_dir()


def test_an_address_in_use_stops_gunicorn_before_anything_starts(tmp_path, metrics_env, caplog):
    """With SO_REUSEPORT a second server could share the port silently; on_starting refuses instead."""
    caplog.set_level("CRITICAL", logger="gpu_admission")
    metrics = MetricsDir(None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(SystemExit) as stopped:
            options(Settings(bind=bind), metrics)["on_starting"](None)
    assert stopped.value.code == 1 and metrics.path is None  # no metrics directory made
    (line,) = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "address-unavailable"]
    assert line["bind"] == bind and "in use" in line["error"]


def test_a_worker_counts_its_last_requests_when_it_exits(tmp_path, metrics_env):
    """gunicorn calls worker_exit in the worker after its last request: the tallies not yet flushed."""
    app = create_app(Settings())
    metrics = runtime(app).metrics
    metrics.observe_request("validate", "Pod", "allowed", 0.0004)
    labels = {"endpoint": "validate", "kind": "Pod", "result": "allowed", "operation": "other", "dry_run": "false"}
    assert metrics.registry.get_sample_value("gpu_admission_requests_total", labels) is None  # tallied only
    options(Settings())["worker_exit"](None, SimpleNamespace(wsgi=app))
    assert metrics.registry.get_sample_value("gpu_admission_requests_total", labels) == 1.0
    options(Settings())["worker_exit"](None, SimpleNamespace())  # an app that never loaded: nothing to do
