"""The project installed into a fresh virtualenv by the Dockerfile's own build steps, run by a shell as the image's
build runs them (its ENV, its WORKDIR holding what its COPY lines copy, its RUN lines verbatim; only the apt steps,
which give the image its interpreter, are left to the image build): a virtualenv made without pip, the lock's
wheels for this machine's platform with `--require-hashes --no-deps` into it, then the project's own wheel. Then the
image's entry point and `gpu-admission serve`, each answering /readyz: a dependency the lock lacks (gunicorn's gevent
worker imports packaging) stops them here, as it would stop every replica."""
from __future__ import annotations

import os
import subprocess

import pytest
from packaging.utils import canonicalize_name

from tests import dockerfile
from tests.support import REPO, free_port, stop_group
from tests.test_release import VERSION

from .conftest import base_env, build_context, interpreter_dir, run, wait_ready

pytestmark = pytest.mark.slow


def _build_runs() -> list[str]:
    """The build stage's RUN lines after its apt steps: what makes and fills the virtualenv."""
    return [args for keyword, args in dockerfile.build_stage()["steps"] if keyword == "RUN" and "apt-get" not in args]


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheelhouse):
    base = tmp_path_factory.mktemp("as-the-image")
    stage_env = dockerfile.env(dockerfile.build_stage())
    venv = base / "venv"
    env = base_env(base)
    env["PATH"] = os.pathsep.join([str(interpreter_dir(base)), env["PATH"]])
    for key, value in stage_env.items():
        value = value.replace(stage_env["VIRTUAL_ENV"], str(venv))
        env[key] = value.replace("$PATH", env["PATH"])
    src = build_context(base / "src")
    for command in _build_runs():
        # one RUN makes both virtualenvs, builds the project's wheel, installs and byte-compiles everything
        run(["sh", "-ec", command], cwd=src, env=env, timeout=1200)
    return {"venv": venv, "base": base, "env": base_env(base)}


def test_the_steps_run_are_the_dockerfile_s_lock_then_project_installs():
    """What the fixture ran is the Dockerfile's text, so the two cannot drift; and that text makes the virtualenv
    without pip, then installs the lock with hashes and no resolution, then the project without its dependencies
    (tests/chart/test_dockerfile.py reads the options)."""
    (command,) = _build_runs()
    assert command.startswith('python3 -m venv --without-pip "$VIRTUAL_ENV" && ')
    installs = [part.split() for part in command.split("&&") if part.split()[:2] == ["installer/bin/pip", '"$@"']]
    assert [i[-1] for i in installs] == ["requirements.lock", "wheels/gpu_admission-*.whl"]
    assert "--require-hashes" in installs[0]


def _pin(text: str) -> tuple[str, str]:
    name, _, version = text.partition("==")
    return canonicalize_name(name), version


def test_the_virtualenv_holds_the_lock_and_the_project_and_no_pip_or_setuptools(installed):
    venv = installed["venv"]
    listed = run([venv / "bin" / "python", "-c",
                  "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] + '==' + d.version"
                  " for d in m.distributions()))"], env=installed["env"]).stdout.split()
    have = {_pin(line) for line in listed}
    locked = {_pin(line.split()[0]) for line in (REPO / "requirements.lock").read_text().splitlines()
              if "==" in line and not line.startswith((" ", "#"))}
    # every pin at its version, the project, and nothing else: no pip, no setuptools (venv --without-pip)
    assert have == locked | {("gpu-admission", VERSION)}, sorted(have ^ (locked | {("gpu-admission", VERSION)}))
    assert not list(venv.glob("bin/pip*")) and not list(venv.glob("lib/python3*/site-packages/setuptools*"))


def test_the_image_s_entry_point_answers_readyz(installed):
    venv, base = installed["venv"], installed["base"]
    certs = base / "certs"
    run([venv / "bin" / "gpu-admission", "certs", "--out", certs], env=installed["env"])
    port, health = free_port(), free_port()
    workdir = base / "workdir"  # the image's WORKDIR holds no sources (gunicorn puts its cwd first on sys.path)
    workdir.mkdir()
    (base / "tmp").mkdir()
    env = {**installed["env"], **dockerfile.env(dockerfile.stages()[-1])}
    env.update({"PATH": f"{venv / 'bin'}:{os.defpath}", "VIRTUAL_ENV": str(venv), "TMPDIR": str(base / "tmp"),
                "GPU_ADMISSION_BIND": f"127.0.0.1:{port}", "GPU_ADMISSION_HEALTH_BIND": f"127.0.0.1:{health}",
                "GPU_ADMISSION_WORKERS": "1", "GPU_ADMISSION_POLICY": str(REPO / "webhook/config/default.yaml"),
                "GPU_ADMISSION_TLS_CERT": str(certs / "tls.crt"), "GPU_ADMISSION_TLS_KEY": str(certs / "tls.key")})
    entrypoint = dockerfile.entrypoint()
    log = base / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(venv / "bin" / entrypoint[0]), *entrypoint[1:]], cwd=workdir, env=env,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready = wait_ready(port, process=process, log=log, ca=certs / "ca.crt")
        assert ready["ready"] is True and ready["certificates"]["loaded"] is True
        assert wait_ready(health, process=process, log=log)["ready"] is True  # the probes' plain-HTTP port
    finally:
        stop_group(process)


def test_gpu_admission_serve_answers_readyz(installed, tmp_path):
    venv = installed["venv"]
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(venv / "bin" / "gpu-admission"), "serve", "--bind", f"127.0.0.1:{port}",
                                    "--workers", "1"], cwd=tmp_path, env=installed["env"], stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready = wait_ready(port, process=process, log=log, ca=tmp_path / "certs" / "ca.crt")
        assert ready["ready"] is True
    finally:
        stop_group(process)
    assert process.returncode == 0 or process.returncode == -15, log.read_text()[-2000:]
