"""The chart's `inTree` option (issue 18): off by default; on, it installs exactly the objects
`gpu-admission export` writes for the policy the chart renders, and tells the webhook to leave those rules
to the apiserver."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import helm_python
import pytest
import yaml

from tests.chart.conftest import CUSTOM_POLICY, NAMESPACE
from tests.support import REPO
from webhook.cli.main import main
from webhook.config import parse_policy
from webhook.intree.chart import exported_from
from webhook.intree.export import export
from webhook.intree.mutations import export_mutations

VALIDATING = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
MUTATING = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
IN_TREE = VALIDATING + MUTATING
CHART = REPO / "charts" / "gpu-admission"
GROUP = "admissionregistration.k8s.io"


def _policy_text(rendered) -> str:
    (cm,) = [o for o in rendered.all("ConfigMap") if "policy.yaml" in o.get("data", {})]
    return cm["data"]["policy.yaml"]


def test_off_by_default(default_render):
    assert [o for o in default_render.objects if o["kind"] in IN_TREE] == []
    assert "inTree" not in yaml.safe_load(_policy_text(default_render))


def test_on_installs_what_export_writes_for_the_rendered_policy(render):
    rendered = render({"inTree": {"validation": True}})
    text = _policy_text(rendered)
    assert yaml.safe_load(text)["inTree"] == {"validation": True, "mutation": False}
    policy = parse_policy(text, source="the chart's policy")
    assert policy.in_tree.validation
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert objects and objects == export(policy)
    assert not policy.in_tree.mutation


# What a cluster serving MutatingAdmissionPolicy lists in its discovery (Helm's .Capabilities.APIVersions
# against a cluster; `helm template --kube-version ... --api-versions ...` without one).
SERVES_V1 = {"kube_version": "1.36.0", "api_versions": ("admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",)}
SERVES_V1BETA1 = {"kube_version": "1.34.4",
                  "api_versions": ("admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy",)}


@pytest.mark.parametrize(("values", "validating", "mutating"), [
    pytest.param({"mutation": True}, False, True, id="mutation-only"),
    pytest.param({"validation": True, "mutation": True}, True, True, id="both"),
])
@pytest.mark.parametrize(("cluster", "kubernetes"), [
    pytest.param(SERVES_V1, (1, 36), id="1.36-v1"),
    pytest.param(SERVES_V1BETA1, (1, 34), id="1.34-v1beta1"),
])
def test_mutation_installs_what_export_writes_for_the_rendered_policy(render, values, validating, mutating,
                                                                      cluster, kubernetes):
    rendered = render({"inTree": values}, **cluster)
    text = _policy_text(rendered)
    assert yaml.safe_load(text)["inTree"] == {"validation": validating, "mutation": mutating}
    policy = parse_policy(text, source="the chart's policy")
    assert policy.in_tree.mutation
    want = (export(policy) if validating else []) + export_mutations(policy, kubernetes)
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert {o["kind"] for o in objects} >= set(MUTATING)
    assert objects == want


@pytest.mark.parametrize(("cluster", "missing"), [
    pytest.param({}, "admissionregistration.k8s.io/v1", id="helm-defaults-list-none"),
    pytest.param({"kube_version": "1.36.0", "api_versions": ("admissionregistration.k8s.io/v1",)},
                 "admissionregistration.k8s.io/v1", id="1.36-group-version-without-the-kind"),
    pytest.param({"kube_version": "1.34.4", "api_versions": ()}, "admissionregistration.k8s.io/v1beta1",
                 id="1.34-without-the-gate"),
    pytest.param({"kube_version": "1.35.1", "api_versions": (f"{GROUP}/v1/MutatingAdmissionPolicy",)},
                 f"{GROUP}/v1beta1", id="1.35-another-version-than-its-own"),
    pytest.param({"kube_version": "1.33.5", "api_versions": (f"{GROUP}/v1alpha1/MutatingAdmissionPolicy",)},
                 f"{GROUP}/v1beta1", id="1.33-alpha-only"),
])
def test_mutation_is_refused_where_the_cluster_does_not_serve_the_api(render, cluster, missing):
    """Refused at render with what to turn on, instead of an install the apiserver rejects ("no matches for
    kind MutatingAdmissionPolicy") or, worse, a release whose webhook skips mutations nothing applies."""
    with pytest.raises(helm_python.HelmError) as error:
        render({"inTree": {"mutation": True}}, **cluster)
    text = str(error.value)
    assert f"does not serve MutatingAdmissionPolicy as {missing}," in text
    assert "--feature-gates=MutatingAdmissionPolicy=true" in text
    assert "--runtime-config=admissionregistration.k8s.io/v1beta1=true" in text
    assert f"--api-versions {missing}/MutatingAdmissionPolicy" in text
    # its benign twins: validation alone needs no MutatingAdmissionPolicy, and inTree off renders anywhere
    assert [o for o in render({"inTree": {"validation": True}}, **cluster).objects if o["kind"] in MUTATING] == []
    assert [o for o in render({}, **cluster).objects if o["kind"] in IN_TREE] == []


def test_the_files_are_what_make_intree_writes_from_the_default_render(default_render):
    """files/intree/ is what `make intree` writes (tools/intree_policy.py, through the function
    `export --chart-values` uses): the export of the chart's default policy, and that policy less what the
    export does not read."""
    from tools.intree_policy import files

    written = files()
    assert sorted(written) == ["mutation.yaml", "policy.json", "validation.yaml"]
    for name, text in written.items():
        assert (CHART / "files" / "intree" / name).read_text(encoding="utf-8") == text, f"run make intree ({name})"
    assert json.loads(written["policy.json"]) == exported_from(yaml.safe_load(_policy_text(default_render)))


@pytest.mark.parametrize("values", [
    pytest.param({"rules": {"visible-devices-override": "warn"}}, id="a-rule-action"),
    pytest.param({"policy": {"namespaceOverrides": [{"namespaces": ["ml"], "mode": "dry-run"}]}}, id="an-override"),
    pytest.param({"policy": {"exceptions": [{"name": "ci", "namespaces": ["ci"], "rules": ["run-as-root"]}]}},
                 id="an-exception"),
    pytest.param({"policy": {"language": "ja"}}, id="the-language"),
    pytest.param({"policy": {"namespaceOverrides": [{"namespaces": ["ml"], "language": "ja"}]}},
                 id="a-namespace-language"),
])
@pytest.mark.parametrize("in_tree", [{"validation": True}, {"mutation": True}], ids=["validation", "mutation"])
def test_in_tree_is_refused_for_a_policy_other_than_the_exported_one(render, values, in_tree):
    """The objects decide by the default policy while the webhook would skip those rules: refused, not
    installed as a silent disagreement."""
    with pytest.raises(helm_python.HelmError, match="this release's policy differs from it") as error:
        render({**values, "inTree": in_tree}, **SERVES_V1)
    assert "gpu-admission export --chart-values --base <the rendered policy.yaml>" in str(error.value)
    render(values)  # the same policy without inTree renders


@pytest.mark.parametrize("values", [
    pytest.param({"lookups": {"nodes": True, "resourceSlices": True}}, id="lookups"),
    pytest.param({"policy": {"language": "en"}}, id="the-default-language-said"),
])
def test_in_tree_takes_what_the_export_does_not_read(render, values):
    rendered = render({**values, "inTree": {"validation": True}})
    assert [o for o in rendered.objects if o["kind"] in IN_TREE]


# ------------------------------------------------------------------ a release's own policy (inTree.exported)

def _export_chart_values(tmp_path, policy_text: str, *argv: str) -> dict:
    """`gpu-admission export --chart-values --base <the policy the release renders>`, as docs/deployment.md
    says to run it, parsed as Helm reads a values file."""
    base = tmp_path / "policy.yaml"
    base.write_text(policy_text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["export", "--chart-values", "--base", str(base), *argv])
    assert code == 0, err.getvalue()
    return helm_python.values_from_yaml(out.getvalue())


def _with(values: dict, exported: dict, **in_tree: bool) -> dict:
    return {**values, "inTree": {**in_tree, **exported["inTree"]}}


OWN_POLICY = {"policy": CUSTOM_POLICY, "rules": {"run-as-root": "enforce", "hide-gpus": False}, "mode": "enforce"}
# Values the Go JSON encoder escapes (<, >, &) in strings the export reads: compared after a Go round trip
# on both sides, so equal, not refused.
GO_ESCAPED = {**OWN_POLICY, "policy": {**CUSTOM_POLICY, "docsBaseUrl": "https://wiki.example.com/gpu?rules=1&lang=<en>",
                                       "exceptions": [{"name": "kai", "rules": ["visible-devices-override"],
                                                       "schedulerNames": ["kai-scheduler"]}]}}


@pytest.mark.parametrize("values", [
    pytest.param(OWN_POLICY, id="own-policy"),
    pytest.param(GO_ESCAPED, id="go-escaped-strings"),
    pytest.param({"rules": {"visible-devices-override": "warn"},
                  "policy": {"namespaceOverrides": [{"namespaces": ["ml"], "mode": "dry-run"}]}}, id="default-changed"),
])
@pytest.mark.parametrize(("in_tree", "cluster", "kubernetes"), [
    pytest.param({"validation": True}, {}, (1, 37), id="validation"),
    pytest.param({"validation": True, "mutation": True}, SERVES_V1BETA1, (1, 34), id="both-1.34"),
    pytest.param({"mutation": True}, SERVES_V1, (1, 36), id="mutation-1.36"),
])
def test_a_releases_own_export_installs_and_equals_export_of_its_rendered_policy(render, tmp_path, values, in_tree,
                                                                                 cluster, kubernetes):
    """The gap of the default path: a policy of one's own, refused there (test above), installs with the
    export `--chart-values` wrote from the policy the release renders."""
    with pytest.raises(helm_python.HelmError, match="differs from it"):
        render({**values, "inTree": in_tree}, **cluster)  # without its export: the shipped default's, refused
    exported = _export_chart_values(tmp_path, render(values).policy_text())
    rendered = render(_with(values, exported, **in_tree), **cluster)
    policy = parse_policy(rendered.policy_text(), source="the chart's policy")
    assert (policy.in_tree.validation, policy.in_tree.mutation) == (bool(in_tree.get("validation")),
                                                                    bool(in_tree.get("mutation")))
    want = (export(policy) if in_tree.get("validation") else []) + (
        export_mutations(policy, kubernetes) if in_tree.get("mutation") else [])
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert objects and objects == want


@pytest.mark.parametrize("change", [
    pytest.param({"rules": {"run-as-root": "warn", "hide-gpus": False}}, id="a-rule-action"),
    pytest.param({"mode": "audit"}, id="the-mode"),
    pytest.param({"policy": {**CUSTOM_POLICY, "exceptions": []}}, id="an-exception-dropped"),
    pytest.param({"policy": {**CUSTOM_POLICY, "namespaceOverrides": []}}, id="an-override-dropped"),
    pytest.param({"policy": {**CUSTOM_POLICY, "language": "ja"}}, id="the-language"),
])
@pytest.mark.parametrize("in_tree", [{"validation": True}, {"mutation": True}], ids=["validation", "mutation"])
def test_a_stale_export_is_refused(render, tmp_path, change, in_tree):
    """The policy changed after the export: the carried objects decide by the old one, so refused, with
    the command that writes the export again."""
    exported = _export_chart_values(tmp_path, render(OWN_POLICY).policy_text())
    with pytest.raises(helm_python.HelmError, match="this release's policy differs from it") as error:
        render(_with({**OWN_POLICY, **change}, exported, **in_tree), **SERVES_V1)
    assert "gpu-admission export --chart-values --base <the rendered policy.yaml>" in str(error.value)
    assert "inTree.exported was exported from" in str(error.value)


@pytest.mark.parametrize("change", [
    pytest.param({"lookups": {"nodes": True, "resourceSlices": True}}, id="lookups"),
    pytest.param({"policy": {**CUSTOM_POLICY, "language": "en"}}, id="the-default-language-said"),
])
def test_an_export_is_not_stale_for_what_the_export_does_not_read(render, tmp_path, change):
    exported = _export_chart_values(tmp_path, render(OWN_POLICY).policy_text())
    rendered = render(_with({**OWN_POLICY, **change}, exported, validation=True, mutation=True), **SERVES_V1)
    assert {o["kind"] for o in rendered.objects if o["kind"] in IN_TREE} == set(IN_TREE)


def test_the_exports_service_namespace_is_replaced_by_the_releases(render, tmp_path):
    """Exported where the service ran in another namespace: the bindings leave out the release's."""
    text = render(OWN_POLICY).policy_text()
    exported = _export_chart_values(tmp_path, text, "--set", "serviceNamespace=gpu-admission-old")
    assert exported["inTree"]["exported"]["serviceNamespace"] == "gpu-admission-old"
    rendered = render(_with(OWN_POLICY, exported, validation=True))
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert objects == export(parse_policy(rendered.policy_text(), source="the chart's policy"))
    excluded = {v for o in objects if o["kind"].endswith("Binding")
                for e in o["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
                if e["operator"] == "NotIn" for v in e["values"]}
    assert NAMESPACE in excluded and "gpu-admission-old" not in excluded


def test_an_export_without_the_half_asked_for_is_refused(render, tmp_path):
    exported = _export_chart_values(tmp_path, render(OWN_POLICY).policy_text())
    del exported["inTree"]["exported"]["mutation"]
    with pytest.raises(helm_python.HelmError, match=r"inTree\.exported has no mutation objects"):
        render(_with(OWN_POLICY, exported, mutation=True), **SERVES_V1)
    assert [o for o in render(_with(OWN_POLICY, exported, validation=True)).objects if o["kind"] in IN_TREE]


def test_the_exported_value_is_checked_by_the_values_schema(render, tmp_path):
    exported = _export_chart_values(tmp_path, render(OWN_POLICY).policy_text())
    exported["inTree"]["exported"]["validation"] = "validation.yaml"
    with pytest.raises(helm_python.HelmError, match="validation"):
        render(_with(OWN_POLICY, exported, validation=True))


@pytest.mark.parametrize("values", [
    pytest.param({"lookups": {"deviceClasses": True}}, id="chart-value"),
    pytest.param({"policy": {"lookups": {"deviceClasses": True}}}, id="policy"),
])
def test_class_lookups_leave_double_mechanism_to_the_webhook(render, values):
    """The cluster's DeviceClasses replace the policy's list the double-mechanism and device-config objects
    decide by: the
    chart leaves them out, as the export of that policy does, and keeps the other rules' objects."""
    rendered = render({**values, "inTree": {"validation": True}})
    policy = parse_policy(_policy_text(rendered), source="the chart's policy")
    assert policy.lookups.device_classes
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert objects == export(policy)
    rules = {o["metadata"]["labels"]["gpu-admission.io/rule"] for o in objects}
    assert "double-mechanism" not in rules and "device-config" not in rules and "visible-devices-override" in rules
    default = [o for o in render({"inTree": {"validation": True}}).objects if o["kind"] in IN_TREE]
    assert {"double-mechanism", "device-config"} <= {o["metadata"]["labels"]["gpu-admission.io/rule"] for o in default}

def test_class_lookups_leave_double_mechanism_out_of_a_releases_own_export(render, tmp_path):
    """Exported with DeviceClass lookups off, installed with them on (lookups are not compared): the chart
    leaves the double-mechanism objects out there too."""
    exported = _export_chart_values(tmp_path, render(OWN_POLICY).policy_text())
    assert any(o["metadata"]["labels"]["gpu-admission.io/rule"] == "double-mechanism"
               for o in exported["inTree"]["exported"]["validation"])
    rendered = render(_with({**OWN_POLICY, "lookups": {"deviceClasses": True}}, exported, validation=True))
    rules = {o["metadata"]["labels"]["gpu-admission.io/rule"] for o in rendered.objects if o["kind"] in IN_TREE}
    assert "double-mechanism" not in rules and "device-config" not in rules and "visible-devices-override" in rules
