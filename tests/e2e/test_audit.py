"""`gpu-admission audit` against the real cluster: a table and JSON of what runs there, PolicyReports written
with --apply (created, updated, pruned), and reports owned by the webhook configuration garbage-collected by
kube-controller-manager once the chart is uninstalled. The PolicyReport and OpenReports CRDs are the official
files (tests/data/fixtures/schemas, PROVENANCE.md there), installed as a user's cluster has them: the real
apiserver validates every report the audit writes against their schema."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.e2e.conftest import CHART, CLI, REPO, ca_bundle, wait_for
from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e

SCHEMAS = REPO / "tests" / "data" / "fixtures" / "schemas"
CRDS = [SCHEMAS / "wgpolicyk8s.io_policyreports.yaml", SCHEMAS / "wgpolicyk8s.io_clusterpolicyreports.yaml",
        SCHEMAS / "openreports.io_reports.yaml", SCHEMAS / "openreports.io_clusterreports.yaml",
        # the GPU Operator's own kinds, as a cluster running it has them (their objects are not ours to judge)
        SCHEMAS / "nvidia.com_clusterpolicies.yaml", SCHEMAS / "nvidia.com_nvidiadrivers.yaml"]
VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def audit(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "audit", "--kubeconfig", str(cluster.kubeconfig), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


@pytest.fixture(scope="module")
def crds(kubectl):
    for crd in CRDS:
        # server-side: the GPU Operator's CRDs are larger than client-side apply's last-applied annotation allows
        kubectl.run("apply", "--server-side", "-f", str(crd))
    kubectl.run("wait", "--for=condition=Established", "crd/policyreports.wgpolicyk8s.io",
                "crd/clusterpolicyreports.wgpolicyk8s.io", "crd/reports.openreports.io",
                "crd/clusterreports.openreports.io", "crd/clusterpolicies.nvidia.com", "crd/nvidiadrivers.nvidia.com",
                "--timeout=60s")
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


def test_openreports_apply_is_accepted_by_the_official_crds(cluster, kubectl, crds, running):
    """The same reports as openreports.io Reports: the apiserver validates them against the official CRD."""
    applied = audit(cluster, "-n", running, "-o", "openreports", "--apply")
    assert applied.returncode in (0, 1), applied.stderr
    (report,) = kubectl.json("get", "reports.openreports.io", "-n", running)["items"]
    assert report["source"] == "gpu-admission"
    assert any(res["name"] == "bad" for r in report["results"] if r.get("result") == "fail"
               for res in r.get("resources", [])), report["results"]
    kubectl.run("delete", "reports.openreports.io", "--all", "-n", running)


def test_the_gpu_operator_s_objects_pass_the_webhook(kubectl, crds, running):
    """The GPU Operator's NVIDIADriver sample (its own CRD installed) is created with the webhook in force. (Its
    ClusterPolicy sample leaves fields null that its own CRD refuses, so it is not applied.)"""
    sample = SCHEMAS / "nvidia_v1alpha1_nvidiadriver.sample.yaml"
    kubectl.run("apply", "--server-side", "-f", str(sample))
    try:
        assert kubectl.json("get", "nvidiadrivers.nvidia.com")["items"]
    finally:
        kubectl.run("delete", "-f", str(sample), "--ignore-not-found")


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
