"""Helpers shared by the test suites: where the repo and the shared fixtures are, and loading manifests."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# Copies of the shared fixtures (real manifests, kubernetes/api testdata, nvidia-smi output), each folder with
# its PROVENANCE.md: a fresh clone with nothing beside it runs the whole suite.
FIXTURES = DATA / "fixtures"
REAL_MANIFESTS = FIXTURES / "real-manifests"
API_TESTDATA = FIXTURES / "k8s-api-testdata"
SEED = DATA / "seed"
H200_LGIP = FIXTURES / "nvidia-smi-h200" / "mig-lgip.txt"
GOLDEN = REPO / "tests" / "golden"
GOLDEN_RULES = GOLDEN / "rules"  # written by the policy tests' `golden` fixture (tests/policy/conftest.py)


def free_port() -> int:
    """A loopback port no one listens on now (the kernel's pick), for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_pids(pgid: int) -> list[int]:
    """The processes of process group `pgid`: a server started in its own session (Linux /proc)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == pgid:
                pids.append(int(pid))
        except OSError:  # gone meanwhile
            continue
    return pids


def load_docs(*paths: Path) -> list[dict]:
    docs = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d)
    return docs


def seed_docs() -> list[dict]:
    return load_docs(*sorted(SEED.glob("*.yaml")))


def compare_golden(lines, path: Path, *, update: bool, suite: str) -> None:
    """The lines against the golden file `path`, one per line; with `update` (pytest --update-golden) the file is
    rewritten instead. A missing or different file fails."""
    lines = list(lines)
    text = "".join(line + "\n" for line in lines)
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), (f"golden file {path.relative_to(REPO)} is missing: run `pytest {suite} "
                           "--update-golden`, then read every new line before committing it")
    assert lines == path.read_text(encoding="utf-8").splitlines(), \
        f"messages differ from {path.relative_to(REPO)} (rerun with --update-golden if the change is intended)"


def wait_serving(answers: Callable[[], bool], process: subprocess.Popen, log: Path, *, timeout: float,
                 interval: float = 0.2) -> None:
    """Call `answers` until it is true; a connection refused or reset (OSError) counts as not yet. Fails with the
    server's log when the process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if answers():
                return
        except OSError:
            pass
        assert process.poll() is None, f"the server exited ({process.returncode}): {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"the server did not answer in {timeout:g} s: {log.read_text()[-3000:]}"
        time.sleep(interval)


def stop_group(process: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM to the process group of a server started with `start_new_session=True` (gunicorn's arbiter and its
    workers), SIGKILL after `grace` seconds."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
