"""unsatisfiable-request through the real apiserver: Nodes and ResourceSlices created through the API (no
kubelet: a Node's allocatable is written through its status subresource, as a kubelet reports it), the
chart's Node and ResourceSlice lookups on (its RBAC checked by the real authorizer: the webhook watches
with the chart's ServiceAccount token), and the warning as kubectl prints it."""
from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import lookups_on, wait_for
from tests.e2e.test_dra import dra_pod
from tests.e2e.test_kubectl import gpu_pod
from tests.support import DATA, SEED

pytestmark = pytest.mark.e2e

INVENTORY = DATA / "inventory"
CAPACITY = {"resourceClaims": True, "deviceClasses": True, "nodes": True, "resourceSlices": True}
DP_NODES = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}


def _nodes() -> list[dict]:
    return yaml.safe_load((INVENTORY / "nodes.yaml").read_text())["items"]


@pytest.fixture(scope="module")
def capacity(release, cluster):
    """The snapshot's Nodes (allocatable through the status subresource) and the MIG node's ResourceSlice,
    then the webhook restarted with the chart's lookups of them, watching with the chart's token."""
    kubectl = cluster.kubectl
    nodes = _nodes()
    for node in nodes:
        status = node.pop("status")
        kubectl.apply(node)
        kubectl.run("patch", "node", node["metadata"]["name"], "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))
    for doc in yaml.safe_load_all((SEED / "dra-manifests.yaml").read_text()):
        if doc and doc["kind"] == "DeviceClass":  # hybrid-full-gpu, hybrid-large-gpu
            kubectl.apply(doc)
    kubectl.apply((INVENTORY / "nvidia-dra-h200-mig.yaml").read_text())
    stored = kubectl.json("get", "node", "hybrid-dp-0")
    assert stored["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    with lookups_on(release, cluster, CAPACITY):
        yield release
    kubectl.run("delete", "resourceslice", "hybrid-dra-h200-mig-gpu.nvidia.com-p4m9z", check=False)
    kubectl.run("delete", "deviceclass", "hybrid-full-gpu", "hybrid-large-gpu", check=False)
    for node in nodes:
        kubectl.run("delete", "node", node["metadata"]["name"], "--wait=false", check=False)


@pytest.fixture(scope="module")
def golden_namespace(cluster, release):
    """A fixed name, so that the golden file can name it."""
    name = cluster.namespace("ml-capacity")
    yield name
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def _placed(pod: dict, labels: dict) -> dict:
    pod["spec"]["nodeSelector"] = dict(labels)
    pod["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["spec"]["runtimeClassName"] = "nvidia"
    return pod


def _first_warning(kubectl, manifest: dict) -> str:
    """What a server-side dry run warns: once the webhook's caches hold the Nodes and slices, the verdict."""
    result = kubectl.run("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(manifest), check=False)
    return result.stderr


def test_a_request_above_the_largest_node_warns_through_kubectl(kubectl, golden_namespace, capacity, webhook,
                                                                golden):
    too_many = _placed(gpu_pod(golden_namespace, name="train-16"), DP_NODES)
    too_many["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "16"}}
    wait_for(lambda: "[unsatisfiable-request]" in _first_warning(kubectl, too_many),
             "the webhook's Node cache to hold the snapshot")
    result = kubectl.create(too_many)
    assert "pod/train-16 created" in result.stdout
    golden(result.stderr, "warnings-unsatisfiable-request")
    fits = _placed(gpu_pod(golden_namespace, name="train-8"), DP_NODES)
    fits["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
    twin = kubectl.create(fits)
    assert "pod/train-8 created" in twin.stdout and twin.stderr == ""


def test_a_claim_no_published_device_matches_warns(kubectl, namespace, capacity, webhook):
    kubectl.apply({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                   "metadata": {"name": "single-large-gpu", "namespace": namespace},
                   "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                       "deviceClassName": "hybrid-large-gpu", "allocationMode": "ExactCount", "count": 1}}]}}}})
    large = dra_pod(namespace, "llm", "single-large-gpu")
    large["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    wait_for(lambda: "[unsatisfiable-request]" in _first_warning(kubectl, large),
             "the webhook's ResourceSlice cache to hold the MIG node's slice")
    result = kubectl.create(large)
    assert "pod/llm created" in result.stdout
    assert "Warning: " in result.stderr and "hybrid-dra-h200-mig/gpu-0-mig-3g71gb-0" in result.stderr
    # the benign twin: a class the MIG node's devices satisfy (any device of the driver), two of them
    kubectl.apply({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any-nvidia"},
                   "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}})
    kubectl.apply({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                   "metadata": {"name": "any-device", "namespace": namespace},
                   "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                       "deviceClassName": "any-nvidia", "allocationMode": "ExactCount", "count": 2}}]}}}})
    any_device = dra_pod(namespace, "mig-pair", "any-device")
    any_device["spec"]["tolerations"] = large["spec"]["tolerations"]
    twin = kubectl.create(any_device)
    assert "pod/mig-pair created" in twin.stdout and "[unsatisfiable-request]" not in twin.stderr, twin.stderr
    kubectl.run("delete", "deviceclass", "any-nvidia", check=False)
