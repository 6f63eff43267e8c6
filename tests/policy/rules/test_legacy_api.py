"""The legacy-api table (docs/rules/legacy-api.md): failing cases beside their closest benign twins, each checked by
builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    ALLOC,
    SEED_CLASSES,
    SEED_DRA,
    SEED_TEMPLATE,
    Table,
    check_case,
    claim_template,
    container,
    device_class,
    meta,
    pod,
    pod_spec,
    request,
    resource_claim,
    workload,
)

TABLE = Table("legacy-api")
case = TABLE.case

case("legacy-api-seed-device-classes-pass", SEED_DRA["hybrid-large-gpu"], cohort=None)
case("legacy-api-v1beta1-template-pass",
     claim_template("single-gpu", request(api="v1beta1"), api="v1beta1"), docs=SEED_CLASSES)
case("legacy-api-v1beta2-claim-pass", resource_claim("single-gpu", request(api="v1beta2"), api="v1beta2"))
case("legacy-api-device-class-single-quotes-pass",
     device_class("h200", quote="'", extra_cel=" && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"))
case("legacy-api-pod-claim-source-wrapper",
     pod("old-dra", pod_spec(container(claims=["gpu"]), cohort="dra", claims=[
         {"name": "gpu", "source": {"resourceClaimTemplateName": "single-large-gpu"}}])),
     ("legacy-api", "spec.resourceClaims[0].source"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("legacy-api-job-claim-source-wrapper",
     workload("Job", "old-dra", pod_spec(container(claims=["gpu"]), claims=[
         {"name": "gpu", "source": {"resourceClaimName": "shared-a100"}}])),
     ("legacy-api", "spec.template.spec.resourceClaims[0].source"),
     ("shared-claim", "spec.template.spec.resourceClaims[0]"),
     docs=[resource_claim("shared-a100", request())], cohort="dra")
case("legacy-api-v1alpha2-claim-resource-class",
     {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClaim", "metadata": meta("old-gpu"),
      "spec": {"resourceClassName": "gpu.nvidia.com"}},
     ("legacy-api", "apiVersion"), ("legacy-api", "spec.resourceClassName"))
case("legacy-api-v1alpha3-device-class-suitable-nodes",
     {**device_class("old-gpu", api="resource.k8s.io/v1alpha3"),
      "spec": {"selectors": [], "suitableNodes": {"nodeSelectorTerms": [{"matchExpressions": [
          {"key": ALLOC, "operator": "In", "values": ["dra"]}]}]}}},
     ("legacy-api", "apiVersion"), ("legacy-api", "spec.suitableNodes"))
case("legacy-api-action-audit",
     {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaimTemplate", "metadata": meta("old-gpu"),
      "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}}},
     ("legacy-api", "audit", "apiVersion"), policy="actions")


@pytest.mark.parametrize("row", TABLE.params)
def test_legacy_api(row, evaluate, golden):
    check_case(row, evaluate, golden)
