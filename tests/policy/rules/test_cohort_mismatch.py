"""The cohort-mismatch table (docs/rules/cohort-mismatch.md): failing cases beside their closest benign twins, each
checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import json

import pytest

from tests.policy.builders import (
    ALLOC,
    HYBRID,
    INSTANCE,
    NS,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    check_case,
    container,
    device_class,
    namespace,
    pod,
    pod_spec,
    required_affinity,
    template_claim,
    workload,
)
from tests.support import DATA

TABLE = Table("cohort-mismatch")
case = TABLE.case

case("cohort-mismatch-node-selector-device-plugin-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")), cohort="device-plugin")
case("cohort-mismatch-affinity-in-dra-pass",
     workload("Deployment", "triton", pod_spec(
         container("triton", claims=["gpu"]), claims=[template_claim()],
         affinity=required_affinity([(ALLOC, "In", ["dra"]), ("eks.amazonaws.com/compute-type", "In", ["hybrid"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-affinity-in-both-notin-one-pass",
     workload("Job", "eval", pod_spec(
         container("eval", claims=["gpu"]), claims=[template_claim()],
         affinity=required_affinity([(ALLOC, "In", ["device-plugin", "dra"]), (ALLOC, "NotIn", ["device-plugin"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-affinity-notin-infers-allowed-cohort-pass",
     pod("eval", pod_spec(container("eval", claims=["gpu"]), claims=[template_claim()],
                          affinity=required_affinity([(ALLOC, "NotIn", ["device-plugin"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-affinity-notin-excludes-only-device-plugin-cohort-pass",
     # nvidia.com/gpu with the device-plugin cohort ruled out: bound for GPU nodes outside the policy's cohorts
     pod("render", pod_spec(container("render", gpus={"nvidia.com/gpu": 1}),
                            affinity=required_affinity([(ALLOC, "NotIn", ["device-plugin"])]))), cohort=None)
case("cohort-mismatch-auto-mode-nodes-outside-cohorts-pass",
     pod("auto-mode-infer", pod_spec(container("infer", gpus={"nvidia.com/gpu": 1}),
                                     nodeSelector={"eks.amazonaws.com/compute-type": "auto"})), cohort=None)
case("cohort-mismatch-selector-several-cohorts-satisfy-infers-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector=dict(HYBRID))),
     cohort="device-plugin")
case("cohort-mismatch-inferred-dra-from-claim-pass",
     workload("ReplicaSet", "llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-inferred-device-plugin-from-limit-pass",
     workload("PodTemplate", "cuda-batch", pod_spec(container(gpus={"nvidia.com/gpu": 2}))), cohort="device-plugin")
case("cohort-mismatch-namespace-default-pass",
     workload("Job", "batch-infer", pod_spec(container("infer", claims=["gpu"]), claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="namespace-cohorts", cohort="dra")
case("cohort-mismatch-namespace-label-pass",
     pod("blender", pod_spec(container("blender", gpus={"nvidia.com/gpu": 1})), namespace="render"),
     docs=[namespace("render", **{ALLOC: "device-plugin"})], cohort="device-plugin")
case("cohort-mismatch-dra-extended-resource-on-dra-cohort-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="dra")),
     docs=[device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="dra")
case("cohort-mismatch-extended-resource-name-outside-nvidia-pass",
     workload("Deployment", "embedder", pod_spec(container("embedder", gpus={"example.com/large-gpu": 1}))),
     docs=[device_class("large-gpu", extended="example.com/large-gpu")], cohort="dra")
case("cohort-mismatch-dra-extended-class-device-plugin-cohort-pass",
     # on the device-plugin cohort nvidia.com/gpu is the device plugin's, whatever a DeviceClass says
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")),
     docs=[device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="device-plugin")
case("cohort-mismatch-apiserver-pod-inferred-pass",
     # as the apiserver sent it: strings, defaults, token volume, not-ready tolerations; no node selection
     json.loads((DATA / "pods" / "apiserver-gpu-pod.json").read_text(encoding="utf-8")),
     cohort="device-plugin")
case("cohort-mismatch-gpu-limit-on-dra-cohort",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="dra")),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-claim-on-device-plugin-cohort",
     workload("CronJob", "nightly-eval", pod_spec(
         container("eval", claims=["gpu"]), cohort="device-plugin", claims=[template_claim()])),
     ("cohort-mismatch", "spec.jobTemplate.spec.template.spec.resourceClaims[0]"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="device-plugin")
case("cohort-mismatch-implicit-class-resource-on-device-plugin-cohort",
     workload("ReplicaSet", "embedder", pod_spec(
         container("embedder", gpus={"deviceclass.resource.kubernetes.io/hybrid-full-gpu": 1}),
         cohort="device-plugin")),
     ("cohort-mismatch", "spec.template.spec.containers[0].resources.limits"), docs=SEED_CLASSES,
     cohort="device-plugin")
case("cohort-mismatch-selector-and-affinity-name-two-cohorts",
     pod("confused", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "dra"},
                              affinity=required_affinity([(ALLOC, "In", ["device-plugin"])]))),
     ("cohort-mismatch", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"), cohort=None)
case("cohort-mismatch-affinity-in-two-cohorts-pass",
     # one term admitting both cohorts excludes neither: the device plugin's cohort is still open to it
     workload("DaemonSet", "gpu-burn", pod_spec(
         container("burn", gpus={"nvidia.com/gpu": 1}),
         affinity=required_affinity([(ALLOC, "In", ["device-plugin", "dra"])]))),
     cohort="device-plugin")
case("cohort-mismatch-selector-contradicts-cohort-labels",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                                nodeSelector={ALLOC: "device-plugin", "eks.amazonaws.com/compute-type": "ec2"})),
     ("cohort-mismatch", "spec.nodeSelector"), cohort=None)
case("cohort-mismatch-namespace-default",
     workload("Job", "cuda-batch", pod_spec(container(gpus={"nvidia.com/gpu": 1}))),
     ("cohort-mismatch", "spec.template.spec.containers[0].resources.limits"), policy="namespace-cohorts", cohort="dra")
case("cohort-mismatch-namespace-label",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), docs=[namespace(NS, **{ALLOC: "dra"})], cohort="dra")
case("cohort-mismatch-namespace-default-overruled-by-affinity-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                                affinity=required_affinity([(ALLOC, "NotIn", ["dra"])]))),
     policy="namespace-cohorts", cohort="device-plugin")
case("cohort-mismatch-terms-ored-dra-or-instance-type-device-plugin-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 8}), affinity=required_affinity(
         [(ALLOC, "In", ["dra"])], [(INSTANCE, "In", ["p5.48xlarge"])]))), cohort="device-plugin")
case("cohort-mismatch-terms-ored-every-term-dra-device-plugin-request",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 8}), affinity=required_affinity(
         [(ALLOC, "In", ["dra"])], [(ALLOC, "In", ["dra"]), (INSTANCE, "In", ["p5.48xlarge"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-terms-ored-device-plugin-or-instance-type-dra-claim-pass",
     workload("Job", "eval", pod_spec(container("eval", claims=["gpu"]), claims=[template_claim()],
                                      affinity=required_affinity([(ALLOC, "In", ["device-plugin"])],
                                                                 [(INSTANCE, "In", ["p5.48xlarge"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-terms-ored-every-term-device-plugin-dra-claim",
     workload("Job", "eval", pod_spec(container("eval", claims=["gpu"]), claims=[template_claim()],
                                      affinity=required_affinity([(ALLOC, "In", ["device-plugin"])],
                                                                 [(ALLOC, "In", ["device-plugin"]),
                                                                  (INSTANCE, "In", ["p5.48xlarge"])]))),
     ("cohort-mismatch", "spec.template.spec.resourceClaims[0]"), docs=[*SEED_CLASSES, SEED_TEMPLATE],
     cohort="device-plugin")
case("cohort-mismatch-terms-ored-node-selector-anded-with-each-term",
     # nodeSelector dra ANDed with each term: the device-plugin term matches nothing, the other only dra nodes
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "dra"},
                           affinity=required_affinity([(ALLOC, "In", ["device-plugin"])],
                                                      [(INSTANCE, "Exists", None)]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-terms-ored-node-selector-device-plugin-and-open-term-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "device-plugin"},
                           affinity=required_affinity([(ALLOC, "In", ["dra"])], [(INSTANCE, "Exists", None)]))),
     cohort="device-plugin")
case("cohort-mismatch-notin-in-every-term",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [(ALLOC, "In", ["device-plugin", "dra"]), (ALLOC, "NotIn", ["device-plugin"])],
         [(ALLOC, "In", ["dra"]), (INSTANCE, "NotIn", ["g5.xlarge"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-notin-in-one-term-only-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [(ALLOC, "In", ["device-plugin", "dra"]), (ALLOC, "NotIn", ["device-plugin"])],
         [(ALLOC, "NotIn", ["dra"])]))), cohort="device-plugin")
case("cohort-mismatch-exists-allocation-label-pass",
     pod("train",
         pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity([(ALLOC, "Exists", None)]))),
     cohort="device-plugin")
case("cohort-mismatch-does-not-exist-allocation-label-pass",
     # no cohort's node lacks the label: bound for GPU nodes outside the policy's cohorts
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           affinity=required_affinity([(ALLOC, "DoesNotExist", None)]))), cohort=None)
case("cohort-mismatch-does-not-exist-with-dra-term",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [(ALLOC, "In", ["dra"]), ("example.com/pool", "DoesNotExist", None)]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-gt-lt-on-keys-cohorts-do-not-use-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [("nvidia.com/gpu.count", "Gt", ["4"]), ("nvidia.com/gpu.memory", "Lt", ["100000"])]))),
         cohort="device-plugin")
case("cohort-mismatch-gt-with-dra-term",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [("nvidia.com/gpu.count", "Gt", ["4"]), (ALLOC, "In", ["dra"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-empty-term-matches-nothing",
     # Kubernetes skips an empty term: what is left pins the DRA cohort
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {}, {"matchExpressions": [{"key": ALLOC, "operator": "In", "values": ["dra"]}]}]}}})),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-empty-term-beside-device-plugin-term-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {}, {"matchExpressions": [{"key": ALLOC, "operator": "In", "values": ["device-plugin"]}]}]}}})),
     cohort="device-plugin")
case("cohort-mismatch-empty-list-of-terms-matches-nothing-pass",
     # no node at all (the apiserver refuses it): no cohort, nothing placed, no cohort-mismatch to report
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})), cohort=None)
case("cohort-mismatch-empty-list-of-terms-beside-node-selector-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "device-plugin"}, affinity={
         "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})), cohort=None)
case("cohort-mismatch-match-fields-named-node-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
             {"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}]}]}}})), cohort="device-plugin")
case("cohort-mismatch-match-fields-with-dra-expression",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
             "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}],
             "matchExpressions": [{"key": ALLOC, "operator": "In", "values": ["dra"]}]}]}}})),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-two-dra-cohorts-admitted-device-plugin-request",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           affinity=required_affinity([(ALLOC, "In", ["dra", "dra-b"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), policy="two-dra", cohort=None)
case("cohort-mismatch-dra-and-device-plugin-cohorts-admitted-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           affinity=required_affinity([(ALLOC, "In", ["dra-b"])], [(ALLOC, "In", ["device-plugin"])]))),
     policy="two-dra", cohort="device-plugin")


@pytest.mark.parametrize("row", TABLE.params)
def test_cohort_mismatch(row, evaluate, golden):
    check_case(row, evaluate, golden)
