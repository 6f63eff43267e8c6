"""The server as deployed: `gunicorn --config python:webhook.server.gunicorn_conf webhook.server.wsgi:app`
over TLS on a free local port, configured by the GPU_ADMISSION_* variables, its certificate and policy
mounted as the kubelet mounts a Secret and a ConfigMap. Called the way the apiserver calls it: one
kept-alive HTTPS connection, the certificate verified against the CA for the Service's name."""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from tests.support import free_port, group_pids
from webhook.server.runner import METRICS_FLUSH_SECONDS
from webhook.tls import certs

from .apiserver import ApiServer
from .conftest import Volume, policy_text

pytestmark = pytest.mark.slow
SERVICE, NAMESPACE = "gpu-admission", "gpu-admission"
SERVER_NAME = f"{SERVICE}.{NAMESPACE}.svc"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
       "spec": {"containers": [{"name": "trainer", "image": "registry.example.invalid/secret-image:1",
                                "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "s3cr3t-env-value"}],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


class Connection(http.client.HTTPSConnection):
    """One HTTPS connection to 127.0.0.1 that verifies the server as `server_name`, and counts how
    often it had to (re)connect: the apiserver keeps its connections alive."""

    def __init__(self, port: int, ca: Path, server_name: str = SERVER_NAME):
        super().__init__(server_name, port, timeout=10, context=ssl.create_default_context(cafile=str(ca)))
        self.opened = 0

    def connect(self):
        self.opened += 1
        raw = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)

    def transport(self, path: str, body: bytes, headers: dict):
        self.request("POST", path, body, headers)
        response = self.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    def get(self, path: str) -> tuple[int, bytes]:
        self.request("GET", path)
        response = self.getresponse()
        return response.status, response.read()

    def served_serial(self) -> int:
        return x509.load_der_x509_certificate(self.sock.getpeercert(binary_form=True)).serial_number


@dataclass
class Deployed:
    proc: subprocess.Popen
    port: int
    ca: Path
    tls: Volume
    policy: Volume
    log: Path
    bundle: certs.Bundle

    def connection(self) -> Connection:
        return Connection(self.port, self.ca)

    def fresh_get(self, path: str) -> tuple[int, bytes, int]:
        conn = self.connection()
        try:
            status, body = conn.get(path)
            return status, body, conn.served_serial()
        finally:
            conn.close()


def _listeners(pgid: int, port: int) -> dict[int, int]:
    """How many sockets listening on `port` each process of the group holds (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    held: dict[int, int] = {}
    for pid in group_pids(pgid):
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if count := sum(link in inodes for link in links):
            held[pid] = count
    return held


def _wait(condition, timeout: float = 15.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
            if value:
                return value
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def deployed(tmp_path):
    bundle = certs.generate(SERVICE, NAMESPACE)
    tls = Volume(tmp_path / "tls", {"tls.crt": bundle.cert, "tls.key": bundle.key, "ca.crt": bundle.ca_cert})
    (tmp_path / "ca.crt").write_bytes(bundle.ca_cert)  # the webhook configurations' caBundle
    policy = Volume(tmp_path / "policy", {"policy.yaml": policy_text()})
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_ADMISSION_", "PROMETHEUS_"))}
    env.update(GPU_ADMISSION_BIND=f"127.0.0.1:{port}", GPU_ADMISSION_TLS_CERT=str(tmp_path / "tls" / "tls.crt"),
               GPU_ADMISSION_TLS_KEY=str(tmp_path / "tls" / "tls.key"),
               GPU_ADMISSION_POLICY=str(tmp_path / "policy" / "policy.yaml"), GPU_ADMISSION_WORKERS="2",
               GPU_ADMISSION_RELOAD_INTERVAL="0.2", GPU_ADMISSION_LOG_LEVEL="info", TMPDIR=str(tmp_path))
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "python:webhook.server.gunicorn_conf",
                                 "webhook.server.wsgi:app"], cwd=tmp_path, env=env, stdout=stderr, stderr=stderr,
                                start_new_session=True)
    server = Deployed(proc, port, tmp_path / "ca.crt", tls, policy, log, bundle)
    try:
        _wait(lambda: server.fresh_get("/readyz")[0] == 200, what="gunicorn to serve /readyz")
        yield server
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_deployed_server(deployed):
    # The apiserver's connection: verified for the Service's name, kept alive across calls.
    conn = deployed.connection()
    api = ApiServer(conn.transport)
    first = api.admit(POD)
    assert not first.allowed and "[visible-devices-override]" in first.validate.message
    assert first.mutate.patch and first.reinvoked is not None
    assert conn.opened == 1 and len(api.calls) == 3
    old_serial = conn.served_serial()
    # Each worker listens on its own socket (the kernel spreads connections over them); the master on none.
    holders = _listeners(deployed.proc.pid, deployed.port)
    assert sorted(holders.values()) == [1, 1] and deployed.proc.pid not in holders

    # Renew the serving certificate (same CA) as cert-manager and the kubelet do, while calls go on.
    failures, sent = [], []
    stop = threading.Event()

    def keep_calling():
        while not stop.is_set():
            try:
                sent.append(api.send("/validate", api.review(POD)).allowed)
            except Exception as exc:
                failures.append(repr(exc))

    caller = threading.Thread(target=keep_calling)
    caller.start()
    try:
        renewed = certs.issue(deployed.bundle.ca_cert, deployed.bundle.ca_key, SERVICE, NAMESPACE)
        deployed.tls.update({"tls.crt": renewed.cert, "tls.key": renewed.key, "ca.crt": renewed.ca_cert})
        new_serial = x509.load_pem_x509_certificate(renewed.cert).serial_number
        _wait(lambda: deployed.fresh_get("/healthz")[2] == new_serial, what="the renewed certificate")
        time.sleep(0.3)
    finally:
        stop.set()
        caller.join(10)
    assert failures == [] and len(sent) > 5 and not any(sent)
    assert conn.opened == 1 and conn.served_serial() == old_serial  # same connection throughout
    assert new_serial != old_serial

    # A ConfigMap update with an invalid policy: refused, the last good one stays, /readyz and the metric say so.
    deployed.policy.update({"policy.yaml": "mode: sideways\n"})
    ready = _wait(lambda: _refused(deployed), what="/readyz to report the refused policy")
    assert ready["ready"] is True and ready["policy"]["inForce"] == "last good policy"
    status, metrics = conn.get("/metrics")
    assert status == 200 and b"gpu_admission_policy_reload_ok 0.0" in metrics
    # The build info of the installed package, summed over the workers' files as one series.
    from importlib import metadata
    assert f'gpu_admission_build_info{{version="{metadata.version("gpu-admission")}"}} 1.0'.encode() in metrics

    # Every call so far counted once, whichever worker answered it (each writes its own file, the other
    # worker's tallies within a flush interval).
    def counted() -> float:
        text = conn.get("/metrics")[1].decode()
        return sum(s.value for family in text_string_to_metric_families(text)
                   if family.name == "gpu_admission_requests" for s in family.samples if s.name.endswith("_total"))

    _wait(lambda: counted() >= len(api.calls), timeout=5 * METRICS_FLUSH_SECONDS, what="every call counted")
    assert counted() == len(api.calls)
    assert not api.admit(POD).allowed
    # Fixed: every worker takes it.
    deployed.policy.update({"policy.yaml": policy_text("mode: audit")})
    _wait(lambda: all(api.admit(POD).allowed for _ in range(6)), what="the audit policy in every worker")
    assert conn.opened == 1

    # Graceful shutdown on SIGTERM.
    conn.close()
    deployed.proc.send_signal(signal.SIGTERM)
    assert deployed.proc.wait(timeout=30) == 0

    # Structured logs: every line is one JSON object; no env var value, no object content.
    lines = deployed.log.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    events = {r.get("event") for r in records}
    assert {"certificate-loaded", "policy-refused", "policy-reloaded", "admission"} <= events
    served = {r["serial"] for r in records if r.get("event") in ("certificate-loaded", "certificate-reloaded")}
    assert f"{new_serial:x}" in served and f"{old_serial:x}" in served
    text = deployed.log.read_text()
    assert "s3cr3t-env-value" not in text and "secret-image" not in text


def _refused(deployed: Deployed) -> dict | None:
    status, body, _ = deployed.fresh_get("/readyz")
    ready = json.loads(body)
    return ready if status == 200 and "refused" in ready["policy"] else None
