"""The claim-shape table (docs/rules/claim-shape.md): failing cases beside their closest benign twins, each checked by
builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    IMEX_CLASS,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    check_case,
    claim_template,
    request,
    resource_claim,
)

TABLE = Table("claim-shape")
case = TABLE.case

case("claim-shape-seed-template-pass", SEED_TEMPLATE, docs=SEED_CLASSES, cohort="dra")
case("claim-shape-eight-gpus-pass", resource_claim("full-node", request(count=8)))
case("claim-shape-first-available-pass",
     claim_template("mig-or-gpu", {"name": "gpu", "firstAvailable": [
         {"name": "large", "deviceClassName": "hybrid-large-gpu", "count": 2},
         {"name": "any", "deviceClassName": "hybrid-full-gpu", "count": 4}]}), docs=SEED_CLASSES)
case("claim-shape-admin-access-allowed-namespace-pass",
     resource_claim("gpu-health", request(admin=True), namespace="gpu-debug"), policy="dra-sharing")
case("claim-shape-non-gpu-class-all-pass",
     claim_template("imex-channels", request("channel", "compute-domain-default-channel.nvidia.com", mode="All",
                                             count=None)), docs=[IMEX_CLASS])
case("claim-shape-allocation-mode-all",
     claim_template("every-gpu", request(mode="All", count=None)),
     ("claim-shape", "spec.spec.devices.requests[0].exactly.allocationMode"))
case("claim-shape-count-above-limit",
     resource_claim("big-train", request(count=16)), ("claim-shape", "spec.devices.requests[0].exactly.count"))
case("claim-shape-requests-add-up-above-limit",
     claim_template("two-groups", request("large", "hybrid-large-gpu", count=4), request("rest", count=5)),
     ("claim-shape", "spec.spec.devices.requests"), docs=SEED_CLASSES)
case("claim-shape-admin-access",
     resource_claim("gpu-health", request(admin=True)), ("claim-shape", "spec.devices.requests[0].exactly.adminAccess"))
case("claim-shape-neither-exactly-nor-first-available",
     claim_template("flat", {"name": "gpu", "deviceClassName": "hybrid-full-gpu", "count": 1}),
     ("claim-shape", "spec.spec.devices.requests[0]"))
case("claim-shape-v1beta1-count-above-limit",
     claim_template("big-train", request(count=12, api="v1beta1"), api="v1beta1"),
     ("claim-shape", "spec.spec.devices.requests[0].count"))
case("claim-shape-v1beta2-all",
     resource_claim("every-gpu", request(mode="All", count=None, api="v1beta2"), api="v1beta2"),
     ("claim-shape", "spec.devices.requests[0].exactly.allocationMode"))
case("claim-shape-cohort-limit-two",
     claim_template("four-large", request("gpu", "hybrid-large-gpu", count=4)),
     ("claim-shape", "spec.spec.devices.requests[0].exactly.count"), docs=SEED_CLASSES, policy="dra-classes")
case("claim-shape-action-warn",
     claim_template("every-gpu", request(mode="All", count=None)),
     ("claim-shape", "warn", "spec.spec.devices.requests[0].exactly.allocationMode"), policy="actions")


@pytest.mark.parametrize("row", TABLE.params)
def test_claim_shape(row, evaluate, golden):
    check_case(row, evaluate, golden)
