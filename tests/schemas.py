"""The schemas the CLI's and the audit's outputs are validated against, the official files
(tests/data/fixtures/schemas, PROVENANCE.md there): OASIS' SARIF 2.1.0 JSON schema, the JUnit XSD of
Jenkins' xUnit plugin, the OpenReports and wgpolicyk8s.io v1alpha2 report CRDs; and the Code Quality
report's schema, a stand-in written here (tests/data/schemas/README.md) because Code Climate's issue
format is a specification in prose. tests/test_schemas.py shows each refuses a broken document."""
from __future__ import annotations

import copy
import functools
import json
import re
import xml.etree.ElementTree as ET

import jsonschema
import xmlschema
import yaml

from tests.support import DATA

SCHEMAS = DATA / "fixtures" / "schemas"
STAND_INS = DATA / "schemas"


@functools.cache
def _sarif() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def sarif_errors(log: dict) -> list[str]:
    errors = sorted(_sarif().iter_errors(log), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def validate_sarif(log: dict) -> None:
    errors = sarif_errors(log)
    assert not errors, errors[:5]


@functools.cache
def _junit() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


_COUNTS = ("tests", "failures", "errors", "skipped")
_RESULTS = ("skipped", "failure", "error")


def _own_junit_errors(root: ET.Element) -> list[str]:
    """What CI readers rely on and junit-10.xsd leaves as free strings or an open choice: counts that are
    non-negative integers, times that are non-negative numbers, a case's results before its output, and a
    skipped case that did not also fail."""
    errors = []
    for element in root.iter():
        for name in _COUNTS if element.tag in ("testsuites", "testsuite") else ():
            value = element.get(name)
            if value is not None and not value.isdigit():
                errors.append(f"{element.tag} {name}={value!r}: not a non-negative integer")
        time = element.get("time")
        if time is not None and not re.fullmatch(r"\d+(\.\d+)?", time):
            errors.append(f"{element.tag} time={time!r}: not a non-negative number")
    for case in root.iter("testcase"):
        tags = [child.tag for child in case]
        if "skipped" in tags and ("failure" in tags or "error" in tags):
            errors.append(f"testcase {case.get('name')!r}: skipped and also failed")
        results = [i for i, tag in enumerate(tags) if tag in _RESULTS]
        outputs = [i for i, tag in enumerate(tags) if tag not in _RESULTS]
        if results and outputs and max(results) > min(outputs):
            errors.append(f"testcase {case.get('name')!r}: a {tags[max(results)]} after its output")
    return errors


def junit_errors(text: str) -> list[str]:
    """junit-10.xsd's objections (the reason of each), then ours (`_own_junit_errors`)."""
    errors = [str(e.reason) for e in _junit().iter_errors(text)]
    return errors or _own_junit_errors(ET.fromstring(text))


def validate_junit(text: str) -> None:
    errors = junit_errors(text)
    assert not errors, errors[:5]


def _closed(schema: dict) -> dict:
    """The CRD schema with unknown fields refused: the apiserver prunes them silently from a structural
    schema's objects, so a report field it does not know would be lost without an error."""
    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for key, value in node.items():
            if key == "properties":
                stack.extend(value.values())
            elif isinstance(value, dict):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, dict))
    return out


CRDS = {
    ("wgpolicyk8s.io/v1alpha2", "PolicyReport"): "wgpolicyk8s.io_policyreports.yaml",
    ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport"): "wgpolicyk8s.io_clusterpolicyreports.yaml",
    ("openreports.io/v1alpha1", "Report"): "openreports.io_reports.yaml",
    ("openreports.io/v1alpha1", "ClusterReport"): "openreports.io_clusterreports.yaml",
}


@functools.cache
def _crd(api_version: str, kind: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load((SCHEMAS / CRDS[(api_version, kind)]).read_text(encoding="utf-8"))
    assert crd["spec"]["names"]["kind"] == kind
    version = api_version.split("/")[1]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    assert served["served"]
    return jsonschema.Draft7Validator(_closed(served["schema"]["openAPIV3Schema"]))


def crd_errors(obj: dict) -> list[str]:
    """What the apiserver would refuse (or prune) in `obj` by its CRD's openAPIV3Schema."""
    validator = _crd(obj["apiVersion"], obj["kind"])
    return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(obj)]


@functools.cache
def _codeclimate() -> jsonschema.Draft7Validator:
    """The Code Quality report's schema: a stand-in written here (tests/data/schemas/README.md)."""
    schema = json.loads((STAND_INS / "codeclimate-issue.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def codeclimate_errors(report: list) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _codeclimate().iter_errors(report)]
