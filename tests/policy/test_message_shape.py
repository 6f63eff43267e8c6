"""A finding's line leads with what to do, keeps its why to one clause, and links to the docs of the installed
release: the shape of webhook/policy/messages.py over every golden message, the link's tag, and the reason in
full where the line leaves it out (`check --explain`, SARIF's rule help)."""
from __future__ import annotations

import json
import re
import tomllib

import pytest
import yaml

from tests.support import GOLDEN, GOLDEN_RULES, REPO
from webhook.cli.main import main
from webhook.config import default_policy, parse_policy
from webhook.locale import LANGUAGES
from webhook.policy.definitions import REASONS
from webhook.policy.messages import render
from webhook.rules import VALIDATIONS, Rule
from webhook.version import REPOSITORY, docs_base_url, docs_ref

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
TAG = f"{REPOSITORY}/blob/v{VERSION}/docs/rules"
# what, fix, why, rule, link: the separators of the line in each language (messages.LINE and its translation)
SHAPES = {
    "en": re.compile(r"^(?P<what>.+?)\. Fix: (?P<fix>.+)\. Why: (?P<why>.+) \[(?P<rule>[a-z-]+)\] (?P<docs>\S+)$"),
    "ja": re.compile(r"^(?P<what>.+?)。対処: (?P<fix>.+)。理由: (?P<why>.+) \[(?P<rule>[a-z-]+)\] (?P<docs>\S+)$"),
}
TAIL = re.compile(r" \[(?P<rule>[a-z-]+)\] (?P<docs>\S+)$")


def _golden(language: str) -> list[tuple[str, str]]:
    root = GOLDEN_RULES / language if language != "en" else GOLDEN_RULES
    out = []
    for path in sorted(root.rglob("*.txt")):
        parts = path.relative_to(GOLDEN_RULES).parts
        if language == "en" and parts[0] in LANGUAGES:
            continue
        out.extend((path.name, line) for line in path.read_text(encoding="utf-8").splitlines())
    return out


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_golden_finding_gives_the_fix_before_the_why(language):
    lines = _golden(language)
    assert len(lines) > 200
    for name, line in lines:
        m = SHAPES[language].match(line)
        if m is None:  # what a mutation set: no fix, no why
            tail = TAIL.search(line)
            assert tail and Rule(tail.group("rule")).is_mutation, f"{name}: not a finding's shape: {line}"
            continue
        rule = Rule(m.group("rule"))
        assert not rule.is_mutation, f"{name}: {line}"
        page = f"{rule.value}.md" if language == "en" else f"{language}/{rule.value}.md"
        assert m.group("docs") == f"{TAG}/{page}", f"{name}: {line}"


def test_no_golden_file_or_in_tree_export_links_to_main():
    files = [*GOLDEN.rglob("*.txt"), *GOLDEN.rglob("*.json"), *GOLDEN.rglob("*.xml"),
             *(REPO / "charts/gpu-admission/files/intree").iterdir()]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "/blob/main/docs/" not in text, path
    exported = (REPO / "charts/gpu-admission/files/intree/validation.yaml").read_text(encoding="utf-8")
    assert f"{TAG}/visible-devices-override.md" in exported


@pytest.mark.parametrize("rule", list(Rule), ids=str)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_default_link_is_the_installed_release_s_page(rule, language):
    url = default_policy().docs_url(rule, language)
    page = f"docs/rules/{rule.value}.md" if language == "en" else f"docs/rules/{language}/{rule.value}.md"
    assert url == f"{REPOSITORY}/blob/v{VERSION}/{page}"
    assert (REPO / page).is_file()


@pytest.mark.parametrize(("version", "ref"), [
    pytest.param("0.1.0", "v0.1.0", id="release"),
    pytest.param("1.12.3rc1", "v1.12.3rc1", id="pre-release"),
    pytest.param("0+unknown", "main", id="never-installed"),
])
def test_docs_ref(version, ref):
    assert docs_ref(version) == ref
    assert docs_base_url(version) == f"{REPOSITORY}/blob/{ref}/docs/rules"


def test_nothing_shipped_pins_the_link_and_a_mirror_still_wins():
    shipped = yaml.safe_load((REPO / "webhook/config/default.yaml").read_text(encoding="utf-8"))
    chart = yaml.safe_load((REPO / "charts/gpu-admission/values.yaml").read_text(encoding="utf-8"))["policy"]
    assert "docsBaseUrl" not in shipped and "docsBaseUrl" not in chart
    text = (REPO / "webhook/config/default.yaml").read_text(encoding="utf-8")
    mirror = parse_policy(text + "docsBaseUrl: https://wiki.example.com/gpu/rules/\n")
    assert mirror.docs_url(Rule.LEGACY_API, "ja") == "https://wiki.example.com/gpu/rules/ja/legacy-api.md"


def test_every_validation_has_its_reason_in_full_in_every_language():
    assert set(REASONS) == set(VALIDATIONS)
    for rule in VALIDATIONS:
        en, ja = render(REASONS[rule], "en"), render(REASONS[rule], "ja")
        assert en.endswith(".") and ja.endswith("。") and en != ja, rule


BAD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: cuda, namespace: ml}
spec:
  containers:
  - name: cuda
    image: nvidia/cuda
    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]
    resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Pod
metadata: {name: cuda-2, namespace: ml}
spec:
  containers:
  - name: cuda
    image: nvidia/cuda
    env: [{name: CUDA_VISIBLE_DEVICES, value: "0"}]
    resources: {limits: {nvidia.com/gpu: 1}}
"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_check_explain_gives_each_rule_s_reason_once_after_the_findings(tmp_path, capsys, language):
    path = tmp_path / "pods.yaml"
    path.write_text(BAD_POD)
    assert main(["check", "--lang", language, str(path)]) == 1
    plain = capsys.readouterr().out.splitlines()
    assert main(["check", "--explain", "--lang", language, str(path)]) == 1
    explained = capsys.readouterr().out.splitlines()
    reason = REASONS[Rule.VISIBLE_DEVICES_OVERRIDE]
    added = [line for line in explained if line not in plain]
    word = "why" if language == "en" else "理由"
    assert added == [f"{word} [visible-devices-override]: {render(reason, language)} "
                     f"{default_policy().docs_url(Rule.VISIBLE_DEVICES_OVERRIDE, language)}"]
    assert explained[-1] == plain[-1]  # the summary stays the last line
    assert sum(1 for line in plain if "[visible-devices-override]" in line) == 2  # one line per violation


def test_sarif_rule_help_carries_the_reason_in_full(tmp_path, capsys):
    path = tmp_path / "pods.yaml"
    path.write_text(BAD_POD)
    assert main(["check", "-o", "sarif", str(path)]) == 1
    rules = {r["id"]: r for r in json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]}
    for rule in Rule:
        descriptor = rules[rule.value]
        if rule in REASONS:
            full = render(REASONS[rule], "en")
            assert descriptor["fullDescription"]["text"] == full
            assert full in descriptor["help"]["text"] and descriptor["help"]["text"].endswith(descriptor["helpUri"])
        else:
            assert "fullDescription" not in descriptor
