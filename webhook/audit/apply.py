"""Write reports (PolicyReports or OpenReports) to the cluster: create, or update in place (resourceVersion carried
over, as `kubectl replace` does), and delete gpu-admission's reports left in audited namespaces that no longer
have anything to report."""
from __future__ import annotations

import copy
from dataclasses import dataclass

from kubernetes.client import ApiClient

from webhook.audit.policyreport import REPORT_NAME, SELECTOR, WGPOLICY, ReportApi
from webhook.lookups.apiserver import ApiError, get, list_pages, send
from webhook.lookups.resources import VALIDATING_WEBHOOKS, ApiResource


@dataclass(frozen=True, slots=True)
class Applied:
    resource: ApiResource
    namespace: str
    name: str
    outcome: str  # created | configured | deleted | failed
    error: str = ""

    def line(self) -> str:
        """As kubectl prints it: `policyreport.wgpolicyk8s.io/gpu-admission created`."""
        where = f" -n {self.namespace}" if self.namespace else ""
        subject = f"{self.resource.kind.lower()}.{self.resource.group}/{self.name}{where}"
        return f"{subject} {self.outcome}" + (f": {self.error}" if self.error else "")


def owner_reference(api_client: ApiClient, webhook: str, *, timeout: float) -> dict:
    """An owner reference to the ValidatingWebhookConfiguration `webhook`: when the chart that owns it
    is uninstalled, the garbage collector deletes the reports too. Raises ApiError."""
    obj = get(api_client, VALIDATING_WEBHOOKS, None, webhook, timeout=timeout)
    return {"apiVersion": VALIDATING_WEBHOOKS.api_version, "kind": VALIDATING_WEBHOOKS.kind,
            "name": webhook, "uid": obj["metadata"]["uid"], "blockOwnerDeletion": False}


def not_served(api_client: ApiClient, api: ReportApi, *, timeout: float) -> str | None:
    """Why the cluster cannot take these reports (their CRDs are not installed), or None."""
    for resource in (api.namespaced, api.cluster):
        try:
            next(iter(list_pages(api_client, resource, None, limit=1, timeout=timeout)), None)
        except ApiError as err:
            if err.status == 404:
                return (f"the cluster does not serve {resource.qualified}/{resource.version}: install the "
                        f"CRDs of {resource.group}")
            return None  # forbidden, say: the writes will name the reason
    return None


def _write(api_client: ApiClient, report: dict, api: ReportApi, timeout: float) -> Applied:
    resource = api.namespaced if report["kind"] == api.namespaced.kind else api.cluster
    namespace = report["metadata"].get("namespace", "")
    name = report["metadata"]["name"]
    try:
        outcome = _create_or_replace(api_client, resource, namespace or None, name, report, timeout)
    except ApiError as err:
        return Applied(resource, namespace, name, "failed", err.describe())
    return Applied(resource, namespace, name, outcome)


def _create_or_replace(api_client: ApiClient, resource: ApiResource, namespace: str | None, name: str,
                       report: dict, timeout: float) -> str:
    try:
        send(api_client, "POST", resource.path(namespace), body=report, timeout=timeout)
        return "created"
    except ApiError as err:
        if err.status != 409:
            raise
    retries = 1  # a concurrent writer may win the race once
    while True:
        current = get(api_client, resource, namespace, name, timeout=timeout)
        body = copy.deepcopy(report)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            send(api_client, "PUT", resource.path(namespace, name), body=body, timeout=timeout)
            return "configured"
        except ApiError as err:
            if err.status != 409 or not retries:
                raise
            retries -= 1


def _stale(api_client: ApiClient, resource: ApiResource, namespace: str | None, keep: set[str],
           timeout: float) -> list[Applied]:
    out = []
    try:
        existing = [item for page in list_pages(api_client, resource, namespace, limit=500, timeout=timeout,
                                                label_selector=SELECTOR) for item in page.get("items") or ()]
    except ApiError as err:
        return [Applied(resource, namespace or "", REPORT_NAME, "failed", f"listing old reports: {err.describe()}")]
    for item in existing:
        meta = item.get("metadata") or {}
        ns = meta.get("namespace", "")
        if ns in keep or meta.get("name") != REPORT_NAME:
            continue
        try:
            send(api_client, "DELETE", resource.path(ns or None, REPORT_NAME), timeout=timeout)
            out.append(Applied(resource, ns, REPORT_NAME, "deleted"))
        except ApiError as err:
            if not err.not_found:
                out.append(Applied(resource, ns, REPORT_NAME, "failed", err.describe()))
    return out


def apply_reports(api_client: ApiClient, reports: list[dict], *, namespaces: tuple[str, ...] = (),
                  timeout: float = 30.0, prune: bool = True, api: ReportApi = WGPOLICY) -> list[Applied]:
    """Write `reports`; then, with `prune`, remove gpu-admission's reports that this audit's scope (all
    namespaces, or the chosen ones) no longer produces."""
    out = [_write(api_client, r, api, timeout) for r in reports]
    if not prune:
        return out
    written = {r["metadata"].get("namespace", "") for r in reports}
    for namespace in namespaces or (None,):
        out += _stale(api_client, api.namespaced, namespace, written, timeout)
    if not namespaces:
        out += _stale(api_client, api.cluster, None, written, timeout)
    return out
