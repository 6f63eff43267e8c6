"""`gpu-admission export` and the drift report of `export --check` (issue 18)."""
from __future__ import annotations

import copy
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from webhook.cli.main import main
from webhook.config import default_policy, load_layers, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.intree.chart import exported_from
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
        "device-access-bypass", "run-as-root", "runtime-class-conflict", "double-mechanism", "device-config"}
    actions = {(d["metadata"]["labels"]["gpu-admission.io/rule"], tuple(d["spec"]["validationActions"]))
               for d in docs if "validationActions" in d["spec"]}
    assert actions == {("device-access-bypass", ("Warn", "Audit")), ("run-as-root", ("Warn",)),
                       ("runtime-class-conflict", ("Warn", "Audit")), ("double-mechanism", ("Warn", "Audit")),
                       ("device-config", ("Warn", "Audit"))}


def test_device_class_lookups_leave_double_mechanism_out():
    """The cluster's DeviceClasses would replace the policy's list the rule's objects decide by."""
    code, text, _ = _run("--set", "lookups.deviceClasses=true")
    assert code == 0
    rules = {d["metadata"]["labels"]["gpu-admission.io/rule"] for d in yaml.safe_load_all(text)}
    assert "double-mechanism" not in rules and "device-config" not in rules and "device-access-bypass" in rules


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


def test_chart_values_carry_the_export_and_the_policy_it_was_exported_from(tmp_path):
    """`--chart-values` writes the chart's inTree.exported: both halves, the policy document less what the
    export does not read, and the service namespace its bindings leave out."""
    from webhook.config.load import merged_document

    code, text, _ = _run("--chart-values", "--set", "rules.run-as-root=warn", "--set", "language=ja",
                         "--kubernetes-version", "1.34")
    assert code == 0 and text.startswith("# gpu-admission export --chart-values")
    exported = yaml.safe_load(text)["inTree"]["exported"]
    policy = load_layers(sets=["rules.run-as-root=warn", "language=ja"])
    assert exported["validation"] == export(policy)
    assert exported["mutation"] == export_mutations(policy, (1, 34))
    assert exported["kubernetesVersion"] == "1.34" and exported["serviceNamespace"] == policy.service_namespace
    document = merged_document(sets=["rules.run-as-root=warn", "language=ja"])
    assert exported["policy"] == exported_from(document)
    assert exported["policy"]["rules"]["run-as-root"] == "warn" and exported["policy"]["language"] == "ja"
    assert "serviceNamespace" not in exported["policy"]


@pytest.mark.parametrize(("argv", "why"), [
    pytest.param(("--check", "--kubernetes-version", "1.34"), "--check reads the cluster's version",
                 id="check-version"),
    pytest.param(("--chart-values", "--only", "validating"), "writes both halves", id="chart-values-only"),
    pytest.param(("--chart-values", "--check"), "writes both halves", id="chart-values-check"),
    pytest.param(("--chart-values", "-o", "json"), "YAML values file", id="chart-values-json"),
    pytest.param(("--chart-values", "--lang", "ja"), "leave out --lang", id="chart-values-lang"),
])
def test_options_that_contradict_each_other_are_usage_errors(argv, why):
    code, text, err = _run(*argv)
    assert code == 2 and text == "" and why in err and "Traceback" not in err


def test_check_without_a_cluster_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    code, text, err = _run("--check")
    assert code == 2 and "no cluster configuration" in err and "Traceback" not in err


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
    # the exceptions are the matchConditions; the rule's coverage is a variable every validation reads first
    conditions = policies["gpu-admission.device-access-bypass.pods"]["spec"]["matchConditions"]
    assert [c["name"] for c in conditions] == ["not-excepted"]
    assert '"gpu-sre"' in conditions[0]["expression"]
    assert "matchConditions" not in policies["gpu-admission.visible-devices-override.pods"]["spec"]
    for name in ("gpu-admission.device-access-bypass.pods", "gpu-admission.visible-devices-override.pods"):
        spec = policies[name]["spec"]
        assert "covered" in [v["name"] for v in spec["variables"]]
        assert all(v["expression"].startswith("!variables.covered || ") for v in spec["validations"])


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


def _messages(text: str) -> list[str]:
    """Each message's expression, followed by those of the variables it reads (a line's ending is a variable the
    policy's lines share), one per line."""
    out = []
    for d in json.loads(text)["items"]:
        if d["kind"] != "ValidatingAdmissionPolicy":
            continue
        variables = {v["name"]: v["expression"] for v in d["spec"]["variables"]}
        for v in d["spec"]["validations"]:
            read, todo = [], [v["messageExpression"]]
            while todo:
                for name in re.findall(r"\bvariables\.(\w+)", todo.pop()):
                    if name not in read:
                        read.append(name)
                        todo.append(variables[name])
            out.append("\n".join([v["messageExpression"], *(variables[n] for n in read)]))
    return out


def test_messages_follow_the_policy_language_not_the_users_locale(monkeypatch):
    """The in-tree messages are read by the cluster's users: the policy's `language` (or --lang) decides,
    not the locale of whoever runs export (export --check would otherwise report drift by who runs it)."""
    code, english, _ = _run("-o", "json")
    assert code == 0 and _messages(english)
    assert not any("対処" in m or "/docs/rules/ja/" in m for m in _messages(english))
    code, japanese, _ = _run("-o", "json", "--set", "language=ja")
    assert code == 0
    assert all("。対処: " in m and "/docs/rules/ja/" in m and "request.namespace in" not in m
               for m in _messages(japanese))
    monkeypatch.setenv("LANG", "ja_JP.UTF-8")
    assert _run("-o", "json") == (0, english, "")
    assert _run("-o", "json", "--lang", "ja") == (0, japanese, "")


def test_a_namespace_of_another_language_picks_its_messages_by_namespace():
    code, text, _ = _run("-o", "json", "--set", "namespaceOverrides=[{namespaces: [ml-ja, ai-ja], language: ja}]")
    assert code == 0
    messages = _messages(text)
    assert messages and all(m.startswith('request.namespace in ["ai-ja", "ml-ja"] ? ') for m in messages)
    # one Japanese line for those namespaces, the English one for every other
    assert all(m.count("。対処: ") == 1 and m.count("/docs/rules/ja/") == 1 and m.count(". Fix: ") == 1
               for m in messages)
    # a namespace override of the policy's own language writes one language only
    code, same, _ = _run("-o", "json", "--set", "namespaceOverrides=[{namespaces: [ml], language: en}]")
    assert code == 0 and not any("request.namespace in" in m or "対処" in m for m in _messages(same))
