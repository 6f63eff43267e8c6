"""The alerts: `promtool check rules` on the rendered PrometheusRule, and one `promtool test rules` per alert
with the series that make it fire and their closest twin that must not."""
from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.chart.conftest import render_values

from .conftest import SELECTOR_LABELS, VALUES, alert_rules, binary

pytestmark = pytest.mark.slow
DAY = 86400


def _series(name: str, values: str, **labels: str) -> dict:
    merged = {**SELECTOR_LABELS, **labels}
    inner = ",".join(f'{k}="{v}"' for k, v in merged.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


REQUEST = {"kind": "Pod", "operation": "CREATE", "dry_run": "false", "instance": "10.0.0.1:8443"}
BUCKETS = ("0.001", "1.0", "2.5", "5.0", "+Inf")

# alert -> (series that make it fire, its benign twin, eval time, labels of the firing alert beyond its own)
CASES = {
    "GpuAdmissionDown": (
        [_series("up", "0x20", instance="a"), _series("up", "0x20", instance="b")],
        [_series("up", "0x20", instance="a"), _series("up", "1x20", instance="b")],  # one replica is enough
        "10m", {}),  # absent() of a comparison carries no labels
    "GpuAdmissionNoReadyReplica": (
        [{"series": 'kube_deployment_status_replicas_available{namespace="gpu-policy",deployment="gpu-admission"}',
          "values": "0x20"}],
        [{"series": 'kube_deployment_status_replicas_available{namespace="gpu-policy",deployment="gpu-admission"}',
          "values": "1x20"}],
        "10m", {"namespace": "gpu-policy", "deployment": "gpu-admission"}),
    "GpuAdmissionRequestErrors": (
        [_series("gpu_admission_requests_total", "0+10x30", endpoint="validate", result="allowed", **REQUEST),
         _series("gpu_admission_requests_total", "0+1x30", endpoint="validate", result="error", **REQUEST)],
        # errors stopped long ago: a counter that stays flat is not a rate
        [_series("gpu_admission_requests_total", "0+10x30", endpoint="validate", result="allowed", **REQUEST),
         _series("gpu_admission_requests_total", "3x30", endpoint="validate", result="error", **REQUEST)],
        "20m", {"endpoint": "validate"}),
    "GpuAdmissionRuleErrors": (
        [_series("gpu_admission_rule_errors_total", "0+1x30", rule="shared-claim", decision="allow")],
        [_series("gpu_admission_rule_errors_total", "5x30", rule="shared-claim", decision="allow")],
        "20m", {"rule": "shared-claim"}),
    "GpuAdmissionLatencyHigh": (
        # every answer between 2.5 and 5 s: p99 near 5 s, above half of the 3 s mutating timeout
        [_series("gpu_admission_request_duration_seconds_bucket", "0+10x30" if le in ("5.0", "+Inf") else "0x30",
                 endpoint="mutate", kind="Pod", le=le) for le in BUCKETS],
        [_series("gpu_admission_request_duration_seconds_bucket", "0+10x30", endpoint="mutate", kind="Pod", le=le)
         for le in BUCKETS],
        "20m", {"endpoint": "mutate"}),
    # promtool's clock starts at 0: at 15m time() is 900
    "GpuAdmissionCertificateExpiring": (
        [_series("gpu_admission_certificate_expiry_timestamp_seconds", f"{900 + 10 * DAY}x20", instance="a")],
        [_series("gpu_admission_certificate_expiry_timestamp_seconds", f"{900 + 30 * DAY}x20", instance="a")],
        "15m", {}),
    "GpuAdmissionCertificateExpiringSoon": (
        [_series("gpu_admission_certificate_expiry_timestamp_seconds", f"{900 + 3 * DAY}x20", instance="a")],
        [_series("gpu_admission_certificate_expiry_timestamp_seconds", f"{900 + 10 * DAY}x20", instance="a")],
        "15m", {}),
    "GpuAdmissionPolicyReloadFailing": (
        [_series("gpu_admission_policy_reload_ok", "1x20", instance="a"),
         _series("gpu_admission_policy_reload_ok", "0x20", instance="b")],
        [_series("gpu_admission_policy_reload_ok", "1x20", instance="a"),
         _series("gpu_admission_policy_reload_ok", "1x20", instance="b")],
        "10m", {}),
    "GpuAdmissionLookupErrors": (
        [_series("gpu_admission_lookup_errors_total", "0+1x30", kind="resourceclaims", verb="watch")],
        [_series("gpu_admission_lookup_errors_total", "2x30", kind="resourceclaims", verb="watch")],
        "20m", {"kind": "resourceclaims", "verb": "watch"}),
    "GpuAdmissionLookupStale": (
        [_series("gpu_admission_lookup_up", "1x20", kind="deviceclasses", instance="a"),
         _series("gpu_admission_lookup_up", "0x20", kind="deviceclasses", instance="b")],
        [_series("gpu_admission_lookup_up", "1x20", kind="deviceclasses", instance="a"),
         _series("gpu_admission_lookup_up", "1x20", kind="deviceclasses", instance="b")],
        "20m", {"kind": "deviceclasses"}),
}


def _expanded(text: str, labels: dict) -> str:
    """The annotation as Prometheus expands it for one alert (the chart's annotations use $labels only)."""
    return re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), text)


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory, rule_groups):
    path = tmp_path_factory.mktemp("rules") / "rules.yaml"
    path.write_text(yaml.safe_dump(rule_groups, sort_keys=False))
    return path


def test_promtool_check_rules(rules_file):
    result = subprocess.run([binary("promtool"), "check", "rules", str(rules_file)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(CASES)} rules found" in result.stdout


def test_every_alert_has_a_unit_test(rule_groups):
    assert set(alert_rules(rule_groups)) == set(CASES)


@pytest.mark.parametrize("alert", [pytest.param(a, id=a) for a in CASES])
def test_promtool_unit_test_fires_and_its_twin_does_not(rules_file, rule_groups, alert):
    fires, benign, at, extra = CASES[alert]
    rule = alert_rules(rule_groups)[alert]
    labels = {**rule["labels"], **extra}
    expected = [{"exp_labels": labels, "exp_annotations": {k: _expanded(v, labels) for k, v in
                                                           rule["annotations"].items()}}]
    tests = {"rule_files": [rules_file.name], "evaluation_interval": "1m", "tests": [
        {"name": f"{alert} fires", "interval": "1m", "input_series": fires,
         "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}]},
        {"name": f"{alert} stays quiet", "interval": "1m", "input_series": benign,
         "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": []}]},
    ]}
    path = rules_file.with_name(f"test-{alert}.yaml")
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run([binary("promtool"), "test", "rules", path.name], cwd=path.parent, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("values, latency", [
    pytest.param({}, "> 1.5", id="half-the-mutating-timeout"),
    pytest.param({"webhooks": {"mutating": {"enabled": False}}}, "> 2.5", id="validating-only"),
    pytest.param({"prometheusRule": {"latencyTimeoutRatio": 0.8}, "webhooks": {"validating": {"timeoutSeconds": 2}}},
                 "> 1.6", id="ratio-and-timeout"),
])
def test_the_latency_threshold_follows_the_webhook_timeouts(values, latency):
    merged = {**values, "prometheusRule": {**VALUES["prometheusRule"], **values.get("prometheusRule", {})}}
    text = render_values(merged)["gpu-admission/templates/prometheusrule.yaml"]
    (rule,) = [r for g in yaml.safe_load(text)["spec"]["groups"] for r in g["rules"]
               if r["alert"] == "GpuAdmissionLatencyHigh"]
    assert rule["expr"].rstrip().endswith(latency)


def test_selector_and_extra_labels_are_the_users():
    text = render_values({"prometheusRule": {"enabled": True, "selector": 'service="webhooks"',
                                             "additionalAlertLabels": {"team": "ml-platform"}}})[
        "gpu-admission/templates/prometheusrule.yaml"]
    rules = [r for g in yaml.safe_load(text)["spec"]["groups"] for r in g["rules"]]
    assert all(r["labels"]["team"] == "ml-platform" for r in rules)
    assert all('service="webhooks"' in r["expr"] for r in rules if r["alert"] != "GpuAdmissionNoReadyReplica")
    assert not any('job="gpu-admission"' in r["expr"] for r in rules)


def test_no_rule_and_no_dashboard_unless_asked():
    rendered = render_values({})
    assert "gpu-admission/templates/prometheusrule.yaml" not in rendered or not rendered[
        "gpu-admission/templates/prometheusrule.yaml"].strip()
    assert not rendered.get("gpu-admission/templates/dashboard.yaml", "").strip()
