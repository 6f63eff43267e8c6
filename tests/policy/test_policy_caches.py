"""What the engine derives from a policy (per-namespace plans, the base context) belongs to that policy:
a reload that lands while a request still holds the old policy must not leak the old policy's plan into
the new one's."""
from __future__ import annotations

import pytest

from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.policy import context, engine
from webhook.rules import Action, Rule


def _policy(action: str):
    text = DEFAULT_PATH.read_text()
    assert "namespaceOverrides: []" in text
    override = f"namespaceOverrides: [{{namespaces: [ml], rules: {{shared-claim: {action}}}}}]"
    return parse_policy(text.replace("namespaceOverrides: []", override))


@pytest.mark.parametrize("namespace", [pytest.param("ml", id="overridden-namespace"),
                                       pytest.param("default", id="namespace-without-overrides")])
def test_a_reload_during_a_request_keeps_each_policy_s_own_plan(monkeypatch, namespace):
    old, new = _policy("enforce"), _policy("off")
    make = engine._make_plan

    def reload_meanwhile(policy, ns):
        # The request holding the old policy computes its plan; meanwhile the reload is in force and a
        # request on the new policy computes (and keeps) the new policy's plan.
        if policy is old:
            engine._plan(new, namespace)
        return make(policy, ns)

    monkeypatch.setattr(engine, "_make_plan", reload_meanwhile)
    assert engine._plan(old, namespace).actions[Rule.SHARED_CLAIM] is \
        (Action.ENFORCE if namespace == "ml" else Action.WARN)
    expected = Action.OFF if namespace == "ml" else Action.WARN
    assert engine._plan(new, namespace).actions[Rule.SHARED_CLAIM] is expected
    assert engine._plan(old, namespace) is not engine._plan(new, namespace)


def test_plans_are_computed_once_per_policy_and_shared_by_namespaces_without_overrides():
    policy = _policy("enforce")
    assert engine._plan(policy, "a") is engine._plan(policy, "b") is engine._plan(policy, "default")
    assert engine._plan(policy, "ml") is engine._plan(policy, "ml") is not engine._plan(policy, "a")


def test_the_base_context_is_the_policy_s_own():
    first, second = default_policy(), _policy("off")
    assert context.base_context(first) is context.base_context(first)
    assert context.base_context(first) is not context.base_context(second)
    assert context.base_context(second).classes is second.device_classes
