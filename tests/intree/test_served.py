"""Which MutatingAdmissionPolicy API a cluster serves and whether its gate is on (webhook/intree/served.py),
read from what real kube-apiservers answered (tests/intree/discovery/PROVENANCE.md): 1.34 with the gate and
runtime-config, with the runtime-config only, with neither, and 1.37."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from webhook.intree.mutations import api_version
from webhook.intree.served import feature_enabled, group_versions, served

HERE = Path(__file__).parent / "discovery"


def _recorded(name: str) -> dict:
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


def _kubernetes(recorded: dict) -> tuple[int, int]:
    return int(recorded["version"]["major"]), int(recorded["version"]["minor"])


@pytest.mark.parametrize(("name", "want_served", "gate"), [
    pytest.param("1.34-on", ("admissionregistration.k8s.io/v1beta1",), True, id="1.34-gate-and-runtime-config"),
    pytest.param("1.34-api-only", ("admissionregistration.k8s.io/v1beta1",), False, id="1.34-runtime-config-only"),
    pytest.param("1.34-off", (), False, id="1.34-default"),
    pytest.param("1.37-on", ("admissionregistration.k8s.io/v1",), True, id="1.37-default"),
])
def test_the_served_api_and_gate_as_the_apiserver_answers(name, want_served, gate):
    recorded = _recorded(name)
    versions = group_versions(recorded["group"])
    assert set(versions) == set(recorded["resources"])
    assert served(recorded["resources"]) == want_served
    assert feature_enabled((HERE / f"{name}.features.txt").read_text(encoding="utf-8")) is gate
    # what export --check compares in: the version's own API, served only where the cluster turned it on
    assert (api_version(_kubernetes(recorded)) in want_served) is bool(want_served)


def test_validating_admission_policy_alone_is_not_taken_for_the_mutating_api():
    """1.34's admissionregistration.k8s.io/v1 lists validatingadmissionpolicies and the webhook
    configurations, not mutatingadmissionpolicies: the group version alone says nothing."""
    recorded = _recorded("1.34-off")
    assert "admissionregistration.k8s.io/v1" in group_versions(recorded["group"])
    assert served(recorded["resources"]) == ()


@pytest.mark.parametrize(("text", "want"), [
    pytest.param('kubernetes_feature_enabled{name="MutatingAdmissionPolicy",stage="BETA"} 1\n', True, id="on"),
    pytest.param('kubernetes_feature_enabled{name="MutatingAdmissionPolicy",stage="BETA"} 0\n', False, id="off"),
    pytest.param('kubernetes_feature_enabled{name="MutatingAdmissionPolicyX",stage="ALPHA"} 1\n', None,
                 id="another-gate-of-a-longer-name"),
    pytest.param('kubernetes_feature_enabled{stage="",name="MutatingAdmissionPolicy"} 1\n', True, id="label-order"),
    pytest.param("", None, id="not-reported"),
])
def test_feature_enabled_reads_the_gate_line_alone(text, want):
    assert feature_enabled(text) is want


def test_absent_group_serves_nothing():
    assert group_versions(None) == () and served({}) == ()
