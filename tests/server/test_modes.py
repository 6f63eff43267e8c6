"""Modes end to end (docs/rules/README.md, Modes): enforce denies, warn warns, audit/dry-run reports what would
have happened (warnings, audit annotations, log, metrics) and applies no patch; and what happens when a
rule or the whole evaluation fails."""
from __future__ import annotations

import pytest

from webhook.admission import handlers
from webhook.policy.checks import visible_devices_override

from .apiserver import ApiServer
from .conftest import flask_transport

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "peek", "namespace": "ml"},
       "spec": {"containers": [{"name": "c", "image": "cuda:12",
                                "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0,1"}],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
RULE = "[visible-devices-override]"


def _events(caplog, event):
    return [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == event]


def test_enforce_denies_with_one_line_per_violation_and_patches_on_mutate(apiserver):
    result = apiserver.admit(POD)
    assert not result.validate.allowed
    assert result.validate.response["status"]["code"] == 403
    (line,) = result.validate.message.split("\n")
    assert line.startswith('pod "ml/peek": container "c" sets CUDA_VISIBLE_DEVICES (spec.containers[0].env[0]')
    assert RULE in line and "0,1" not in line  # names the variable, never its value
    # what kubectl prints around it: tests/golden/e2e/denial-visible-devices.txt, from the real apiserver
    assert result.mutate.allowed and result.mutate.patch
    assert result.mutated["spec"]["runtimeClassName"] == "nvidia"


@pytest.mark.parametrize("overrides", [
    pytest.param("rules: {visible-devices-override: warn}", id="rule-warn"),
    pytest.param("namespaceOverrides: [{namespaces: [ml], rules: {visible-devices-override: warn}}]",
                 id="namespace-rule-warn"),
])
def test_warn_allows_with_the_message_as_a_warning(apiserver_for, overrides):
    result = apiserver_for(overrides).admit(POD)
    assert result.allowed
    (warning,) = result.validate.warnings
    assert warning.startswith('pod "ml/peek": container "c" sets CUDA_VISIBLE_DEVICES') and RULE in warning
    assert result.mutate.patch  # mutations still apply


@pytest.mark.parametrize("overrides", [
    pytest.param("mode: audit", id="audit"),
    pytest.param("mode: dry-run", id="dry-run"),
    pytest.param("namespaceOverrides: [{namespaces: [ml], mode: audit}]", id="namespace-audit"),
])
def test_dry_run_reports_everything_and_changes_nothing(make_app, caplog, overrides):
    app = make_app(overrides)
    result = ApiServer(flask_transport(app.test_client())).admit(POD)
    assert result.allowed
    assert result.mutate.patch is None and result.mutated == result.sent  # no patch applied
    assert any(w.startswith("dry-run, would deny: ") and RULE in w for w in result.validate.warnings)
    assert any(w.startswith("dry-run: ") and "[default-runtime-class]" in w for w in result.mutate.warnings)
    assert result.validate.annotations["mode"] == "dry-run"
    assert RULE in result.validate.annotations["visible-devices-override"]
    assert "[default-runtime-class]" in result.mutate.annotations["default-runtime-class"]
    decisions = _events(caplog, "admission")
    assert [d["endpoint"] for d in decisions] == ["mutate", "validate"]
    assert all(d["mode"] == "dry-run" and d["allowed"] for d in decisions)
    assert {"rule": "visible-devices-override", "action": "enforce", "path": "spec.containers[0].env[0]",
            "outcome": "would-deny"} in decisions[1]["violations"]
    assert {"rule": "default-runtime-class", "action": "enforce", "path": "spec.runtimeClassName",
            "outcome": "would-patch"} in decisions[0]["violations"]
    assert "patch_ops" not in decisions[0]
    metrics = app.test_client().get("/metrics").get_data(as_text=True)
    assert ('gpu_admission_rule_results_total{action="enforce",outcome="would-deny",rule="visible-devices-override"} '
            "1.0") in metrics
    assert 'outcome="would-patch",rule="default-runtime-class"} 1.0' in metrics


def test_namespace_override_leaves_other_namespaces_enforced(apiserver_for):
    api = apiserver_for("namespaceOverrides: [{namespaces: [canary], mode: audit}]")
    assert api.admit({**POD, "metadata": {"name": "p", "namespace": "canary"}}).allowed
    assert not api.admit(POD).allowed


def test_rule_at_audit_records_without_warning(apiserver_for):
    result = apiserver_for("rules: {visible-devices-override: audit}").admit(POD)
    assert result.allowed and result.validate.warnings == []
    assert RULE in result.validate.annotations["visible-devices-override"]


def test_rule_off_says_nothing(apiserver_for):
    result = apiserver_for("rules: {visible-devices-override: 'off'}").admit(POD)
    assert result.allowed and result.validate.warnings == [] and result.validate.annotations == {}


def test_request_dry_run_is_evaluated_like_any_other(apiserver):
    assert not apiserver.admit(POD, dry_run=True).validate.allowed


def _broken_rule(*args, **kwargs):
    raise KeyError("boom")


@pytest.mark.parametrize(("overrides", "allowed"), [
    pytest.param("", True, id="on-error-default-allow"),
    pytest.param("rules: {visible-devices-override: {action: enforce, onError: deny}}", False, id="on-error-deny"),
])
def test_a_rule_that_raises_is_logged_with_its_id_and_answered_per_on_error(
        apiserver_for, monkeypatch, caplog, overrides, allowed):
    (check,) = visible_devices_override.DEFINITION.checks
    monkeypatch.setattr(check, "run", _broken_rule)  # a bug in one rule
    result = apiserver_for(overrides).admit(POD)
    assert result.validate.allowed is allowed
    if allowed:
        assert any("could not evaluate rule visible-devices-override" in w for w in result.validate.warnings)
    else:
        assert "visible-devices-override failed internally" in result.validate.message
    (error,) = _events(caplog, "rule-error")
    assert error["rule"] == "visible-devices-override" and error["decision"] == ("allow" if allowed else "deny")
    assert error["error"] == "KeyError" and "boom" not in str(error)


@pytest.mark.parametrize(("failure_mode", "allowed", "code"), [
    pytest.param("allow", True, None, id="allow"),
    pytest.param("deny", False, 500, id="deny"),
])
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_an_evaluation_that_raises_is_answered_per_the_failure_mode(
        make_app, monkeypatch, caplog, failure_mode, allowed, code, path):
    monkeypatch.setattr(handlers, "validate", _broken_rule)
    monkeypatch.setattr(handlers, "mutate", _broken_rule)
    app = make_app(failure_mode=failure_mode)
    api = ApiServer(flask_transport(app.test_client()))
    answer = api.send(path, api.review(POD))  # a well-formed AdmissionReview, never a bare 500
    assert answer.allowed is allowed and answer.patch is None
    if allowed:
        assert answer.warnings == ["gpu-admission could not evaluate this request (internal error); it was allowed "
                                   "without checks"]
    else:
        assert answer.response["status"]["code"] == code
        assert "could not evaluate this request" in answer.message
    (error,) = _events(caplog, "internal-error")
    assert error["error"] == "KeyError" and error["failure_mode"] == failure_mode
    assert error["where"][-1].startswith("test_modes.py:") or "_broken_rule" in error["where"][-1]
    assert "boom" not in str(error)  # the exception's text may quote the object; it is not logged
    metrics = app.test_client().get("/metrics").get_data(as_text=True)
    assert (f'gpu_admission_requests_total{{dry_run="false",endpoint="{path[1:]}",kind="Pod",operation="CREATE",'
            'result="error"} 1.0') in metrics
