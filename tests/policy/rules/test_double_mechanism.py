"""The double-mechanism table (docs/rules/double-mechanism.md): failing cases beside their closest benign twins, each
checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    IMEX_CLASS,
    IMEX_TEMPLATE,
    SEED_CLASSES,
    SEED_DOCS,
    SEED_JOBS,
    SEED_TEMPLATE,
    Table,
    cel_class,
    check_case,
    container,
    device_class,
    limit_and_claim,
    pod,
    pod_spec,
    template_claim,
    workload,
)

TABLE = Table("double-mechanism")
case = TABLE.case

case("double-mechanism-seed-plugin-smoke-job", SEED_JOBS["hybrid-gpu-plugin-smoke"], docs=SEED_DOCS,
     cohort="device-plugin")
case("double-mechanism-seed-dra-smoke-job", SEED_JOBS["hybrid-gpu-dra-smoke"], docs=SEED_DOCS, cohort="dra")
case("double-mechanism-gpu-limit-and-imex-channel-claim-pass",
     pod("nccl-test", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]),
                               cohort="device-plugin", claims=[template_claim("channel", "imex-channel")])),
     docs=[IMEX_CLASS, IMEX_TEMPLATE], cohort="device-plugin")
case("double-mechanism-dra-extended-resource-and-claim-pass",
     workload("Deployment", "vllm", pod_spec(
         container("server", gpus={"nvidia.com/gpu": 1}),
         container("embedder", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE, device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="dra")
case("double-mechanism-limit-and-claim-in-one-container",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["gpu"]), claims=[template_claim()])),
     ("double-mechanism", "spec.containers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)
case("double-mechanism-init-container-limit-main-claim",
     workload("Job", "finetune", pod_spec(
         container("finetune", claims=["gpu"]),
         init=[container("warmup-cache", gpus={"nvidia.com/gpu": 1})],
         cohort="dra", claims=[template_claim()])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"),
     ("cohort-mismatch", "spec.template.spec.initContainers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("double-mechanism-sidecar-limit-and-implicit-class-resource",
     workload("StatefulSet", "embeddings", pod_spec(
         container("server", gpus={"deviceclass.resource.kubernetes.io/hybrid-full-gpu": 1}),
         init=[container("metrics-agent", gpus={"nvidia.com/gpu": 1}, restart="Always")])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"),
     docs=SEED_CLASSES, cohort=None)
case("double-mechanism-action-warn",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["gpu"]), claims=[template_claim()])),
     ("double-mechanism", "warn", "spec.containers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="actions")
# Class: messages say what is true.
case("double-mechanism-requests-only-and-claim",
     pod("train-7f", pod_spec(dict(container(claims=["gpu"], cpu=False), resources={
         "requests": {"nvidia.com/gpu": 1}, "claims": [{"name": "gpu"}]}), claims=[template_claim()])),
     ("double-mechanism", "spec.containers[0].resources.requests"), docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)

for _id, _expr, _gpu in [
    ("negated-driver-is-not-gpu-pass", '!(device.driver == "gpu.nvidia.com")', False),
    ("other-driver-is-not-gpu-pass", 'device.driver == "nic.example.com"', False),
    ("imex-channel-type-is-not-gpu-pass",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'", False),
    ("driver-on-the-right", '"gpu.nvidia.com" == device.driver', True),
    ("driver-in-list", 'device.driver in ["gpu.nvidia.com", "nic.example.com"]', True),
    ("gpu-or-nic", 'device.driver == "nic.example.com" || device.driver == "gpu.nvidia.com"', True),
    ("memory-quantity", 'device.driver == "gpu.nvidia.com" && '
                        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
    ("product-name-string-functions", "device.driver == 'gpu.nvidia.com' && "
                                      "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')",
                                      True),
]:
    _obj, _docs = limit_and_claim(cel_class("by-cel", _expr))
    case(f"double-mechanism-cel-{_id}", _obj,
         *([("double-mechanism", "spec.containers[0].resources.limits")] if _gpu else []), docs=_docs)

@pytest.mark.parametrize("row", TABLE.params)
def test_double_mechanism(row, evaluate, golden):
    check_case(row, evaluate, golden)
