"""The schemas the CLI's and the audit's outputs are validated against: SARIF 2.1.0, JUnit XML as CI
systems read it, and the CRDs of the report APIs. They are stand-ins written here from the
specifications (tests/data/schemas/README.md) until the official files come through the steering
repo's shared/; tests/test_schemas.py shows each refuses a broken document."""
from __future__ import annotations

import copy
import functools
import json

import jsonschema
import xmlschema
import yaml

from tests.support import DATA

SCHEMAS = DATA / "schemas"


@functools.cache
def _sarif() -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / "sarif-2.1.0-standin.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def sarif_errors(log: dict) -> list[str]:
    errors = sorted(_sarif().iter_errors(log), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def validate_sarif(log: dict) -> None:
    errors = sarif_errors(log)
    assert not errors, errors[:5]


@functools.cache
def _junit() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "junit-standin.xsd"))


def validate_junit(text: str) -> None:
    _junit().validate(text)


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
    ("wgpolicyk8s.io/v1alpha2", "PolicyReport"): "wgpolicyk8s.io_policyreports-standin.yaml",
    ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport"): "wgpolicyk8s.io_clusterpolicyreports-standin.yaml",
    ("openreports.io/v1alpha1", "Report"): "openreports.io_reports-standin.yaml",
    ("openreports.io/v1alpha1", "ClusterReport"): "openreports.io_clusterreports-standin.yaml",
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
