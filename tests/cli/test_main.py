"""The CLI's entry: a command imports only what it needs, so that `host` runs on a GPU host that has the
policy's own dependencies and no Kubernetes client, web server or certificate library."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import FIXTURES, REPO

HEAVY = ("kubernetes", "flask", "gunicorn", "cryptography", "jsonpatch", "prometheus_client")
PROBE = """
import io, json, sys
from contextlib import redirect_stdout
from webhook.cli.main import main
with redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _run(*argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [
    pytest.param(("host", "inventory", "--from", str(FIXTURES / "nvidia-smi-h200")), id="host-inventory"),
    pytest.param(("host", "check", "--cohort", "dra", "--from", str(FIXTURES / "nvidia-smi-h200")), id="host-check"),
    pytest.param(("version",), id="version"),
])
def test_a_command_imports_only_what_it_needs(argv):
    probe = _run(*argv)
    assert probe["code"] in (0, 1, 2)
    assert not set(HEAVY) & set(probe["modules"]), probe["modules"]


def test_a_command_that_needs_them_still_has_them(tmp_path):
    # The twin: mutate applies its patches with jsonpatch, imported as before.
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n")
    probe = _run("mutate", str(pod))
    assert probe["code"] == 0 and "jsonpatch" in probe["modules"]


def test_help_lists_every_command(capsys):
    from webhook.cli.main import COMMANDS, main
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)


SERVER_AND_CLUSTER = ("kubernetes", "urllib3", "flask", "werkzeug", "gunicorn", "gevent", "cryptography",
                      "prometheus_client")
WITHOUT_EXTRAS = f"""
import sys
for name in {SERVER_AND_CLUSTER!r}:
    sys.modules[name] = None  # as if not installed: importing it raises ModuleNotFoundError
from webhook.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("argv", "code", "said"), [
    pytest.param(("check", str(FIXTURES.parent / "pods")), 0, "1 object checked", id="check-light"),
    pytest.param(("--version",), 0, "gpu-admission ", id="version-light"),
    pytest.param(("--help",), 0, "(needs: pip install 'gpu-admission[server]')", id="help-names-the-extra"),
    pytest.param(("audit", "-n", "ml"), 2,
                 "gpu-admission audit: needs the 'cluster' extra (kubernetes is not installed): "
                 "pip install 'gpu-admission[cluster]'", id="audit-needs-cluster"),
    pytest.param(("export", "--check"), 2, "needs the 'cluster' extra", id="export-check-needs-cluster"),
    pytest.param(("serve",), 2, "pip install 'gpu-admission[server]'", id="serve-needs-server"),
    pytest.param(("certs", "--out", "unused"), 2, "gpu-admission certs: needs the 'server' extra", id="certs"),
])
def test_the_light_cli_runs_without_the_extras_and_names_the_one_a_command_needs(argv, code, said):
    """`pip install gpu-admission` brings neither the Kubernetes client nor the server stack: the manifest
    commands run, and a command that needs an extra says which in one line, exit 2, never a traceback."""
    done = subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == code, done.stderr
    assert said in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    if code == 2:
        assert len(done.stderr.strip().splitlines()) == 1
