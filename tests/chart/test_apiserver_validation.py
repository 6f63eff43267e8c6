"""The kube-apiserver's own validation of webhook configurations (pkg/apis/admissionregistration/validation
in kubernetes/kubernetes, as of 1.34), applied to the rendered ValidatingWebhookConfiguration and
MutatingWebhookConfiguration: what no local cluster can show us. Plus this project's stricter limits
(timeouts of at most 5 s, sideEffects None)."""
from __future__ import annotations

import base64
import re

import pytest
from cryptography import x509

from . import cel
from .conftest import set_params

pytestmark = pytest.mark.slow

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
OPERATIONS = {"*", "CREATE", "UPDATE", "DELETE", "CONNECT"}
ACCEPTED_REVIEW_VERSIONS = {"v1", "v1beta1"}


def is_subdomain(value: str) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 253 and bool(DNS1123_SUBDOMAIN.match(value))


def is_qualified_name(value: str) -> bool:
    """ValidateQualifiedName: an optional DNS-subdomain prefix and '/', then a name of at most 63."""
    if not isinstance(value, str) or not value:
        return False
    prefix, slash, name = value.rpartition("/")
    if slash and not is_subdomain(prefix):
        return False
    return len(name) <= 63 and bool(QUALIFIED_NAME.match(name))


def validate_rule(rule: dict, path: str) -> list[str]:
    errors = []
    ops = rule.get("operations") or []
    if not ops:
        errors.append(f"{path}.operations: Required")
    if len(ops) > 1 and "*" in ops:
        errors.append(f"{path}.operations: if '*' is present, must not specify other operations")
    errors += [f"{path}.operations[{i}]: unsupported {o!r}" for i, o in enumerate(ops) if o not in OPERATIONS]
    groups = rule.get("apiGroups")
    if not groups:
        errors.append(f"{path}.apiGroups: Required")
    elif len(groups) > 1 and "*" in groups:
        errors.append(f"{path}.apiGroups: if '*' is present, must not specify other API groups")
    versions = rule.get("apiVersions")
    if not versions:
        errors.append(f"{path}.apiVersions: Required")
    elif len(versions) > 1 and "*" in versions:
        errors.append(f"{path}.apiVersions: if '*' is present, must not specify other API versions")
    errors += [f"{path}.apiVersions[{i}]: Required" for i, v in enumerate(versions or []) if v == ""]
    resources = rule.get("resources") or []
    if not resources:
        errors.append(f"{path}.resources: Required")
    with_sub_wildcard, sub_with_res_wildcard = set(), set()
    double = single = plain = False
    for i, res in enumerate(resources):
        if res == "":
            errors.append(f"{path}.resources[{i}]: Required")
            continue
        double |= res == "*/*"
        single |= res == "*"
        if "/" not in res:
            plain = res != "*"
            continue
        name, sub = res.split("/", 1)
        if name in with_sub_wildcard or sub in sub_with_res_wildcard:
            errors.append(f"{path}.resources[{i}]: overlaps a wildcard")
        if sub == "*":
            with_sub_wildcard.add(name)
        if name == "*":
            sub_with_res_wildcard.add(sub)
    if len(resources) > 1 and double:
        errors.append(f"{path}.resources: if '*/*' is present, must not specify other resources")
    if single and plain:
        errors.append(f"{path}.resources: if '*' is present, must not specify other resources without subresources")
    if "scope" in rule and rule["scope"] not in ("Cluster", "Namespaced", "*"):
        errors.append(f"{path}.scope: unsupported {rule['scope']!r}")
    return errors


def validate_label_selector(selector: dict, path: str) -> list[str]:
    errors = []
    for i, req in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{i}]"
        if not is_qualified_name(req.get("key", "")):
            errors.append(f"{where}.key: invalid")
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn") and not values:
            errors.append(f"{where}.values: must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(f"{where}.values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errors.append(f"{where}.operator: not a valid selector operator")
        errors += [f"{where}.values[{j}]: invalid label value" for j, v in enumerate(values)
                   if len(v) > 63 or not LABEL_VALUE.match(v)]
    for key, value in (selector.get("matchLabels") or {}).items():
        if not is_qualified_name(key) or len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(f"{path}.matchLabels: invalid {key}={value}")
    return errors


def validate_service(service: dict, path: str) -> list[str]:
    """webhook.ValidateWebhookService."""
    errors = []
    if not service.get("name"):
        errors.append(f"{path}.name: Required")
    if not service.get("namespace"):
        errors.append(f"{path}.namespace: Required")
    if not 1 <= service.get("port", 443) <= 65535:
        errors.append(f"{path}.port: must be between 1 and 65535")
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return errors
    if url_path == "//" or not url_path.startswith("/"):
        return errors + [f"{path}.path: must start with a '/'"]
    steps = url_path[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            errors.append(f"{path}.path: segment[{i}] may not be empty")
        elif not is_subdomain(step):
            errors.append(f"{path}.path: segment[{i}]: {step!r} is not a valid DNS-1123 subdomain")
    return errors


def validate_match_conditions(conditions: list[dict], path: str) -> list[str]:
    errors = []
    if len(conditions) > 64:
        errors.append(f"{path}: must have at most 64 items")
    seen = set()
    for i, condition in enumerate(conditions):
        name, expression = condition.get("name", ""), condition.get("expression", "")
        if not name:
            errors.append(f"{path}[{i}].name: Required")
        elif not is_qualified_name(name):
            errors.append(f"{path}[{i}].name: {name!r} is not a qualified name")
        if name in seen:
            errors.append(f"{path}[{i}].name: Duplicate value {name!r}")
        seen.add(name)
        if not expression.strip():
            errors.append(f"{path}[{i}].expression: Required")
            continue
        try:
            cel.compile_expression(expression.strip())  # parses; reads only object, oldObject, request
        except cel.CelError as exc:
            errors.append(f"{path}[{i}].expression: compilation failed: {exc}")
    return errors


def validate_webhook(hook: dict, path: str, *, mutating: bool) -> list[str]:
    errors = []
    name = hook.get("name", "")
    if not is_subdomain(name) or len(name.split(".")) < 3:
        errors.append(f"{path}.name: should be a domain with at least three segments separated by dots")
    for i, rule in enumerate(hook.get("rules") or []):
        errors += validate_rule(rule, f"{path}.rules[{i}]")
    if hook.get("failurePolicy", "Fail") not in ("Ignore", "Fail"):
        errors.append(f"{path}.failurePolicy: unsupported")
    if hook.get("matchPolicy", "Equivalent") not in ("Exact", "Equivalent"):
        errors.append(f"{path}.matchPolicy: unsupported")
    if "sideEffects" not in hook:
        errors.append(f"{path}.sideEffects: Required")
    elif hook["sideEffects"] not in ("None", "NoneOnDryRun"):  # v1 allows no other on create
        errors.append(f"{path}.sideEffects: unsupported {hook['sideEffects']!r}")
    timeout = hook.get("timeoutSeconds", 10)
    if not 1 <= timeout <= 30:
        errors.append(f"{path}.timeoutSeconds: the timeout value must be between 1 and 30 seconds")
    for field in ("namespaceSelector", "objectSelector"):
        if field in hook:
            errors += validate_label_selector(hook[field], f"{path}.{field}")
    if mutating and hook.get("reinvocationPolicy", "Never") not in ("Never", "IfNeeded"):
        errors.append(f"{path}.reinvocationPolicy: unsupported")
    client = hook.get("clientConfig", {})
    if ("url" in client) == ("service" in client):
        errors.append(f"{path}.clientConfig: exactly one of url or service is required")
    elif "service" in client:
        errors += validate_service(client["service"], f"{path}.clientConfig.service")
    errors += validate_match_conditions(hook.get("matchConditions") or [], f"{path}.matchConditions")
    versions = hook.get("admissionReviewVersions") or []
    if not versions:
        errors.append(f"{path}.admissionReviewVersions: Required")
    if len(set(versions)) != len(versions):
        errors.append(f"{path}.admissionReviewVersions: duplicate version")
    errors += [f"{path}.admissionReviewVersions: {v!r} invalid" for v in versions if not DNS1035_LABEL.match(v)]
    if versions and not ACCEPTED_REVIEW_VERSIONS & set(versions):
        errors.append(f"{path}.admissionReviewVersions: must include at least one of v1, v1beta1")
    return errors


def validate_configuration(config: dict) -> list[str]:
    mutating = config["kind"] == "MutatingWebhookConfiguration"
    errors = [] if is_subdomain(config["metadata"]["name"]) else ["metadata.name: invalid"]
    names = set()
    for i, hook in enumerate(config["webhooks"]):
        errors += validate_webhook(hook, f"webhooks[{i}]", mutating=mutating)
        if hook["name"] in names:
            errors.append(f"webhooks[{i}].name: Duplicate value")
        names.add(hook["name"])
    return errors


def _configurations(rendered) -> list[dict]:
    return rendered.all("ValidatingWebhookConfiguration") + rendered.all("MutatingWebhookConfiguration")


@pytest.mark.parametrize("value_set", set_params())
def test_webhook_configurations_pass_the_apiserver_validation(rendered, value_set):
    configs = _configurations(rendered)
    assert configs
    for config in configs:
        assert validate_configuration(config) == [], config["kind"]


@pytest.mark.parametrize("value_set", set_params())
def test_webhook_settings_are_this_project_s(rendered, value_set):
    webhooks = rendered.values.get("webhooks", {})
    for kind, hook in rendered.webhooks():
        which = "mutating" if kind.startswith("Mutating") else "validating"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["sideEffects"] == "None"
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["failurePolicy"] == webhooks.get(which, {}).get("failurePolicy", "Fail")
        assert 1 <= hook["timeoutSeconds"] <= 5
        assert hook["timeoutSeconds"] == webhooks.get(which, {}).get("timeoutSeconds", 3 if which == "mutating" else 5)
        # Exceptions are config-owned: no label on a workload skips the webhooks unless the user asks for it.
        assert hook.get("objectSelector") == webhooks.get("objectSelector")
        if which == "mutating":
            assert hook["reinvocationPolicy"] == "IfNeeded"
        else:
            assert "reinvocationPolicy" not in hook


@pytest.mark.parametrize("value_set", set_params())
def test_ca_bundle_is_a_pem_certificate_or_injected(rendered, value_set):
    mode = rendered.values.get("certificates", {}).get("mode", "generate")
    for config in _configurations(rendered):
        annotations = config["metadata"].get("annotations", {})
        for hook in config["webhooks"]:
            bundle = hook["clientConfig"].get("caBundle")
            if mode == "certManager":
                assert bundle is None and "cert-manager.io/inject-ca-from" in annotations
                continue
            assert "cert-manager.io/inject-ca-from" not in annotations
            certificate = x509.load_pem_x509_certificate(base64.b64decode(bundle, validate=True))
            assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            if mode == "existingSecret":
                assert bundle == rendered.values["certificates"]["caBundle"]


# ---------------------------------------------------------------- the checks above do catch mistakes

def _good_hook() -> dict:
    return {"name": "pods.validate.example.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "timeoutSeconds": 5, "failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/validate", "port": 443}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                        "values": ["kube-system"]}]},
            "matchConditions": [{"name": "a", "expression": "has(object.spec)"}]}


@pytest.mark.parametrize("change, message", [
    pytest.param({"name": "validate.example"}, "three segments", id="two-segment-name"),
    pytest.param({"name": "Pods.Example.io"}, "three segments", id="upper-case-name"),
    pytest.param({"admissionReviewVersions": ["v2"]}, "at least one of v1", id="unknown-review-version"),
    pytest.param({"admissionReviewVersions": []}, "admissionReviewVersions: Required", id="no-review-version"),
    pytest.param({"sideEffects": "Unknown"}, "sideEffects: unsupported", id="side-effects-unknown"),
    pytest.param({"sideEffects": None}, "sideEffects: unsupported", id="side-effects-null"),
    pytest.param({"timeoutSeconds": 31}, "between 1 and 30", id="timeout-31"),
    pytest.param({"timeoutSeconds": 0}, "between 1 and 30", id="timeout-0"),
    pytest.param({"failurePolicy": "fail"}, "failurePolicy", id="failure-policy-case"),
    pytest.param({"clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "validate"}}},
                 "must start with a '/'", id="path-without-slash"),
    pytest.param({"clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/a//b"}}},
                 "may not be empty", id="path-empty-segment"),
    pytest.param({"clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/Validate"}}},
                 "DNS-1123", id="path-upper-case"),
    pytest.param({"clientConfig": {"url": "https://x", "service": {"name": "s", "namespace": "n"}}},
                 "exactly one of url or service", id="url-and-service"),
    pytest.param({"matchConditions": [{"name": f"c{i}", "expression": "true"} for i in range(65)]},
                 "at most 64", id="65-match-conditions"),
    pytest.param({"matchConditions": [{"name": "a", "expression": "true"}, {"name": "a", "expression": "true"}]},
                 "Duplicate", id="duplicate-condition-names"),
    pytest.param({"matchConditions": [{"name": "-a", "expression": "true"}]}, "qualified name", id="bad-name"),
    pytest.param({"matchConditions": [{"name": "a", "expression": "has(object.spec"}]}, "compilation failed",
                 id="unbalanced-cel"),
    pytest.param({"matchConditions": [{"name": "a", "expression": "params.x == 'y'"}]}, "undeclared reference",
                 id="undeclared-cel-variable"),
    pytest.param({"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "*"],
                             "resources": ["pods"]}]}, "must not specify other operations", id="wildcard-operations"),
    pytest.param({"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["PATCH"],
                             "resources": ["pods"]}]}, "unsupported", id="unknown-operation"),
    pytest.param({"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                             "resources": ["*", "pods"]}]}, "must not specify other resources",
                 id="wildcard-resources"),
    pytest.param({"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                              "operator": "NotIn", "values": []}]}},
                 "must be specified", id="not-in-without-values"),
])
def test_the_validation_catches_what_the_apiserver_refuses(change, message):
    hook = {**_good_hook(), **change}
    if change.get("sideEffects", 0) is None:
        hook.pop("sideEffects")
        message = "sideEffects: Required"
    config = {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "x"}, "webhooks": [hook]}
    errors = validate_configuration(config)
    assert any(message in e for e in errors), errors
    good = {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "x"}, "webhooks": [_good_hook()]}
    assert validate_configuration(good) == []


def test_duplicate_webhook_names_are_refused():
    config = {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "x"}, "webhooks": [_good_hook()] * 2}
    assert any("Duplicate value" in e for e in validate_configuration(config))
