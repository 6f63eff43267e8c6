"""Installs as users and the image make them, into fresh virtualenvs, from the wheelhouse that `make wheelhouse`
downloads once (the lock's files, checked by hash, and the build backend): pip is given no index, so no test reaches
PyPI."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests import dockerfile
from tests.support import REPO, wait_serving

WHEELHOUSE = REPO / "build" / "wheelhouse"
# pip told where to install from, as `make image` tells the image's build (the Dockerfile's build arguments)
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="session")
def wheelhouse() -> Path:
    if not (WHEELHOUSE / ".complete").is_file():
        pytest.fail("no wheelhouse: run `make wheelhouse` (make test does)", pytrace=False)
    return WHEELHOUSE


def base_env(home: Path) -> dict[str, str]:
    """A process environment that carries nothing of the caller's virtualenv or pip settings."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "GPU_ADMISSION_")) and k not in ("PATH", "HOME")}
    return {**keep, "HOME": str(home), "PATH": os.defpath, **OFFLINE}


def interpreter_dir(base: Path) -> Path:
    """A directory holding `python3`: the interpreter this suite runs on, as the name the Dockerfile calls."""
    bin_dir = base / "interpreter"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    return bin_dir


def build_context(dest: Path) -> Path:
    """The files the build stage's COPY lines take from the build context, where they put them."""
    dest.mkdir(parents=True, exist_ok=True)
    for keyword, args in dockerfile.build_stage()["steps"]:
        if keyword != "COPY" or args.startswith("--from"):
            continue
        *sources, target = args.split()
        for source in sources:
            to = dest / target / (Path(source).name if target.endswith("/") else "")
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, to, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / source, to)
    return dest


def run(argv: list, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, check=False,
                          **kwargs)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def wait_ready(port: int, *, process: subprocess.Popen, log: Path, ca: Path | None = None, timeout: float = 60) -> dict:
    """GET /readyz until it answers 200 (over HTTPS, verified against `ca`, when a CA is given); its JSON."""
    ready: dict = {}

    def answers() -> bool:
        if ca is None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        else:
            connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=5,
                                                     context=ssl.create_default_context(cafile=str(ca)))
        connection.request("GET", "/readyz")
        response = connection.getresponse()
        body = response.read()
        connection.close()
        if response.status == 200:
            ready.update(json.loads(body))
        return response.status == 200

    wait_serving(answers, process, log, timeout=timeout)
    return ready
