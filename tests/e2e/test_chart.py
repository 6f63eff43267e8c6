"""The chart with real Helm against the real apiserver: every object accepted (the default in-cluster
deployment too, by a server-side dry-run), an upgrade that changes the policy reloads what the webhook serves,
a rollback brings the previous policy back, an uninstall leaves no webhook configuration behind."""
from __future__ import annotations

import pytest
import yaml

from tests.chart.conftest import NAMESPACE as CHART_NAMESPACE
from tests.chart.conftest import VALUE_SETS, render_values
from tests.e2e.conftest import CHART, NAMESPACE, RELEASE, ca_bundle, wait_for
from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e

VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def manifest_objects(release: dict) -> list[dict]:
    return [d for d in yaml.safe_load_all(release["manifest"]) if d]


def test_installed_objects_are_in_the_cluster(helm, kubectl, release):
    objects = manifest_objects(helm.status(RELEASE))
    kinds = {o["kind"] for o in objects}
    assert {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ConfigMap",
            "ServiceAccount"} <= kinds
    assert "Deployment" not in kinds  # webhooks.url: the server runs outside the cluster
    for obj in objects:
        args = ["get", obj["kind"].lower(), obj["metadata"]["name"]]
        if obj["kind"] not in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ClusterRole",
                               "ClusterRoleBinding", "PriorityClass"):
            args += ["-n", NAMESPACE]
        assert kubectl.json(*args)["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
    hooks = kubectl.json("get", "validatingwebhookconfiguration", RELEASE)["webhooks"]
    assert {h["clientConfig"]["url"] for h in hooks} == {f"{release.webhook.url}/validate"}


@pytest.mark.parametrize("values", [
    pytest.param({}, id="default"),
    pytest.param({"lookups": {"resourceClaims": True, "deviceClasses": True, "namespaces": True,
                              "configMaps": True}, "networkPolicy": {"enabled": True},
                  "audit": {"enabled": True}, "certificates": {"mode": "generate"}}, id="everything-on"),
])
def test_the_in_cluster_chart_is_accepted_by_the_apiserver(helm, kubectl, values):
    """The chart's own Deployment, Service, PDB, RBAC, TLS Secret and webhook configurations, sent to the
    real apiserver as a server-side dry-run (validated and admitted there, nothing stored)."""
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-admission-dry"}})
    result = helm.install(CHART, "gpu-admission-dry", values, namespace="gpu-admission-dry",
                          create_namespace=False, dry_run="server")
    kinds = {o["kind"] for o in manifest_objects(result)}
    assert {"Deployment", "Service", "PodDisruptionBudget", "ValidatingWebhookConfiguration"} <= kinds


def _denied(kubectl, namespace: str, name: str) -> bool:
    result = kubectl.create(gpu_pod(namespace, name=name, env=VISIBLE_ALL), check=False)
    if result.returncode == 0:
        kubectl.run("delete", "pod", name, "-n", namespace, "--wait=false")
    return result.returncode == 1 and "denied the request" in result.stderr


def test_upgrade_reloads_the_policy_and_rollback_restores_it(helm, kubectl, namespace, release, webhook):
    assert _denied(kubectl, namespace, "before")
    before = helm.status(RELEASE)["revision"]
    release.upgrade({"rules": {"visible-devices-override": "warn"}})
    result = wait_for(lambda: (r := kubectl.create(gpu_pod(namespace, name="after", env=VISIBLE_ALL),
                                                   check=False)).returncode == 0 and r, "the upgraded policy")
    assert "Warning: pod " in result.stderr and "[visible-devices-override]" in result.stderr
    helm.rollback(RELEASE, version=before)
    release.sync_policy()
    wait_for(lambda: _denied(kubectl, namespace, "rolled-back"), "the rolled-back policy")
    assert helm.status(RELEASE)["revision"] == before + 2


def test_uninstall_leaves_no_webhook_configuration(cluster, kubectl, release):
    import helm_python

    name = namespace = "gpu-admission-gone"
    values = {"webhooks": {"url": release.webhook.url, "domain": "gone.example.com"},
              "certificates": {"caBundle": ca_bundle(release.webhook.certs)}}
    selector = f"app.kubernetes.io/instance={name}"
    with helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=namespace) as helm:
        helm.install(CHART, name, values, namespace=namespace, create_namespace=True)
        try:
            for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
                assert len(kubectl.json("get", kind, "-l", selector)["items"]) == 1
        finally:
            helm.uninstall(name, wait="watcher", timeout=60)
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations", "configmaps",
                 "serviceaccounts", "clusterroles", "clusterrolebindings"):
        assert kubectl.json("get", kind, "-A", "-l", selector)["items"] == [], kind
    kubectl.run("delete", "namespace", namespace, "--wait=false")


def test_the_packaged_chart_installs_and_uninstalls(cluster, kubectl, release, tmp_path):
    """`make chart`'s archive (helm package through helm-python-sdk), installed by real Helm from the .tgz:
    the release carries the package's version, its webhook configurations call the webhook, and an
    uninstall removes them."""
    import helm_python

    from tools.package_chart import package, project_version

    archive = package(tmp_path)
    assert archive.name == f"gpu-admission-{project_version()}.tgz"
    name = namespace = "gpu-admission-packaged"
    values = {"webhooks": {"url": release.webhook.url, "domain": "packaged.example.com"},
              "certificates": {"caBundle": ca_bundle(release.webhook.certs)}}
    selector = f"app.kubernetes.io/instance={name}"
    with helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=namespace) as helm:
        helm.install(str(archive), name, values, namespace=namespace, create_namespace=True)
        try:
            status = helm.status(name)
            assert status["status"] == "deployed" and status["chart_name"] == "gpu-admission"
            assert status["chart_version"] == status["app_version"] == project_version()
            (config,) = kubectl.json("get", "validatingwebhookconfigurations", "-l", selector)["items"]
            assert {h["clientConfig"]["url"] for h in config["webhooks"]} == {f"{release.webhook.url}/validate"}
            assert all(h["name"].endswith(".packaged.example.com") for h in config["webhooks"])
        finally:
            helm.uninstall(name, wait="watcher", timeout=60)
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        assert kubectl.json("get", kind, "-l", selector)["items"] == [], kind
    kubectl.run("delete", "namespace", namespace, "--wait=false")


# kinds whose CRDs this cluster has not (cert-manager's, prometheus-operator's): the offline tests cover them
NOT_SERVED = ("cert-manager.io/", "monitoring.coreos.com/")


@pytest.mark.parametrize("value_set", [pytest.param(name, id=name) for name in VALUE_SETS])
def test_every_value_set_renders_objects_the_apiserver_accepts(kubectl, value_set):
    """Every object of every value set of tests/chart, created as a server-side dry-run: the apiserver's own
    validation (webhook configurations, their matchConditions' CEL, selectors, RBAC, PDB...) and admission
    accept it. Cluster-scoped objects get a suffix so as not to meet the installed release's."""
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CHART_NAMESPACE}})
    rendered = render_values(VALUE_SETS[value_set])
    objects = [d for path, text in rendered.items() if path.endswith(".yaml") for d in yaml.safe_load_all(text) if d]
    sent = []
    for obj in objects:
        if obj["apiVersion"].startswith(NOT_SERVED):
            continue
        if "namespace" not in obj["metadata"]:
            obj["metadata"]["name"] += "-dry"
        sent.append(obj)
    assert any(o["kind"] == "ValidatingWebhookConfiguration" for o in sent)
    result = kubectl.create("\n---\n".join(yaml.safe_dump(o) for o in sent), "--dry-run=server", check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("created (server dry run)") == len(sent)
