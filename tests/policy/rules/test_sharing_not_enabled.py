"""The sharing-not-enabled table (docs/rules/sharing-not-enabled.md): failing cases beside their closest benign twins,
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
    resource_claim,
    template_claim,
    workload,
)

TABLE = Table("sharing-not-enabled")
case = TABLE.case

case("sharing-not-enabled-dra-time-slicing-enabled-pass",
     pod("notebook", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra",
                              claims=[template_claim("gpu", "time-sliced-gpu")])),
     docs=[claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")])], policy="dra-sharing")
case("sharing-not-enabled-dra-template-time-slicing-enabled-pass",
     claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")]), policy="dra-sharing")
case("sharing-not-enabled-shared-replica-without-time-slicing",
     workload("Deployment", "notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}),
                                                 cohort="device-plugin")),
     ("sharing-not-enabled", "spec.template.spec.containers[0].resources.limits"))
case("sharing-not-enabled-dra-mps-claim",
     pod("mps-infer", pod_spec(container("infer", claims=["gpu"]), cohort="dra",
                               claims=[template_claim("gpu", "mps-gpu")])),
     ("sharing-not-enabled", "spec.resourceClaims[0]"),
     docs=[claim_template("mps-gpu", request(), config=[gpu_config("MPS")])])
case("sharing-not-enabled-dra-template-time-slicing",
     claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")]),
     ("sharing-not-enabled", "spec.spec.devices.config[0].opaque.parameters.sharing.strategy"))
case("sharing-not-enabled-dra-mps-where-only-time-slicing",
     resource_claim("mps-gpu", request(), config=[gpu_config("MPS")]),
     ("sharing-not-enabled", "spec.devices.config[0].opaque.parameters.sharing.strategy"), policy="dra-sharing")


@pytest.mark.parametrize("row", TABLE.params)
def test_sharing_not_enabled(row, evaluate, golden):
    check_case(row, evaluate, golden)
