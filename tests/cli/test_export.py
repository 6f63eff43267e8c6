"""`gpu-admission export` and the drift report of `export --check` (issue 18)."""
from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from webhook.cli.main import main
from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.intree.drift import drift
from webhook.intree.export import export
from webhook.intree.mutations import export_mutations


def _all(policy, version=(1, 37)):
    return export(policy) + export_mutations(policy, version)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["export", *argv])
    return code, out.getvalue(), err.getvalue()


def test_prints_the_exported_objects_as_yaml_and_json():
    code, text, _ = _run()
    assert code == 0
    docs = list(yaml.safe_load_all(text))
    assert docs == _all(default_policy())
    assert {d["kind"] for d in docs} == {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                         "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
    code, text, _ = _run("-o", "json")
    assert code == 0 and json.loads(text) == {"apiVersion": "v1", "kind": "List", "items": docs}


def test_follows_the_policy_in_force():
    code, text, _ = _run("--set", "rules.visible-devices-override=off", "--set", "mode=dry-run")
    assert code == 0
    docs = list(yaml.safe_load_all(text))
    assert {d["metadata"]["labels"]["gpu-admission.io/rule"] for d in docs} == {
        "device-access-bypass", "run-as-root", "runtime-class-conflict", "double-mechanism"}
    actions = {(d["metadata"]["labels"]["gpu-admission.io/rule"], tuple(d["spec"]["validationActions"]))
               for d in docs if "validationActions" in d["spec"]}
    assert actions == {("device-access-bypass", ("Warn", "Audit")), ("run-as-root", ("Warn",)),
                       ("runtime-class-conflict", ("Warn", "Audit")), ("double-mechanism", ("Warn", "Audit"))}


def test_device_class_lookups_leave_double_mechanism_out():
    """The cluster's DeviceClasses would replace the policy's list the rule's objects decide by."""
    code, text, _ = _run("--set", "lookups.deviceClasses=true")
    assert code == 0
    rules = {d["metadata"]["labels"]["gpu-admission.io/rule"] for d in yaml.safe_load_all(text)}
    assert "double-mechanism" not in rules and "device-access-bypass" in rules


def test_a_bad_policy_is_a_usage_error_without_a_traceback():
    code, text, err = _run("--set", "rules.visible-devices-override=sometimes")
    assert code == 2 and text == ""
    assert "visible-devices-override" in err and "Traceback" not in err


def test_the_webhooks_in_tree_setting_is_dropped_by_the_commands():
    """No apiserver runs the policies for check: it reports every rule itself."""
    code, text, _ = _run("--set", "inTree.validation=true")
    assert code == 0 and list(yaml.safe_load_all(text)) == _all(default_policy())


@pytest.mark.parametrize(("argv", "mutating"), [
    pytest.param((), "admissionregistration.k8s.io/v1", id="default-newest"),
    pytest.param(("--kubernetes-version", "1.36"), "admissionregistration.k8s.io/v1", id="1.36"),
    pytest.param(("--kubernetes-version", "1.35"), "admissionregistration.k8s.io/v1beta1", id="1.35"),
    pytest.param(("--kubernetes-version", "v1.34.4"), "admissionregistration.k8s.io/v1beta1", id="1.34-patch"),
    pytest.param(("--kubernetes-version", "1.33"), None, id="1.33-none"),
])
def test_kubernetes_version_chooses_the_mutating_api_version(argv, mutating):
    code, text, _ = _run(*argv)
    assert code == 0
    versions = {d["kind"]: d["apiVersion"] for d in yaml.safe_load_all(text)}
    assert versions.get("MutatingAdmissionPolicy") == mutating
    assert versions.get("MutatingAdmissionPolicyBinding") == mutating
    assert versions["ValidatingAdmissionPolicy"] == "admissionregistration.k8s.io/v1"


@pytest.mark.parametrize(("only", "kinds"), [
    pytest.param("validating", {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, id="validating"),
    pytest.param("mutating", {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}, id="mutating"),
])
def test_only_one_half(only, kinds):
    code, text, _ = _run("--only", only)
    assert code == 0 and {d["kind"] for d in yaml.safe_load_all(text)} == kinds


@pytest.mark.parametrize("value", [pytest.param("1.29", id="before-vap-ga"), pytest.param("latest", id="word"),
                                   pytest.param("1", id="no-minor")])
def test_a_bad_kubernetes_version_is_a_usage_error(value):
    with pytest.raises(SystemExit) as exc:
        _run("--kubernetes-version", value)
    assert exc.value.code == 2


@pytest.mark.parametrize(("setting", "mutated"), [
    pytest.param("mode=enforce", {"default-runtime-class", "default-security-context"}, id="enforce"),
    pytest.param("mode=dry-run", set(), id="dry-run-reports-only"),
    pytest.param("rules.default-security-context=audit", {"default-runtime-class"}, id="audit-reports-only"),
    pytest.param("rules.default-security-context=warn", {"default-runtime-class"}, id="warn-reports-what-it-sets"),
    pytest.param("rules.default-runtime-class=off", {"default-security-context"}, id="off"),
])
def test_mutations_are_exported_only_where_the_webhook_applies_them_silently(setting, mutated):
    code, text, _ = _run("--set", setting)
    assert code == 0
    assert {d["metadata"]["labels"]["gpu-admission.io/rule"] for d in yaml.safe_load_all(text)
            if d["kind"] == "MutatingAdmissionPolicy"} == mutated


def _overrides_policy():
    data = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    data["namespaceOverrides"] = [{"namespaces": ["team-a"], "mode": "dry-run"},
                                  {"namespaces": ["team-b"], "rules": {"device-access-bypass": "off"}}]
    data["exceptions"] = [{"name": "sre", "groups": ["gpu-sre"], "rules": ["device-access-bypass"]}]
    return parse_policy(yaml.safe_dump(data), source="test")


def test_overrides_and_exceptions_become_bindings_and_match_conditions():
    objects = export(_overrides_policy())
    bindings = {o["metadata"]["name"]: o["spec"] for o in objects
                if o["kind"] == "ValidatingAdmissionPolicyBinding" and ".pods." in o["metadata"]["name"]}
    dab = {n: b for n, b in bindings.items() if "device-access-bypass" in n}
    def scope(b):
        return b["matchResources"]["namespaceSelector"]["matchExpressions"][0]
    assert sorted((tuple(b["validationActions"]), scope(b)["operator"], tuple(scope(b)["values"]))
                  for b in dab.values())[0] == (("Deny",), "NotIn", tuple(sorted(
                      default_policy().exempt_namespaces | {"gpu-admission", "team-a", "team-b"})))
    assert [tuple(b["validationActions"]) for b in dab.values()] == [("Warn", "Audit"), ("Deny",)]
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    conditions = policies["gpu-admission.device-access-bypass.pods"]["spec"]["matchConditions"]
    assert [c["name"] for c in conditions] == ["covered", "not-excepted"]
    assert '"gpu-sre"' in conditions[1]["expression"]
    assert [c["name"] for c in policies["gpu-admission.visible-devices-override.pods"]["spec"]["matchConditions"]] \
        == ["covered"]


def _live(objects):
    """What the apiserver returns: the exported fields, with its defaults filled in."""
    out = copy.deepcopy(objects)
    for o in out:
        o["metadata"].update({"uid": "x", "resourceVersion": "1", "generation": 1})
        if o["kind"] == "ValidatingAdmissionPolicy":
            o["spec"]["matchConstraints"].update({"namespaceSelector": {}, "objectSelector": {}})
        else:
            o["spec"]["matchResources"].update({"objectSelector": {}, "matchPolicy": "Equivalent"})
    return out


@pytest.mark.parametrize(("change", "want"), [
    pytest.param(lambda live: None, [], id="equal-with-server-defaults"),
    pytest.param(lambda live: live.pop(0), ["ValidatingAdmissionPolicy gpu-admission.visible-devices-override.pods: "
                                            "not in the cluster"], id="missing"),
    pytest.param(lambda live: live[1]["spec"].update(validationActions=["Warn"]),
                 ["ValidatingAdmissionPolicyBinding gpu-admission.visible-devices-override.pods.default: differs "
                  "(spec.validationActions[0]: differs)"], id="binding-action-changed"),
    pytest.param(lambda live: live.append({"kind": "ValidatingAdmissionPolicy",
                                           "metadata": {"name": "gpu-admission.old"}, "spec": {}}),
                 ["ValidatingAdmissionPolicy gpu-admission.old: in the cluster, no longer exported"], id="left-over"),
    pytest.param(lambda live: [o["metadata"]["labels"].update({"app.kubernetes.io/managed-by": "Helm"}) for o in live],
                 [], id="installed-by-helm"),
    pytest.param(lambda live: live[0]["metadata"].update(
        labels={**live[0]["metadata"]["labels"], "gpu-admission.io/rule": "run-as-root"}),
                 ["ValidatingAdmissionPolicy gpu-admission.visible-devices-override.pods: differs "
                  "(metadata.labels.gpu-admission.io/rule: differs)"], id="rule-label-changed"),
])
def test_drift(change, want):
    objects = export(default_policy())
    live = _live(objects)
    change(live)
    assert drift(objects, live) == want
