"""allocation-owner on the real apiserver: the chart's infrastructure webhook, the GPU Operator's CRDs installed
from their published definitions (tests/data/schemas/gpu-operator, PROVENANCE.md), every denial through
`kubectl apply` beside its benign twin, Node relabelling warned in kubectl, node updates that change nothing
the rule reads never reaching the webhook, and `gpu-admission audit`'s cohort report over Nodes and
ResourceSlices created through the API as the kubelet and a DRA driver would publish them."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import yaml

from tests.e2e.conftest import CLI, REPO, lookups_on, wait_for
from tests.policy.builders import RULE_TESTS

if str(RULE_TESTS) not in sys.path:
    sys.path.insert(0, str(RULE_TESTS))
import test_nvidia_charts as charts

pytestmark = pytest.mark.e2e

CRDS = REPO / "tests" / "data" / "schemas" / "gpu-operator"
INVENTORY = REPO / "tests" / "data" / "inventory"
HOOK = "infrastructure.validate.gpu-admission.io"
ALLOC = "workload.example.com/gpu-allocation"
DP_LABELS = {"eks.amazonaws.com/compute-type": "hybrid", ALLOC: "device-plugin"}


def _write(tmp_path, name, *docs):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


@pytest.fixture(scope="module")
def operator(cluster, release):
    """The Operator's CRDs installed and served, the exempt namespaces the charts go into, and the webhook with
    GPU Operator, DeviceClass and pod lookups on (the chart's RBAC checked by the real authorizer)."""
    for crd in sorted(CRDS.glob("nvidia.com_*.yaml")):
        cluster.kubectl.run("apply", "--server-side", "-f", str(crd))
    for crd in ("clusterpolicies", "gpuclusters", "nvidiadrivers"):
        cluster.kubectl.run("wait", "--for=condition=Established", f"crd/{crd}.nvidia.com", "--timeout=60s")
    for ns in ("gpu-system", "gpu-dra-system"):
        cluster.kubectl.run("create", "namespace", ns, check=False)
    with lookups_on(release, cluster, {"gpuOperator": True, "deviceClasses": True, "pods": True}) as rel:
        yield rel


def _owner_daemon_set(render_id: str) -> dict:
    chart, values, namespace, _ = charts.RENDERS[render_id]
    (ds,) = [d for d in charts.render(chart, values, namespace) if d["kind"] == "DaemonSet"
             and d["metadata"]["name"] in (charts.DP_DS, charts.DRA_DS)]
    return charts._without_nulls(ds)


@pytest.mark.parametrize("denied, benign", [
    ("device-plugin-defaults", "device-plugin-guide-values"),
    ("device-plugin-on-dra-nodes", "device-plugin-guide-values"),
    ("dra-driver-on-device-plugin-nodes", "dra-driver-guide-values"),
])
def test_owner_daemon_sets_in_exempt_namespaces(operator, kubectl, webhook, tmp_path, denied, benign):
    bad = _owner_daemon_set(denied)
    bad["metadata"]["namespace"] = _owner_daemon_set(benign)["metadata"]["namespace"]
    result = kubectl.apply_file(_write(tmp_path, "owner.yaml", bad))
    assert result.returncode == 1
    assert f'admission webhook "{HOOK}" denied the request' in result.stderr
    assert "[allocation-owner]" in result.stderr and "admits the cohort" in result.stderr
    good = _owner_daemon_set(benign)
    kubectl.apply_file(_write(tmp_path, "owner.yaml", good), check=True)
    kubectl.run("delete", "daemonset", good["metadata"]["name"], "-n", good["metadata"]["namespace"])


def test_ordinary_daemon_sets_in_exempt_namespaces_never_reach_the_webhook(operator, kubectl, webhook):
    before = webhook.requests("validate")
    kubectl.apply({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "log-agent",
                                                                              "namespace": "gpu-system"},
                   "spec": {"selector": {"matchLabels": {"app": "log-agent"}}, "template": {
                       "metadata": {"labels": {"app": "log-agent"}},
                       "spec": {"containers": [{"name": "agent", "image": "fluent/fluent-bit:3.0"}]}}}})
    assert webhook.requests("validate") == before
    kubectl.run("delete", "daemonset", "log-agent", "-n", "gpu-system")


def _operator_object(kind, name, spec):
    api = "nvidia.com/v1" if kind == "ClusterPolicy" else "nvidia.com/v1alpha1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": spec}


def test_gpu_operator_objects(operator, kubectl, webhook, tmp_path):
    sample = yaml.safe_load((CRDS / "nvidia_v1alpha1_gpucluster.sample.yaml").read_text())
    policy = yaml.safe_load((CRDS / "v1_clusterpolicy.sample.yaml").read_text())
    # The samples carry fields their CRDs do not define at this commit (the GPUCluster's hostPaths.rootFS):
    # applied as the Operator's docs apply them, with the server pruning what it does not know.
    lenient = "--validate=warn"
    # the benign twin: the sample GPUCluster alone
    kubectl.apply_file(_write(tmp_path, "gpucluster.yaml", sample), lenient, check=True)
    # a ClusterPolicy beside it: refused, naming the GPUCluster
    result = kubectl.apply_file(_write(tmp_path, "clusterpolicy.yaml", policy), lenient)
    assert result.returncode == 1 and f'"{HOOK}" denied' in result.stderr
    assert 'the GPUCluster "gpu-cluster" exists' in result.stderr
    kubectl.run("delete", "gpucluster", "gpu-cluster")
    # once the GPUCluster is gone (the informer sees it), the ClusterPolicy is admitted; then the reverse
    wait_for(lambda: kubectl.apply_file(_write(tmp_path, "clusterpolicy.yaml", policy), lenient).returncode == 0,
             "the ClusterPolicy to be admitted without a GPUCluster", timeout=30)
    result = kubectl.apply_file(_write(tmp_path, "gpucluster.yaml", sample), lenient)
    assert result.returncode == 1 and f'the ClusterPolicy "{policy["metadata"]["name"]}" exists' in result.stderr
    # a misnamed GPUCluster: the CRD's own validation refuses it too (before the webhooks run)
    misnamed = copy.deepcopy(sample)
    misnamed["metadata"]["name"] = "hybrid"
    assert kubectl.apply_file(_write(tmp_path, "misnamed.yaml", misnamed), lenient).returncode == 1
    kubectl.run("delete", "clusterpolicy", policy["metadata"]["name"])


def test_overlapping_nvidia_drivers(operator, kubectl, webhook, tmp_path):
    h200 = _operator_object("NVIDIADriver", "h200", {"driverType": "gpu", "nodeSelector": {
        "nvidia.com/gpu.product": "NVIDIA-H200"}})
    a100 = _operator_object("NVIDIADriver", "a100", {"driverType": "gpu", "nodeSelector": {
        "nvidia.com/gpu.product": "A100-SXM4-40GB"}})
    hybrid = _operator_object("NVIDIADriver", "hybrid", {"driverType": "gpu", "nodeSelector": {
        "eks.amazonaws.com/compute-type": "hybrid"}})
    kubectl.apply_file(_write(tmp_path, "h200.yaml", h200), check=True)
    wait_for(lambda: kubectl.apply_file(_write(tmp_path, "a100.yaml", a100)).returncode == 0, "a disjoint driver")
    wait_for(lambda: kubectl.apply_file(_write(tmp_path, "hybrid.yaml", hybrid)).returncode == 1,
             "the overlapping driver to be refused (once the informer has the others)", timeout=30)
    result = kubectl.apply_file(_write(tmp_path, "hybrid.yaml", hybrid))
    assert f'"{HOOK}" denied' in result.stderr and 'overlaps that of the NVIDIADriver' in result.stderr
    kubectl.run("delete", "nvidiadriver", "h200", "a100")


def test_device_classes_sharing_an_extended_resource(cluster, operator, kubectl, webhook, tmp_path):
    """KEP-5004's field is kept only where the DRAExtendedResource gate is on (beta, on by default, from 1.36);
    a 1.34/1.35 apiserver drops it before admission, and then there is nothing to collide."""
    def cls(name):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "extendedResourceName": "example.com/owned-gpu"}}
    kubectl.apply_file(_write(tmp_path, "first.yaml", cls("owner-first")), check=True)
    kept = "extendedResourceName" in kubectl.json("get", "deviceclass", "owner-first")["spec"]
    minor = int(cluster.version.removeprefix("v").split(".")[1])
    assert kept == (minor >= 36), f"Kubernetes {cluster.version} kept extendedResourceName: {kept}"
    if kept:
        wait_for(lambda: kubectl.apply_file(_write(tmp_path, "second.yaml", cls("owner-second"))).returncode == 1,
                 "the second class to be refused", timeout=30)
        result = kubectl.apply_file(_write(tmp_path, "second.yaml", cls("owner-second")))
        assert "[allocation-owner]" in result.stderr and '"owner-first"' in result.stderr
    else:
        assert kubectl.apply_file(_write(tmp_path, "second.yaml", cls("owner-second"))).returncode == 0
        assert "extendedResourceName" not in kubectl.json("get", "deviceclass", "owner-second")["spec"]
        kubectl.run("delete", "deviceclass", "owner-second")
    kubectl.run("delete", "deviceclass", "owner-first")


def test_node_relabelling_is_warned_and_other_node_updates_never_reach_the_webhook(operator, kubectl, webhook,
                                                                                    namespace):
    kubectl.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "owner-node-0", "labels": DP_LABELS}})
    kubectl.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": namespace},
                   "spec": {"nodeName": "owner-node-0", "runtimeClassName": "nvidia", "containers": [{
                       "name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    before = webhook.requests("validate")
    kubectl.run("annotate", "node", "owner-node-0", "example.com/rack=r7")
    kubectl.run("label", "node", "owner-node-0", "nvidia.com/gpu.count=8")
    assert webhook.requests("validate") == before  # neither reads a label the rule reads
    result = kubectl.run("label", "node", "owner-node-0", f"{ALLOC}=dra", "--overwrite")
    assert "Warning:" in result.stderr and f'"{namespace}/train"' in result.stderr
    assert "[allocation-owner]" in result.stderr
    assert kubectl.json("get", "node", "owner-node-0")["metadata"]["labels"][ALLOC] == "dra"  # allowed
    kubectl.run("delete", "pod", "train", "-n", namespace, "--force", "--grace-period=0", check=False)
    kubectl.run("delete", "node", "owner-node-0")


def test_audit_cohort_report_over_nodes_and_resource_slices(operator, cluster, kubectl):
    nodes = yaml.safe_load((INVENTORY / "nodes.yaml").read_text())["items"]
    for node in nodes:
        kubectl.apply({k: v for k, v in node.items() if k != "status"})
        name = node["metadata"]["name"]
        status = {"status": {"capacity": node["status"]["capacity"], "allocatable": node["status"]["allocatable"]}} \
            if node.get("status", {}).get("allocatable") else None
        if status:
            kubectl.run("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status))
    published = yaml.safe_load((INVENTORY / "nvidia-dra-h200.yaml").read_text())
    slices = published["items"] if published.get("kind") == "List" else [published]
    for s in slices:
        kubectl.apply(s)
    # a second owner on a device-plugin node: the DRA driver publishes its GPU too
    extra = copy.deepcopy(slices[0])
    extra["metadata"]["name"] = "hybrid-dp-0-gpu.nvidia.com"
    extra["spec"]["nodeName"] = "hybrid-dp-0"
    extra["spec"]["pool"]["name"] = "hybrid-dp-0"
    kubectl.apply(extra)
    result = subprocess.run([*CLI, "audit", "--kubeconfig", str(cluster.kubeconfig), "-o", "json"],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 1, result.stderr
    nodes_seen = {r["name"]: r for r in json.loads(result.stdout) if r["kind"] == "Node"}
    assert [v["path"] for v in nodes_seen["hybrid-dp-0"]["violations"]] == ["status.allocatable", "spec.nodeName"]
    assert nodes_seen["hybrid-dp-1"]["violations"] == [] and "cpu-0" not in nodes_seen
    for s in [extra, *slices]:
        kubectl.run("delete", "resourceslice", s["metadata"]["name"])
    for node in nodes:
        kubectl.run("delete", "node", node["metadata"]["name"])
