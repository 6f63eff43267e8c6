"""The chart's `inTree` option (issue 18): off by default; on, it installs exactly the objects
`gpu-admission export` writes for the policy the chart renders, and tells the webhook to leave those rules
to the apiserver."""
from __future__ import annotations

import yaml

from webhook.config import parse_policy
from webhook.intree.export import export

IN_TREE = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


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
