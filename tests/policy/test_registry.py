"""The one check contract: every validation rule is one module of webhook/policy/checks, registered for
what it applies to, and the engine runs every check (pod spec's or DRA object's) through the same
guarded loop, so a check that raises is answered per its onError."""
from __future__ import annotations

import inspect
import pkgutil

import pytest

from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.evaluation import evaluate_object
from webhook.lookups.base import NoLookups
from webhook.policy import checks
from webhook.policy.checks import REGISTRY, claim_shape, legacy_api, visible_devices_override
from webhook.policy.contract import Check, Target
from webhook.rules import VALIDATIONS, Rule

ALPHA_CLASS = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClass",
               "metadata": {"name": "gpu"}, "driverName": "gpu.nvidia.com"}
DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "old"},
                "spec": {"selectors": [], "suitableNodes": {"nodeSelectorTerms": []}}}
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
         "spec": {"devices": {"requests": [{"name": "gpu"}]}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
       "spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}]}}


def _modules() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(checks.__path__)}


def test_every_validation_rule_is_one_registered_module_named_for_its_id():
    assert _modules() == {r.value.replace("-", "_") for r in VALIDATIONS}
    assert {c.module.__name__.rsplit(".", 1)[1] for c in REGISTRY} == _modules()
    for check in REGISTRY:
        assert check.rule.value.replace("-", "_") == check.module.__name__.rsplit(".", 1)[1]


def test_a_check_is_registered_once_per_target():
    seen = [(c.rule, t) for c in REGISTRY for t in c.applies_to]
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("check",
                         [pytest.param(c, id=f"{c.rule.value}-{'-'.join(sorted(t.name for t in c.applies_to))}")
                                   for c in REGISTRY])
def test_every_check_has_the_one_signature(check):
    fn = getattr(check.module, check.function)
    assert list(inspect.signature(fn).parameters) == ["facts", "context", "policy"]


def test_a_check_for_pod_specs_and_dra_objects_at_once_is_refused():
    with pytest.raises(ValueError, match="different facts"):
        Check(legacy_api, frozenset({Target.POD_SPEC, Target.CLAIM}))
    with pytest.raises(ValueError, match="has no check_object"):
        Check(visible_devices_override, frozenset({Target.CLAIM}))


def _policy(on_error: str, rule: Rule):
    if on_error == "default":
        return default_policy()
    text = DEFAULT_PATH.read_text()
    assert "rules: {}" in text
    return parse_policy(text.replace("rules: {}", f"rules: {{{rule.value}: {{action: enforce, onError: deny}}}}"))


def _broken(*args, **kwargs):
    raise KeyError("boom")


@pytest.mark.parametrize(("module", "function", "obj"), [
    pytest.param(legacy_api, "check_object", ALPHA_CLASS, id="legacy-api-on-an-alpha-kind"),
    pytest.param(legacy_api, "check_object", DEVICE_CLASS, id="legacy-api-on-a-device-class"),
    pytest.param(claim_shape, "check_object", CLAIM, id="claim-shape-on-a-claim"),
    pytest.param(visible_devices_override, "check", POD, id="visible-devices-override-on-a-pod"),
])
@pytest.mark.parametrize("on_error", ["default", "deny"])
def test_a_check_that_raises_is_recorded_and_answered_per_its_on_error(monkeypatch, module, function, obj, on_error):
    policy = _policy(on_error, module.RULE)
    before = evaluate_object(obj, policy=policy, resolver=NoLookups(), namespace="ml")
    assert not before.errors and any(v.rule is module.RULE for v in before.violations)
    monkeypatch.setattr(module, function, _broken)
    ev = evaluate_object(obj, policy=policy, resolver=NoLookups(), namespace="ml")
    (error,) = ev.errors
    assert error.rule is module.RULE and error.error.startswith("KeyError")
    assert error.denied is (on_error == "deny")
    if on_error == "deny":
        assert not ev.allowed
    # the other checks still ran: nothing of the broken rule, the rest as before
    assert list(ev.violations) == [v for v in before.violations if v.rule is not module.RULE]
