"""One definition per rule, in its own module: every rule id has exactly one, in the module of
webhook/policy/checks (validation) or webhook/policy/mutations (mutation) named for it, opening with the
rule's spec; every list of rules is derived from them; the engine runs every check (pod spec's or DRA
object's) through the same guarded loop, so a check that raises is answered per its onError."""
from __future__ import annotations

import inspect
import pkgutil

import pytest

from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.evaluation import evaluate_object
from webhook.lookups.base import NoLookups
from webhook.policy import checks, mutations
from webhook.policy.checks import claim_shape, legacy_api, visible_devices_override
from webhook.policy.contract import CLAIMS, POD_SPECS, Check, Definition, Target
from webhook.policy.definitions import BY_RULE, CHECKS, DEFINITIONS, MUTATIONS
from webhook.rules import VALIDATIONS, Rule

ALPHA_CLASS = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClass",
               "metadata": {"name": "gpu"}, "driverName": "gpu.nvidia.com"}
DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "old"},
                "spec": {"selectors": [], "suitableNodes": {"nodeSelectorTerms": []}}}
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
         "spec": {"devices": {"requests": [{"name": "gpu"}]}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
       "spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}]}}


def _modules(package) -> set[str]:
    return {m.name for m in pkgutil.iter_modules(package.__path__)}


def test_every_rule_is_one_module_named_for_its_id_holding_its_definition():
    assert _modules(checks) == {r.value.replace("-", "_") for r in VALIDATIONS}
    assert _modules(mutations) == {r.value.replace("-", "_") for r in Rule if r.is_mutation}
    assert [d.rule for d in DEFINITIONS] == list(Rule)
    for d in DEFINITIONS:
        package = mutations if d.rule.is_mutation else checks
        module = __import__(f"{package.__name__}.{d.rule.value.replace('-', '_')}", fromlist=["DEFINITION"])
        assert module.DEFINITION is d and d.spec == module.__doc__
        assert d.spec.startswith(f"{d.rule.value}: ")
        for check in d.checks:
            assert check.run.__module__ == module.__name__


def test_the_lists_of_rules_are_the_definitions():
    assert dict(BY_RULE) == {d.rule: d for d in DEFINITIONS}
    assert {d.rule for d in MUTATIONS} == {r for r in Rule if r.is_mutation}
    assert all(d.mutation is not None and not d.checks for d in MUTATIONS)
    assert all(d.checks and d.mutation is None for d in DEFINITIONS if not d.rule.is_mutation)


# The order findings are reported in (and so the order of a decision's messages), per target, and the order
# mutations run in (each reads what the earlier ones set; the patch lists their edits in that order).
ORDER = {
    Target.POD_SPEC: ["double-mechanism", "cohort-mismatch", "resource-not-offered", "shared-request-count",
                      "shared-exclusive-mix", "sharing-not-enabled", "shared-claim", "visible-devices-override",
                      "device-access-bypass", "runtime-class-conflict", "run-as-root", "legacy-api",
                      "unresolved-claim", "unsatisfiable-request"],
    Target.CLAIM: ["legacy-api", "claim-shape", "device-config", "sharing-not-enabled", "resource-not-offered"],
    Target.DEVICE_CLASS: ["legacy-api", "allocation-owner"],
    Target.TEMPLATE: ["allocation-owner"],
    Target.INFRASTRUCTURE: ["allocation-owner"],
}


def test_the_checks_of_each_target_and_the_mutations_run_in_their_order():
    assert {t: [r.value for r, _ in CHECKS[t]] for t in Target} == ORDER
    assert [d.rule.value for d in MUTATIONS] == ["default-placement", "default-runtime-class",
                                                  "default-security-context", "hide-gpus"]


@pytest.mark.parametrize("rule, check", [pytest.param(r, c, id=f"{r.value}-{t.name}") for t in Target
                                         for r, c in CHECKS[t]])
def test_every_check_has_the_one_signature(rule, check):
    assert list(inspect.signature(check.run).parameters) == ["facts", "context", "policy"]


def test_a_check_for_pod_specs_and_dra_objects_at_once_is_refused():
    with pytest.raises(ValueError, match="different facts"):
        Check(POD_SPECS | CLAIMS, legacy_api.check)


def test_a_definition_must_match_its_kind_give_its_reason_and_open_with_its_spec():
    checked = (Check(POD_SPECS, legacy_api.check),)
    Definition(Rule.LEGACY_API, "s", "c", "legacy-api: x", reason="r", checks=checked)  # the benign twin
    with pytest.raises(ValueError, match="a validation rule has checks"):
        Definition(Rule.LEGACY_API, "s", "c", "legacy-api: x", reason="r")
    with pytest.raises(ValueError, match="a validation rule has checks"):
        Definition(Rule.HIDE_GPUS, "s", "c", "hide-gpus: x", checks=checked)
    with pytest.raises(ValueError, match="reason in full"):
        Definition(Rule.LEGACY_API, "s", "c", "legacy-api: x", checks=checked)
    with pytest.raises(ValueError, match="docstring"):
        Definition(Rule.LEGACY_API, "s", "c", None, reason="r", checks=checked)
    with pytest.raises(ValueError, match="docstring"):
        Definition(Rule.LEGACY_API, "s", "c", "claim-shape: x", reason="r", checks=checked)


def _policy(on_error: str, rule: Rule):
    if on_error == "default":
        return default_policy()
    text = DEFAULT_PATH.read_text()
    assert "rules: {}" in text
    return parse_policy(text.replace("rules: {}", f"rules: {{{rule.value}: {{action: enforce, onError: deny}}}}"))


def _broken(*args, **kwargs):
    raise KeyError("boom")


@pytest.mark.parametrize(("module", "target", "obj"), [
    pytest.param(legacy_api, Target.DEVICE_CLASS, ALPHA_CLASS, id="legacy-api-on-an-alpha-kind"),
    pytest.param(legacy_api, Target.DEVICE_CLASS, DEVICE_CLASS, id="legacy-api-on-a-device-class"),
    pytest.param(claim_shape, Target.CLAIM, CLAIM, id="claim-shape-on-a-claim"),
    pytest.param(visible_devices_override, Target.POD_SPEC, POD, id="visible-devices-override-on-a-pod"),
])
@pytest.mark.parametrize("on_error", ["default", "deny"])
def test_a_check_that_raises_is_recorded_and_answered_per_its_on_error(monkeypatch, module, target, obj, on_error):
    policy = _policy(on_error, module.RULE)
    before = evaluate_object(obj, policy=policy, resolver=NoLookups(), namespace="ml")
    assert not before.errors and any(v.rule is module.RULE for v in before.violations)
    (check,) = [c for c in module.DEFINITION.checks if target in c.applies_to]
    monkeypatch.setattr(check, "run", _broken)
    ev = evaluate_object(obj, policy=policy, resolver=NoLookups(), namespace="ml")
    (error,) = ev.errors
    assert error.rule is module.RULE and error.error.startswith("KeyError")
    assert error.denied is (on_error == "deny")
    if on_error == "deny":
        assert not ev.allowed
    # the other checks still ran: nothing of the broken rule, the rest as before
    assert list(ev.violations) == [v for v in before.violations if v.rule is not module.RULE]
