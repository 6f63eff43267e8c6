"""Audit results as reports: `wgpolicyk8s.io/v1alpha2` PolicyReports, or their successor
`openreports.io/v1alpha1` Reports, the formats Kyverno, Policy Reporter and other tools read. One
report per namespace and one cluster-wide report (cluster-scoped objects, and kinds that could not be
listed across namespaces); Kyverno writes one report per resource instead, which Policy Reporter
aggregates alike (docs/lookups.md, PolicyReports and OpenReports, compares the two).

Result values: `fail` for a rule the configuration enforces, `warn` for warn/audit actions, `error`
for a rule that raised or a kind that could not be listed, `skip` for exempt objects, `pass` for
objects no rule fired on. Every result has the `category` of its rule (Policy Reporter groups by it).

A Pending GPU pod also gets a result of its own, about the pod as a whole (no rule): `gpu-admission
explain`'s explanation as the message, its verdict, cohort and mechanism as properties; `warn` of severity
high when it never schedules as it is, `warn` of severity low when it waits for capacity that others hold,
`pass` of severity info when a node can take it now (what keeps it Pending is outside GPU terms)."""
from __future__ import annotations

import datetime
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from webhook.audit.evaluate import Audited
from webhook.audit.listing import ListFailure
from webhook.audit.pending import Pending
from webhook.lookups.resources import (
    CLUSTER_POLICY_REPORTS,
    OPEN_CLUSTER_REPORTS,
    OPEN_REPORTS,
    POLICY_REPORTS,
    ApiResource,
)
from webhook.policy.definitions import CATEGORIES, GENERAL_CATEGORY
from webhook.policy.explain import render_text
from webhook.policy.messages import T, render, skip_reason
from webhook.rules import Action, Rule

POLICY = "gpu-admission"
REPORT_NAME = "gpu-admission"
LABELS = {"app.kubernetes.io/managed-by": "gpu-admission"}
SELECTOR = "app.kubernetes.io/managed-by=gpu-admission"
OMITTED_ANNOTATION = "gpu-admission.io/omitted-results"
# etcd refuses objects over 1.5 MiB; past this size pass and skip results are left out (the summary
# still counts them) so that a namespace with thousands of healthy pods still gets its report.
MAX_REPORT_BYTES = 1_000_000



@dataclass(frozen=True, slots=True)
class ReportApi:
    """The kinds a report format is written as: per namespace, and cluster-wide."""

    namespaced: ApiResource
    cluster: ApiResource


WGPOLICY = ReportApi(POLICY_REPORTS, CLUSTER_POLICY_REPORTS)
OPENREPORTS = ReportApi(OPEN_REPORTS, OPEN_CLUSTER_REPORTS)

_RESULT = {Action.ENFORCE: "fail", Action.WARN: "warn", Action.AUDIT: "warn"}
_SEVERITY = {Action.ENFORCE: "high", Action.WARN: "medium", Action.AUDIT: "low"}
_SUMMARY_KEYS = ("pass", "fail", "warn", "error", "skip")


def _resource_ref(a: Audited) -> dict:
    meta = a.obj.get("metadata") or {}
    ref = {"apiVersion": a.resource.api_version, "kind": a.resource.kind, "name": meta.get("name", "")}
    if a.resource.namespaced:
        ref["namespace"] = meta.get("namespace", "")
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    return ref


def _result(outcome: str, message: str, timestamp: dict, *, rule: Rule | None = None, severity: str | None = None,
            resources: list | None = None, properties: dict | None = None) -> dict:
    out: dict = {"policy": POLICY}
    if rule:
        out["rule"] = rule.value
    # Copies per result: shared dicts would print as YAML anchors and aliases.
    out.update({"category": CATEGORIES[rule] if rule else GENERAL_CATEGORY, "result": outcome, "message": message,
                "source": POLICY, "scored": True, "timestamp": dict(timestamp)})
    if severity:
        out["severity"] = severity
    if resources:
        out["resources"] = [dict(r) for r in resources]
    if properties:
        out["properties"] = properties
    return out


def object_results(a: Audited, timestamp: dict) -> list[dict]:
    ev = a.evaluation
    language = ev.language
    refs = [_resource_ref(a)]
    if ev.skipped:
        return [_result("skip", render(skip_reason(ev.skipped), language), timestamp, resources=refs)]
    out = []
    for v in ev.violations:
        out.append(_result(_RESULT[v.action], v.message, timestamp, rule=v.rule, severity=_SEVERITY[v.action],
                           resources=refs, properties={"action": v.action.value, "path": v.path}))
    for e in ev.errors:
        out.append(_result("error", render(T("rule {rule} failed internally: {error}", rule=e.rule.value,
                                             error=e.error), language), timestamp, rule=e.rule, resources=refs))
    if not out:
        out.append(_result("pass", render(T("no gpu-admission rule fired"), language), timestamp, resources=refs))
    return out


# explain's verdict -> (result, severity)
_PENDING = {"never": ("warn", "high"), "waits": ("warn", "low"), "schedulable": ("pass", "info")}


def pending_result(p: Pending, timestamp: dict, language: str = "en") -> dict:
    """A Pending GPU pod and why, as `gpu-admission explain` says it."""
    e = p.explanation
    outcome, severity = _PENDING.get(e.verdict, ("pass", "info"))
    ref = {"apiVersion": "v1", "kind": "Pod", "name": p.name, "namespace": p.namespace}
    if p.uid:
        ref["uid"] = p.uid
    properties = {"verdict": e.verdict}
    if e.cohort:
        properties["cohort"] = e.cohort
    if e.mechanism:
        properties["mechanism"] = e.mechanism
    return _result(outcome, render_text(e, language), timestamp, severity=severity, resources=[ref],
                   properties=properties)


def failure_result(f: ListFailure, timestamp: dict, language: str = "en") -> dict:
    return _result("error", render(T("cannot list {where}: {reason}", where=f.where, reason=f.reason), language),
                   timestamp, properties={"resource": f.resource.qualified})


def _report(namespace: str, results: list[dict], owner: dict | None, api: ReportApi) -> dict:
    resource = api.namespaced if namespace else api.cluster
    metadata: dict = {"name": REPORT_NAME}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(LABELS)
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    summary = {key: 0 for key in _SUMMARY_KEYS}
    for r in results:
        summary[r["result"]] += 1
    report = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata}
    if api is OPENREPORTS:
        report["source"] = POLICY  # OpenReports names the producer once, beside each result's own
    report.update(summary=summary, results=results)
    return _fit(report)


def _fit(report: dict) -> dict:
    for dropped in (("pass",), ("pass", "skip")):
        if len(json.dumps(report)) <= MAX_REPORT_BYTES:
            return report
        report["results"] = [r for r in report["results"] if r["result"] not in dropped]
        report["metadata"].setdefault("annotations", {})[OMITTED_ANNOTATION] = ",".join(dropped)
    return report


def build_reports(audited: list[Audited], failures: tuple[ListFailure, ...], *, now: datetime.datetime,
                  owner: dict | None = None, api: ReportApi = WGPOLICY, language: str = "en",
                  pending: Sequence[Pending] = ()) -> list[dict]:
    """Reports sorted by namespace, then the cluster-wide report when it has results."""
    timestamp = {"seconds": int(now.timestamp()), "nanos": 0}
    by_namespace: dict[str, list[dict]] = defaultdict(list)
    for a in audited:
        namespace = (a.obj.get("metadata") or {}).get("namespace", "") if a.resource.namespaced else ""
        by_namespace[namespace].extend(object_results(a, timestamp))
    for p in pending:
        by_namespace[p.namespace].append(pending_result(p, timestamp, language))
    for f in failures:
        by_namespace[f.namespace or ""].append(failure_result(f, timestamp, language))
    reports = [_report(ns, by_namespace[ns], owner, api) for ns in sorted(by_namespace) if ns]
    if by_namespace.get(""):
        reports.append(_report("", by_namespace[""], owner, api))
    return reports
