"""Fixtures of the chart tests: the chart rendered with real Helm (helm-python-sdk embeds Helm v4's Go
SDK), once per value set for the whole session, and parsed into objects."""
from __future__ import annotations

import base64
import copy
import datetime
import functools
import json

import helm_python
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from helm_python import _native

from tests.support import REPO

CHART = REPO / "charts" / "gpu-admission"
RELEASE = "gpu-admission"
# Not the policy's default serviceNamespace ("gpu-admission"), so a chart that hard-coded it would fail.
NAMESPACE = "gpu-policy"
KUBE_VERSION = "1.34"

CUSTOM_POLICY = {
    "mode": "enforce",
    "exemptNamespaces": ["kube-system", "nvidia-gpu-operator"],
    "visibleDeviceVariables": ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"],
    "deviceClasses": [{"name": "a100-sliced", "driver": "gpu.nvidia.com", "deviceType": "gpu"}],
    "cohorts": [
        {
            "name": "a100",
            "mechanism": "device-plugin",
            "manager": "gpu-operator-clusterpolicy",
            "nodeLabels": {"nvidia.com/gpu.product": "A100-SXM4-40GB"},
            "runtimeClassName": "nvidia-cdi",
            "migStrategy": "mixed",
            "mig": {"model": "A100-40GB"},
            "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}], "renameByDefault": True,
                            "failRequestsGreaterThanOne": True},
        },
        {
            "name": "h200",
            "mechanism": "dra",
            "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H200"},
            "deviceClasses": ["a100-sliced"],
            "maxDevicesPerClaim": 4,
            "sharingStrategies": ["TimeSlicing"],
        },
    ],
    "namespaceCohorts": {"training": "h200"},
    "namespaceOverrides": [{"namespaces": ["research"], "mode": "audit", "rules": {"run-as-root": "off"}}],
    "exceptions": [{"name": "kai", "rules": ["visible-devices-override"], "schedulerNames": ["kai-scheduler"]}],
    "rules": {"shared-claim": "enforce"},
}



def _ca_bundle() -> str:
    """base64 of a PEM CA certificate, as a user would give certificates.caBundle."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "corp-webhook-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


EXISTING_CA_BUNDLE = _ca_bundle()

# The value sets every object-level test runs over (ids are the pytest ids).
VALUE_SETS: dict[str, dict] = {
    "default": {},
    "audit-mode": {"mode": "audit"},
    "dry-run-mode": {"mode": "dry-run", "webhooks": {"validating": {"failurePolicy": "Ignore"},
                                                       "mutating": {"failurePolicy": "Ignore"}}},
    "cert-manager": {"certificates": {"mode": "certManager"}},
    "cert-manager-issuer": {"certificates": {
        "mode": "certManager", "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}}},
    "existing-secret": {"certificates": {"mode": "existingSecret", "secretName": "webhook-tls",
                                         "caBundle": EXISTING_CA_BUNDLE}},
    "lookups-on": {"lookups": {"resourceClaims": True, "deviceClasses": True, "namespaces": True,
                               "configMaps": True, "secrets": True}},
    "lookups-claims": {"lookups": {"resourceClaims": True, "deviceClasses": True}},
    "exempt-namespaces": {"exemptNamespaces": ["ml-infra", "monitoring"]},
    "custom-policy": {"policy": CUSTOM_POLICY, "rules": {"run-as-root": "enforce", "hide-gpus": False},
                      "mode": "enforce"},
    "audit-cronjob": {"audit": {"enabled": True, "extraArgs": ["--namespace", "ml"], "timeZone": "Etc/UTC"},
                      "lookups": {"configMaps": True}},
    "audit-openreports": {"audit": {"enabled": True, "reports": "openreports", "timeZone": "Etc/UTC"}},
    "extras-on": {"networkPolicy": {"enabled": True}, "serviceMonitor": {"enabled": True},
                  "priorityClassName": "system-cluster-critical", "replicaCount": 3,
                  "podDisruptionBudget": {"maxUnavailable": "50%"}, "image": {"digest": "sha256:" + "a" * 64},
                  "prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}},
    "extras-lookups": {"networkPolicy": {"enabled": True, "ingressFrom": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]},
                       "lookups": {"namespaces": True}, "serviceMonitor": {"enabled": True,
                                                                           "tlsConfig": {"insecureSkipVerify": True}}},
    "minimal": {"webhooks": {"mutating": {"enabled": False}, "matchConditions": {
        "skipNonGpuPods": False, "skipUnchangedUpdates": False, "skipNodeRequests": False}},
        "topologySpread": {"enabled": False}, "podDisruptionBudget": {"enabled": False},
        "priorityClass": {"create": False}, "serviceAccount": {"create": False, "name": "webhook"},
        "securityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None}},
    # The escape hatches platform teams expect (docs/deployment.md), each set at once.
    "host-network": {"hostNetwork": {"enabled": True, "port": 9743},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}},
    "escape-hatches": {
        "dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.96.0.10"], "searches": ["svc.cluster.local"]},
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.corp:3128"},
                     {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "extraArgs": ["--limit-request-line", "8190"],
        "extraVolumes": [{"name": "corp-ca", "configMap": {"name": "corp-ca"}}],
        "extraVolumeMounts": [{"name": "corp-ca", "mountPath": "/etc/ssl/corp", "readOnly": True}],
        "webhooks": {"objectSelector": {"matchExpressions": [{"key": "gpu-admission.io/skip",
                                                              "operator": "DoesNotExist"}]},
                     "namespaceSelector": {"matchLabels": {"gpu": "true"},
                                           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["ml"]}]},
                     "matchConditions": {"extra": [{"name": "not-ci-bots",
                                                    "expression": "!request.userInfo.username.startsWith('ci-')"}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "DoNotSchedule"}],
        "revisionHistoryLimit": 2,
        "updateStrategy": {"type": "Recreate"},
        "podSecurityContext": {"supplementalGroups": [4000], "fsGroupChangePolicy": "OnRootMismatch"},
        "containerSecurityContext": {"seLinuxOptions": {"type": "spc_t"}},
        "autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 9, "targetMemoryUtilizationPercentage": 80,
                        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}},
        "audit": {"enabled": True, "failOnFindings": True},
    },
}


def set_params(*names: str):
    """pytest params over value sets (all of them by default), with their names as ids."""
    return [pytest.param(name, id=name) for name in (names or VALUE_SETS)]


class Rendered:
    """One render of the chart: every object, by kind and name, plus NOTES.txt."""

    def __init__(self, name: str, values: dict, manifests: dict[str, str]):
        self.name = name
        self.values = values
        self.notes = ""
        self.objects: list[dict] = []
        for path, text in sorted(manifests.items()):
            if path.endswith("NOTES.txt"):
                self.notes = text
                continue
            for doc in yaml.safe_load_all(text):
                if doc:
                    doc.setdefault("metadata", {})
                    self.objects.append(doc)

    def all(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict:
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.name}: expected one {kind} {name or ''}, found {len(found)}"
        return found[0]

    def maybe(self, kind: str) -> dict | None:
        found = self.all(kind)
        assert len(found) <= 1, f"{self.name}: more than one {kind}"
        return found[0] if found else None

    def webhooks(self) -> list[tuple[str, dict]]:
        """(configuration kind, webhook) for every webhook of both configurations."""
        out = []
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            for config in self.all(kind):
                out.extend((kind, hook) for hook in config["webhooks"])
        return out

    def policy_text(self) -> str:
        return self.one("ConfigMap", f"{RELEASE}-policy")["data"]["policy.yaml"]

    def policy(self) -> dict:
        return yaml.safe_load(self.policy_text())


@functools.cache
def load_chart() -> helm_python.Chart:
    return helm_python.Chart.load(str(CHART))


def render_values(values: dict, *, namespace: str = NAMESPACE, kube_version: str | None = None,
                  api_versions: tuple[str, ...] = ()) -> dict[str, str]:
    """`helm template`; kube_version and api_versions are its --kube-version and --api-versions (what
    .Capabilities says; without them Helm's own defaults, which list no MutatingAdmissionPolicy)."""
    if kube_version is None and not api_versions:
        return load_chart().render(copy.deepcopy(values), name=RELEASE, namespace=namespace)
    # The SDK's Chart.render takes no capabilities; the native render it wraps reads them from its options.
    opts = {"name": RELEASE, "namespace": namespace, "api_versions": list(api_versions),
            **({"kube_version": kube_version} if kube_version else {})}
    payload = _native.call_string("helm_render", load_chart()._raw(), json.dumps(copy.deepcopy(values)),
                                              json.dumps(opts))
    return json.loads(payload)


@functools.cache
def rendered_set(name: str) -> Rendered:
    values = VALUE_SETS[name]
    return Rendered(name, values, render_values(values))


@pytest.fixture(scope="session")
def chart() -> helm_python.Chart:
    return load_chart()


@pytest.fixture(scope="session")
def render():
    """Render arbitrary values (for the few tests that need a set of their own)."""
    return lambda values, **kw: Rendered("ad hoc", values, render_values(values, **kw))


@pytest.fixture
def rendered(value_set: str) -> Rendered:
    """The render of the value set a test is parametrized with (rendered once per session)."""
    return rendered_set(value_set)


@pytest.fixture(scope="session")
def default_render() -> Rendered:
    return rendered_set("default")
