"""The exported MutatingAdmissionPolicies in a real apiserver (issue 18): accepted (admissionregistration.k8s.io/v1
on 1.37, v1beta1 on 1.34 behind the MutatingAdmissionPolicy gate and runtime-config, which tests/e2e/cluster.py
turns on before 1.36), `export --check` clean, and Pods created through them and the webhook (chart
inTree.mutation) identical to Pods the webhook alone mutates. The apiserver runs the policies before the
webhooks and again after the webhook changed a Pod (reinvocationPolicy IfNeeded): a GPU pod with a plain
sidecar is changed by the webhook (hide-gpus) after the policies, so equal results also show the policies'
second run adds nothing."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from tests.e2e.conftest import CLI, REPO, wait_for
from tests.intree.test_mutation_parity import OWN

pytestmark = pytest.mark.e2e

MANAGED = "app.kubernetes.io/managed-by=gpu-admission"
ROWS = [r for r in OWN if r.namespace == "ai"]
PROBE = "gpu-pod-nothing-set"
TOKEN_VOLUME = re.compile(r"kube-api-access-[a-z0-9]+")  # the ServiceAccount plugin's random suffix


def _version(cluster) -> str:
    return ".".join(cluster.version.removeprefix("v").split(".")[:2])


def _api(cluster) -> str:
    major, minor = (int(p) for p in _version(cluster).split("."))
    return "admissionregistration.k8s.io/" + ("v1" if (major, minor) >= (1, 36) else "v1beta1")


def _export(cluster) -> list[dict]:
    result = subprocess.run([*CLI, "export", "-o", "json", "--only", "mutating", "--kubernetes-version",
                             _version(cluster)], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["items"]


def _outcome(kubectl, namespace: str, row) -> tuple[int, object]:
    pod = {**row.obj, "metadata": {"name": row.id, "namespace": namespace}}
    result = kubectl.create(pod, "--dry-run=server", "-o", "json", check=False)
    if result.returncode != 0:
        return result.returncode, result.stderr.strip()
    return 0, json.loads(TOKEN_VOLUME.sub("kube-api-access-x", json.dumps(json.loads(result.stdout)["spec"])))


def _outcomes(kubectl, namespace: str) -> dict:
    return {row.id: _outcome(kubectl, namespace, row) for row in ROWS}


def _probe(kubectl, namespace: str):
    return _outcome(kubectl, namespace, next(r for r in ROWS if r.id == PROBE))


def _ours(kubectl, resource: str) -> list[dict]:
    """Ours by name: Helm sets app.kubernetes.io/managed-by=Helm on what it installs, over the export's label."""
    return [i for i in kubectl.json("get", resource)["items"] if i["metadata"]["name"].startswith("gpu-admission.")]


def _crowded_pod_is_patched_whole(kubectl, namespace: str) -> None:
    """Within the apiserver's CEL cost budgets: failurePolicy Ignore would drop a patch that ran over them
    silently, and the webhook (inTree.mutation) no longer sets these fields, so every container of a crowded
    pod having them shows the policy ran to the end."""
    containers = [{"name": f"c{i}", "image": "registry.example.invalid/app:1",
                   "env": [{"name": f"VAR_{j}", "value": str(j)} for j in range(50)],
                   **({"securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}} if i % 2 else {})}
                  for i in range(60)]
    containers[0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crowded", "namespace": namespace},
           "spec": {"nodeSelector": next(r for r in ROWS if r.id == PROBE).obj["spec"]["nodeSelector"],
                    "containers": containers,
                    "initContainers": [{**c, "name": f"init-{c['name']}"} for c in containers[1:21]]}}
    result = kubectl.create(pod, "--dry-run=server", "-o", "json", check=False)
    assert result.returncode == 0, result.stderr
    spec = json.loads(result.stdout)["spec"]
    assert spec["runtimeClassName"] == "nvidia" and spec["securityContext"]["runAsNonRoot"] is True
    for c in spec["containers"] + spec["initContainers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True, c["name"]
        assert sc["capabilities"]["drop"] == ["ALL"], c["name"]


def test_exported_mutating_policies_are_accepted_and_check_clean(cluster, kubectl):
    objects = _export(cluster)
    assert {o["kind"] for o in objects} == {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
    assert {o["apiVersion"] for o in objects} == {_api(cluster)}
    try:
        kubectl.apply(yaml.safe_dump_all(objects))
        live = kubectl.json("get", "mutatingadmissionpolicies", "-l", MANAGED)["items"]
        assert sorted(i["metadata"]["name"] for i in live) == sorted(
            o["metadata"]["name"] for o in objects if o["kind"] == "MutatingAdmissionPolicy")
        # --check reads the cluster's version and discovery: the API version it compares in is the cluster's
        check = subprocess.run([*CLI, "export", "--check", "--kubeconfig", str(cluster.kubeconfig), "--only",
                                "mutating"], cwd=REPO, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        assert check.stdout.splitlines()[0] == (f"cluster: Kubernetes {cluster.version}, MutatingAdmissionPolicy "
                                                f"served as {_api(cluster)}")
    finally:
        kubectl.run("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", "-l", MANAGED,
                    "--wait=true", check=False)


def test_pods_end_identical_with_in_tree_mutation_and_webhook(cluster, kubectl, webhook, release, namespace):
    alone = _outcomes(kubectl, namespace)
    assert alone[PROBE][0] == 0 and alone[PROBE][1]["runtimeClassName"] == "nvidia", alone[PROBE]
    assert alone[PROBE][1]["securityContext"]["runAsNonRoot"] is True
    release.upgrade({"inTree": {"mutation": True}})
    try:
        installed = _ours(kubectl, "mutatingadmissionpolicies")
        assert installed and {i["apiVersion"] for i in installed} == {_api(cluster)}
        # the chart's objects are what export writes for the policy it renders (Helm's own labels aside)
        check = subprocess.run([*CLI, "export", "--check", "--only", "mutating",
                                "--kubeconfig", str(cluster.kubeconfig), "--config", str(release.webhook.policy)],
                               cwd=REPO, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        # the webhook has reloaded the policy (upgrade waits for it): the probe is whole once the policies answer
        wait_for(lambda: _probe(kubectl, namespace) == alone[PROBE], "the MutatingAdmissionPolicies to answer")
        together = _outcomes(kubectl, namespace)
        _crowded_pod_is_patched_whole(kubectl, namespace)
        # without the policies' bindings the webhook leaves those fields unset: the policies did set them
        bindings = [i["metadata"]["name"] for i in _ours(kubectl, "mutatingadmissionpolicybindings")]
        assert bindings
        kubectl.run("delete", "mutatingadmissionpolicybinding", *bindings, "--wait=true")
        wait_for(lambda: "runtimeClassName" not in _probe(kubectl, namespace)[1], "the webhook alone to skip them")
        bare = _probe(kubectl, namespace)[1]
        assert "runAsNonRoot" not in bare.get("securityContext", {}), bare
    finally:
        release.upgrade()
        kubectl.run("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", "-l", MANAGED,
                    "--wait=true", check=False)
    assert together == alone
