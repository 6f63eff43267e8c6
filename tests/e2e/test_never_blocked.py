"""What is never blocked, through the real apiserver: DELETE, finalizer removal, status updates and
`kubectl label` on objects whose spec the rules deny, with the webhook up and with it down
(failurePolicy Fail)."""
from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e


@pytest.fixture
def denied_pod(kubectl, namespace, release):
    """A Pod that the rules would deny, stored while the webhooks ignore its namespace (an object admitted
    before the webhook was installed, as in any cluster that adopts it), with a finalizer."""
    pod = gpu_pod(namespace, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    pod["metadata"]["finalizers"] = ["example.com/keep"]
    release.upgrade({"exemptNamespaces": [namespace]})
    wait_for(lambda: kubectl.create(pod, check=False).returncode == 0, "the exempt namespace to be admitted")
    release.upgrade()
    wait_for(lambda: "denied" in kubectl.create({**pod, "metadata": {"name": "probe", "namespace": namespace}},
                                                check=False).stderr, "the namespace to be enforced again")
    return pod


@pytest.mark.parametrize("webhook_up", [pytest.param(True, id="webhook-up"), pytest.param(False, id="webhook-down")])
def test_label_status_finalizer_and_delete_go_through(kubectl, namespace, denied_pod, webhook, webhook_up):
    if not webhook_up:
        webhook.stop()
    kubectl.run("label", "pod", "cuda", "-n", namespace, "team=ml")
    kubectl.run("annotate", "pod", "cuda", "-n", namespace, "example.com/note=x")
    status = {"status": {"conditions": [{"type": "Example", "status": "True"}]}}
    kubectl.run("patch", "pod", "cuda", "-n", namespace, "--subresource=status", "--type=merge",
                "-p", json.dumps(status))
    kubectl.run("patch", "pod", "cuda", "-n", namespace, "--type=json",
                "-p", '[{"op": "remove", "path": "/metadata/finalizers"}]')
    kubectl.run("delete", "pod", "cuda", "-n", namespace, "--wait=true", "--timeout=30s")
    assert kubectl.run("get", "pod", "cuda", "-n", namespace, check=False).returncode == 1
