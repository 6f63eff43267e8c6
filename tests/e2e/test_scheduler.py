"""`unsatisfiable-request` and `explain` against what the real kube-scheduler does. API-only Nodes carry GPU
allocatable in their status (as a device plugin's kubelet reports it) and a ResourceSlice is published through
the API (as a DRA driver publishes it); kube-scheduler from the pinned module binds Pods to those Nodes and
allocates their ResourceClaims. Each pod of the table is created through the webhook (capacity lookups on),
one at a time once the scheduler has acted on the one before, and then:

- a pod warned `unsatisfiable-request`, or that `explain` says never schedules, stays Pending with the
  scheduler's Unschedulable condition;
- any other pod is bound, or Pending while `explain` says it waits for capacity and names what holds it;
- for DRA, the devices the scheduler allocates are among those `explain` said the claim's class and
  selectors match.

A disagreement is a bug in gpu-admission's reading, not in the scheduler."""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

import pytest
import yaml

from tests.e2e.conftest import CLI, REPO, lookups_on, wait_for
from tests.support import SEED

pytestmark = pytest.mark.e2e

CAPACITY = {"resourceClaims": True, "deviceClasses": True, "nodes": True, "resourceSlices": True,
            "runtimeClasses": True}
DP = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
DRA = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "dra"}
TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
IMAGE = "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"


def _node(name: str, labels: dict, gpus: int | None) -> tuple[dict, dict]:
    allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    if gpus is not None:
        allocatable["nvidia.com/gpu"] = str(gpus)
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
            "spec": {"taints": TAINT}}
    status = {"capacity": allocatable, "allocatable": allocatable,
              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "API-only"}]}
    return node, status


NODES = [_node("sched-dp-8", DP, 8), _node("sched-dp-2", DP, 2), _node("sched-dra-0", DRA, None)]


def _device(i: int) -> dict:
    return {"name": f"gpu-{i}", "attributes": {
        "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H200"}, "architecture": {"string": "Hopper"},
        "index": {"int": i}, "uuid": {"string": f"GPU-00000000-0000-0000-0000-00000000000{i}"}},
        "capacity": {"memory": {"value": "143771Mi"}}}


SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "sched-dra-0-gpu"},
         "spec": {"driver": "gpu.nvidia.com", "nodeName": "sched-dra-0",
                  "pool": {"name": "sched-dra-0", "generation": 1, "resourceSliceCount": 1},
                  "devices": [_device(0), _device(1)]}}
B200 = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "b200"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'"}}]}}


def dp_pod(name: str, gpus: int, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "cuda", "image": IMAGE,
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}], **spec}}


def claim(name: str, request: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [request]}}}


def exactly(device_class: str, count: int = 1) -> dict:
    return {"name": "gpu", "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount",
                                       "count": count}}


def dra_pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "cuda", "image": IMAGE, "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": name}]}}


@dataclass
class Row:
    name: str
    objects: list[dict]  # a claim first, then the pod
    outcome: str  # what the scheduler is expected to do: bound | pending | denied


FIRST_AVAILABLE = {"name": "gpu", "firstAvailable": [
    {"name": "three", "deviceClassName": "hybrid-full-gpu", "count": 3},
    {"name": "one", "deviceClassName": "hybrid-full-gpu", "count": 1}]}
# In order: each row sees the capacity the rows before it took.
TABLE = [
    Row("dp-one", [dp_pod("dp-one", 1)], "bound"),
    Row("dp-sixteen", [dp_pod("dp-sixteen", 16)], "pending"),
    Row("dp-pinned-small", [dp_pod("dp-pinned-small", 4, nodeSelector={**DP, "kubernetes.io/hostname": "sched-dp-2"},
                                   tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])], "pending"),
    Row("dp-untolerated", [dp_pod("dp-untolerated", 1, nodeSelector=DP)], "pending"),
    Row("dp-mig", [dp_pod("dp-mig", 1) | {"spec": {"containers": [{"name": "cuda", "image": IMAGE, "resources": {
        "limits": {"nvidia.com/mig-1g.18gb": "1"}}}]}}], "denied"),
    Row("dp-seven", [dp_pod("dp-seven", 7)], "bound"),
    Row("dp-eight", [dp_pod("dp-eight", 8)], "pending"),
    Row("dp-last-one", [dp_pod("dp-last-one", 1)], "bound"),
    Row("dra-one", [claim("dra-one", exactly("hybrid-full-gpu")), dra_pod("dra-one")], "bound"),
    Row("dra-three", [claim("dra-three", exactly("hybrid-full-gpu", 3)), dra_pod("dra-three")], "pending"),
    Row("dra-b200", [claim("dra-b200", exactly("b200")), dra_pod("dra-b200")], "pending"),
    Row("dra-first-available", [claim("dra-first-available", FIRST_AVAILABLE), dra_pod("dra-first-available")],
        "bound"),
    Row("dra-held", [claim("dra-held", exactly("hybrid-full-gpu")), dra_pod("dra-held")], "pending"),
]


@pytest.fixture(scope="module")
def scheduled(release, cluster):
    """The Nodes, the slice and the classes; the webhook with capacity lookups on; kube-scheduler running."""
    kubectl = cluster.kubectl
    for node, status in NODES:
        kubectl.apply(node)
        kubectl.run("patch", "node", node["metadata"]["name"], "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))
        # The TaintNodesByCondition admission plugin gives a new Node node.kubernetes.io/not-ready, which the
        # node lifecycle controller lifts once the kubelet reports Ready; here the API-only Node is made ready.
        kubectl.run("patch", "node", node["metadata"]["name"], "--type=merge",
                    "-p", json.dumps({"spec": {"taints": TAINT}}))
    for doc in yaml.safe_load_all((SEED / "dra-manifests.yaml").read_text()):
        if doc and doc["kind"] == "DeviceClass":
            kubectl.apply(doc)
    kubectl.apply(B200)
    kubectl.apply(SLICE)
    cluster.control.start_scheduler()
    try:
        with lookups_on(release, cluster, CAPACITY):
            yield release
    finally:
        cluster.control.stop_scheduler()
        kubectl.run("delete", "resourceslice", SLICE["metadata"]["name"], check=False)
        kubectl.run("delete", "deviceclass", "b200", "hybrid-full-gpu", "hybrid-large-gpu", check=False)
        for node, _ in NODES:
            kubectl.run("delete", "node", node["metadata"]["name"], "--wait=false", check=False)


def _settled(kubectl, namespace: str, name: str) -> dict | None:
    """The pod once the scheduler has acted on it: bound, or with PodScheduled False (Unschedulable)."""
    pod = kubectl.json("get", "pod", name, "-n", namespace)
    if pod["spec"].get("nodeName"):
        return pod
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return pod
    return None


def _explain(cluster, namespace: str, name: str) -> tuple[int, dict]:
    result = subprocess.run([*CLI, "explain", "pod", name, "-n", namespace, "-o", "json", "--lang", "en",
                             "--kubeconfig", str(cluster.kubeconfig)],
                            capture_output=True, text=True, cwd=REPO, timeout=60, env=dict(os.environ))
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)[0]


def _wait_for_caches(kubectl, namespace: str) -> None:
    probe = dp_pod("probe", 16)
    wait_for(lambda: "[unsatisfiable-request]" in kubectl.run(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", input=yaml.safe_dump(probe), check=False).stderr,
        "the webhook's Node cache")


def test_explain_and_unsatisfiable_request_agree_with_the_scheduler(cluster, scheduled, namespace, webhook):
    kubectl = cluster.kubectl
    _wait_for_caches(kubectl, namespace)
    report = []
    disagreements = []
    for row in TABLE:
        *claims, pod = row.objects
        for c in claims:
            kubectl.create(c, "-n", namespace)
        created = kubectl.create(pod, "-n", namespace, check=False)
        warned = "[unsatisfiable-request]" in created.stderr
        if created.returncode != 0:
            report.append((row.name, "denied", warned, None, None))
            if row.outcome != "denied":
                disagreements.append(f"{row.name}: denied at admission: {created.stderr.strip()}")
            continue
        settled = wait_for(lambda name=row.name: _settled(kubectl, namespace, name),
                           f"the scheduler to act on {row.name}", timeout=60)
        code, said = _explain(cluster, namespace, row.name)
        bound = bool(settled["spec"].get("nodeName"))
        report.append((row.name, "bound" if bound else "pending", warned, said["verdict"], code))
        if (warned or said["verdict"] == "never") and bound:
            disagreements.append(f"{row.name}: said never to schedule, but bound to {settled['spec']['nodeName']}")
        if not bound and said["verdict"] not in ("never", "waits"):
            disagreements.append(f"{row.name}: Pending, but explain says {said['verdict']}: {said['why']}")
        if not bound and said["verdict"] == "waits" and not any(
                r["kind"] in ("held", "devices-held") for n in said["nodes"] for r in n["reasons"]):
            disagreements.append(f"{row.name}: waits, but explain names nothing that holds capacity")
        if bound and said["verdict"] != "bound":
            disagreements.append(f"{row.name}: bound, but explain says {said['verdict']}")
        if (row.outcome == "bound") != bound:
            disagreements.append(f"{row.name}: expected {row.outcome}, the scheduler left it "
                                 f"{'bound' if bound else 'Pending'}")
        assert code == (1 if said["verdict"] in ("never", "waits") else 0)
        if claims and bound:
            allocated = kubectl.json("get", "resourceclaim", row.name, "-n", namespace)
            devices = [f"{r['pool']}/{r['device']}" for r in allocated["status"]["allocation"]["devices"]["results"]]
            # what explain matched before: run against the pending twin of the claim's request
            matched = _matched_before(cluster, namespace, claims[0])
            assert devices and set(devices) <= set(matched), (row.name, devices, matched)
    summary = "\n".join(f"{r[0]:24} {r[1]:8} unsatisfiable-request={'yes' if r[2] else 'no':3} explain={r[3]}"
                        for r in report)
    print(f"\n{len(report)} pods, {len(report) - len(disagreements)} agree:\n{summary}")
    assert not disagreements, "\n".join(disagreements)
    never = [r for r in report if r[3] == "never"]
    assert never and all(r[1] == "pending" for r in never)
    assert any(r[2] for r in report), "no pod was warned unsatisfiable-request"


def _matched_before(cluster, namespace: str, claim_doc: dict) -> list[str]:
    """The devices `explain` says the claim's class and selectors match, for a pod not yet created (FILE)."""
    twin_claim = json.loads(json.dumps(claim_doc))
    twin_claim["metadata"]["name"] = "twin"
    pod = dra_pod("twin")
    pod["metadata"]["namespace"] = namespace
    twin_claim["metadata"]["namespace"] = namespace
    text = yaml.safe_dump_all([twin_claim, pod])
    result = subprocess.run([*CLI, "explain", "-", "-n", namespace, "-o", "json", "--lang", "en",
                             "--kubeconfig", str(cluster.kubeconfig)], input=text, capture_output=True, text=True,
                            cwd=REPO, timeout=60, env=dict(os.environ))
    assert result.returncode in (0, 1), result.stderr
    return [d for c in json.loads(result.stdout)[0]["claims"] for d in c["matched"]]
