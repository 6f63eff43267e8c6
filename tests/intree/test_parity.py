"""The exported policies decide as the engine does: every pod-bearing row of every rule's table
(tests/policy/rules/test_<rule>.py), as the apiserver hands it over, under the row's policy. For each
exported rule, the CEL coverage equals the engine's (webhook/intree/coverage.py); inside it, CEL denies,
warns or audits exactly when the engine's finding has that action, and the engine with `inTree` on leaves
the rule to the apiserver and keeps every other finding."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from tests.intree.vap import admit, matched
from tests.policy.builders import POLICIES, all_cases, apiserver_shaped
from tests.policy.conftest import evaluate_docs
from webhook.config.model import InTree
from webhook.intree.coverage import covered
from webhook.intree.export import ACTIONS, DRY_RUN, RULE_LABEL, export, exported_rules
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import view_of
from webhook.rules import Action, Rule

CASES = [c for c in all_cases() if BY_KIND.get(c.obj["kind"]) and BY_KIND[c.obj["kind"]].pod_spec_path]
SEEN: Counter = Counter()


def _request(obj: dict, namespace: str, user: dict | None) -> dict:
    user = user or {}
    return {"operation": "CREATE", "namespace": namespace,
            "userInfo": {"username": user.get("username", ""), "groups": list(user.get("groups", []))}}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_in_tree_verdicts_equal_the_engines(case):
    policy = POLICIES[case.policy]
    if any(d.get("kind") == "DeviceClass" for d in case.docs):
        # the row's DeviceClasses stand for what DeviceClass lookups return (the bundle resolves them as
        # the cluster would): the policy's own list is then not what the engine reads
        policy = dataclasses.replace(policy, lookups=dataclasses.replace(policy.lookups, device_classes=True))
    shaped = apiserver_shaped(case.obj)
    docs = [apiserver_shaped(d) for d in case.docs]
    ev = evaluate_docs(shaped, policy=policy, docs=docs, user=case.user, namespace=case.namespace)
    if ev.skipped:
        return
    seen = ev.mutated or shaped  # what the validating phase sees, after the mutating webhook
    request = _request(seen, ev.namespace, case.user)
    objects = export(policy)
    view = view_of(seen, BY_KIND[seen["kind"]], ev.namespace)
    in_tree_policy = dataclasses.replace(policy, in_tree=InTree(validation=True))
    skipped = evaluate_docs(shaped, policy=in_tree_policy, docs=docs, user=case.user, namespace=case.namespace)
    for rule in exported_rules(policy):
        mine = [o for o in objects if o["metadata"]["labels"][RULE_LABEL] == rule.value]
        (vap,) = [o for o in mine if o["kind"] == "ValidatingAdmissionPolicy" and matched(
            {**o, "spec": {**o["spec"], "matchConditions": []}}, seen, request)]
        cel_covered = matched({**vap, "spec": {**vap["spec"], "matchConditions": vap["spec"]["matchConditions"][:1]}},
                              seen, request)
        is_covered = rule in covered(frozenset({rule}), view, policy)
        assert cel_covered == is_covered
        engine = [v for v in ev.violations if v.rule is rule]
        decisions = admit(mine, seen, request)
        if not is_covered:
            SEEN["uncovered"] += 1
            SEEN[(rule.value, "uncovered")] += 1
            assert [v for v in skipped.violations if v.rule is rule] == engine
            continue
        SEEN["covered-" + ("failing" if engine else "passing")] += 1
        SEEN[(rule.value, "failing" if engine else "passing")] += 1
        assert bool(decisions) == bool(engine), (decisions, engine)
        if engine:
            table = DRY_RUN if ev.dry_run else ACTIONS
            assert {d.actions for d in decisions} == {tuple(table[engine[0].action])}
            for d in decisions:
                assert d.message.startswith(engine[0].message.split(":", 1)[0] + ": ")
                assert d.message.endswith(f"[{rule.value}] {policy.docs_url(rule)}")
                assert "\n" not in d.message
            assert any(v.path in d.message for v in engine for d in decisions), (decisions, engine)
            if rule is Rule.DOUBLE_MECHANISM:  # one finding, in the engine's words
                assert [d.message for d in decisions] == [v.message for v in engine]
        # the webhook leaves the rule to the apiserver and keeps the rest
        assert [v for v in skipped.violations if v.rule is rule] == []
    kept = [v for v in skipped.violations if v.rule not in exported_rules(policy)]
    assert kept == [v for v in ev.violations if v.rule not in exported_rules(policy)]


def test_the_tables_reach_every_side_of_the_coverage():
    """Run after the table above (same module, pytest's order): failing and passing rows inside the coverage,
    and rows outside it, for the parity above to mean something."""
    assert SEEN["covered-failing"] >= 10 and SEEN["covered-passing"] >= 50 and SEEN["uncovered"] >= 10, SEEN
    for rule in ("visible-devices-override", "device-access-bypass", "run-as-root", "runtime-class-conflict",
                 "double-mechanism"):
        assert SEEN[(rule, "failing")] >= 2 and SEEN[(rule, "passing")] >= 10 and SEEN[(rule, "uncovered")] >= 2, SEEN


def test_action_mapping():
    assert ACTIONS == {Action.ENFORCE: ["Deny"], Action.WARN: ["Warn"], Action.AUDIT: ["Audit"]}
    assert DRY_RUN[Action.ENFORCE] == ["Warn", "Audit"]


def test_double_mechanism_is_left_to_the_webhook_with_class_lookups():
    """With DeviceClass lookups on, the cluster's classes replace the policy's list the export would decide
    by: the rule is not exported, and the engine's coverage is empty (a pod of the corner is its own again)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"limits": {
            "nvidia.com/gpu": "1", "deviceclass.resource.kubernetes.io/hybrid-full-gpu": "1"}}}]}}
    view = view_of(pod, BY_KIND["Pod"], "ml")
    on, off = POLICIES["class-lookups"], POLICIES["default"]
    assert Rule.DOUBLE_MECHANISM in exported_rules(off) and covered(frozenset({Rule.DOUBLE_MECHANISM}), view, off)
    assert Rule.DOUBLE_MECHANISM not in exported_rules(on)
    assert not covered(frozenset({Rule.DOUBLE_MECHANISM}), view, on)
    assert not [o for o in export(on) if o["metadata"]["labels"][RULE_LABEL] == "double-mechanism"]
    assert exported_rules(on) == exported_rules(off) - {Rule.DOUBLE_MECHANISM}
