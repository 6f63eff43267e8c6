"""failurePolicy, timeouts and matchConditions as the real apiserver applies them.

- The webhook stopped: `Fail` rejects matching creates with the apiserver's own message, `Ignore` admits them.
- A webhook slower than its timeoutSeconds: the apiserver gives up and applies the failurePolicy.
- matchConditions evaluated by the apiserver's CEL: non-GPU Pods never reach the webhook (its request
  counter stays still), GPU Pods do.
"""
from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
import time

import pytest

from tests.e2e import cluster as clusterlib
from tests.e2e.conftest import wait_for
from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e

PLAIN_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
             "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                      "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}}


def plain_pod(namespace: str, name: str = "web") -> dict:
    return {**PLAIN_POD, "metadata": {"name": name, "namespace": namespace}}


def test_fail_rejects_gpu_pods_while_the_webhook_is_down(kubectl, namespace, webhook):
    webhook.stop()
    result = kubectl.create(gpu_pod(namespace), check=False)
    assert result.returncode == 1
    assert "Internal error occurred: failed calling webhook \"pods.mutate.gpu-admission.io\"" in result.stderr
    assert f"{webhook.url}/mutate?timeout=3s" in result.stderr and "connection refused" in result.stderr
    # a Pod the matchConditions keep off the webhook is created all the same
    assert kubectl.create(plain_pod(namespace), check=False).returncode == 0


@pytest.fixture
def ignore_policy(release):
    release.upgrade({"webhooks": {"validating": {"failurePolicy": "Ignore"}, "mutating": {"failurePolicy": "Ignore"}}})
    yield release
    release.upgrade()


def test_ignore_admits_them_unchecked(kubectl, namespace, ignore_policy):
    ignore_policy.webhook.stop()
    pod = gpu_pod(namespace, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    result = wait_for(lambda: (r := kubectl.create(pod, check=False)).returncode == 0 and r, "Ignore to apply")
    assert result.stdout == "pod/cuda created\n"
    stored = kubectl.json("get", "pod", "cuda", "-n", namespace)
    assert "runtimeClassName" not in stored["spec"]  # no patch: the mutating webhook was not reached


def test_match_conditions_keep_non_gpu_pods_off_the_webhook(kubectl, namespace, webhook):
    before = webhook.requests()
    for i in range(3):
        kubectl.create(plain_pod(namespace, f"web-{i}"))
    assert webhook.requests() == before
    kubectl.create(gpu_pod(namespace))
    # the mutating call and the validating call of the mutated pod
    assert webhook.requests("mutate") >= 1 and webhook.requests("validate") >= 1
    assert webhook.requests() >= before + 2


class _Slow(http.server.BaseHTTPRequestHandler):
    delay = 3.0

    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.delay)
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": {"uid": review["request"]["uid"], "allowed": True}}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the apiserver gave up first

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_webhook(kubectl, release, namespace):
    """A stand-in for a webhook that answers after its timeoutSeconds (the real one cannot be slowed on
    demand), registered with failurePolicy Fail for one namespace."""
    certs = release.webhook.certs
    server = http.server.ThreadingHTTPServer(("127.0.0.1", clusterlib.free_port()), _Slow)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "e2e-slow"},
        "webhooks": [{"name": "slow.e2e.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                      "timeoutSeconds": 1, "failurePolicy": "Fail",
                      "clientConfig": {"url": f"https://127.0.0.1:{server.server_address[1]}/validate",
                                       "caBundle": base64.b64encode((certs / "ca.crt").read_bytes()).decode()},
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["configmaps"]}]}]}
    kubectl.apply(config)
    yield server
    kubectl.run("delete", "validatingwebhookconfiguration", "e2e-slow", check=False)
    server.shutdown()
    server.server_close()


def test_a_webhook_slower_than_its_timeout_fails_the_request(kubectl, namespace, slow_webhook):
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": namespace}}
    started = time.monotonic()
    result = wait_for(lambda: (r := kubectl.create(configmap, check=False)).returncode == 1 and r,
                      "the slow webhook to be registered")
    assert time.monotonic() - started < 30
    assert 'failed calling webhook "slow.e2e.example.com"' in result.stderr
    assert "context deadline exceeded" in result.stderr or "Timeout" in result.stderr
