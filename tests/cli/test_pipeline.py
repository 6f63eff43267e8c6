"""`check` in a repository's pipeline: directory walks that pass over what is not a manifest, --ignore and
--skip-kind, the text output's modes, several outputs in one run, Helm sources under a path prefix, GitLab's
Code Quality report, GitHub's groups, annotation cap and step summary, the JSON format's version and lines,
`mutate`'s exit code, and --kubernetes-version / --feature-gates."""
from __future__ import annotations

import json

import pytest

from tests.schemas import codeclimate_errors, validate_sarif
from webhook.cli.main import main

from .invoke import run

DENIED = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ai}}
spec:
  containers:
    - name: trainer
      image: registry.example.invalid/cuda:12
      env: [{{name: CUDA_VISIBLE_DEVICES, value: "0"}}]
      resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
ALLOWED = """\
apiVersion: v1
kind: Pod
metadata: {name: fine, namespace: ai}
spec:
  containers: [{name: web, image: registry.example.invalid/web:1}]
"""
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ai}\nspec: {ports: [{port: 80}]}\n"
# a DeviceClass serving nvidia.com/gpu through DRA (DRAExtendedResource), and a DRA-cohort pod asking for it so
EXTENDED = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-ext.nvidia.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.nvidia.com'"}}]
  extendedResourceName: nvidia.com/gpu
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ai}
spec:
  nodeSelector: {workload.example.com/gpu-allocation: dra}
  containers:
    - name: trainer
      image: registry.example.invalid/cuda:12
      resources: {limits: {nvidia.com/gpu: 1}}
"""


@pytest.fixture
def repo(tmp_path):
    """A repository as teams have one: manifests beside a values file, a workflow, a package.json, an empty
    file, and hidden folders holding YAML that is no manifest of theirs."""
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(DENIED.format(name="override") + "---\n" + ALLOWED)
    (tmp_path / "k8s" / "service.yaml").write_text(SERVICE)
    (tmp_path / "k8s" / "values.yaml").write_text("replicas: 3\nimage: {tag: v1}\n")
    (tmp_path / "k8s" / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "k8s" / "empty.yaml").write_text("")
    (tmp_path / "package.json").write_text('{"name": "site", "version": "1.0.0"}\n')
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yaml").write_text(DENIED.format(name="hidden"))
    (tmp_path / "k8s" / ".old").mkdir()
    (tmp_path / "k8s" / ".old" / "pod.yaml").write_text(DENIED.format(name="old"))
    return tmp_path


def test_a_repository_walk_skips_hidden_folders_and_documents_without_kind(capsys, monkeypatch, repo):
    code, out, err = run(capsys, monkeypatch, "check", "-o", "json", str(repo))
    assert code == 1, err  # the one denied pod, not an input error
    results = json.loads(out)
    assert sorted(r["name"] for r in results) == ["fine", "override"]  # nothing from .github or .old
    assert err.count("skipped, kind Service") == 1
    code, out, err = run(capsys, monkeypatch, "check", str(repo))
    # values.yaml, list.yaml, empty.yaml and package.json
    assert out.splitlines()[-1].endswith("4 documents without kind skipped"), out


@pytest.mark.parametrize("name, error", [
    pytest.param("values.yaml", "document 1: has no kind", id="values-file"),
    pytest.param("list.yaml", "document 1: not an object (a list)", id="yaml-list"),
    pytest.param("empty.yaml", "file is empty", id="empty-file"),
])
def test_a_file_named_on_the_command_line_keeps_its_error(capsys, monkeypatch, repo, name, error):
    code, out, err = run(capsys, monkeypatch, "check", str(repo / "k8s" / name))
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith("gpu-admission: ") and error in line, err


@pytest.mark.parametrize("args, names, summary", [
    pytest.param(["--ignore", "pod.yaml"], [], "1 file ignored", id="ignore-by-name"),
    pytest.param(["--ignore", "*/k8s/*"], [], "5 files ignored", id="ignore-by-path"),
    pytest.param(["--skip-kind", "Service"], ["fine", "override"], "1 left out by --skip-kind", id="skip-kind"),
    pytest.param(["--skip-kind", "pod,service"], [], "3 left out by --skip-kind", id="skip-kinds-comma"),
])
def test_ignore_and_skip_kind(capsys, monkeypatch, repo, args, names, summary):
    code, out, err = run(capsys, monkeypatch, "check", *args, "-o", "json", "-o", f"text={repo / 'out.txt'}",
                         str(repo / "k8s"))
    assert sorted(r["name"] for r in json.loads(out)) == names
    assert code == (1 if "override" in names else 0), err
    assert summary in (repo / "out.txt").read_text()


@pytest.mark.parametrize("show, ci, lines", [
    pytest.param("all", None, ["✗ pod", "✓ pod", "- service"], id="all"),
    pytest.param("failures", None, ["✗ pod"], id="failures"),
    pytest.param("summary", None, [], id="summary"),
    pytest.param(None, None, ["✗ pod", "✓ pod", "- service"], id="default-on-a-terminal-all"),
    pytest.param(None, "true", ["✗ pod"], id="default-in-ci-failures"),
    pytest.param(None, "false", ["✗ pod", "✓ pod", "- service"], id="ci-false-is-not-ci"),
])
def test_show_modes(capsys, monkeypatch, repo, show, ci, lines):
    if ci is not None:
        monkeypatch.setenv("CI", ci)
    args = ["--show", show] if show else []
    code, out, _ = run(capsys, monkeypatch, "check", *args, str(repo / "k8s" / "pod.yaml"),
                       str(repo / "k8s" / "service.yaml"))
    assert code == 1
    heads = [line for line in out.splitlines() if not line.startswith(" ")][:-1]
    assert [h.split('"')[0].split(" (")[0].strip() for h in heads] == lines
    assert out.splitlines()[-1].startswith("2 objects checked; 1 denied; 1 allowed")


def test_several_outputs_in_one_run(capsys, monkeypatch, repo, tmp_path):
    sarif, junit, quality = tmp_path / "r.sarif", tmp_path / "r.xml", tmp_path / "q.json"
    code, out, err = run(capsys, monkeypatch, "check", "-o", f"sarif={sarif}", "-o", f"junit={junit}",
                         "-o", f"codeclimate={quality}", "-o", "github", str(repo / "k8s" / "pod.yaml"))
    assert code == 1, err
    validate_sarif(json.loads(sarif.read_text()))
    assert "<failure" in junit.read_text()
    assert out.startswith("::error file=")
    code, _, err = run(capsys, monkeypatch, "check", "-o", "json", "-o", "sarif", str(repo / "k8s" / "pod.yaml"))
    assert code == 2 and err.count("\n") == 1 and "at most one --output goes to stdout" in err


def test_codeclimate_for_gitlab(capsys, monkeypatch, repo):
    path = repo / "k8s" / "pod.yaml"
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "codeclimate", str(path))
    assert code == 1
    issues = json.loads(out)
    assert codeclimate_errors(issues) == []
    (issue,) = issues
    assert issue["check_name"] == "visible-devices-override" and issue["severity"] == "critical"
    lines = path.read_text().splitlines()
    assert "CUDA_VISIBLE_DEVICES" in lines[issue["location"]["lines"]["begin"] - 1]
    assert issue["location"]["path"] == str(path).lstrip("/") or issue["location"]["path"].endswith("k8s/pod.yaml")


def test_github_caps_annotations_groups_the_rest_and_writes_the_step_summary(capsys, monkeypatch, tmp_path):
    many = tmp_path / "many.yaml"
    many.write_text("---\n".join(DENIED.format(name=f"p{i}") for i in range(13)))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "github", str(many))
    assert code == 1
    lines = out.splitlines()
    assert sum(1 for line in lines if line.startswith("::error ")) == 10
    start = lines.index(next(line for line in lines if line.startswith("::group::")))
    assert "3 error more" in lines[start] and lines[-1] == "::endgroup::"
    assert len(lines[start + 1:-1]) == 3 and all(line.startswith("error: ") for line in lines[start + 1:-1])
    text = summary.read_text()
    assert "13 objects checked, 13 denied" in text
    assert text.count("| error |") == 13


def test_helm_sources_under_a_path_prefix(capsys, monkeypatch):
    rendered = "---\n# Source: my-chart/templates/pod.yaml\n" + DENIED.format(name="x")
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "github", "--path-prefix", "charts/", "-",
                       stdin=rendered)
    assert code == 1 and " file=charts/my-chart/templates/pod.yaml," in out
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "github", "-", stdin=rendered)
    assert " file=my-chart/templates/pod.yaml," in out


def test_json_has_a_format_version_and_each_finding_s_line(capsys, monkeypatch, repo):
    path = repo / "k8s" / "pod.yaml"
    _, out, _ = run(capsys, monkeypatch, "check", "-o", "json", str(path))
    results = json.loads(out)
    assert {r["formatVersion"] for r in results} == {2}
    (violation,) = [v for r in results for v in r["violations"]]
    assert "CUDA_VISIBLE_DEVICES" in path.read_text().splitlines()[violation["line"] - 1]
    _, out, _ = run(capsys, monkeypatch, "check", "-o", "json", "-", stdin=DENIED.format(name="x"))
    assert json.loads(out)[0]["violations"][0]["line"] == 8  # stdin's own lines


@pytest.mark.parametrize("text, code", [
    pytest.param(DENIED.format(name="x"), 1, id="denied"),
    pytest.param(ALLOWED, 0, id="allowed"),
])
def test_mutate_exits_1_when_something_would_be_denied(capsys, monkeypatch, text, code):
    got, out, _ = run(capsys, monkeypatch, "mutate", "-", stdin=text)
    assert got == code
    assert "kind: Pod" in out  # printed all the same


@pytest.mark.parametrize("args, code, dropped", [
    pytest.param([], 0, False, id="every-field-counts"),
    pytest.param(["--kubernetes-version", "1.34"], 1, True, id="1.34-drops-extendedResourceName"),
    pytest.param(["--kubernetes-version", "1.35"], 1, True, id="1.35-alpha-off"),
    pytest.param(["--kubernetes-version", "1.36"], 0, False, id="1.36-beta-on"),
    pytest.param(["--kubernetes-version", "v1.37.1"], 0, False, id="1.37-ga"),
    pytest.param(["--kubernetes-version", "1.34", "--feature-gates", "DRAExtendedResource=true"], 0, False,
                 id="1.34-gate-on"),
    pytest.param(["--kubernetes-version", "1.36", "--feature-gates", "DRAExtendedResource=false"], 1, True,
                 id="1.36-gate-off"),
])
def test_kubernetes_version_decides_which_fields_count(capsys, monkeypatch, args, code, dropped):
    got, out, err = run(capsys, monkeypatch, "check", *args, "-o", "json", "-", stdin=EXTENDED)
    assert got == code, err
    assert ("spec.extendedResourceName dropped" in err) is dropped
    pod = next(r for r in json.loads(out) if r["kind"] == "Pod")
    assert pod["allowed"] is (code == 0)


@pytest.mark.parametrize("args, message", [
    pytest.param(["--kubernetes-version", "1.33"], "supported are 1.34 to 1.37", id="too-old"),
    pytest.param(["--kubernetes-version", "two"], "not a Kubernetes version", id="not-a-version"),
    pytest.param(["--feature-gates", "DRAExtendedResource"], "expected NAME=true", id="gate-without-value"),
    pytest.param(["--feature-gates", "Nope=true"], "not a gate check reads", id="unknown-gate"),
    pytest.param(["-o", "xml"], "'xml': not one of", id="unknown-format"),
    pytest.param(["-o", "sarif="], "FORMAT=FILE needs a file", id="format-without-file"),
])
def test_bad_options_are_usage_errors(capsys, monkeypatch, args, message):
    with pytest.raises(SystemExit) as exited:
        main(["check", *args, "-"])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
