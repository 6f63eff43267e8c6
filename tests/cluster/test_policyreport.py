"""PolicyReport results for each kind of evaluation, and reports kept under etcd's size limit."""
from __future__ import annotations

import datetime

import pytest

from tests.schemas import crd_errors
from webhook.audit import policyreport
from webhook.audit.evaluate import Audited
from webhook.audit.listing import ListFailure
from webhook.audit.pending import Pending
from webhook.audit.policyreport import build_reports, object_results, pending_result
from webhook.lookups.resources import DEVICE_CLASSES, ApiResource
from webhook.policy.definitions import CATEGORIES, GENERAL_CATEGORY
from webhook.policy.explain import Explanation, render_text
from webhook.policy.messages import T
from webhook.policy.results import Evaluation, RuleError, Violation
from webhook.rules import Action, Rule

NOW = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.UTC)
TS = {"seconds": int(NOW.timestamp()), "nanos": 0}
PODS = ApiResource("", "v1", "pods", "Pod", True)
JOBS = ApiResource("batch", "v1", "jobs", "Job", True)


def audited(name: str, namespace: str = "ml", resource: ApiResource = PODS, **evaluation) -> Audited:
    obj = {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"}}
    return Audited(resource, obj, Evaluation(kind=resource.kind, namespace=namespace, name=name, **evaluation))


def _violation(rule: Rule, action: Action) -> Violation:
    return Violation(rule, action, "spec.containers[0]", f"message of {rule.value}")


@pytest.mark.parametrize("evaluation, expected", [
    pytest.param({}, [("pass", None, None)], id="clean"),
    pytest.param({"violations": (_violation(Rule.DOUBLE_MECHANISM, Action.ENFORCE),)},
                 [("fail", "double-mechanism", "high")], id="enforced"),
    pytest.param({"violations": (_violation(Rule.RUN_AS_ROOT, Action.WARN),
                                 _violation(Rule.SHARED_CLAIM, Action.AUDIT))},
                 [("warn", "run-as-root", "medium"), ("warn", "shared-claim", "low")], id="warn-and-audit"),
    pytest.param({"violations": (_violation(Rule.VISIBLE_DEVICES_OVERRIDE, Action.ENFORCE),
                                 _violation(Rule.CLAIM_SHAPE, Action.WARN))},
                 [("fail", "visible-devices-override", "high"), ("warn", "claim-shape", "medium")],
                 id="two-categories"),
    pytest.param({"errors": (RuleError(Rule.CLAIM_SHAPE, "KeyError: 'x'", False),)},
                 [("error", "claim-shape", None)], id="rule-error"),
    pytest.param({"skipped": 'namespace "kube-system" is exempt'}, [("skip", None, None)], id="exempt"),
])
def test_each_evaluation_becomes_results(evaluation, expected):
    results = object_results(audited("p", **evaluation), TS)
    assert [(r["result"], r.get("rule"), r.get("severity")) for r in results] == expected
    for r in results:
        assert r["policy"] == "gpu-admission" and r["timestamp"] == TS
        # Policy Reporter groups by category: the rule's, or the general one for whole-object results.
        assert r["category"] == (CATEGORIES[Rule(r["rule"])] if "rule" in r else GENERAL_CATEGORY)
        assert r["resources"] == [{"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "ml", "uid": "uid-p"}]


def test_reports_split_by_namespace_with_cluster_scope_last():
    items = [audited("a", "ml"), audited("b", "research", JOBS),
             Audited(DEVICE_CLASSES, {"metadata": {"name": "gpu.nvidia.com", "uid": "u"}},
                     Evaluation(kind="DeviceClass", namespace="", name="gpu.nvidia.com"))]
    failures = (ListFailure(JOBS, None, "forbidden", 403), ListFailure(PODS, "research", "API timeout after 1s", None))
    reports = build_reports(items, failures, now=NOW)
    assert [(r["kind"], r["metadata"].get("namespace")) for r in reports] == [
        ("PolicyReport", "ml"), ("PolicyReport", "research"), ("ClusterPolicyReport", None)]
    assert reports[1]["summary"] == {"pass": 1, "fail": 0, "warn": 0, "error": 1, "skip": 0}
    assert reports[1]["results"][1]["message"] == 'cannot list pods in namespace "research": API timeout after 1s'
    assert [r["result"] for r in reports[2]["results"]] == ["pass", "error"]
    assert reports[2]["results"][1]["message"] == "cannot list jobs.batch across all namespaces: forbidden"
    assert "namespace" not in reports[2]["results"][0]["resources"][0]


def test_a_report_too_big_for_etcd_drops_pass_results_but_keeps_counts(monkeypatch):
    monkeypatch.setattr(policyreport, "MAX_REPORT_BYTES", 20_000)
    items = [audited(f"pod-{i}") for i in range(200)]
    items.append(audited("bad", violations=(_violation(Rule.DOUBLE_MECHANISM, Action.ENFORCE),)))
    (report,) = build_reports(items, (), now=NOW)
    assert report["summary"] == {"pass": 200, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    assert [r["result"] for r in report["results"]] == ["fail"]
    assert report["metadata"]["annotations"] == {"gpu-admission.io/omitted-results": "pass"}


def test_a_small_report_keeps_everything():
    (report,) = build_reports([audited(f"pod-{i}") for i in range(3)], (), now=NOW)
    assert len(report["results"]) == 3 and "annotations" not in report["metadata"]


def _pending(verdict: str, **fields) -> Pending:
    explanation = Explanation(pod="ml/train", verdict=verdict, cohort="dp", mechanism="device-plugin",
                              why=T("why it is so"), fix=T("fix it so"), **fields)
    return Pending("ml", "train", explanation, "uid-train")


@pytest.mark.parametrize("verdict, outcome, severity", [
    pytest.param("never", "warn", "high", id="never-schedules"),
    pytest.param("waits", "warn", "low", id="waits-for-capacity"),
    pytest.param("schedulable", "pass", "info", id="a-node-can-take-it"),
])
@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_pending_gpu_pod_is_a_result_with_its_explanation(verdict, outcome, severity, language):
    pending = _pending(verdict)
    (report,) = build_reports([audited("train")], (), now=NOW, pending=[pending], language=language)
    result = report["results"][1]
    assert (result["result"], result["severity"]) == (outcome, severity)
    assert "rule" not in result and result["category"] == GENERAL_CATEGORY and result["policy"] == "gpu-admission"
    assert result["message"] == render_text(pending.explanation, language)  # what `explain` prints, word for word
    assert result["properties"] == {"verdict": verdict, "cohort": "dp", "mechanism": "device-plugin"}
    assert result["resources"] == [{"apiVersion": "v1", "kind": "Pod", "name": "train", "namespace": "ml",
                                    "uid": "uid-train"}]
    assert report["summary"][outcome] == 1 + (outcome == "pass")
    for api in (policyreport.WGPOLICY, policyreport.OPENREPORTS):
        for built in build_reports([], (), now=NOW, pending=[pending], language=language, api=api):
            assert crd_errors(built) == []


def test_a_pending_pod_s_result_in_japanese_says_its_verdict_in_japanese():
    en = pending_result(_pending("never"), TS, "en")["message"]
    ja = pending_result(_pending("never"), TS, "ja")["message"]
    assert en.startswith('pod "ml/train": never schedules as it is')
    assert ja != en and "never schedules as it is" not in ja and ja.startswith('pod "ml/train": ')
