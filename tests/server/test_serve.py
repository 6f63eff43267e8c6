"""`gpu-admission serve` (`make run`) on a fresh machine: development certificates generated, the
webhook served over HTTPS, and the printed curl commands work as printed."""
from __future__ import annotations

import http.client
import json
import os
import shlex
import signal
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import REPO, free_port

from .conftest import policy_text

pytestmark = pytest.mark.slow


def _serve(cwd: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_ADMISSION_", "PROMETHEUS_"))}
    env = {**env, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "webhook.cli.main", "serve", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _curl(command: str, cwd: Path) -> tuple[int, dict]:
    """Run a printed `curl` line (its --cacert, -H, URL and -d) from `cwd` with http.client, as curl would."""
    argv = shlex.split(command)
    assert argv[0] == "curl"
    ca = cwd / argv[argv.index("--cacert") + 1]
    url = next(a for a in argv if a.startswith("https://"))
    body = argv[argv.index("-d") + 1].encode() if "-d" in argv else None
    headers = dict(h.split(": ", 1) for h in (argv[i + 1] for i, a in enumerate(argv) if a == "-H"))
    u = urlsplit(url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=10, context=ssl.create_default_context(cafile=ca))
    conn.request("POST" if body else "GET", f"{u.path}?{u.query}" if u.query else u.path, body, headers)
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return response.status, answer


def _usage(proc: subprocess.Popen) -> list[str]:
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, f"serve stopped: {proc.stderr.read()}"
        lines.append(line.rstrip("\n"))
        if line.startswith("  (the same body"):
            return lines


def _stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        return proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _ready(port: int, ca: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=2,
                                               context=ssl.create_default_context(cafile=str(ca)))
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("serve did not become ready")


def test_serve_on_a_fresh_machine(tmp_path):
    port = free_port()
    proc = _serve(tmp_path, "--bind", f"127.0.0.1:{port}")
    try:
        lines = _usage(proc)
        assert lines[0] == "generated development certificates in certs/ (CA: certs/ca.crt)"
        assert lines[1].startswith(f"gpu-admission webhook on https://127.0.0.1:{port} (policy: the shipped default)")
        certs = tmp_path / "certs"
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in certs.iterdir()} == {
            "ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}
        _ready(port, certs / "ca.crt")
        # The printed commands are relative to where `make run` ran.
        status, ready = _curl(lines[2].strip(), tmp_path)
        assert status == 200 and ready["ready"] is True
        status, review = _curl(" ".join(line.strip().rstrip("\\") for line in lines[3:5]), tmp_path)
        assert status == 200 and review["kind"] == "AdmissionReview"
        assert review["response"]["allowed"] is False
        assert "[visible-devices-override]" in review["response"]["status"]["message"]
    finally:
        code = _stop(proc)
    assert code == 0


def test_serve_reuses_its_certificates_and_takes_a_policy(tmp_path):
    (tmp_path / "policy.yaml").write_text(policy_text("mode: audit"))
    first = _serve(tmp_path, "--bind", f"127.0.0.1:{free_port()}")
    _usage(first)
    _stop(first)
    before = (tmp_path / "certs" / "tls.crt").read_bytes()
    port = free_port()
    proc = _serve(tmp_path, "--bind", f"127.0.0.1:{port}", "--policy", "policy.yaml")
    try:
        lines = _usage(proc)
        assert lines[0].startswith(f"gpu-admission webhook on https://127.0.0.1:{port} (policy: policy.yaml)")
        assert (tmp_path / "certs" / "tls.crt").read_bytes() == before
        _ready(port, tmp_path / "certs" / "ca.crt")
        status, review = _curl(" ".join(line.strip().rstrip("\\") for line in lines[2:4]), tmp_path)
        assert review["response"]["allowed"] is True  # audit mode: reported, not denied
        assert review["response"]["auditAnnotations"]["mode"] == "dry-run"
    finally:
        _stop(proc)


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--policy", "bad.yaml"], "policy bad.yaml does not load:\n  cohorts[0].mechanism:", id="bad-policy"),
    pytest.param(["--cert", "x.crt"], "give --cert and --key together", id="cert-without-key"),
    pytest.param(["--bind", "nowhere"], "bind address must be HOST:PORT", id="bad-bind"),
    pytest.param(["--workers", "0"], "workers must be a positive integer", id="no-workers"),
])
def test_serve_refuses_bad_arguments_with_exit_2(tmp_path, args, message):
    (tmp_path / "bad.yaml").write_text("cohorts: [{name: a, mechanism: magic, nodeLabels: {a: b}}]\n")
    proc = _serve(tmp_path, *args)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.startswith("gpu-admission serve: ") and message in err
