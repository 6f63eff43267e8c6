"""`gpu-admission audit` against the real cluster: a table and JSON of what runs there, PolicyReports written
with --apply (created, updated, pruned), and reports owned by the webhook configuration garbage-collected by
kube-controller-manager once the chart is uninstalled. The PolicyReport CRDs are the stand-ins written from the
API's definition (tests/data/schemas/, README there), until the upstream CRD files come through shared/: the
real apiserver validates every report the audit writes against their schema."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.e2e.conftest import CHART, CLI, REPO, ca_bundle, wait_for
from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e

SCHEMAS = REPO / "tests" / "data" / "schemas"
CRDS = [SCHEMAS / "wgpolicyk8s.io_policyreports-standin.yaml",
        SCHEMAS / "wgpolicyk8s.io_clusterpolicyreports-standin.yaml"]
VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def audit(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "audit", "--kubeconfig", str(cluster.kubeconfig), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


@pytest.fixture(scope="module")
def crds(kubectl):
    for crd in CRDS:
        kubectl.run("apply", "-f", str(crd))
    kubectl.run("wait", "--for=condition=Established", "crd/policyreports.wgpolicyk8s.io",
                "crd/clusterpolicyreports.wgpolicyk8s.io", "--timeout=60s")
    return CRDS


@pytest.fixture
def running(kubectl, namespace, release):
    """A namespace that runs a Pod the policy denies (created while the namespace was exempt, as objects older
    than the webhook are) and one it admits."""
    release.upgrade({"exemptNamespaces": [namespace]})
    wait_for(lambda: kubectl.create(gpu_pod(namespace, name="bad", env=VISIBLE_ALL), check=False).returncode == 0,
             "the exempt namespace")
    release.upgrade()
    kubectl.create(gpu_pod(namespace, name="good"))
    return namespace


def test_table_and_json(cluster, running):
    table = audit(cluster, "-n", running)
    assert table.returncode == 1, table.stderr
    (row,) = [line.split() for line in table.stdout.splitlines() if line.startswith("visible-devices-override")]
    assert row[1:4] == [running, "deny", "Pod/bad"], table.stdout
    assert "1 would be denied" in table.stdout
    results = json.loads(audit(cluster, "-n", running, "-o", "json").stdout)
    verdicts = {r["name"]: r["allowed"] for r in results if r["kind"] == "Pod"}
    assert verdicts == {"bad": False, "good": True}


def reports(kubectl, namespace: str) -> list[dict]:
    return kubectl.json("get", "policyreports.wgpolicyk8s.io", "-n", namespace)["items"]


def test_apply_creates_updates_and_prunes_reports(cluster, kubectl, crds, running):
    first = audit(cluster, "-n", running, "-o", "policyreport", "--apply")
    assert first.returncode in (0, 1), first.stderr
    (report,) = reports(kubectl, running)
    failing = [r for r in report["results"] if r.get("result") == "fail"]
    assert any(res["name"] == "bad" for r in failing for res in r.get("resources", [])), report["results"]
    kubectl.run("delete", "pod", "bad", "-n", running)
    second = audit(cluster, "-n", running, "-o", "policyreport", "--apply")
    assert second.returncode == 0, second.stderr
    (updated,) = reports(kubectl, running)
    assert updated["metadata"]["uid"] == report["metadata"]["uid"]  # updated in place
    assert not [r for r in updated["results"] if r.get("result") == "fail"]
    kubectl.run("delete", "pod", "good", "-n", running)
    third = audit(cluster, "-n", running, "-o", "policyreport", "--apply")
    assert third.returncode == 0, third.stderr
    assert reports(kubectl, running) == []  # nothing audited there any more: the report is pruned


def test_reports_owned_by_the_webhook_are_collected_after_uninstall(cluster, kubectl, crds, running, release):
    import helm_python

    name = "gpu-admission-owner"
    values = {"webhooks": {"url": release.webhook.url, "domain": "owner.example.com"},
              "certificates": {"caBundle": ca_bundle(release.webhook.certs)}}
    with helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=name) as helm:
        helm.install(CHART, name, values, namespace=name, create_namespace=True)
        try:
            applied = audit(cluster, "-n", running, "-o", "policyreport", "--apply", "--owner-webhook", name)
            assert applied.returncode in (0, 1), applied.stderr
            (report,) = reports(kubectl, running)
            (owner,) = report["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"]) == ("ValidatingWebhookConfiguration", name)
        finally:
            helm.uninstall(name, wait="watcher", timeout=60)
    wait_for(lambda: reports(kubectl, running) == [], "the garbage collector to delete the report", timeout=90)
    kubectl.run("delete", "namespace", name, "--wait=false")
