"""How the webhook server is configured: one frozen value, built from CLI arguments or from the
deployment's environment, and only when a function is called (never at import time)."""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024
LOG_LEVELS = ("debug", "info", "warn", "error")
# Python's names, accepted too (and read as ours).
LOG_LEVEL_ALIASES = {"warning": "warn", "critical": "error"}
LOG_FORMATS = ("json", "text")
FAILURE_MODES = ("allow", "deny")

# The deployment contract (docs/architecture.md, The deployment contract; the Helm chart builds against these names).
ENV_POLICY = "GPU_ADMISSION_POLICY"
ENV_TLS_CERT = "GPU_ADMISSION_TLS_CERT"
ENV_TLS_KEY = "GPU_ADMISSION_TLS_KEY"
ENV_BIND = "GPU_ADMISSION_BIND"
ENV_WORKERS = "GPU_ADMISSION_WORKERS"
ENV_MAX_BODY = "GPU_ADMISSION_MAX_BODY_BYTES"
ENV_LOG_LEVEL = "GPU_ADMISSION_LOG_LEVEL"
# Beyond the contract, with defaults that need no setting.
ENV_LOG_FORMAT = "GPU_ADMISSION_LOG_FORMAT"
ENV_HEALTH_BIND = "GPU_ADMISSION_HEALTH_BIND"
ENV_MAX_CONNECTIONS = "GPU_ADMISSION_MAX_CONNECTIONS"
ENV_MAX_BUFFERED = "GPU_ADMISSION_MAX_BUFFERED_BYTES"
ENV_HANDSHAKE_TIMEOUT = "GPU_ADMISSION_HANDSHAKE_TIMEOUT"
ENV_HEADER_TIMEOUT = "GPU_ADMISSION_HEADER_TIMEOUT"
ENV_BODY_TIMEOUT = "GPU_ADMISSION_BODY_TIMEOUT"
ENV_IDLE_TIMEOUT = "GPU_ADMISSION_IDLE_TIMEOUT"
ENV_ON_ERROR = "GPU_ADMISSION_ON_ERROR"
ENV_RELOAD_INTERVAL = "GPU_ADMISSION_RELOAD_INTERVAL"
ENV_METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's own name for it

DEPLOYED_POLICY = "/etc/gpu-admission/policy/policy.yaml"
DEPLOYED_TLS_CERT = "/etc/gpu-admission/tls/tls.crt"
DEPLOYED_TLS_KEY = "/etc/gpu-admission/tls/tls.key"
DEPLOYED_BIND = "0.0.0.0:8443"


class SettingsError(ValueError):
    """A setting is invalid; the message names the setting (never echoes its value)."""


@dataclass(frozen=True, slots=True)
class Settings:
    # None: the shipped default policy. A path that does not exist yet also serves the shipped
    # default, and is watched, so that a policy appearing there later is loaded.
    policy_path: Path | None = None
    tls_cert: Path | None = None  # None: plain HTTP (tests, or TLS terminated in front)
    tls_key: Path | None = None
    bind: str = "127.0.0.1:8443"
    # A second listener, plain HTTP, serving only /healthz and /readyz with a connection cap of its own:
    # the kubelet's probes then never compete with the admission port's connections (the chart sets it).
    health_bind: str | None = None
    workers: int = 2
    max_body_bytes: int = 3 * MiB
    # Open connections per worker; past it a new connection is reset at once. A connection costs a
    # socket and its buffers (webhook/server/worker.py), so the cap is high: the deadlines below are
    # what keep slow clients from piling up.
    max_connections: int = 4096
    # All request bodies a worker holds at once (read, or waiting for the app): bounds the memory that
    # many clients sending at once can take. Past it a body gets 503 and its connection closes.
    max_buffered_bytes: int = 64 * MiB
    # Deadlines of a connection's phases, in seconds. The apiserver calls with `?timeout=10s` (at most
    # the webhook's timeoutSeconds, 5 s in the chart) and sends a request at once: anything slower is
    # not the apiserver.
    handshake_timeout: float = 5.0
    header_timeout: float = 5.0
    body_timeout: float = 10.0
    log_level: str = "info"
    log_format: str = "json"
    # What a request gets when evaluating it raised (not one rule: the engine applies each rule's
    # onError itself): "allow" with a warning, or "deny".
    failure_mode: str = "allow"
    reload_interval: float = 2.0  # seconds between checks of the policy file
    # Set under gunicorn with several workers: each worker writes its metrics there and /metrics
    # sums them, so a scrape answered by any worker sees the whole pod.
    metrics_dir: Path | None = None
    # How long a kept-alive connection may sit idle between requests. Longer than the apiserver's
    # idle-connection timeout (90 s), so the client, not the server, closes idle connections: a
    # server-side close racing a new request fails that webhook call.
    keepalive: int = 120
    graceful_timeout: int = 25  # below Kubernetes' default terminationGracePeriodSeconds (30)

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise SettingsError("give both the TLS certificate and its key, or neither")
        _check_bind(self.bind)
        if self.health_bind is not None:
            _check_bind(self.health_bind)
            if self.health_bind.rpartition(":")[2] == self.bind.rpartition(":")[2]:
                raise SettingsError("the health address must use another port than the bind address")
        for name in ("workers", "max_body_bytes", "max_connections", "max_buffered_bytes", "keepalive",
                     "graceful_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingsError(f"{name} must be a positive integer")
        if isinstance(self.max_buffered_bytes, int) and self.max_buffered_bytes <= self.max_body_bytes:
            raise SettingsError("max_buffered_bytes must be larger than max_body_bytes: a body of the largest "
                                "size must fit")
        object.__setattr__(self, "log_level", LOG_LEVEL_ALIASES.get(self.log_level, self.log_level))
        for name in ("handshake_timeout", "header_timeout", "body_timeout"):
            if not 0 < getattr(self, name) <= 300:
                raise SettingsError(f"{name} must be > 0 and <= 300 seconds")
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(f"log level must be one of {', '.join(LOG_LEVELS)}")
        if self.log_format not in LOG_FORMATS:
            raise SettingsError(f"log format must be one of {', '.join(LOG_FORMATS)}")
        if self.failure_mode not in FAILURE_MODES:
            raise SettingsError(f"failure mode must be one of {', '.join(FAILURE_MODES)}")
        if not 0 < self.reload_interval <= 300:
            raise SettingsError("reload interval must be > 0 and <= 300 seconds")

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """The settings of a deployed container (the chart sets these variables)."""
        return cls(
            policy_path=Path(env.get(ENV_POLICY) or DEPLOYED_POLICY),
            tls_cert=Path(env.get(ENV_TLS_CERT) or DEPLOYED_TLS_CERT),
            tls_key=Path(env.get(ENV_TLS_KEY) or DEPLOYED_TLS_KEY),
            bind=env.get(ENV_BIND) or DEPLOYED_BIND,
            health_bind=env.get(ENV_HEALTH_BIND) or None,
            workers=_int(env, ENV_WORKERS, default_workers()),
            max_body_bytes=_int(env, ENV_MAX_BODY, 3 * MiB),
            max_connections=_int(env, ENV_MAX_CONNECTIONS, 4096),
            max_buffered_bytes=_int(env, ENV_MAX_BUFFERED, 64 * MiB),
            handshake_timeout=_float(env, ENV_HANDSHAKE_TIMEOUT, 5.0),
            header_timeout=_float(env, ENV_HEADER_TIMEOUT, 5.0),
            body_timeout=_float(env, ENV_BODY_TIMEOUT, 10.0),
            keepalive=_int(env, ENV_IDLE_TIMEOUT, 120),
            log_level=_choice(env, ENV_LOG_LEVEL, "info", LOG_LEVELS + tuple(LOG_LEVEL_ALIASES)),
            log_format=_choice(env, ENV_LOG_FORMAT, "json", LOG_FORMATS),
            failure_mode=_choice(env, ENV_ON_ERROR, "allow", FAILURE_MODES),
            reload_interval=_float(env, ENV_RELOAD_INTERVAL, 2.0),
            metrics_dir=Path(env[ENV_METRICS_DIR]) if env.get(ENV_METRICS_DIR) else None,
        )


def default_workers() -> int:
    """Two worker processes per CPU. A worker keeps the connections it accepted, and the
    apiserver keeps its connections for long: with one worker per CPU, the connections that happened
    to land on one worker leave the other CPUs idle (measured with bench/load.py: throughput halved
    in some runs); with two per CPU, an uneven spread still keeps every CPU busy."""
    return 2 * available_cpus()


def available_cpus() -> int:
    """CPUs this process may use: its affinity, capped by a cgroup v2 CPU limit (a pod's
    `resources.limits.cpu`), which `os.cpu_count()` ignores."""
    count = len(os.sched_getaffinity(0))
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, count)


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a positive integer") from None
    if value < 1:
        raise SettingsError(f"{name} must be a positive integer")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds") from None


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    value = (env.get(name) or default).lower()
    if value not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}")
    return value


def _check_bind(bind: str) -> None:
    host, sep, port = bind.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise SettingsError("bind address must be HOST:PORT, e.g. 0.0.0.0:8443")
