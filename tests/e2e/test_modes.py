"""Modes through the real apiserver: audit mode (nothing denied, nothing patched, warnings in kubectl and
annotations in the apiserver's audit log under the webhook's name), server-side dry-run, a per-namespace
override."""
from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.test_kubectl import gpu_pod, write

pytestmark = pytest.mark.e2e

VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
DENIED = "denied the request"


def audit_events(cluster, namespace: str, name: str) -> list[dict]:
    events = []
    for line in cluster.audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef", {})
        if ref.get("namespace") == namespace and ref.get("name") == name and ref.get("resource") == "pods":
            events.append(event)
    return events


def test_dry_run_server_is_denied_like_a_create(kubectl, namespace, tmp_path, webhook):
    path = write(tmp_path, "pod.yaml", gpu_pod(namespace, env=VISIBLE_ALL))
    result = kubectl.apply_file(path, "--dry-run=server")
    assert result.returncode == 1 and DENIED in result.stderr and "[visible-devices-override]" in result.stderr
    twin = kubectl.apply_file(write(tmp_path, "twin.yaml", gpu_pod(namespace)), "--dry-run=server", "-o", "json")
    assert twin.returncode == 0, twin.stderr
    assert json.loads(twin.stdout)["spec"]["runtimeClassName"] == "nvidia"  # the patch, in the dry-run answer
    assert kubectl.run("get", "pods", "-n", namespace, "-o", "name").stdout == ""  # nothing stored


@pytest.fixture
def audit_mode(release):
    release.upgrade({"mode": "audit"})
    yield release
    release.upgrade()


def test_audit_mode_admits_patches_nothing_and_records(cluster, kubectl, namespace, tmp_path, audit_mode):
    path = write(tmp_path, "pod.yaml", gpu_pod(namespace, env=VISIBLE_ALL))
    # the webhook reloads the policy file within seconds of the ConfigMap change
    result = wait_for(lambda: (r := kubectl.apply_file(path)).returncode == 0 and r, "audit mode to be served")
    assert result.stdout == "pod/cuda created\n"
    assert "Warning: dry-run, would deny: pod " in result.stderr and "[visible-devices-override]" in result.stderr
    stored = kubectl.json("get", "pod", "cuda", "-n", namespace)
    assert "runtimeClassName" not in stored["spec"] and "nodeSelector" not in stored["spec"]
    event = wait_for(lambda: [e for e in audit_events(cluster, namespace, "cuda")
                              if e["verb"] == "create" and e["stage"] == "ResponseComplete"], "the audit event")[0]
    annotations = event.get("annotations", {})
    assert annotations["pods.validate.gpu-admission.io/mode"] == "dry-run"
    assert "[visible-devices-override]" in annotations["pods.validate.gpu-admission.io/visible-devices-override"]
    assert annotations["pods.mutate.gpu-admission.io/mode"] == "dry-run"


@pytest.fixture
def override_namespace(cluster, release):
    name = cluster.namespace()
    release.upgrade({"policy": {"namespaceOverrides": [{"namespaces": [name], "mode": "audit"}]}})
    yield name
    release.upgrade()
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def test_per_namespace_override(kubectl, namespace, override_namespace, tmp_path, webhook):
    audited = write(tmp_path, "audited.yaml", gpu_pod(override_namespace, env=VISIBLE_ALL))
    result = wait_for(lambda: (r := kubectl.apply_file(audited)).returncode == 0 and r, "the override to be served")
    assert "would deny" in result.stderr
    enforced = kubectl.apply_file(write(tmp_path, "enforced.yaml", gpu_pod(namespace, env=VISIBLE_ALL)))
    assert enforced.returncode == 1 and DENIED in enforced.stderr
