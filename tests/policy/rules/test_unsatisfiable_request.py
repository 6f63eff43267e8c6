"""The unsatisfiable-request table (docs/rules/unsatisfiable-request.md): failing cases beside their closest
benign twins, each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by
test_rules.py, again in the apiserver's shape. The cluster's capacity is a snapshot written here in the
shapes `kubectl get nodes,resourceslices -o yaml` saves (tests/data/inventory/PROVENANCE.md); a case
without Node or ResourceSlice documents is a webhook whose lookups of them are off: then nothing is said."""
from __future__ import annotations

import copy

import pytest

from tests.policy.builders import (
    GPU_TOLERATION,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    cel_class,
    check_case,
    claim_template,
    container,
    pod,
    pod_spec,
    request,
    template_claim,
    workload,
)
from tests.support import DATA, load_docs

INVENTORY = DATA / "inventory"
NODES = load_docs(INVENTORY / "nodes.yaml")[0]["items"]
H200 = load_docs(INVENTORY / "nvidia-dra-h200.yaml")
H200_MIG = load_docs(INVENTORY / "nvidia-dra-h200-mig.yaml")
EXAMPLE = load_docs(INVENTORY / "dra-example-driver.yaml")
SLICES = [*H200, *H200_MIG, *EXAMPLE]

TABLE = Table("unsatisfiable-request")
case = TABLE.case


def gpus(n, name="trainer"):
    return container(name, gpus={"nvidia.com/gpu": n})


def dp(*containers, **extra):
    return pod_spec(*containers, cohort="device-plugin", **extra)


RESEARCH = [*copy.deepcopy(GPU_TOLERATION), {"key": "dedicated", "operator": "Equal", "value": "research",
                                             "effect": "NoSchedule"}]

# -- device plugin: the largest allocatable among the cohort's nodes the pod may use
case("unsatisfiable-request-largest-node-fits-pass", pod("train", dp(gpus(8))), docs=NODES, cohort="device-plugin")
case("unsatisfiable-request-above-largest-node",
     pod("train", dp(gpus(9))), ("unsatisfiable-request", "spec.containers[0].resources.limits"), docs=NODES)
case("unsatisfiable-request-lookups-off-pass", pod("train", dp(gpus(64))), cohort="device-plugin")
case("unsatisfiable-request-tolerated-reserved-node-pass",
     workload("Job", "big-train", dp(gpus(16), tolerations=RESEARCH)), docs=NODES)
case("unsatisfiable-request-reserved-node-not-tolerated",
     workload("Job", "big-train", dp(gpus(16))),
     ("unsatisfiable-request", "spec.template.spec.containers[0].resources.limits"), docs=NODES)
case("unsatisfiable-request-above-tolerated-reserved-node",
     workload("Job", "big-train", dp(gpus(17), tolerations=RESEARCH)),
     ("unsatisfiable-request", "spec.template.spec.containers[0].resources.limits"), docs=NODES)
_PINNED = {"nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                            "workload.example.com/gpu-allocation": "device-plugin",
                            "kubernetes.io/hostname": "hybrid-dp-1"}}
case("unsatisfiable-request-pinned-small-node-fits-pass", pod("train", dp(gpus(4), **_PINNED)), docs=NODES)
case("unsatisfiable-request-pinned-small-node",
     pod("train", dp(gpus(8), **_PINNED)), ("unsatisfiable-request", "spec.containers[0].resources.limits"), docs=NODES)
_AFFINITY_SMALL = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["hybrid-dp-1"]}]}]}}}}
case("unsatisfiable-request-affinity-by-node-name",
     pod("train", dp(gpus(5), **_AFFINITY_SMALL)), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=NODES)
case("unsatisfiable-request-affinity-by-node-name-fits-pass", pod("train", dp(gpus(4), **_AFFINITY_SMALL)), docs=NODES)
_NOT_READY = [{**n, "spec": {"taints": [*n.get("spec", {}).get("taints", []), {
    "key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}} for n in NODES]
case("unsatisfiable-request-not-ready-taint-is-passing-pass", pod("train", dp(gpus(8))), docs=_NOT_READY)
case("unsatisfiable-request-not-ready-nodes-still-too-small",
     pod("train", dp(gpus(9))), ("unsatisfiable-request", "spec.containers[0].resources.limits"), docs=_NOT_READY)
case("unsatisfiable-request-no-node-of-cohort-admits",
     pod("train", dp(gpus(1), tolerations=[])), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=NODES, allowed=True)
# the pod as a whole: regular containers add up; an init container runs alone (beside the sidecars before it)
case("unsatisfiable-request-containers-add-up",
     pod("train", dp(gpus(5, "a"), gpus(5, "b"))), ("unsatisfiable-request", "spec.containers"), docs=NODES)
case("unsatisfiable-request-containers-add-up-fits-pass", pod("train", dp(gpus(4, "a"), gpus(4, "b"))), docs=NODES)
case("unsatisfiable-request-init-container-runs-alone-pass",
     pod("train", dp(gpus(8), init=[gpus(8, "warmup")])), docs=NODES)
case("unsatisfiable-request-sidecar-adds-to-containers",
     pod("train", dp(gpus(7), init=[container("monitor", gpus={"nvidia.com/gpu": 2}, restart="Always")])),
     ("unsatisfiable-request", "spec.containers"), docs=NODES)
# each resource on some node, both on none: the scheduler needs one node with all of them (MIG mixed)


def _mixed_node(name, allocatable):
    node = copy.deepcopy(NODES[0])
    node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    node["status"] = {"allocatable": allocatable}
    return node


_SPLIT = [_mixed_node("whole-gpus", {"nvidia.com/gpu": "4"}),
          _mixed_node("mig-slices", {"nvidia.com/mig-3g.71gb": "2"})]
_BOTH_ON_ONE = [*_SPLIT, _mixed_node("half-split", {"nvidia.com/gpu": "1", "nvidia.com/mig-3g.71gb": "1"})]
_WHOLE_AND_SLICE = container("infer", gpus={"nvidia.com/gpu": 1, "nvidia.com/mig-3g.71gb": 1})
case("unsatisfiable-request-no-single-node-has-all",
     pod("infer", dp(_WHOLE_AND_SLICE)), ("unsatisfiable-request", "spec.containers"), docs=_SPLIT,
     policy="mig-mixed-h200")
case("unsatisfiable-request-one-node-has-all-pass", pod("infer", dp(_WHOLE_AND_SLICE)), docs=_BOTH_ON_ONE,
     policy="mig-mixed-h200")
# a MIG profile the cohort's config offers but no node of it advertises (its GPUs not partitioned so)
case("unsatisfiable-request-mig-profile-no-node-carries",
     pod("infer", dp(container("infer", gpus={"nvidia.com/mig-1g.18gb": 1}))),
     ("unsatisfiable-request", "spec.containers[0].resources.limits"), docs=_SPLIT, policy="mig-mixed-h200")
case("unsatisfiable-request-mig-profile-a-node-carries-pass",
     pod("infer", dp(container("infer", gpus={"nvidia.com/mig-3g.71gb": 2}))), docs=_SPLIT, policy="mig-mixed-h200")
# time-slicing: the replicas the device plugin advertises are the node's allocatable like any resource
_SHARED_NODE = [_mixed_node("shared-l4", {"nvidia.com/gpu.shared": "2"})]


def _shared(*names):
    return dp(*(container(n, gpus={"nvidia.com/gpu.shared": 1}) for n in names))


case("unsatisfiable-request-more-replicas-than-a-node-advertises",
     workload("Deployment", "notebooks", _shared("a", "b", "c")),
     ("unsatisfiable-request", "spec.template.spec.containers"),
     docs=_SHARED_NODE, policy="time-slicing")
case("unsatisfiable-request-replicas-a-node-advertises-pass",
     workload("Deployment", "notebooks", _shared("a", "b")), docs=_SHARED_NODE, policy="time-slicing")
case("unsatisfiable-request-action-enforce",
     pod("train", dp(gpus(9))), ("unsatisfiable-request", "enforce", "spec.containers[0].resources.limits"),
     docs=NODES, policy="actions")

# -- DRA: each request's class and own selectors, CEL-evaluated against the cohort's published devices
_DRA = [*SEED_CLASSES, *NODES]


def dra_pod(template, name="llm"):
    return pod(name, pod_spec(container("llm", claims=["gpu"]), cohort="dra",
                              claims=[template_claim("gpu", template)]))


case("unsatisfiable-request-large-gpu-on-h200-pass",
     dra_pod("single-large-gpu"), docs=[*_DRA, SEED_TEMPLATE, *SLICES], cohort="dra")
case("unsatisfiable-request-large-gpu-only-mig-devices",
     dra_pod("single-large-gpu"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, SEED_TEMPLATE, *H200_MIG, *EXAMPLE])
case("unsatisfiable-request-dra-lookups-off-pass", dra_pod("single-large-gpu"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("unsatisfiable-request-count-above-one-node",
     dra_pod("two"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, claim_template("two", request("gpu", "hybrid-full-gpu", count=2)), *SLICES])
case("unsatisfiable-request-count-one-node-pass",
     dra_pod("one"), docs=[*_DRA, claim_template("one", request("gpu", "hybrid-full-gpu", count=1)), *SLICES])
case("unsatisfiable-request-all-mode-pass",
     dra_pod("all"), docs=[*_DRA, claim_template("all", request("gpu", "hybrid-full-gpu", mode="All", count=None)),
                           *SLICES])
_B200 = cel_class("b200", "device.driver == 'gpu.nvidia.com' && "
                          "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'")
_H200 = cel_class("h200", "device.driver == 'gpu.nvidia.com' && "
                          "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'")
case("unsatisfiable-request-class-matches-no-device",
     dra_pod("b200"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, _B200, claim_template("b200", request("gpu", "b200")), *SLICES])
case("unsatisfiable-request-class-matches-a-device-pass",
     dra_pod("h200"), docs=[*_DRA, _H200, claim_template("h200", request("gpu", "h200")), *SLICES])


def selected(name, expression):
    req = request("gpu", "hybrid-full-gpu")
    req["exactly"]["selectors"] = [{"cel": {"expression": expression}}]
    return claim_template(name, req)


case("unsatisfiable-request-own-selector-matches-no-device",
     dra_pod("arch"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, selected("arch", "device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'"), *SLICES])
case("unsatisfiable-request-own-selector-matches-pass",
     dra_pod("arch"), docs=[*_DRA, selected("arch", "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"),
                            *SLICES])
_FIRST = {"name": "gpu", "firstAvailable": [
    {"name": "two", "deviceClassName": "hybrid-full-gpu", "count": 2},
    {"name": "one", "deviceClassName": "hybrid-full-gpu", "count": 1}]}
case("unsatisfiable-request-first-available-later-fits-pass",
     dra_pod("elastic"), docs=[*_DRA, claim_template("elastic", _FIRST), *SLICES])
_NONE_FIRST = {"name": "gpu", "firstAvailable": [
    {"name": "four", "deviceClassName": "hybrid-full-gpu", "count": 4},
    {"name": "two", "deviceClassName": "hybrid-full-gpu", "count": 2}]}
case("unsatisfiable-request-first-available-none-fits",
     dra_pod("elastic"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, claim_template("elastic", _NONE_FIRST), *SLICES])
# devices of a node the pod's node selection leaves out do not count
case("unsatisfiable-request-devices-on-other-cohorts-node",
     dra_pod("single-large-gpu"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, SEED_TEMPLATE,
           *[{**s, "spec": {**s["spec"], "nodeName": "cpu-0", "pool": {**s["spec"]["pool"], "name": "cpu-0"}}}
             for s in H200]])
case("unsatisfiable-request-slices-without-node-lookups-pass",
     dra_pod("single-large-gpu"), docs=[*SEED_CLASSES, SEED_TEMPLATE, *SLICES])

# -- autoscaled cohorts: no node yet is no verdict; above what the pool's node can have is
case("unsatisfiable-request-autoscaled-cohort-without-nodes-pass", pod("train", dp(gpus(8))), docs=[_SPLIT[0]],
     policy="autoscaled")
case("unsatisfiable-request-autoscaled-above-the-pools-node",
     pod("train", dp(gpus(16))), ("unsatisfiable-request", "spec.containers[0].resources.limits"), docs=NODES,
     policy="autoscaled")
case("unsatisfiable-request-autoscaled-dra-without-slices-pass",
     dra_pod("single-large-gpu"), docs=[*_DRA, SEED_TEMPLATE, *EXAMPLE], policy="autoscaled")


def _karpenter(name, labels, gpus=None, limit=None):
    requirements = [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": gpus}] if gpus else []
    spec = {"template": {"metadata": {"labels": dict(labels)}, "spec": {
        "requirements": requirements, "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}}
    if limit is not None:
        spec["limits"] = {"nvidia.com/gpu": limit}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


_DP_LABELS = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
_CPU_ONLY = [n for n in NODES if "gpu-allocation" not in str(n["metadata"].get("labels"))]
case("unsatisfiable-request-karpenter-pool-scales-from-zero-pass",
     pod("train", dp(gpus(4))), docs=[*_CPU_ONLY, _karpenter("gpu", _DP_LABELS, ["4", "8"])])
case("unsatisfiable-request-karpenter-pool-unknown-shape-pass",
     pod("train", dp(gpus(32))), docs=[*_CPU_ONLY, _karpenter("gpu", _DP_LABELS)])
case("unsatisfiable-request-above-the-karpenter-pools-node",
     pod("train", dp(gpus(16))), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=[*_CPU_ONLY, _karpenter("gpu", _DP_LABELS, ["4", "8"])])
case("unsatisfiable-request-above-the-karpenter-pools-limit",
     pod("train", dp(gpus(8))), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=[*_CPU_ONLY, _karpenter("gpu", _DP_LABELS, limit=4)])
case("unsatisfiable-request-karpenter-pool-of-another-cohort",
     pod("train", dp(gpus(1))), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=[*_CPU_ONLY, _karpenter("dra", {**_DP_LABELS, "workload.example.com/gpu-allocation": "dra"}, ["8"])],
     allowed=True)
_CAPI = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
         "metadata": {"name": "gpu-md", "namespace": "capi", "annotations": {
             "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "10",
             "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
             "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "4",
             "capacity.cluster-autoscaler.kubernetes.io/labels":
                 "eks.amazonaws.com/compute-type=hybrid,workload.example.com/gpu-allocation=device-plugin",
             "capacity.cluster-autoscaler.kubernetes.io/taints": "nvidia.com/gpu=:NoSchedule"}}}
case("unsatisfiable-request-cluster-api-node-group-scales-from-zero-pass",
     pod("train", dp(gpus(4))), docs=[*_CPU_ONLY, _CAPI])
case("unsatisfiable-request-above-the-cluster-api-node-group",
     pod("train", dp(gpus(5))), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=[*_CPU_ONLY, _CAPI])


# -- DRA devices as the scheduler allocates them: taints, capacity requests, shared counters
def _tainted(slices, effect="NoSchedule"):
    out = copy.deepcopy(slices)
    for s in out:
        for d in s["spec"]["devices"]:
            d["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": effect}]
    return out


_ANY = cel_class("any-nvidia", "device.driver == 'gpu.nvidia.com'")
case("unsatisfiable-request-every-matching-device-tainted",
     dra_pod("one"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, claim_template("one", request("gpu", "hybrid-full-gpu")), *_tainted(H200), *EXAMPLE])
_TOLERATING = request("gpu", "hybrid-full-gpu")
_TOLERATING["exactly"]["tolerations"] = [{"key": "gpu.nvidia.com/xid", "operator": "Exists"}]
case("unsatisfiable-request-tolerated-device-taint-pass",
     dra_pod("one"), docs=[*_DRA, claim_template("one", _TOLERATING), *_tainted(H200), *EXAMPLE])
_RULE = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule", "metadata": {"name": "drain-h200"},
         "spec": {"deviceSelector": {"driver": "gpu.nvidia.com", "pool": "hybrid-dra-h200-0"},
                  "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}}
case("unsatisfiable-request-device-taint-rule",
     dra_pod("one"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, claim_template("one", request("gpu", "hybrid-full-gpu")), *H200, _RULE])
_MEMORY = request("gpu", "hybrid-full-gpu")
_MEMORY["exactly"]["capacity"] = {"requests": {"memory": "200Gi"}}
case("unsatisfiable-request-capacity-request-above-every-device",
     dra_pod("big"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, claim_template("big", _MEMORY), *SLICES])
_SMALL = copy.deepcopy(_MEMORY)
_SMALL["exactly"]["capacity"] = {"requests": {"memory": "100Gi"}}
case("unsatisfiable-request-capacity-request-fits-pass",
     dra_pod("big"), docs=[*_DRA, claim_template("big", _SMALL), *SLICES])


def _partitioned():
    """The MIG node's slice with its two 3g.71gb devices drawn from one shared counter of the GPU's memory,
    which holds only one of them at a time (partitionable devices)."""
    out = copy.deepcopy(H200_MIG)
    spec = out[0]["spec"]
    spec["sharedCounters"] = [{"name": "gpu-0", "counters": {"memory": {"value": "100Gi"}}}]
    for d in spec["devices"]:
        d["consumesCounters"] = [{"counterSet": "gpu-0", "counters": {"memory": {"value": "71424Mi"}}}]
    return out


case("unsatisfiable-request-shared-counter-holds-one-partition",
     dra_pod("pair"), ("unsatisfiable-request", "spec.resourceClaims[0]"),
     docs=[*_DRA, _ANY, claim_template("pair", request("gpu", "any-nvidia", count=2)), *_partitioned()])
case("unsatisfiable-request-independent-partitions-pass",
     dra_pod("pair"), docs=[*_DRA, _ANY, claim_template("pair", request("gpu", "any-nvidia", count=2)), *H200_MIG])
# KEP-5004: nvidia.com/gpu served by a DeviceClass on the DRA cohort is a claim of that class
_EXTENDED = {**cel_class("hybrid-gpu-extended", "device.driver == 'gpu.nvidia.com' && "
                                                "device.attributes['gpu.nvidia.com'].type == 'gpu'")}
_EXTENDED["spec"]["extendedResourceName"] = "nvidia.com/gpu"


def _dra_limit(n):
    return pod("llm", pod_spec(container("llm", gpus={"nvidia.com/gpu": n}), cohort="dra"))


case("unsatisfiable-request-extended-resource-above-devices",
     _dra_limit(2), ("unsatisfiable-request", "spec.containers[0].resources.limits"),
     docs=[*_DRA, _EXTENDED, *SLICES], policy="extended-class")
case("unsatisfiable-request-extended-resource-fits-pass",
     _dra_limit(1), docs=[*_DRA, _EXTENDED, *SLICES], policy="extended-class")


@pytest.mark.parametrize("row", TABLE.params)
def test_unsatisfiable_request(row, evaluate, golden):
    check_case(row, evaluate, golden)
