"""The shared-request-count table (docs/rules/shared-request-count.md): failing cases beside their closest benign twins,
each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    Table,
    check_case,
    container,
    pod,
    pod_spec,
    workload,
)

TABLE = Table("shared-request-count")
case = TABLE.case

case("shared-request-count-one-replica-pass",
     pod("notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin")),
     policy="time-slicing")
case("shared-request-count-one-replica-per-container-pass",
     pod("pipeline", pod_spec(container("decode", gpus={"nvidia.com/gpu.shared": 1}),
                              container("encode", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin")),
     policy="time-slicing")
case("shared-request-count-cohort-allows-several-pass",
     pod("notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu": 2}), cohort="device-plugin")),
     policy="time-slicing-unrenamed")
case("shared-request-count-two-replicas",
     workload("Job", "train-small", pod_spec(container("train", gpus={"nvidia.com/gpu.shared": 2}),
                                             cohort="device-plugin")),
     ("shared-request-count", "spec.template.spec.containers[0].resources.limits"), policy="time-slicing")
case("shared-request-count-mps-two-replicas",
     pod("mps-infer", pod_spec(container("infer", gpus={"nvidia.com/gpu": 2}), cohort="device-plugin")),
     ("shared-request-count", "spec.containers[0].resources.limits"), policy="mps")
case("shared-request-count-init-container",
     workload("CronJob", "warm-cache", pod_spec(
         container("serve", gpus={"nvidia.com/gpu.shared": 1}),
         init=[container("compile-engines", gpus={"nvidia.com/gpu.shared": 4})], cohort="device-plugin")),
     ("shared-request-count", "spec.jobTemplate.spec.template.spec.initContainers[0].resources.limits"),
     policy="time-slicing")


@pytest.mark.parametrize("row", TABLE.params)
def test_shared_request_count(row, evaluate, golden):
    check_case(row, evaluate, golden)
