"""Mutation as the real apiserver applies it: a second mutating webhook after ours makes the apiserver
reinvoke ours (reinvocationPolicy IfNeeded) and the result is stable; PodSecurity `restricted` admits a GPU
pod only thanks to our security defaults."""
from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading

import pytest

from tests.e2e import cluster as clusterlib
from tests.e2e.conftest import wait_for
from tests.e2e.test_failure import plain_pod
from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e


class _Labeller(http.server.BaseHTTPRequestHandler):
    """A stand-in for another vendor's mutating webhook (the cluster has none of its own): it adds one label
    to every Pod it is sent, and counts its calls."""

    calls = 0
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        labels = review["request"]["object"]["metadata"].get("labels")
        patch = ([{"op": "add", "path": "/metadata/labels", "value": {"e2e-second": "seen"}}] if not labels else
                 [{"op": "add", "path": "/metadata/labels/e2e-second", "value": "seen"}])
        response = {"uid": review["request"]["uid"], "allowed": True, "patchType": "JSONPatch",
                    "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def second_webhook(kubectl, release, namespace):
    certs = release.webhook.certs
    server = http.server.ThreadingHTTPServer(("127.0.0.1", clusterlib.free_port()), _Labeller)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Labeller.calls = 0
    # named after ours: the apiserver calls mutating webhooks in the order of their configurations' names
    kubectl.apply({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "zz-e2e-labeller"},
        "webhooks": [{"name": "labeller.e2e.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                      "timeoutSeconds": 5, "failurePolicy": "Fail", "reinvocationPolicy": "Never",
                      "clientConfig": {"url": f"https://127.0.0.1:{server.server_address[1]}/mutate",
                                       "caBundle": base64.b64encode((certs / "ca.crt").read_bytes()).decode()},
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["pods"]}]}]})
    yield _Labeller
    kubectl.run("delete", "mutatingwebhookconfiguration", "zz-e2e-labeller", check=False)
    server.shutdown()
    server.server_close()


def test_a_later_mutation_reinvokes_ours_and_the_result_is_stable(kubectl, namespace, webhook, second_webhook):
    probes = iter(range(1000))
    # server-side dry-runs until the apiserver's webhook informer has the new configuration (nothing stored)
    wait_for(lambda: kubectl.create(gpu_pod(namespace, name=f"probe-{next(probes)}"), "--dry-run=server")
             and second_webhook.calls, "the second webhook to be called")
    before = webhook.requests("mutate")
    kubectl.create(gpu_pod(namespace))
    stored = kubectl.json("get", "pod", "cuda", "-n", namespace)
    assert stored["metadata"]["labels"]["e2e-second"] == "seen"
    # ours, then the labeller changed the pod, then ours again (IfNeeded), whose patch added nothing twice
    assert webhook.requests("mutate") == before + 2
    assert stored["spec"]["runtimeClassName"] == "nvidia"
    gpu_tolerations = [t for t in stored["spec"]["tolerations"] if t.get("key") == "nvidia.com/gpu"]
    assert gpu_tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert stored["spec"]["securityContext"]["runAsNonRoot"] is True


def test_restricted_pod_security_admits_a_gpu_pod_thanks_to_our_defaults(cluster, kubectl, release, webhook):
    name = cluster.namespace(labels={"pod-security.kubernetes.io/enforce": "restricted"})
    try:
        created = kubectl.create(gpu_pod(name), check=False)
        assert created.returncode == 0, created.stderr
        twin = kubectl.create(plain_pod(name), check=False)  # no GPU: not mutated, so PodSecurity refuses it
        assert twin.returncode == 1
        assert 'violates PodSecurity "restricted:latest"' in twin.stderr
    finally:
        kubectl.run("delete", "namespace", name, "--wait=false", check=False)
