"""`check -o sarif|junit|github` as CI systems read them: each validated against the official schema (OASIS'
SARIF 2.1.0 schema, Jenkins' junit-10.xsd; tests/data/fixtures/schemas), over the real manifests, the seed's
and NVIDIA's two real charts rendered by Helm and piped to `check -` (tests/data/fixtures/charts); findings
located at the line of the offending field; exit codes with and without --fail-on-warn."""
from __future__ import annotations

import functools
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import helm_python
import pytest
import yaml

from tests.schemas import validate_junit, validate_sarif
from tests.support import DATA, FIXTURES, REAL_MANIFESTS, SEED
from webhook import yamlread
from webhook.cli.main import main
from webhook.rules import DEFAULT_ACTIONS, MUTATIONS, Action, Rule

from .invoke import run

# NVIDIA's two charts, whole (tests/data/fixtures/charts, PROVENANCE.md there): the namespace each installs into,
# and the values its users pass (the DRA driver refuses to render its GPU resources without the override, which
# says that the device plugin is not on the same nodes: a DRA cohort's nodes).
CHARTS = FIXTURES / "charts"
REAL_CHARTS = {"nvidia-device-plugin": ("nvidia-device-plugin", {}),
               "dra-driver-nvidia-gpu": ("nvidia-dra-driver-gpu", {"gpuResourcesEnabledOverride": True})}
NARROWED = ("--set", "exemptNamespaces=[kube-system]")  # NVIDIA's namespaces no longer exempt

DENIED_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: override
  namespace: ai
spec:
  containers:
    - name: trainer
      image: registry.example.invalid/cuda:12
      env:
        - name: HOME
          value: /tmp
        - name: CUDA_VISIBLE_DEVICES
          value: "0,1,2,3"
      resources:
        limits:
          nvidia.com/gpu: 1
"""
# Its benign twin: the same pod without the override.
ALLOWED_POD = DENIED_POD.replace('        - name: CUDA_VISIBLE_DEVICES\n          value: "0,1,2,3"\n', "")
# A warning only (run-as-root is warn by default), on a pod bound for the device-plugin cohort.
WARNED_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: rooted, namespace: ai}
spec:
  nodeSelector: {workload.example.com/gpu-allocation: device-plugin}
  runtimeClassName: nvidia
  containers:
    - name: trainer
      image: registry.example.invalid/cuda:12
      securityContext: {runAsUser: 0}
      resources: {limits: {nvidia.com/gpu: 1}}
"""


@functools.cache
def chart_rendering(chart: str) -> str:
    """`helm template r tests/data/fixtures/charts/<chart> -n <its namespace>`, as Helm writes it."""
    namespace, values = REAL_CHARTS[chart]
    manifests = helm_python.Chart.load(str(CHARTS / chart)).render(values, name="r", namespace=namespace)
    return "".join(f"---\n# Source: {path}\n{text.rstrip()}\n"
                   for path, text in sorted(manifests.items()) if text.strip())


def _inputs(tmp_path, name: str) -> tuple[list[str], str | None]:
    """Paths (or - with the text for stdin) of each input set."""
    if name == "real-manifests":
        return [str(REAL_MANIFESTS)], None
    if name == "seed":
        return [str(SEED / "dra-manifests.yaml"), str(SEED / "smoke-jobs.yaml")], None
    if name in REAL_CHARTS:  # `helm template ... | check -`, NVIDIA's namespaces not exempt so that findings come
        return [*NARROWED, "-"], chart_rendering(name)
    path = tmp_path / "pods.yaml"
    path.write_text(DENIED_POD + "---\n" + WARNED_POD + "---\n" + ALLOWED_POD.replace("override", "fine"))
    return [str(path)], None


INPUT_SETS = ["real-manifests", "seed", *REAL_CHARTS, "pods"]


@pytest.mark.parametrize("inputs", [pytest.param(n, id=n) for n in INPUT_SETS])
def test_sarif_is_valid_sarif_2_1_0_with_a_descriptor_per_rule(capsys, monkeypatch, tmp_path, inputs):
    paths, stdin = _inputs(tmp_path, inputs)
    code, out, err = run(capsys, monkeypatch, "check", "-o", "sarif", *paths, stdin=stdin)
    log = json.loads(out)
    validate_sarif(log)
    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.value for r in Rule]
    for descriptor in rules:
        rule = Rule(descriptor["id"])
        assert descriptor["helpUri"].endswith(f"/docs/rules/{rule.value}.md")
        expected = "note" if rule in MUTATIONS else {Action.ENFORCE: "error",
                                                     Action.WARN: "warning"}[DEFAULT_ACTIONS[rule]]
        assert descriptor["defaultConfiguration"]["level"] == expected
    results = sarif_run["results"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"].endswith(rules[result["ruleIndex"]]["helpUri"])
    text_code, text_out, _ = run(capsys, monkeypatch, "check", *paths, stdin=stdin)
    assert code == text_code  # the format changes nothing of the verdict
    assert len(results) == sum(1 for line in text_out.splitlines() if re.match(r"^    (deny|warn|audit|would "
                                                                               r"deny|patch) ", line))


@pytest.mark.parametrize("inputs", [pytest.param(n, id=n) for n in INPUT_SETS])
def test_junit_is_valid_for_jenkins_with_a_case_per_object_and_a_failure_per_denial(capsys, monkeypatch, tmp_path,
                                                                                    inputs):
    paths, stdin = _inputs(tmp_path, inputs)
    _, out, _ = run(capsys, monkeypatch, "check", "-o", "junit", *paths, stdin=stdin)
    validate_junit(out)
    _, js, _ = run(capsys, monkeypatch, "check", "-o", "json", *paths, stdin=stdin)
    results = json.loads(js)
    root = ET.fromstring(out)
    cases = root.findall("testsuite/testcase")
    assert len(cases) == len(results)
    assert int(root.get("tests")) == len(results)
    assert int(root.get("failures")) == sum(1 for r in results if not r["allowed"])
    # a case is its suite (the file) and its title: NVIDIA's three GFD DaemonSets share a name
    by_title = {(c.get("classname"), c.get("name")): c for c in cases}
    assert len(by_title) == len(cases)
    for r in results:
        title = f"{r['kind']} {r['namespace']}/{r['name']}" if r["namespace"] else f"{r['kind']} {r['name']}"
        case = by_title[(r["source"]["file"] if r["source"]["file"] != "-" else "<stdin>", title)]
        denials = [v for v in r["violations"] if v["action"] == "enforce" and not r["allowed"]]
        assert [f.get("type") for f in case.findall("failure")] == [v["rule"] for v in denials]
        others = [v for v in r["violations"] if v not in denials]
        out_text = "".join(e.text or "" for e in case.findall("system-out"))
        assert all(v["message"] in out_text for v in others)


@pytest.mark.parametrize("inputs", [pytest.param(n, id=n) for n in INPUT_SETS])
def test_github_annotations_are_workflow_commands(capsys, monkeypatch, tmp_path, inputs):
    paths, stdin = _inputs(tmp_path, inputs)
    _, out, _ = run(capsys, monkeypatch, "check", "-o", "github", *paths, stdin=stdin)
    _, js, _ = run(capsys, monkeypatch, "check", "-o", "json", *paths, stdin=stdin)
    findings = [v for r in json.loads(js) for v in r["violations"]]
    lines = out.splitlines()
    # GitHub shows 10 annotations of each kind per step: the rest are plain lines in one group after them
    overflow: list[str] = []
    if "::endgroup::" in lines:
        start = next(i for i, line in enumerate(lines) if line.startswith("::group::"))
        assert lines[-1] == "::endgroup::" and lines[start].endswith("annotations of each kind per step; all are "
                                                                     "in the step summary)")
        lines, overflow = lines[:start], lines[start + 1:-1]
    assert len(lines) + len(overflow) == len(findings)
    kinds = Counter(line.split(" ", 1)[0] for line in lines)
    assert all(n <= 10 for n in kinds.values()), kinds
    assert all(kinds[k] == 10 for k in kinds if any(o.startswith(k.strip(":") + ": ") for o in overflow))
    shown: Counter = Counter()
    annotated = []
    for f in findings:  # the first 10 of each kind, in order
        shown[f["action"]] += 1
        if shown[f["action"]] <= 10:
            annotated.append(f)
    findings = annotated
    command = re.compile(r"^::(error|warning|notice)( (file=[^,:]+,(line=\d+,)?)?title=gpu-admission "
                         r"[a-z-]+)?::[^\r\n]+$")
    for line, finding in zip(lines, findings):
        assert command.match(line), line
        assert f"title=gpu-admission {finding['rule']}::" in line
        assert line.startswith({"enforce": "::error", "warn": "::warning", "audit": "::notice"}[finding["action"]])
        if stdin is None:
            assert re.search(r" file=[^,]+,line=\d+,", line), line
        else:  # `helm template` output: the template each document came from, without a line
            assert f" file={inputs}/templates/" in line and ",line=" not in line


def test_findings_are_located_at_the_line_of_the_offending_field(capsys, monkeypatch, tmp_path):
    path = tmp_path / "pods.yaml"
    path.write_text(DENIED_POD + "---\n" + WARNED_POD)
    lines = path.read_text().splitlines()
    _, out, _ = run(capsys, monkeypatch, "check", "-o", "sarif", str(path))
    located = {}
    for result in json.loads(out)["runs"][0]["results"]:
        (location,) = result["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == path.as_uri()
        located[result["ruleId"]] = lines[location["physicalLocation"]["region"]["startLine"] - 1]
        assert location["logicalLocations"][0]["fullyQualifiedName"].startswith("Pod/ai/")
    assert located["visible-devices-override"].strip() == "- name: CUDA_VISIBLE_DEVICES"
    assert located["run-as-root"].strip() == "securityContext: {runAsUser: 0}"


@pytest.mark.parametrize("text, document, item, path, expected", [
    pytest.param(DENIED_POD, 1, None, "spec.containers[0].env[1]", "- name: CUDA_VISIBLE_DEVICES", id="list-element"),
    pytest.param(DENIED_POD, 1, None, "spec.containers[0].resources.limits.nvidia.com/gpu", "nvidia.com/gpu: 1",
                 id="key-with-dots-and-slash"),
    pytest.param(DENIED_POD, 1, None, "spec.containers[0].securityContext", "- name: trainer",
                 id="absent-field-its-parent"),
    pytest.param(DENIED_POD, 1, None, "spec.containers[7]", "containers:", id="index-past-the-end"),
    pytest.param("a: 1\n---\n" + DENIED_POD, 2, None, "metadata.name", "name: override", id="second-document"),
    pytest.param("kind: List\nitems:\n  - kind: Pod\n    metadata: {name: a}\n  - kind: Pod\n    spec:\n"
                 "      hostNetwork: true\n", 1, 1, "spec.hostNetwork", "hostNetwork: true", id="list-item"),
    pytest.param('{"kind": "Pod",\n "metadata": {"annotations":\n  {"cdi.k8s.io/gpu": "x"}}}', 1, None,
                 'metadata.annotations["cdi.k8s.io/gpu"]', '{"cdi.k8s.io/gpu": "x"}}}', id="json-quoted-key"),
])
def test_field_paths_map_to_lines(text, document, item, path, expected):
    from webhook.cli.lines import LineFinder
    line = LineFinder(text).line(document, path, item)
    assert text.splitlines()[line - 1].strip() == expected


def test_a_document_that_does_not_compose_has_no_line():
    from webhook.cli.lines import LineFinder
    assert LineFinder("a: [\n").line(1, "a") is None


# chart -> (object -> allowed once NVIDIA's namespaces are not exempt, the rules that deny, the templates denied);
# OWNERS: what the shipped policy refuses in NVIDIA's exempt namespaces, a chart's defaults selecting every node
# (a second allocation owner beside the other cohort; the cohort's selector makes it pass: test_nvidia_charts.py)
CHART_VERDICTS = {
    "nvidia-device-plugin": (
        {"r-nvidia-device-plugin": False, "r-nvidia-device-plugin-mps-control-daemon": False},
        {"device-access-bypass", "visible-devices-override", "allocation-owner"},
        {"nvidia-device-plugin/templates/daemonset-device-plugin.yml",
         "nvidia-device-plugin/templates/daemonset-mps-control-daemon.yml"}),
    "dra-driver-nvidia-gpu": (
        {"dra-driver-nvidia-gpu-controller": True, "dra-driver-nvidia-gpu-kubelet-plugin": False,
         **{f"{c}.nvidia.com": True for c in ("gpu", "mig", "vfio.gpu", "compute-domain-daemon",
                                              "compute-domain-default-channel")}},
        {"device-access-bypass", "visible-devices-override", "allocation-owner"},
        {"dra-driver-nvidia-gpu/templates/kubeletplugin.yaml"}),
}
OWNERS = {"nvidia-device-plugin": {"r-nvidia-device-plugin"},
          "dra-driver-nvidia-gpu": {"dra-driver-nvidia-gpu-kubelet-plugin"}}


@pytest.mark.parametrize("chart", list(REAL_CHARTS))
def test_helm_template_of_a_real_chart_piped_to_check(capsys, monkeypatch, chart):
    """NVIDIA's charts rendered by Helm: their node agents, privileged by design (hostPath plugin sockets,
    NVIDIA_* env), admitted in the namespace the shipped policy exempts; denied once the exemption is narrowed
    away with --set, while the DRA driver's DeviceClasses and controller stay allowed."""
    rendering = chart_rendering(chart)
    allowed, rules, templates = CHART_VERDICTS[chart]
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "json", *NARROWED, "-", stdin=rendering)
    assert code == 1
    results = json.loads(out)
    assert {r["name"]: r["allowed"] for r in results} == allowed
    assert {v["rule"] for r in results if not r["allowed"] for v in r["violations"]} == rules
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "sarif", *NARROWED, "-", stdin=rendering)
    validate_sarif(json.loads(out))
    locations = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["locations"][0]["physicalLocation"]
                 for r in json.loads(out)["runs"][0]["results"]}
    # Each finding at the template its document came from (Helm's `# Source:` comment), without a
    # region: the rendered document's lines are not the template's.
    assert set(locations) == templates
    assert all("region" not in p for p in locations.values())
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "json", "-", stdin=rendering)
    results = json.loads(out)
    assert code == 1
    assert {r["name"] for r in results if not r["allowed"]} == OWNERS[chart]
    assert {v["rule"] for r in results for v in r["violations"] if v["action"] == "enforce"} == {"allocation-owner"}


def test_input_errors_are_reported_in_every_format(capsys, monkeypatch, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\nmetadata: [\n")
    good = tmp_path / "good.yaml"
    good.write_text(ALLOWED_POD)
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "sarif", str(broken), str(good))
    assert code == 2
    log = json.loads(out)
    validate_sarif(log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "not valid YAML" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "junit", str(broken), str(good))
    validate_junit(out)
    assert ET.fromstring(out).find("testsuite[@name='inputs']/testcase/error") is not None
    code, out, _ = run(capsys, monkeypatch, "check", "-o", "github", str(broken), str(good))
    assert out.startswith("::error title=gpu-admission input::") and code == 2


DRY_RUN = "mode: dry-run\n"


@pytest.mark.parametrize("manifest, overlay, flags, expected", [
    pytest.param(ALLOWED_POD, None, [], 0, id="clean"),
    pytest.param(ALLOWED_POD, None, ["--fail-on-warn"], 0, id="clean-fail-on-warn"),
    pytest.param(WARNED_POD, None, [], 0, id="warning"),
    pytest.param(WARNED_POD, None, ["--fail-on-warn"], 1, id="warning-fail-on-warn"),
    pytest.param(DENIED_POD, None, [], 1, id="denied"),
    pytest.param(DENIED_POD, None, ["--fail-on-warn"], 1, id="denied-fail-on-warn"),
    pytest.param(DENIED_POD, DRY_RUN, [], 0, id="dry-run-would-deny"),
    pytest.param(DENIED_POD, DRY_RUN, ["--fail-on-warn"], 1, id="dry-run-would-deny-fail-on-warn"),
    # The patches the mutating webhook would make (runtime class, security defaults) are no warning.
    pytest.param(ALLOWED_POD, "rules: {default-runtime-class: warn}\n", ["--fail-on-warn"], 0,
                 id="announced-patch-fail-on-warn"),
    pytest.param("kind: Pod\nmetadata: [\n", None, ["--fail-on-warn"], 2, id="input-error"),
])
@pytest.mark.parametrize("output", ["text", "json", "sarif", "junit", "github"])
def test_exit_codes(capsys, monkeypatch, tmp_path, manifest, overlay, flags, expected, output):
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    config = []
    if overlay:
        (tmp_path / "overlay.yaml").write_text(overlay)
        config = ["--config", str(tmp_path / "overlay.yaml")]
    code, _, _ = run(capsys, monkeypatch, "check", "-o", output, *config, *flags, str(path))
    assert code == expected


def test_version(capsys, monkeypatch):
    from importlib import metadata
    installed = metadata.version("gpu-admission")
    assert main(["--version"]) == 0  # answered before any command is imported
    assert capsys.readouterr().out == f"gpu-admission {installed}\n"
    with pytest.raises(SystemExit) as exit_:  # beside a command, argparse's own --version
        main(["--version", "check"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"gpu-admission {installed}\n"
    assert run(capsys, monkeypatch, "version") == (0, f"gpu-admission {installed}\n", "")


def _yaml_files() -> list:
    # Helm templates are not YAML before rendering.
    files = sorted(p for p in DATA.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                   and not any(part == "templates" or part.endswith("-templates") for part in p.parts))
    return [pytest.param(p, id=str(p.relative_to(DATA))) for p in files]


@pytest.mark.parametrize("path", _yaml_files())
def test_the_c_loader_reads_the_same_documents(path):
    text = path.read_text(encoding="utf-8")
    assert yamlread.FAST_LOADER is yaml.CSafeLoader  # PyYAML's wheels are built with libyaml
    pure = list(yaml.load_all(text, Loader=yaml.SafeLoader))
    assert yamlread.load_all(text) == (pure, None)


def test_the_c_loader_gives_check_the_same_results(capsys, monkeypatch):
    rendering = chart_rendering("nvidia-device-plugin") + chart_rendering("dra-driver-nvidia-gpu")
    args = ["check", "-o", "sarif", str(REAL_MANIFESTS), str(SEED), "-"]
    fast = run(capsys, monkeypatch, *args, stdin=rendering)
    monkeypatch.setattr(yamlread, "FAST_LOADER", yaml.SafeLoader)
    monkeypatch.setattr("webhook.cli.lines.FAST_LOADER", yaml.SafeLoader)
    assert run(capsys, monkeypatch, *args, stdin=rendering) == fast


@pytest.mark.parametrize("text", [
    pytest.param("kind: Pod\nmetadata: [\n", id="unclosed-flow"),
    pytest.param("a: 1\n---\nb: *nope\n", id="unknown-alias-in-second-document"),
    pytest.param("a: b: c\n", id="mapping-in-plain-scalar"),
])
def test_yaml_errors_are_the_pure_python_loader_s(text):
    documents, error = yamlread.load_all(text)
    pure: list = []
    with pytest.raises(yaml.YAMLError) as expected:
        for doc in yaml.load_all(text, Loader=yaml.SafeLoader):
            pure.append(doc)
    assert documents == pure and str(error) == str(expected.value)


@pytest.mark.parametrize("text, document, expected", [
    pytest.param("---\n# Source: c/templates/a.yaml\nkind: Pod\n", 1, "c/templates/a.yaml", id="helm-document"),
    pytest.param("---\n# Source: c/templates/a.yaml\n\n---\nkind: Pod\n", 2, "c/templates/a.yaml",
                 id="after-an-empty-document"),
    pytest.param("---\n# Source: c/templates/a.yaml\nkind: Pod\n---\nkind: Job\n", 2, None,
                 id="not-the-previous-document-s"),
    pytest.param("kind: Pod\n", 1, None, id="plain-manifest"),
])
def test_helm_source_of_a_document(text, document, expected):
    from webhook.cli.lines import LineFinder
    assert LineFinder(text).helm_source(document) == expected


GOLDEN_CI = DATA.parent / "golden" / "ci"


@pytest.mark.parametrize("output, suffix", [("sarif", "sarif.json"), ("junit", "junit.xml"), ("github", "github.txt")])
def test_golden_output(capsys, monkeypatch, tmp_path, request, output, suffix):
    """The whole output for one file (a denied, a warned and a clean pod), as a person reviews it; the
    package version is written as VERSION. `pytest --update-golden` rewrites them (read the diff)."""
    from importlib import metadata
    monkeypatch.chdir(tmp_path)
    Path("pods.yaml").write_text(DENIED_POD + "---\n" + WARNED_POD + "---\n" + ALLOWED_POD.replace("override", "fine"))
    _, out, _ = run(capsys, monkeypatch, "check", "-o", output, "pods.yaml")
    out = out.replace(f'"version": "{metadata.version("gpu-admission")}"', '"version": "VERSION"')
    path = GOLDEN_CI / f"pods.{suffix}"
    if request.config.getoption("update_golden", default=False):
        GOLDEN_CI.mkdir(parents=True, exist_ok=True)
        path.write_text(out, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run pytest tests/cli --update-golden and read it"
    assert out == path.read_text(encoding="utf-8")
