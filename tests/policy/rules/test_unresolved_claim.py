"""The unresolved-claim table (docs/rules/unresolved-claim.md): failing cases beside their closest benign twins, each
checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    cel_class,
    check_case,
    claim_template,
    container,
    limit_and_claim,
    named_claim,
    pod,
    pod_spec,
    request,
    template_claim,
    workload,
)

TABLE = Table("unresolved-claim")
case = TABLE.case

case("unresolved-claim-template-in-bundle-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("unresolved-claim-default-namespace-pass",
     # documents without a namespace are in the CLI's --namespace, as kubectl apply would place them
     pod("llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim("gpu", "full-gpu")]), namespace=None),
     docs=[claim_template("full-gpu", request(), namespace=None)], cohort="dra")
case("unresolved-claim-template-missing",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     ("unresolved-claim", "spec.resourceClaims[0]"))
case("unresolved-claim-template-in-other-namespace",
     workload("Deployment", "llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim()]),
              namespace="team-a"),
     ("unresolved-claim", "spec.template.spec.resourceClaims[0]"), docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)
case("unresolved-claim-named-claim-missing",
     workload("StatefulSet", "llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("unresolved-claim", "spec.template.spec.resourceClaims[0]"))
case("unresolved-claim-unknown-device-class",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim("gpu", "custom")])),
     ("unresolved-claim", "spec.resourceClaims[0]"), docs=[claim_template("custom", request("gpu", "h200-nvl"))],
     cohort=None)
case("unresolved-claim-implicit-resource-unknown-class",
     workload("Job", "embed", pod_spec(container("embed", gpus={"deviceclass.resource.kubernetes.io/h200-nvl": 1}))),
     ("unresolved-claim", "spec.template.spec.containers[0].resources.limits"), cohort=None)
case("unresolved-claim-action-enforce",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     ("unresolved-claim", "enforce", "spec.resourceClaims[0]"), policy="actions")
_obj, _docs = limit_and_claim(cel_class("by-cel",
                                        "device.driver == 'gpu.nvidia.com' && url('https://x').getHost() == 'x'"))
case("unresolved-claim-cel-selector-that-does-not-compile", _obj,
     ("unresolved-claim", "spec.resourceClaims[0]"), docs=_docs, cohort="device-plugin")
_obj, _docs = limit_and_claim(cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && "
                                                    "device.attributes['gpu.nvidia.com'].productName == 'Quadro RTX "
                                                    "8000'"))
case("unresolved-claim-cel-selector-on-attributes-no-probe-shows", _obj,
     ("unresolved-claim", "spec.resourceClaims[0]"), docs=_docs, cohort="device-plugin")
_obj, _docs = limit_and_claim(cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && "
                                                    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"))
case("unresolved-claim-cel-selector-on-a-known-product", _obj,
     ("double-mechanism", "spec.containers[0].resources.limits"), docs=_docs)
_obj, _docs = limit_and_claim(cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && "
                                                    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))"))
case("unresolved-claim-cel-semver-resolves", _obj, ("double-mechanism", "spec.containers[0].resources.limits"),
     docs=_docs)
case("unresolved-claim-unknown-channel-class",
     pod("nccl", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]), cohort="device-plugin",
                          claims=[template_claim("channel", "channel")])),
     ("unresolved-claim", "spec.resourceClaims[0]"),
     docs=[claim_template("channel", request("channel", "example-channel.example.com"))], cohort="device-plugin")

for _name in ("compute-domain-default-channel.nvidia.com", "compute-domain-daemon.nvidia.com", "imex.nvidia.com"):
    case(f"unresolved-claim-nvidia-{_name.split('.')[0]}-class-known-without-a-cluster-pass",
         pod("nccl", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]), cohort="device-plugin",
                              claims=[template_claim("channel", "channel")])),
         docs=[claim_template("channel", request("channel", _name))], cohort="device-plugin")

@pytest.mark.parametrize("row", TABLE.params)
def test_unresolved_claim(row, evaluate, golden):
    check_case(row, evaluate, golden)
