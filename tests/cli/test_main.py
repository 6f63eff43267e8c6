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
