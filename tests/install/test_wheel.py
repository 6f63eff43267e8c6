"""`pip install gpu-admission` as a user gets it: the wheel built from the sources, installed into a fresh virtualenv
with its dependencies (from the wheelhouse, as from PyPI). The light CLI: `--version` and `check` on a manifest work,
and neither the Kubernetes client nor the web server stack is installed."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_release import VERSION

from .conftest import base_env, build_context, run

pytestmark = pytest.mark.slow

DENIED = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers:
  - name: c
    image: cuda:12
    env: [{name: CUDA_VISIBLE_DEVICES, value: "0"}]
"""


@pytest.fixture(scope="module")
def cli(tmp_path_factory, wheelhouse):
    base = tmp_path_factory.mktemp("wheel")
    env = base_env(base)
    dist = base / "dist"
    # the wheel, built with its build backend from the wheelhouse (pyproject's build-system)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", dist, build_context(base / "src")], env=env)
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == f"gpu_admission-{VERSION}-py3-none-any.whl"
    venv = base / "venv"
    run([sys.executable, "-m", "venv", venv], env=env)
    run([venv / "bin" / "pip", "install", "--quiet", wheel], env=env)
    return {"venv": venv, "env": env, "base": base}


def test_version(cli):
    done = run([cli["venv"] / "bin" / "gpu-admission", "--version"], env=cli["env"])
    assert done.stdout.strip() == f"gpu-admission {VERSION}"


def test_check_denies_a_manifest(cli, tmp_path):
    (tmp_path / "pod.yaml").write_text(DENIED)
    done = subprocess.run([str(cli["venv"] / "bin" / "gpu-admission"), "check", "pod.yaml"], cwd=tmp_path,
                          env=cli["env"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert "[visible-devices-override]" in done.stdout and "1 object checked; 1 denied" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("module", [pytest.param(m, id=m) for m in ("kubernetes", "flask", "gunicorn", "gevent")])
def test_the_light_cli_installs_no_server_or_cluster_packages(cli, module):
    done = run([cli["venv"] / "bin" / "python", "-c", f"import importlib.util as u; print(u.find_spec({module!r}))"],
               env=cli["env"], cwd=cli["base"])
    assert done.stdout.strip() == "None"


def test_a_server_command_names_its_extra(cli):
    done = subprocess.run([str(cli["venv"] / "bin" / "gpu-admission"), "serve"], cwd=cli["base"], env=cli["env"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "pip install 'gpu-admission[server]'" in done.stderr
    assert "Traceback" not in done.stderr
