"""The shared-exclusive-mix table (docs/rules/shared-exclusive-mix.md): failing cases beside their closest benign twins,
each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    Table,
    check_case,
    claim_template,
    container,
    gpu_config,
    pod,
    pod_spec,
    request,
    template_claim,
    workload,
)

TABLE = Table("shared-exclusive-mix")
case = TABLE.case

case("shared-exclusive-mix-separate-containers-pass",
     pod("pipeline", pod_spec(container("train", gpus={"nvidia.com/gpu": 1}),
                              container("preview", gpus={"nvidia.com/mig-1g.5gb.shared": 1}), cohort="device-plugin")),
     policy="mig-mixed-shared")
case("shared-exclusive-mix-exclusive-workload-whole-gpu-pass",
     workload("Job", "train", pod_spec(container("train", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin"),
              labels={"workload.example.com/gpu-exclusive": "true"}))
case("shared-exclusive-mix-one-container",
     pod("pipeline", pod_spec(container("train", gpus={"nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb.shared": 1}),
                              cohort="device-plugin")),
     ("shared-exclusive-mix", "spec.containers[0].resources.limits"), policy="mig-mixed-shared")
case("shared-exclusive-mix-shared-name-on-cohort-without-sharing",
     pod("pipeline", pod_spec(container("train", gpus={"nvidia.com/gpu": 1, "nvidia.com/gpu.shared": 1}),
                              cohort="device-plugin")),
     ("shared-exclusive-mix", "spec.containers[0].resources.limits"),
     ("sharing-not-enabled", "spec.containers[0].resources.limits"))
case("shared-exclusive-mix-exclusive-workload-shared-replica",
     workload("Deployment", "latency-critical", pod_spec(
         container("serve", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin"),
         labels={"workload.example.com/gpu-exclusive": "true"}),
     ("shared-exclusive-mix", "spec.template.spec.containers[0].resources.limits"), policy="time-slicing")
case("shared-exclusive-mix-exclusive-workload-unrenamed-time-slicing",
     pod("latency-critical", pod_spec(container("serve", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin"),
         labels={"workload.example.com/gpu-exclusive": "true"}),
     ("shared-exclusive-mix", "spec.containers[0].resources.limits"), policy="time-slicing-unrenamed")
case("shared-exclusive-mix-exclusive-workload-time-sliced-claim",
     pod("latency-critical", pod_spec(container("serve", claims=["gpu"]), cohort="dra",
                                      claims=[template_claim("gpu", "time-sliced-gpu")]),
         labels={"workload.example.com/gpu-exclusive": "true"}),
     ("shared-exclusive-mix", "spec.resourceClaims[0]"),
     docs=[claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")])], policy="dra-sharing")


@pytest.mark.parametrize("row", TABLE.params)
def test_shared_exclusive_mix(row, evaluate, golden):
    check_case(row, evaluate, golden)
