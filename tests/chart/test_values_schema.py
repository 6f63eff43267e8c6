"""values.schema.json rejects wrong values before anything reaches the cluster, and the error names the
offending value, as `helm install` prints it."""
from __future__ import annotations

import helm_python
import pytest

from webhook.rules import Rule

from .conftest import render_values

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("values, named", [
    pytest.param({"mode": "enforcing"}, "/mode", id="unknown-mode"),
    pytest.param({"mdoe": "audit"}, "'mdoe' not allowed", id="misspelt-top-level-key"),
    pytest.param({"rules": {"double-mechanisms": "warn"}}, "'double-mechanisms'", id="unknown-rule-id"),
    pytest.param({"rules": {"shared-claim": "deny"}}, "/rules/shared-claim", id="unknown-action"),
    pytest.param({"rules": {"shared-claim": {"action": "warn", "onError": "ignore"}}}, "/rules/shared-claim",
                 id="unknown-on-error"),
    pytest.param({"exemptNamespaces": ["ML_Team"]}, "/exemptNamespaces/0", id="namespace-not-dns-label"),
    pytest.param({"lookups": {"secrets": "yes"}}, "/lookups/secrets", id="lookup-not-boolean"),
    pytest.param({"lookups": {"services": True}}, "'services' not allowed", id="unknown-lookup"),
    pytest.param({"webhooks": {"validating": {"timeoutSeconds": 10}}}, "/webhooks/validating/timeoutSeconds",
                 id="timeout-above-5"),
    pytest.param({"webhooks": {"mutating": {"timeoutSeconds": 0}}}, "/webhooks/mutating/timeoutSeconds",
                 id="timeout-zero"),
    pytest.param({"webhooks": {"validating": {"failurePolicy": "fail"}}}, "/webhooks/validating/failurePolicy",
                 id="failure-policy-lower-case"),
    pytest.param({"webhooks": {"domain": "gpu"}}, "/webhooks/domain", id="webhook-domain-one-segment"),
    pytest.param({"certificates": {"mode": "selfSigned"}}, "/certificates/mode", id="unknown-certificate-mode"),
    pytest.param({"certificates": {"mode": "existingSecret", "secretName": "tls"}}, "/certificates/caBundle",
                 id="existing-secret-without-ca-bundle"),
    pytest.param({"certificates": {"certManager": {"issuerRef": {"name": "ca", "kind": "Vault"}}}},
                 "/certificates/certManager/issuerRef/kind", id="issuer-kind"),
    pytest.param({"replicaCount": 0}, "/replicaCount", id="no-replicas"),
    pytest.param({"replicaCount": "2"}, "/replicaCount", id="replicas-as-string"),
    pytest.param({"server": {"port": 443}}, "/server/port", id="privileged-port"),
    pytest.param({"priorityClass": {"value": 2000000000}}, "/priorityClass/value", id="system-priority-value"),
    pytest.param({"image": {"digest": "latest"}}, "/image/digest", id="digest-not-sha256"),
    pytest.param({"topologySpread": {"hostname": "Never"}}, "/topologySpread/hostname", id="spread-policy"),
    pytest.param({"audit": {"concurrencyPolicy": "Sometimes"}}, "/audit/concurrencyPolicy", id="audit-concurrency"),
    pytest.param({"policy": {"mode": "strict"}}, "/policy/mode", id="policy-mode"),
    pytest.param({"hostNetwork": {"enabled": "yes"}}, "/hostNetwork/enabled", id="host-network-not-boolean"),
    pytest.param({"dnsPolicy": "ClusterFirstWithHostnet"}, "/dnsPolicy", id="dns-policy"),
    # The apiserver refuses dnsPolicy None without a dnsConfig (found by the real one in tests/e2e).
    pytest.param({"dnsPolicy": "None"}, "dnsConfig", id="dns-policy-none-without-config"),
    pytest.param({"dnsPolicy": "None", "dnsConfig": {}}, "dnsConfig", id="dns-policy-none-with-empty-config"),
    pytest.param({"extraEnv": [{"value": "x"}]}, "/extraEnv/0", id="extra-env-without-name"),
    pytest.param({"extraArgs": [""]}, "/extraArgs/0", id="extra-arg-empty"),
    pytest.param({"extraVolumes": [{"name": "Bad_Name", "emptyDir": {}}]}, "/extraVolumes/0/name", id="volume-name"),
    pytest.param({"extraVolumeMounts": [{"name": "x", "mountPath": "relative"}]}, "/extraVolumeMounts/0/mountPath",
                 id="mount-path-relative"),
    pytest.param({"webhooks": {"objectSelector": {"matchLabel": {"a": "b"}}}}, "'matchLabel' not allowed",
                 id="object-selector-misspelt"),
    pytest.param({"webhooks": {"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Equals"}]}}},
                 "/webhooks/namespaceSelector/matchExpressions/0/operator", id="namespace-selector-operator"),
    pytest.param({"webhooks": {"matchConditions": {"extra": [{"name": "x"}]}}}, "/webhooks/matchConditions/extra/0",
                 id="match-condition-without-expression"),
    pytest.param({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]},
                 "/topologySpreadConstraints/0", id="spread-without-when-unsatisfiable"),
    pytest.param({"revisionHistoryLimit": -1}, "/revisionHistoryLimit", id="revision-history-negative"),
    pytest.param({"updateStrategy": {"type": "OnDelete"}}, "/updateStrategy/type", id="update-strategy-type"),
    pytest.param({"podSecurityContext": []}, "/podSecurityContext", id="pod-security-context-not-object"),
    pytest.param({"autoscaling": {"targetCPUUtilizationPercentage": 0}}, "/autoscaling/targetCPUUtilizationPercentage",
                 id="hpa-target"),
    pytest.param({"audit": {"failOnFindings": "true"}}, "/audit/failOnFindings", id="fail-on-findings-string"),
    pytest.param({"server": {"logFormat": "logfmt"}}, "/server/logFormat", id="log-format"),
    pytest.param({"certificates": {"generate": {"renewBeforeDays": -1}}}, "/certificates/generate/renewBeforeDays",
                 id="renew-before-negative"),
    pytest.param({"prometheusRule": {"errorRatio": 2}}, "/prometheusRule/errorRatio", id="error-ratio"),
    pytest.param({"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}}, "/grafanaDashboard/labels",
                 id="dashboard-label-not-string"),
    pytest.param({"policy": {"cohortz": []}}, "'cohortz' not allowed", id="policy-misspelt-key"),
    pytest.param({"policy": {"cohorts": []}}, "/policy/cohorts", id="policy-no-cohorts"),
    pytest.param({"policy": {"cohorts": [{"name": "a", "mechanism": "gpu", "nodeLabels": {"k": "v"}}]}},
                 "/policy/cohorts/0/mechanism", id="cohort-mechanism"),
    pytest.param({"policy": {"cohorts": [{"name": "a", "mechanism": "dra"}]}}, "nodeLabels",
                 id="cohort-without-node-labels"),
    pytest.param({"policy": {"cohorts": [{"name": "a", "mechanism": "dra", "nodeLabels": {"k": "v"},
                                          "maxDevicesPerClaim": 0}]}}, "/policy/cohorts/0/maxDevicesPerClaim",
                 id="cohort-max-devices"),
    pytest.param({"policy": {"visibleDeviceVariables": ["CUDA VISIBLE"]}}, "/policy/visibleDeviceVariables/0",
                 id="variable-name"),
    pytest.param({"policy": {"namespaceCohorts": {"ml": "x'y"}}}, "/policy/namespaceCohorts/ml",
                 id="namespace-cohort-quote"),
    pytest.param({"policy": {"exceptions": [{"namespaces": ["ml"], "rules": ["double-mechanisms"]}]}},
                 "/policy/exceptions/0/rules/0", id="unknown-rule-id-in-an-exception"),
])
def test_wrong_values_are_rejected_with_an_error_that_names_them(values, named):
    with pytest.raises(helm_python.HelmValuesError) as caught:
        render_values(values)
    message = str(caught.value)
    assert "values don't meet the specifications of the schema" in message
    assert named in message, message


@pytest.mark.parametrize("values", [
    pytest.param({"mode": "dry-run"}, id="dry-run"),
    pytest.param({"rules": {"hide-gpus": False, "run-as-root": {"action": "enforce", "onError": "deny"}}},
                 id="off-as-false-and-mapping"),
    pytest.param({"podDisruptionBudget": {"maxUnavailable": "50%"}}, id="pdb-percentage"),
    pytest.param({"securityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None}}, id="platform-uids"),
    pytest.param({"policy": {"serviceNamespace": "anything"}}, id="service-namespace-is-ignored"),
    pytest.param({"rules": {r.value: "warn" for r in Rule},
                  "policy": {"exceptions": [{"namespaces": ["ml"], "rules": [r.value for r in Rule]}]}},
                 id="every-rule-id-in-rules-and-exceptions"),
    pytest.param({"certificates": {"certManager": {"issuerRef": {"name": "corp", "kind": "ClusterIssuer"}},
                                   "mode": "certManager"}}, id="cluster-issuer"),
])
def test_right_values_are_accepted(values):
    assert render_values(values)


def test_the_default_values_validate(chart):
    chart.validate_schema(chart.values)
