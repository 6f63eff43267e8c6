"""The chart's `inTree` option (issue 18): off by default; on, it installs exactly the objects
`gpu-admission export` writes for the policy the chart renders, and tells the webhook to leave those rules
to the apiserver."""
from __future__ import annotations

import json

import helm_python
import pytest
import yaml

from tests.support import REPO
from webhook.config import parse_policy
from webhook.intree.export import export
from webhook.intree.mutations import export_mutations

VALIDATING = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
MUTATING = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
IN_TREE = VALIDATING + MUTATING
CHART = REPO / "charts" / "gpu-admission"


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


@pytest.mark.parametrize(("values", "validating", "mutating"), [
    pytest.param({"mutation": True}, False, True, id="mutation-only"),
    pytest.param({"validation": True, "mutation": True}, True, True, id="both"),
])
def test_mutation_installs_what_export_writes_for_the_rendered_policy(render, values, validating, mutating):
    rendered = render({"inTree": values})
    text = _policy_text(rendered)
    assert yaml.safe_load(text)["inTree"] == {"validation": validating, "mutation": mutating}
    policy = parse_policy(text, source="the chart's policy")
    assert policy.in_tree.mutation
    # Without a cluster Helm's capabilities are its own client libraries' Kubernetes (1.36 or later here):
    # admissionregistration.k8s.io/v1; against a cluster, the cluster's version chooses.
    want = (export(policy) if validating else []) + export_mutations(policy, (1, 36))
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert {o["kind"] for o in objects} >= set(MUTATING)
    assert objects == want


def test_the_policy_the_objects_were_exported_from_is_the_default_render():
    """files/intree/policy.json is what `make intree` writes: the chart's default policy, less what the export
    does not read."""
    from tools.intree_policy import exported_from

    assert json.loads((CHART / "files" / "intree" / "policy.json").read_text(encoding="utf-8")) == exported_from()


@pytest.mark.parametrize("values", [
    pytest.param({"rules": {"visible-devices-override": "warn"}}, id="a-rule-action"),
    pytest.param({"policy": {"namespaceOverrides": [{"namespaces": ["ml"], "mode": "dry-run"}]}}, id="an-override"),
    pytest.param({"policy": {"exceptions": [{"name": "ci", "namespaces": ["ci"], "rules": ["run-as-root"]}]}},
                 id="an-exception"),
])
@pytest.mark.parametrize("in_tree", [{"validation": True}, {"mutation": True}], ids=["validation", "mutation"])
def test_in_tree_is_refused_for_a_policy_other_than_the_exported_one(render, values, in_tree):
    """The objects decide by the default policy while the webhook would skip those rules: refused, not
    installed as a silent disagreement."""
    with pytest.raises(helm_python.HelmError, match="this release's policy differs from it"):
        render({**values, "inTree": in_tree})
    render(values)  # the same policy without inTree renders


@pytest.mark.parametrize("values", [
    pytest.param({"lookups": {"nodes": True, "resourceSlices": True}}, id="lookups"),
    pytest.param({"policy": {"language": "ja"}}, id="language"),
])
def test_in_tree_takes_what_the_export_does_not_read(render, values):
    rendered = render({**values, "inTree": {"validation": True}})
    assert [o for o in rendered.objects if o["kind"] in IN_TREE]


@pytest.mark.parametrize("values", [
    pytest.param({"lookups": {"deviceClasses": True}}, id="chart-value"),
    pytest.param({"policy": {"lookups": {"deviceClasses": True}}}, id="policy"),
])
def test_class_lookups_leave_double_mechanism_to_the_webhook(render, values):
    """The cluster's DeviceClasses replace the policy's list the double-mechanism objects decide by: the
    chart leaves them out, as the export of that policy does, and keeps the other rules' objects."""
    rendered = render({**values, "inTree": {"validation": True}})
    policy = parse_policy(_policy_text(rendered), source="the chart's policy")
    assert policy.lookups.device_classes
    objects = [o for o in rendered.objects if o["kind"] in IN_TREE]
    assert objects == export(policy)
    rules = {o["metadata"]["labels"]["gpu-admission.io/rule"] for o in objects}
    assert "double-mechanism" not in rules and "visible-devices-override" in rules
    default = [o for o in render({"inTree": {"validation": True}}).objects if o["kind"] in IN_TREE]
    assert "double-mechanism" in {o["metadata"]["labels"]["gpu-admission.io/rule"] for o in default}
