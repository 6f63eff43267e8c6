"""The runtime-class-conflict table (docs/rules/runtime-class-conflict.md): failing cases beside their closest benign
twins, each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in
the apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    check_case,
    container,
    pod,
    pod_spec,
    template_claim,
    workload,
)

TABLE = Table("runtime-class-conflict")
case = TABLE.case

case("runtime-class-conflict-nvidia-pass",
     workload("Deployment", "cuda-api", pod_spec(container("api", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")))
case("runtime-class-conflict-pod-without-runtime-class-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtimeClassName=None)))
case("runtime-class-conflict-dra-pod-kata-pass",
     pod("sandboxed",
         pod_spec(container(claims=["gpu"]), cohort="dra", claims=[template_claim()], runtime="kata-qemu")),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("runtime-class-conflict-runc",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtime="runc")),
     ("runtime-class-conflict", "spec.runtimeClassName"))
case("runtime-class-conflict-kata-deployment",
     workload("Deployment", "sandboxed", pod_spec(container("app", gpus={"nvidia.com/gpu": 1}), runtime="kata-qemu")),
     ("runtime-class-conflict", "spec.template.spec.runtimeClassName"), cohort="device-plugin")
case("runtime-class-conflict-exception-by-namespace-pass",
     pod("bench", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtime="nvidia-cdi"),
         namespace="gpu-bench"), policy="exceptions")
case("runtime-class-conflict-action-warn",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtime="runc")),
     ("runtime-class-conflict", "warn", "spec.runtimeClassName"), policy="actions")


@pytest.mark.parametrize("row", TABLE.params)
def test_runtime_class_conflict(row, evaluate, golden):
    check_case(row, evaluate, golden)
