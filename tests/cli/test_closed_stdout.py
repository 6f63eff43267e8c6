"""`gpu-admission ... | head`: a reader that goes away ends the command quietly, with the status of a command
that SIGPIPE ended (141), never a traceback; a reader that reads everything sees no change."""
from __future__ import annotations

import subprocess
import sys

import pytest

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: train-{i}, namespace: ai}}
spec:
  containers: [{{name: t, image: registry.example.invalid/cuda:12, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
---
"""


@pytest.fixture(scope="module")
def many_pods(tmp_path_factory):
    path = tmp_path_factory.mktemp("manifests") / "pods.yaml"
    path.write_text("".join(POD.format(i=i) for i in range(400)))  # more output than a pipe buffer holds
    return path


def cli(*argv):
    return [sys.executable, "-c", "import sys; from webhook.cli.main import main; sys.exit(main())", *argv]


@pytest.mark.parametrize("argv, small, read_first", [
    pytest.param(("check", "-o", "json"), False, True, id="check-json-after-the-first-lines"),
    pytest.param(("check",), False, True, id="check-text-after-the-first-lines"),
    pytest.param(("mutate",), False, False, id="mutate"),
    pytest.param(("mutate", "-o", "json"), False, False, id="mutate-json"),
    pytest.param(("check", "-o", "json"), True, False, id="output-within-one-buffer"),
])
def test_closed_stdout_ends_quietly(argv, small, read_first, many_pods, tmp_path):
    target = many_pods
    if small:
        target = tmp_path / "one.yaml"
        target.write_text(POD.format(i=0))
    proc = subprocess.Popen(cli(*argv, str(target)), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if read_first:
        proc.stdout.read(1)
    proc.stdout.close()  # what `head` does once it has its lines
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert err == ""
    assert code == 141


def test_reader_that_reads_everything_sees_the_usual_status(many_pods):
    proc = subprocess.run(cli("check", "-o", "json", str(many_pods)), capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == b"" and proc.stdout.rstrip().endswith(b"]")
