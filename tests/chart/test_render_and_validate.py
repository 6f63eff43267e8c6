"""helm lint, and every rendered object validated against the Kubernetes 1.34 OpenAPI schemas
(kubernetes-validate, strict: unknown fields are errors). cert-manager and ServiceMonitor objects are CRDs
that kubernetes-validate does not know: their shape is asserted here instead."""
from __future__ import annotations

import functools
import json
import tomllib

import helm_python
import kubernetes_validate
import pytest
from kubernetes_validate import utils as kv_utils

from .conftest import CHART, KUBE_VERSION, NAMESPACE, RELEASE, VALUE_SETS, set_params

CRD_GROUPS = {"cert-manager.io", "monitoring.coreos.com"}
pytestmark = pytest.mark.slow


def _group(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


@functools.cache
def _validate(serialized: str) -> str | None:
    """kubernetes-validate --strict for one object (cached: most objects repeat across value sets)."""
    obj = json.loads(serialized)
    try:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
    except kv_utils.ValidationError as exc:
        return f"{obj['kind']}/{obj['metadata'].get('name')}: {'.'.join(map(str, exc.path))}: {exc.message}"
    return None


@pytest.mark.parametrize("values", [
    pytest.param({}, id="default"),
    pytest.param(VALUE_SETS["custom-policy"], id="custom-policy"),
    pytest.param({**VALUE_SETS["audit-cronjob"], **VALUE_SETS["extras-on"], **VALUE_SETS["cert-manager"],
                  **VALUE_SETS["lookups-on"]}, id="everything-on"),
    pytest.param(VALUE_SETS["minimal"], id="minimal"),
])
def test_helm_lint_is_clean(values):
    report = helm_python.lint(str(CHART), values, strict=True, namespace=NAMESPACE, kube_version="v1.34.0")
    assert report["errors"] == []
    problems = [m for m in report["messages"] if m["severity"] >= 2]  # 2 warning, 3 error; 1 is info
    assert problems == []


def test_chart_metadata(chart):
    """resource.k8s.io/v1 (DRA) is served from Kubernetes 1.34 on: the chart says so in kubeVersion."""
    meta = chart.metadata
    assert meta["apiVersion"] == "v2"
    assert meta["name"] == "gpu-admission"
    assert meta["kubeVersion"] == ">=1.34.0-0"
    project = tomllib.loads((CHART.parents[1] / "pyproject.toml").read_text())["project"]
    assert meta["appVersion"] == project["version"]  # the image tag the chart pulls by default


@pytest.mark.parametrize("value_set", set_params())
def test_every_object_validates_against_kubernetes_1_34(rendered, value_set):
    errors, unknown = [], []
    for obj in rendered.objects:
        if _group(obj["apiVersion"]) in CRD_GROUPS:
            continue
        try:
            problem = _validate(json.dumps(obj, sort_keys=True))
        except kv_utils.SchemaNotFoundError:
            unknown.append(f"{obj['apiVersion']} {obj['kind']}")
            continue
        if problem:
            errors.append(problem)
    assert errors == []
    assert unknown == [], "objects that are neither in Kubernetes 1.34 nor known CRDs"


@pytest.mark.parametrize("value_set", set_params())
def test_every_object_is_named_and_namespaced_correctly(rendered, value_set):
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "PriorityClass", "ValidatingWebhookConfiguration",
                      "MutatingWebhookConfiguration"}
    names = set()
    for obj in rendered.objects:
        meta = obj["metadata"]
        key = (obj["kind"], meta["name"])
        assert key not in names, f"duplicate {key}"
        names.add(key)
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in meta
        else:
            assert meta["namespace"] == NAMESPACE, key
        labels = meta.get("labels", {})
        assert labels.get("app.kubernetes.io/instance") == RELEASE, key
        assert labels.get("app.kubernetes.io/managed-by") == "Helm", key


def _certificate_shape(cert: dict, rendered) -> None:
    spec = cert["spec"]
    assert set(spec) <= {"secretName", "commonName", "dnsNames", "duration", "renewBefore", "usages", "privateKey",
                         "issuerRef", "isCA"}
    assert spec["secretName"] and spec["issuerRef"]["name"]
    assert spec["issuerRef"]["kind"] in ("Issuer", "ClusterIssuer")
    assert spec["issuerRef"]["group"] == "cert-manager.io"
    assert spec["privateKey"]["algorithm"] in ("RSA", "ECDSA", "Ed25519")
    for field in ("duration", "renewBefore"):
        if field in spec:
            assert spec[field].endswith("h") and spec[field][:-1].isdigit()
    if spec["issuerRef"]["kind"] == "Issuer" and not spec["issuerRef"]["name"].startswith("corp"):
        assert rendered.one("Issuer", spec["issuerRef"]["name"])  # the referenced Issuer is rendered


@pytest.mark.parametrize("value_set", set_params("cert-manager", "cert-manager-issuer"))
def test_cert_manager_objects_have_the_crd_shape(rendered, value_set):
    certs = rendered.all("Certificate")
    assert certs
    for obj in certs + rendered.all("Issuer"):
        assert obj["apiVersion"] == "cert-manager.io/v1"
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
    for cert in certs:
        _certificate_shape(cert, rendered)
    for issuer in rendered.all("Issuer"):
        spec = issuer["spec"]
        assert len(spec) == 1 and set(spec) <= {"selfSigned", "ca"}
        if "ca" in spec:
            ca_cert = [c for c in certs if c["spec"]["secretName"] == spec["ca"]["secretName"]]
            assert len(ca_cert) == 1 and ca_cert[0]["spec"]["isCA"] is True


@pytest.mark.parametrize("value_set", set_params("extras-on", "extras-lookups"))
def test_service_monitor_has_the_crd_shape_and_scrapes_the_https_port(rendered, value_set):
    sm = rendered.one("ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    spec = sm["spec"]
    assert set(spec) == {"selector", "namespaceSelector", "endpoints"}
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    service = rendered.one("Service")
    for key, value in spec["selector"]["matchLabels"].items():
        assert service["metadata"]["labels"][key] == value  # ServiceMonitors select Services by their labels
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert endpoint["scheme"] == "https" and endpoint["path"] == "/metrics"
    assert set(endpoint) == {"port", "scheme", "path", "interval", "scrapeTimeout", "tlsConfig"}
    tls = endpoint["tlsConfig"]
    if value_set == "extras-on":
        assert tls["serverName"] == f"{RELEASE}.{NAMESPACE}.svc"
        assert tls["ca"]["secret"] == {"name": f"{RELEASE}-tls", "key": "ca.crt"}
    else:
        assert tls == {"insecureSkipVerify": True}


@pytest.mark.parametrize("value_set", set_params())
def test_optional_objects_follow_their_switches(rendered, value_set):
    values = rendered.values
    assert bool(rendered.all("NetworkPolicy")) == values.get("networkPolicy", {}).get("enabled", False)
    assert bool(rendered.all("ServiceMonitor")) == values.get("serviceMonitor", {}).get("enabled", False)
    assert bool(rendered.all("CronJob")) == values.get("audit", {}).get("enabled", False)
    assert bool(rendered.all("MutatingWebhookConfiguration")) == values.get("webhooks", {}).get(
        "mutating", {}).get("enabled", True)
    assert bool(rendered.all("PodDisruptionBudget")) == values.get("podDisruptionBudget", {}).get("enabled", True)
    mode = values.get("certificates", {}).get("mode", "generate")
    assert bool(rendered.all("Certificate")) == (mode == "certManager")
    assert bool(rendered.all("Secret")) == (mode == "generate")
