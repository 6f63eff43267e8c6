"""A real server for connection-level tests: gunicorn as the container runs it
(`--config python:webhook.server.gunicorn_conf webhook.server.wsgi:app`, TLS, the GPU_ADMISSION_* variables),
on a free local port, and a client that calls it as the apiserver does."""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import socket
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import free_port, stop_group, wait_serving
from webhook.tls import certs

from .apiserver import ApiServer
from .conftest import policy_text

SERVICE, NAMESPACE = "gpu-admission", "gpu-admission"
SERVER_NAME = f"{SERVICE}.{NAMESPACE}.svc"


def raise_open_file_limit() -> int:
    """Thousands of connections need thousands of descriptors, here and in the server (which inherits them)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


@dataclass
class Served:
    proc: subprocess.Popen
    port: int
    ca: Path
    log: Path

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def connection(self, timeout: float = 10) -> http.client.HTTPSConnection:
        conn = http.client.HTTPSConnection(SERVER_NAME, self.port, timeout=timeout, context=self.context())
        conn.sock = self.context().wrap_socket(socket.create_connection(("127.0.0.1", self.port), timeout),
                                               server_hostname=SERVER_NAME)
        return conn

    def tls_socket(self, timeout: float = 10) -> ssl.SSLSocket:
        return self.context().wrap_socket(socket.create_connection(("127.0.0.1", self.port), timeout),
                                          server_hostname=SERVER_NAME)

    def api(self, conn: http.client.HTTPSConnection) -> ApiServer:
        def transport(path: str, body: bytes, headers: dict):
            conn.request("POST", path, body, headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()

        return ApiServer(transport)

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def established(self) -> int:
        """Connections the server side holds open on its port (Linux /proc: state 01, ESTABLISHED)."""
        count = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == self.port:
                    count += 1
        return count


@contextlib.contextmanager
def serve(tmp_path: Path, *, app: str = "webhook.server.wsgi:app", **env: str):
    """The server with the deployed defaults, `env` (GPU_ADMISSION_* names without the prefix) over them; `app`
    another WSGI app (a module in `tmp_path`, the server's cwd, is importable)."""
    raise_open_file_limit()
    bundle = certs.generate(SERVICE, NAMESPACE)
    for name, data in (("tls.crt", bundle.cert), ("tls.key", bundle.key), ("ca.crt", bundle.ca_cert)):
        (tmp_path / name).write_bytes(data)
    (tmp_path / "policy.yaml").write_text(policy_text())
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_ADMISSION_", "PROMETHEUS_"))}
    environ.update(GPU_ADMISSION_BIND=f"127.0.0.1:{port}", GPU_ADMISSION_TLS_CERT=str(tmp_path / "tls.crt"),
                   GPU_ADMISSION_TLS_KEY=str(tmp_path / "tls.key"), GPU_ADMISSION_POLICY=str(tmp_path / "policy.yaml"),
                   GPU_ADMISSION_WORKERS="2", TMPDIR=str(tmp_path))
    environ.update({f"GPU_ADMISSION_{k}": v for k, v in env.items()})
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "python:webhook.server.gunicorn_conf",
                                 app], cwd=tmp_path, env=environ, stdout=stderr, stderr=stderr,
                                start_new_session=True)
    served = Served(proc, port, tmp_path / "ca.crt", log)
    try:
        def answers() -> bool:
            conn = served.connection(timeout=2)
            conn.request("GET", "/readyz")
            ok = conn.getresponse().status == 200
            conn.close()
            return ok

        wait_serving(answers, proc, log, timeout=20, interval=0.1)
        yield served
    finally:
        stop_group(proc)
