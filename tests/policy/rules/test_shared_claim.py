"""The shared-claim table (docs/rules/shared-claim.md): failing cases beside their closest benign twins, each checked by
builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    IMEX_CLASS,
    POLICIES,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    check_case,
    container,
    facts_of,
    named_claim,
    pod,
    pod_spec,
    request,
    resource_claim,
    template_claim,
    workload,
)
from webhook.policy.checks import shared_claim
from webhook.policy.messages import render

TABLE = Table("shared-claim")
case = TABLE.case

case("shared-claim-template-per-pod-pass",
     workload("Deployment", "triton", pod_spec(container("triton", claims=["gpu"]), cohort="dra",
                                               claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("shared-claim-named-non-gpu-claim-pass",
     pod("nccl-test",
         pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]), cohort="device-plugin",
                               claims=[named_claim("channel", "imex-channel-0")])),
     docs=[IMEX_CLASS,
           resource_claim("imex-channel-0", request("channel", "compute-domain-default-channel.nvidia.com"))])
case("shared-claim-named-gpu-claim",
     pod("notebook-1", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("shared-claim", "spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())])
case("shared-claim-deployment-replicas-share-one-claim",
     workload("Deployment", "api", pod_spec(container("api", claims=["gpu"]), claims=[named_claim()])),
     ("shared-claim", "spec.template.spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())],
     cohort="dra")
case("shared-claim-action-enforce",
     pod("notebook-1", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("shared-claim", "enforce", "spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())],
     policy="actions")
case("shared-claim-exception-by-user-pass",
     pod("step-1", pod_spec(container("step", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     docs=[resource_claim("shared-a100", request())], policy="exceptions",
     user={"username": "system:serviceaccount:argo:argo-workflow", "groups": ["system:serviceaccounts"]})
case("shared-claim-exception-other-user",
     pod("step-1", pod_spec(container("step", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("shared-claim", "spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())], policy="exceptions",
     user={"username": "alice@example.com", "groups": ["developers"]})


@pytest.mark.parametrize("row", TABLE.params)
def test_shared_claim(row, evaluate, golden):
    check_case(row, evaluate, golden)


def test_check_names_the_claim_and_the_fix_and_passes_a_template():
    """The check itself, over the facts the engine computes: what, why and fix, no rule id or link."""
    policy = POLICIES["default"]
    named = pod("notebook-1", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra", claims=[named_claim()]))
    facts, context = facts_of(named, policy, [resource_claim("shared-a100", request()), *SEED_CLASSES])
    (finding,) = shared_claim.check(facts, context, policy)
    assert finding.path == "spec.resourceClaims[0]" and '"shared-a100"' in render(finding.what)
    assert "resourceClaimTemplateName" in render(finding.fix) and "[shared-claim]" not in render(finding.fix)
    per_pod = pod("notebook-1", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra", claims=[template_claim()]))
    assert shared_claim.check(*facts_of(per_pod, policy, [*SEED_CLASSES, SEED_TEMPLATE]), policy) == []
