"""The schemas the outputs are validated against bite (the official SARIF schema, junit-10.xsd with what CI
readers rely on beyond it, the report APIs' CRDs): each accepts what the tool writes and refuses a document
broken in a way its specification forbids, beside the closest document it must still accept."""
from __future__ import annotations

import copy
import datetime
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from tests.schemas import codeclimate_errors, crd_errors, junit_errors, sarif_errors, validate_junit
from tests.support import REPO
from webhook.audit.listing import ListFailure
from webhook.audit.policyreport import OPENREPORTS, WGPOLICY, build_reports
from webhook.lookups.resources import DEVICE_CLASSES, RESOURCE_CLAIMS

GOLDEN = REPO / "tests" / "golden" / "ci"
_DELETE = object()


def _sarif() -> dict:
    return json.loads((GOLDEN / "pods.sarif.json").read_text(encoding="utf-8"))


def _located(log: dict) -> dict:
    """The first result that has a physical location (a finding in a file)."""
    return next(r for r in log["runs"][0]["results"] if "physicalLocation" in r["locations"][0])


def _set(path: str, value: object) -> Callable[[dict], None]:
    def apply(log: dict) -> None:
        *parents, last = path.split(".")
        node = log
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return apply

DRIVER = "runs.0.tool.driver"


def _on_located(change: Callable[[dict], None]) -> Callable[[dict], None]:
    return lambda log: change(_located(log))


RULE = "runs/0/tool/driver/rules/0"
RESULT = "runs/0/results/0"

SARIF_BROKEN = [
    pytest.param(_set("version", "2.0.0"), "version: '2.0.0' is not one of", id="version-not-2.1.0"),
    pytest.param(_set("runs", _DELETE), ": 'runs' is a required property", id="no-runs"),
    pytest.param(_set("runs.0.tool", {}), "runs/0/tool: 'driver' is a required", id="tool-without-driver"),
    pytest.param(_set(f"{DRIVER}.name", _DELETE), "runs/0/tool/driver: 'name' is a required",
                 id="driver-without-name"),
    pytest.param(_set(f"{DRIVER}.rules.0.id", _DELETE), f"{RULE}: 'id' is a required", id="rule-without-id"),
    pytest.param(_set(f"{DRIVER}.rules.0.defaultConfiguration.level", "fatal"),
                 f"{RULE}/defaultConfiguration/level: 'fatal' is not one of", id="default-level-outside-enum"),
    pytest.param(_set(f"{DRIVER}.rules.0.shortDescription", {"markdown": "x"}),
                 f"{RULE}/shortDescription: 'text' is a required", id="description-without-text"),
    pytest.param(_set(f"{DRIVER}.rules.0.severity", "high"), f"{RULE}: Additional properties",
                 id="rule-unknown-property"),
    pytest.param(_set("runs.0.results.0.level", "critical"), f"{RESULT}/level: 'critical' is not one of",
                 id="result-level-outside-enum"),
    pytest.param(_set("runs.0.results.0.message", _DELETE), f"{RESULT}: 'message' is a required",
                 id="result-without-message"),
    pytest.param(_set("runs.0.results.0.message", {"markdown": "x"}), f"{RESULT}/message: {{'markdown': 'x'}} is not",
                 id="message-without-text-or-id"),
    pytest.param(_set("runs.0.results.0.ruleIndex", -2), f"{RESULT}/ruleIndex: -2 is less than the minimum",
                 id="rule-index-below-minus-one"),
    pytest.param(_set("runs.0.results.0.file", "pods.yaml"), f"{RESULT}: Additional properties",
                 id="result-unknown-property"),
    pytest.param(_on_located(lambda r: r["locations"][0]["physicalLocation"]["region"].update(startLine=0)),
                 "/locations/0/physicalLocation/region/startLine: 0 is less than the minimum of 1",
                 id="start-line-zero"),
    pytest.param(_on_located(lambda r: r["locations"][0]["physicalLocation"].pop("artifactLocation")),
                 "/locations/0/physicalLocation: {'region'", id="physical-location-without-artifact-or-address"),
    pytest.param(_set("runs.0.results.0.locations.0.logicalLocations.0.path", "x"),
                 f"{RESULT}/locations/0/logicalLocations/0: Additional properties",
                 id="logical-location-unknown-property"),
    pytest.param(_set("runs.0.invocations.0.executionSuccessful", _DELETE),
                 "runs/0/invocations/0: 'executionSuccessful' is a required",
                 id="invocation-without-execution-successful"),
    pytest.param(_set("runs.0.invocations.0.toolExecutionNotifications", [{"level": "error"}]),
                 "runs/0/invocations/0/toolExecutionNotifications/0: 'message' is a required",
                 id="notification-without-message"),
]

SARIF_BENIGN = [
    pytest.param(lambda log: None, id="as-written"),
    pytest.param(_set("runs.0.results.0.level", "note"), id="result-level-note"),
    pytest.param(_set(f"{DRIVER}.rules.0.defaultConfiguration.level", "none"), id="default-level-none"),
    pytest.param(_set(f"{DRIVER}.rules.0.fullDescription", {"text": "longer"}), id="rule-full-description"),
    pytest.param(_set("runs.0.results.0.message", {"id": "default", "arguments": ["a"]}), id="message-by-id"),
    pytest.param(_on_located(lambda r: r["locations"][0]["physicalLocation"]["region"].update(startLine=1)),
                 id="start-line-one"),
    pytest.param(_on_located(lambda r: r["locations"][0]["physicalLocation"].pop("region")), id="no-region"),
    pytest.param(_set("runs.0.results.0.properties.anything", {"nested": [1]}), id="property-bag-is-open"),
    pytest.param(_set("runs.0.invocations.0.toolExecutionNotifications",
                      [{"level": "error", "message": {"text": "x.yaml: unreadable"}}]), id="notification"),
    pytest.param(_set("runs", None), id="runs-null"),
]


@pytest.mark.parametrize("change, error", SARIF_BROKEN)
def test_the_sarif_schema_refuses_a_broken_log(change, error):
    log = _sarif()
    change(log)
    errors = sarif_errors(log)
    assert any(error in e for e in errors), errors


@pytest.mark.parametrize("change", SARIF_BENIGN)
def test_the_sarif_schema_accepts_what_the_specification_allows(change):
    log = _sarif()
    change(log)
    assert sarif_errors(log) == []


def _junit() -> ET.Element:
    return ET.fromstring((GOLDEN / "pods.junit.xml").read_bytes())


def _case(root: ET.Element) -> ET.Element:
    return root.find("testsuite/testcase")


def _sub(tag: str, text: str = "", **attrib: str) -> Callable[[ET.Element], None]:
    def apply(root: ET.Element) -> None:
        ET.SubElement(_case(root), tag, attrib).text = text
    return apply


def _replace_case_children(*children: tuple[str, dict]) -> Callable[[ET.Element], None]:
    def apply(root: ET.Element) -> None:
        case = _case(root)
        for child in list(case):
            case.remove(child)
        for tag, attrib in children:
            ET.SubElement(case, tag, attrib).text = "details"
    return apply


FAILURE = ("failure", {"type": "run-as-root", "message": "m"})
ERROR = ("error", {"type": "run-as-root", "message": "m"})
SKIPPED = ("skipped", {"message": "exempt"})
OUT = ("system-out", {})

JUNIT_BROKEN = [
    pytest.param(lambda root: _case(root).attrib.pop("name"), "missing required attribute 'name'",
                 id="case-without-name"),
    pytest.param(lambda root: root.find("testsuite").set("tests", "many"),
                 "tests='many': not a non-negative integer", id="tests-not-a-count"),
    pytest.param(lambda root: root.find("testsuite").attrib.pop("tests"), "missing required attribute 'tests'",
                 id="suite-without-tests"),
    pytest.param(lambda root: root.find("testsuite").set("failures", "-1"),
                 "failures='-1': not a non-negative integer", id="negative-failures"),
    pytest.param(lambda root: _case(root).set("time", "-0.5"),
                 "time='-0.5': not a non-negative number", id="negative-time"),
    pytest.param(_sub("warning", "x"), "Unexpected child with tag 'warning'", id="unknown-element-in-case"),
    pytest.param(_replace_case_children(SKIPPED, FAILURE), "skipped and also failed",
                 id="skipped-and-failed"),
    pytest.param(_replace_case_children(OUT, FAILURE), "a failure after its output",
                 id="failure-after-system-out"),
    pytest.param(lambda root: (_replace_case_children(FAILURE)(root),
                               ET.SubElement(_case(root).find("failure"), "trace")),
                 "Unexpected child with tag 'trace'", id="element-inside-failure"),
    pytest.param(lambda root: ET.SubElement(root, "testcase", name="stray"), "Unexpected child with tag 'testcase'",
                 id="case-outside-suite"),
]

JUNIT_BENIGN = [
    pytest.param(lambda root: None, id="as-written"),
    pytest.param(_replace_case_children(FAILURE, FAILURE, ERROR, OUT), id="several-failures-an-error-and-output"),
    pytest.param(_replace_case_children(SKIPPED, OUT), id="skipped-with-output"),
    pytest.param(_replace_case_children(), id="passed"),
    pytest.param(_replace_case_children(OUT, ("system-err", {})), id="output-and-errors"),
    pytest.param(lambda root: _case(root).set("time", "0.125"), id="time"),
    pytest.param(lambda root: root.find("testsuite").set("timestamp", "2026-01-01T00:00:00"), id="timestamp"),
]


@pytest.mark.parametrize("change, reason", JUNIT_BROKEN)
def test_the_junit_schema_refuses_a_broken_report(change, reason):
    root = _junit()
    change(root)
    errors = junit_errors(ET.tostring(root, encoding="unicode"))
    assert any(reason in e for e in errors), errors


@pytest.mark.parametrize("change", JUNIT_BENIGN)
def test_the_junit_schema_accepts_what_ci_systems_read(change):
    root = _junit()
    change(root)
    validate_junit(ET.tostring(root, encoding="unicode"))


def _reports(api) -> list[dict]:
    """Reports as the audit builds them: a namespaced one and a cluster-wide one."""
    failures = (ListFailure(RESOURCE_CLAIMS, "ai", "forbidden", 403),
                ListFailure(DEVICE_CLASSES, None, "timeout", None))
    reports = build_reports([], failures, now=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), api=api)
    assert len(reports) == 2
    return reports


def _result(key: str, value: object) -> Callable[[dict], None]:
    def apply(report: dict) -> None:
        if value is _DELETE:
            del report["results"][0][key]
        else:
            report["results"][0][key] = value
    return apply


CRD_BROKEN = [
    pytest.param(_result("severity", "severe"), "results.0.severity: 'severe' is not one of",
                 id="severity-outside-enum"),
    pytest.param(_result("result", "passed"), "results.0.result: 'passed' is not one of", id="result-outside-enum"),
    pytest.param(_result("policy", _DELETE), "results.0: 'policy' is a required property", id="result-without-policy"),
    pytest.param(_result("scored", "yes"), "results.0.scored", id="scored-not-boolean"),
    pytest.param(_result("timestamp", {"seconds": 1}), "results.0.timestamp: 'nanos' is a required",
                 id="timestamp-without-nanos"),
    pytest.param(_result("resources", [{"kind": "Pod", "name": "p", "podName": "p"}]), "results.0.resources.0",
                 id="reference-unknown-field"),
    pytest.param(_result("properties", {"count": 3}), "results.0.properties.count", id="property-not-a-string"),
    pytest.param(_result("subject", "x"), "results.0: Additional properties", id="result-unknown-field"),
    pytest.param(lambda r: r["summary"].update(pass_="1"), "summary: Additional properties", id="summary-unknown-key"),
    pytest.param(lambda r: r["summary"].update({"fail": "1"}), "summary.fail", id="summary-count-not-integer"),
    pytest.param(lambda r: r.update(summary=[]), "summary", id="summary-not-an-object"),
]

CRD_BENIGN = [
    pytest.param(lambda r: None, id="as-written"),
    *(pytest.param(_result("severity", s), id=f"severity-{s}") for s in ("critical", "high", "medium", "low", "info")),
    *(pytest.param(_result("result", s), id=f"result-{s}") for s in ("pass", "fail", "warn", "error", "skip")),
    pytest.param(_result("resources", [{"apiVersion": "v1", "kind": "Pod", "namespace": "ai", "name": "p",
                                        "uid": "u"}]),
                 id="resources"),
    pytest.param(lambda r: r.update(scope={"apiVersion": "v1", "kind": "Namespace", "name": "ai"}), id="scope"),
    pytest.param(lambda r: r["metadata"].update(annotations={"a": "b"}), id="metadata-is-the-apiserver-s"),
]

APIS = [pytest.param(WGPOLICY, id="wgpolicyk8s"), pytest.param(OPENREPORTS, id="openreports")]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("change, message", CRD_BROKEN)
def test_the_report_crds_refuse_a_broken_report(api, change, message):
    for report in _reports(api):
        broken = copy.deepcopy(report)
        change(broken)
        errors = crd_errors(broken)
        assert any(e.startswith(message) for e in errors), (report["kind"], errors)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("change", CRD_BENIGN)
def test_the_report_crds_accept_what_the_apis_define(api, change):
    for report in _reports(api):
        change(report)
        assert crd_errors(report) == [], report["kind"]


@pytest.mark.parametrize("change, message", [
    pytest.param(lambda r: r.update(source=3), "source: 3 is not of type 'string'", id="source-not-a-string"),
    pytest.param(lambda r: r.update(configuration={"limits": {"statusFilter": ["passed"]}}),
                 "configuration.limits.statusFilter.0", id="status-filter-outside-enum"),
])
def test_openreports_crds_check_the_report_s_own_fields(change, message):
    for report in _reports(OPENREPORTS):
        assert crd_errors(report) == []
        change(report)
        assert any(e.startswith(message) for e in crd_errors(report)), report["kind"]


def test_wgpolicy_reports_have_no_source_of_their_own():
    """`source` is an OpenReports report field; the apiserver would prune it from a PolicyReport."""
    for report in _reports(WGPOLICY):
        report["source"] = "gpu-admission"
        assert any(e.startswith("(root): Additional properties") for e in crd_errors(report)), report["kind"]


def _issues() -> list[dict]:
    """`check -o codeclimate` over the real manifests (denials and warnings among them)."""
    import contextlib
    import io

    from tests.support import REAL_MANIFESTS
    from webhook.cli.main import main
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        main(["check", "-o", "codeclimate", str(REAL_MANIFESTS)])
    issues = json.loads(buffer.getvalue())
    assert {i["severity"] for i in issues} >= {"critical", "major"}
    return issues


def _issue_set(path: str, value: object) -> Callable[[list], None]:
    def apply(issues: list) -> None:
        node = issues[0]
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return apply


CODECLIMATE_BROKEN = [
    pytest.param(_issue_set("type", "finding"), "0/type: 'issue' was expected", id="type-not-issue"),
    pytest.param(_issue_set("check_name", _DELETE), "0: 'check_name' is a required", id="no-check-name"),
    pytest.param(_issue_set("description", "two\nlines"), "0/description: 'two\\nlines' does not match",
                 id="description-on-two-lines"),
    pytest.param(_issue_set("severity", "high"), "0/severity: 'high' is not one of", id="severity-outside-enum"),
    pytest.param(_issue_set("categories", []), "0/categories: [] should be non-empty", id="no-category"),
    pytest.param(_issue_set("location.lines.begin", 0), "0/location/lines/begin: 0 is less than the minimum",
                 id="line-zero"),
    pytest.param(_issue_set("location.path", _DELETE), "0/location: 'path' is a required", id="no-path"),
    pytest.param(_issue_set("fingerprint", _DELETE), "0: 'fingerprint' is a required", id="no-fingerprint"),
]


@pytest.mark.parametrize("change, error", CODECLIMATE_BROKEN)
def test_the_codeclimate_stand_in_refuses_a_broken_report(change, error):
    issues = _issues()
    assert codeclimate_errors(issues) == []
    change(issues)
    errors = codeclimate_errors(issues)
    assert any(e.startswith(error) for e in errors), errors
