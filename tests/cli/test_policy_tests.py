"""`gpu-admission test`: the docs' example passes, a wrong expectation fails with what came instead, and a test
file that cannot be run is one line and exit 2."""
from __future__ import annotations

import shutil

import pytest

from tests.support import REPO
from webhook.cli.main import main

EXAMPLE = REPO / "docs" / "examples" / "policy-tests"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_docs_example_passes(capsys):
    code, out, err = run(capsys, "test", str(REPO / "docs" / "examples"))
    assert code == 0, out + err
    assert out.splitlines()[-1] == "1 test file; 3 passed; 0 failed"


@pytest.fixture
def example(tmp_path):
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    return root


def _expect(example, results: str) -> None:
    test = example / "gpu-admission-test.yaml"
    text = test.read_text()
    test.write_text(text[:text.index("results:")] + "results:\n" + results)


@pytest.mark.parametrize("results, line", [
    pytest.param("  - {kind: Pod, name: override, allowed: true}\n",
                 "FAIL team GPU pods: Pod */override: allowed is false, expected true", id="allowed-wrong"),
    pytest.param("  - {kind: Pod, name: rooted, allowed: false, rules: [run-as-root, hide-gpus]}\n",
                 "FAIL team GPU pods: Pod */rooted: rules ['run-as-root'], expected ['hide-gpus', 'run-as-root']",
                 id="rules-wrong"),
    pytest.param("  - {kind: Pod, name: trainer, allowed: true, patch: false}\n",
                 "FAIL team GPU pods: Pod */trainer: patch made, expected none", id="patch-wrong"),
    pytest.param("  - {kind: Pod, name: absent, allowed: true}\n",
                 "FAIL team GPU pods: Pod */absent: 0 objects match, expected one", id="no-such-object"),
    pytest.param("  - {kind: Pod, namespace: other, name: trainer, allowed: true}\n",
                 "FAIL team GPU pods: Pod other/trainer: 0 objects match, expected one", id="other-namespace"),
])
def test_a_wrong_expectation_fails(capsys, example, results, line):
    _expect(example, results)
    code, out, _ = run(capsys, "test", str(example))
    assert code == 1
    assert line in out.splitlines()
    assert out.splitlines()[-1] == "1 test file; 0 passed; 1 failed"


@pytest.mark.parametrize("text, message", [
    pytest.param("results: []\nresources: [k8s/pods.yaml]\n", "results: expected a non-empty list", id="no-results"),
    pytest.param("resources: [k8s/pods.yaml]\nresults: [{kind: Pod, name: x}]\n",
                 "results[0]: expected kind, name and allowed", id="result-without-allowed"),
    pytest.param("resources: [k8s/nope.yaml]\nresults: [{kind: Pod, name: x, allowed: true}]\n",
                 "no such file or directory", id="missing-manifest"),
    pytest.param("policy: [policy/nope.yaml]\nresources: [k8s/pods.yaml]\nresults: [{kind: Pod, name: x, "
                 "allowed: true}]\n", "policy:", id="missing-policy"),
    pytest.param("resources: [k8s/pods.yaml]\nresult: []\n", "unknown key 'result'", id="unknown-key"),
    pytest.param("results: [\n", "not valid YAML", id="not-yaml"),
    pytest.param("- a\n", "expected a mapping", id="not-a-mapping"),
])
def test_a_test_file_that_cannot_run_is_one_line_and_exit_2(capsys, example, text, message):
    (example / "gpu-admission-test.yaml").write_text(text)
    code, out, err = run(capsys, "test", str(example))
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("gpu-admission test: ") and message in line, err


def test_no_test_file_is_an_error(capsys, tmp_path):
    code, _, err = run(capsys, "test", str(tmp_path))
    assert code == 2 and "no gpu-admission-test.yaml found" in err
