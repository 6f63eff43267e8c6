"""One JSON Schema for the policy: the loader validates with it (errors in the loader's words), the
chart's values.schema.json embeds it (generated, tested equal), editors find it from the shipped
default; the chart and the loader refuse the same documents, the two known disagreements included."""
from __future__ import annotations

import json

import helm_python
import jsonschema
import pytest
import yaml

from tests.support import REPO
from webhook.config import ConfigError, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.config.schema import (
    SCHEMA_PATH,
    SCHEMA_URL,
    chart_values_schema,
    policy_schema,
    rule_id_schema,
    schema_errors,
)
from webhook.rules import Action, Rule

CHART = REPO / "charts" / "gpu-admission"
VALUES_SCHEMA = CHART / "values.schema.json"


def test_the_schema_is_a_valid_draft_7_schema_that_the_shipped_default_meets():
    jsonschema.Draft7Validator.check_schema(policy_schema())
    assert schema_errors(yaml.safe_load(DEFAULT_PATH.read_text())) == []


def test_the_chart_embeds_the_generated_schema():
    current = json.loads(VALUES_SCHEMA.read_text())
    assert current == chart_values_schema(current), "run `make schema`"
    embedded = dict(current["properties"]["policy"])
    own = {k: v for k, v in policy_schema().items() if k not in ("$schema", "$id", "title", "definitions")}
    assert {k: v for k, v in embedded.items() if k != "description"} == {k: v for k, v in own.items()
                                                                          if k != "description"}
    for name, definition in policy_schema()["definitions"].items():
        assert current["definitions"][name] == definition, name


def test_editors_find_the_schema_from_the_shipped_default():
    first = DEFAULT_PATH.read_text().splitlines()[0]
    assert first == f"# yaml-language-server: $schema={SCHEMA_URL}"
    assert policy_schema()["$id"] == SCHEMA_URL
    assert SCHEMA_URL.endswith("/main/" + SCHEMA_PATH.relative_to(REPO).as_posix())


def _nodes(node, path=""):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _nodes(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _nodes(v, f"{path}/{i}")


def rule_id_places(schema: dict) -> tuple[list[str], list[str]]:
    """(paths of enums that hold a rule id, paths of the references to the one rule-id definition)."""
    ids = {r.value for r in Rule}
    enums = [p for p, n in _nodes(schema) if isinstance(n, dict) and ids & set(map(str, n.get("enum") or ()))]
    refs = [p for p, n in _nodes(schema) if isinstance(n, dict) and n.get("$ref") == "#/definitions/ruleId"]
    return enums, refs


def test_enums_are_the_code_s():
    definitions = policy_schema()["definitions"]
    assert definitions["ruleId"] == rule_id_schema()  # `make schema` writes it from webhook/rules.py
    assert definitions["ruleId"]["enum"] == [r.value for r in Rule]
    assert definitions["action"]["enum"] == [a.value for a in Action] + [False]
    assert definitions["cohort"]["properties"]["mig"]["properties"]["model"]["enum"] == sorted(MIG_PROFILE_TABLES)


def test_every_rule_id_field_refers_to_the_one_list():
    enums, refs = rule_id_places(policy_schema())
    assert enums == ["/definitions/ruleId"]
    assert refs == ["/properties/exceptions/items/properties/rules/items",
                    "/definitions/ruleActions/propertyNames"]


def _cohorts(*cohorts: dict) -> dict:
    return {"cohorts": list(cohorts)}


DP = {"name": "a100", "mechanism": "device-plugin", "nodeLabels": {"pool": "a100"}}
DRA = {"name": "h200", "mechanism": "dra", "nodeLabels": {"pool": "h200"}}

# policy, the field both the chart and the loader name (None: both accept it)
CASES = {
    # The two the chart used to accept and the server then refused at start:
    "duplicate-cohort-names": (_cohorts(DP, dict(DRA, name="a100")), "cohorts"),
    "mig-single-without-a-model": (_cohorts(dict(DP, migStrategy="single")), "cohorts[0].mig"),
    "mig-mixed-with-a-model": (_cohorts(dict(DP, migStrategy="mixed", mig={"model": "H200-141GB"})), None),
    "mig-none-without-a-model": (_cohorts(dict(DP, migStrategy="none")), None),
    "mig-model-and-profiles": (_cohorts(dict(DP, migStrategy="mixed", mig={"model": "H200-141GB",
                                                                            "profiles": {"1g.18gb": 7}})),
                               "cohorts[0].mig"),
    "mig-profile-name": (_cohorts(dict(DP, migStrategy="mixed", mig={"profiles": {"big": 1}})),
                         "cohorts[0].mig.profiles.big"),
    "dra-field-on-a-device-plugin-cohort": (_cohorts(dict(DP, maxDevicesPerClaim=2)), "cohorts[0].maxDevicesPerClaim"),
    "device-plugin-field-on-a-dra-cohort": (_cohorts(dict(DRA, runtimeClassName="nvidia")),
                                            "cohorts[0].runtimeClassName"),
    "manager-of-the-other-mechanism": (_cohorts(dict(DRA, manager="gpu-operator-clusterpolicy")), "cohorts[0].manager"),
    "manager-of-its-mechanism": (_cohorts(dict(DRA, manager="gpu-operator-gpucluster")), None),
    "exception-selecting-nothing": (dict(_cohorts(DP), exceptions=[{"rules": ["run-as-root"]}]), "exceptions[0]"),
    "exception-selecting-a-namespace": (dict(_cohorts(DP), exceptions=[{"rules": ["run-as-root"],
                                                                         "namespaces": ["ml"]}]), None),
    "unknown-rule": (dict(_cohorts(DP), rules={"no-such-rule": "warn"}), "rules.no-such-rule"),
    "rule-mapping-with-a-bad-onerror": (dict(_cohorts(DP), rules={"shared-claim": {"action": "warn",
                                                                                   "onError": "maybe"}}),
                                        "rules.shared-claim.onError"),
    "label-value-not-a-string": (_cohorts(dict(DP, nodeLabels={"pool": 7})), "cohorts[0].nodeLabels.pool"),
    "unknown-field-in-a-cohort": (_cohorts(dict(DP, gpus=8)), "cohorts[0].gpus"),
    # Cross-field checks: in the schema where it can say them, else in the chart's templates.
    "two-cohorts-selecting-the-same-nodes": (_cohorts(DP, dict(DRA, nodeLabels={"pool": "a100"})), "cohorts"),
    "namespace-cohort-unknown": (dict(_cohorts(DP, DRA), namespaceCohorts={"ml": "b200"}), "namespaceCohorts.ml"),
    "namespace-cohort-known": (dict(_cohorts(DP, DRA), namespaceCohorts={"ml": "h200"}), None),
    "cohort-device-class-not-listed": (_cohorts(dict(DRA, deviceClasses=["big-gpu"])), "cohorts[0].deviceClasses"),
    "cohort-device-class-listed": (dict(_cohorts(dict(DRA, deviceClasses=["big-gpu"])),
                                        deviceClasses=[{"name": "big-gpu", "driver": "gpu.nvidia.com"}]), None),
    "run-as-root-default-with-non-root": ({"cohorts": [DP], "securityDefaults": {"runAsUser": 0}},
                                          "securityDefaults.runAsUser"),
    "run-as-root-default-without-non-root": ({"cohorts": [DP], "securityDefaults": {"runAsUser": 0,
                                                                                     "runAsNonRoot": False}}, None),
    # Once the loader's alone, now the schema's: the chart refuses them too.
    "mig-table-naming-nothing": (_cohorts(dict(DP, mig={})), "cohorts[0].mig"),
    "toleration-exists-with-a-value": (_cohorts(dict(DP, tolerations=[{"key": "a", "operator": "Exists",
                                                                        "value": "b"}])),
                                       "cohorts[0].tolerations[0].value"),
    "toleration-equal-without-a-key": (_cohorts(dict(DP, tolerations=[{"effect": "NoSchedule"}])),
                                       "cohorts[0].tolerations[0].key"),
    "time-slicing-and-mps": (_cohorts(dict(DP, timeSlicing={"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                                           mps={"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]})),
                             "cohorts[0].mps"),
    "exception-selecting-an-empty-list": (dict(_cohorts(DP), exceptions=[{"rules": ["run-as-root"], "users": []}]),
                                          "exceptions[0]"),
    "override-with-on-error": (dict(_cohorts(DP), namespaceOverrides=[{"namespaces": ["ml"], "rules": {
        "run-as-root": {"action": "warn"}}}]), "namespaceOverrides[0].rules.run-as-root"),
}


@pytest.mark.parametrize("policy, field", [pytest.param(*case, id=name) for name, case in CASES.items()])
def test_the_chart_and_the_loader_refuse_the_same_policies(policy, field):
    chart = helm_python.Chart.load(str(CHART))
    if field is None:
        parse_policy(yaml.safe_dump(policy))
        chart.render({"policy": policy}, name="gpu-admission", namespace="gpu-policy")
        return
    with pytest.raises(ConfigError) as from_loader:
        parse_policy(yaml.safe_dump(policy))
    assert any(e.startswith(f"{field}: ") for e in from_loader.value.errors), from_loader.value.errors
    with pytest.raises(helm_python.HelmError) as from_chart:
        chart.render({"policy": policy}, name="gpu-admission", namespace="gpu-policy")
    # Helm's own words: its schema validator's (values.schema.json), or the chart's fail for what a
    # schema cannot say (a cohort name used twice).
    text = str(from_chart.value)
    assert "values don't meet the specifications of the schema" in text or f"policy.{field}: " in text, text


@pytest.mark.parametrize("policy, message", [
    pytest.param(_cohorts(dict(DP, migStrategy="single")),
                 "cohorts[0].mig: migStrategy single needs the GPU model's profile table (mig.model or mig.profiles)",
                 id="mig-single"),
    pytest.param(_cohorts(DP, dict(DRA, name="a100")), "cohorts: cohort name 'a100' is used twice", id="duplicate"),
    pytest.param(_cohorts(dict(DRA, manager="gpu-operator-clusterpolicy")),
                 "cohorts[0].manager: gpu-operator-clusterpolicy runs the device-plugin mechanism, not dra",
                 id="manager"),
    pytest.param(_cohorts(dict(DP, migStrategy="mixed", mig={"model": "H200-141GB", "profiles": {"1g.18gb": 7}})),
                 "cohorts[0].mig: give either model or profiles, not both", id="model-and-profiles"),
    pytest.param({"cohorts": [DP], "securityDefaults": {"runAsUser": "root"}},
                 "securityDefaults.runAsUser: must be an integer, not a string", id="type"),
    pytest.param({"cohorts": [DP], "lookups": {"secrets": True, "timeoutSeconds": 0}},
                 "lookups.timeoutSeconds: must be > 0 and <= 5 (the webhook's own timeout)", id="timeout"),
    pytest.param({"cohorts": [DP], "exceptions": [{"rules": ["run-as-root"], "serviceAccounts": ["ml"]}]},
                 "exceptions[0].serviceAccounts[0]: 'ml' must be namespace/name", id="service-account"),
    pytest.param(_cohorts(dict(DP, mig={"profiles": {}})),
                 "cohorts[0].mig: must name a GPU model (one of A100-40GB, H200-141GB) or list profiles",
                 id="mig-empty"),
    pytest.param(_cohorts(dict(DP, tolerations=[{"operator": "Exists", "value": "b"}])),
                 "cohorts[0].tolerations[0].value: must be empty when operator is Exists", id="toleration-value"),
    pytest.param(_cohorts(dict(DP, tolerations=[{"value": "b"}])),
                 "cohorts[0].tolerations[0].key: is required when operator is Equal", id="toleration-key"),
    pytest.param(_cohorts(dict(DP, tolerations=[{"key": "", "operator": "Equal"}])),
                 "cohorts[0].tolerations[0].key: is required when operator is Equal", id="toleration-empty-key"),
    pytest.param(_cohorts(dict(DP, timeSlicing={"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                               mps={"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]})),
                 "cohorts[0].mps: a cohort shares GPUs by time-slicing or by MPS, not both", id="both-sharings"),
    pytest.param({"cohorts": [DP], "namespaceOverrides": [{"namespaces": ["ml"],
                                                          "rules": {"run-as-root": {"action": "warn"}}}]},
                 "namespaceOverrides[0].rules.run-as-root: must be an action (enforce, warn, audit, off), not "
                 "{'action': 'warn'}", id="override-mapping"),
    pytest.param({"cohorts": [DP], "securityDefaults": {"runAsUser": 1000.0}},
                 "securityDefaults.runAsUser: must be an integer, not a number", id="integer-float"),
    pytest.param({"cohorts": [dict(DP, autoscaling={"allocatable": {"nvidia.com/gpu": 2.0}})]},
                 "cohorts[0].autoscaling.allocatable.nvidia.com/gpu: must be a count >= 0", id="count-float"),
    pytest.param({"cohorts": [dict(DP, nodeLabels={"pool": "a100", "zone": None})]},
                 "cohorts[0].nodeLabels.zone: None is not a valid label value (quote numbers and booleans)",
                 id="label-null"),
    pytest.param({"cohorts": [DP], "lookups": {"nodez": None}}, "lookups.nodez: unknown field", id="unknown-null"),
    pytest.param({"cohorts": [dict(DP, driver=None)]}, "cohorts[0].driver: applies only to mechanism dra",
                 id="other-mechanism-null"),
])
def test_schema_errors_read_as_the_loader_s(policy, message):
    with pytest.raises(ConfigError) as err:
        parse_policy(yaml.safe_dump(policy))
    assert message in err.value.errors


def test_the_mig_message_names_the_schema_s_models():
    mig = policy_schema()["definitions"]["cohort"]["properties"]["mig"]
    assert f"(one of {', '.join(mig['properties']['model']['enum'])})" in mig["x-error-anyOf"]


def test_a_null_security_default_is_the_schema_s_too():
    """null means "not set" for a security default: the schema allows it, as the loader always has."""
    policy = {"cohorts": [DP], "securityDefaults": {"readOnlyRootFilesystem": None, "seccompProfile": None}}
    assert schema_errors(policy) == []
    loaded = parse_policy(yaml.safe_dump(policy))
    assert loaded.security.read_only_root_filesystem is None and loaded.security.seccomp_profile is None
