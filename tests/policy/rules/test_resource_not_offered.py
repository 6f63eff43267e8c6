"""The resource-not-offered table (docs/rules/resource-not-offered.md): failing cases beside their closest benign twins,
each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    FULL_GPU_TEMPLATE,
    MIG_TEMPLATE,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    cel_class,
    check_case,
    claim_template,
    container,
    pod,
    pod_spec,
    request,
    resource_claim,
    template_claim,
    workload,
)

TABLE = Table("resource-not-offered")
case = TABLE.case

case("resource-not-offered-time-sliced-shared-replica-pass",
     workload("Deployment", "notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}),
                                                 cohort="device-plugin")),
     policy="time-slicing", cohort="device-plugin")
case("resource-not-offered-mig-mixed-a100-pass",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-3g.20gb": 1}), cohort="device-plugin")),
     policy="mig-mixed-a100")
case("resource-not-offered-mig-mixed-h200-pass",
     workload("Deployment", "vllm-small", pod_spec(
         container("vllm", gpus={"nvidia.com/mig-3g.71gb": 1}),
         container("guard", gpus={"nvidia.com/mig-1g.18gb": 1}), cohort="device-plugin")),
     policy="mig-mixed-h200")
case("resource-not-offered-mig-single-whole-resource-pass",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")),
     policy="mig-single-a100")
case("resource-not-offered-first-available-falls-back-pass",
     pod("elastic",
         pod_spec(container("worker", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "mig-or-gpu")])),
     docs=[claim_template("mig-or-gpu", {"name": "gpu", "firstAvailable": [
         {"name": "slice", "deviceClassName": "mig.nvidia.com"},
         {"name": "whole", "deviceClassName": "hybrid-full-gpu"}]})], cohort="dra")
case("resource-not-offered-cohort-class-list-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="dra-classes")
case("resource-not-offered-v1beta2-template-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "beta2-gpu")])),
     docs=[claim_template("beta2-gpu", request("gpu", "hybrid-large-gpu", api="v1beta2"), api="v1beta2"),
           *SEED_CLASSES])
case("resource-not-offered-v1beta1-template-mig-class",
     pod("mig-infer",
         pod_spec(container("infer", claims=["mig"]), cohort="dra", claims=[template_claim("mig", "beta1-mig")])),
     ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[claim_template("beta1-mig", request("mig", "mig.nvidia.com", api="v1beta1"), api="v1beta1")])
case("resource-not-offered-mig-on-mig-none-cohort",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-1g.5gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"))
case("resource-not-offered-mig-single",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-1g.5gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"), policy="mig-single-a100")
case("resource-not-offered-a100-80gb-profile-on-a100-40gb",
     workload("Job", "mig-infer",
              pod_spec(container("infer", gpus={"nvidia.com/mig-4g.40gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.template.spec.containers[0].resources.limits"), policy="mig-mixed-a100")
case("resource-not-offered-a100-profile-on-h200",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-1g.5gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"), policy="mig-mixed-h200")
case("resource-not-offered-exclusive-gpu-on-renamed-time-slicing",
     # the seed: do not use the exclusive smoke request unchanged against the renamed shared resource
     workload("Job", "hybrid-gpu-plugin-smoke", pod_spec(container("gpu-check", gpus={"nvidia.com/gpu": 1}),
                                                         cohort="device-plugin")),
     ("resource-not-offered", "spec.template.spec.containers[0].resources.limits"), policy="time-slicing")
case("resource-not-offered-shared-name-without-rename",
     pod("notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"), policy="time-slicing-unrenamed")
case("resource-not-offered-mig-class-claim-on-dra-cohort",
     pod("mig-infer", pod_spec(container("infer", claims=["mig"]), cohort="dra",
                               claims=[template_claim("mig", "mig-slice")])),
     ("resource-not-offered", "spec.resourceClaims[0]"), docs=[MIG_TEMPLATE])
case("resource-not-offered-mig-class-template",
     MIG_TEMPLATE, ("resource-not-offered", "spec.spec.devices.requests[0].exactly.deviceClassName"), cohort="dra")
case("resource-not-offered-vfio-claim",
     resource_claim("passthrough", request("vm-gpu", "vfio.gpu.nvidia.com")),
     ("resource-not-offered", "spec.devices.requests[0].exactly.deviceClassName"))
case("resource-not-offered-class-outside-cohort-list",
     workload("StatefulSet", "llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra",
                                             claims=[template_claim("gpu", "full-gpu")])),
     ("resource-not-offered", "spec.template.spec.resourceClaims[0]"),
     docs=[*SEED_CLASSES, FULL_GPU_TEMPLATE], policy="dra-classes")
case("resource-not-offered-implicit-mig-class-resource",
     pod("mig-infer", pod_spec(container("infer", gpus={"deviceclass.resource.kubernetes.io/mig.nvidia.com": 1}),
                               cohort="dra")),
     ("resource-not-offered", "spec.containers[0].resources.limits"))
case("resource-not-offered-first-available-none-offered",
     pod("elastic",
         pod_spec(container("worker", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "slices")])),
     ("resource-not-offered", "spec.resourceClaims[0]"), ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[claim_template("slices", {"name": "gpu", "firstAvailable": [
         {"name": "small", "deviceClassName": "mig.nvidia.com"},
         {"name": "vm", "deviceClassName": "vfio.gpu.nvidia.com"}]})])
case("resource-not-offered-cel-mig-type-in-list",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "mig-by-cel")])),
     ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[cel_class("mig-by-cel",
                     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type in ['mig']"),
           claim_template("mig-by-cel", request("gpu", "mig-by-cel"))], cohort="dra")
case("resource-not-offered-cel-gpu-type-in-list-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "gpu-by-cel")])),
     docs=[cel_class("gpu-by-cel",
                     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type in ['gpu']"),
           claim_template("gpu-by-cel", request("gpu", "gpu-by-cel"))], cohort="dra")



# MIG slices through DRA: the profile a request selects (the driver's `profile` attribute, in CEL) must be one the
# cohort's GPU model can host, by the cohort's profile table.
def profile_request(name, profile, selector=None):
    expression = selector or f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
    return {"name": name, "exactly": {"deviceClassName": "mig.nvidia.com",
                                      "selectors": [{"cel": {"expression": expression}}]}}


case("resource-not-offered-dra-h200-profile-on-h200-pass",
     claim_template("mig-slice", profile_request("mig", "1g.18gb")), policy="dra-mig-h200", cohort="dra")
case("resource-not-offered-dra-h200-media-profile-pass",
     claim_template("mig-slice", profile_request("mig", "1g.18gb+me")), policy="dra-mig-h200")
case("resource-not-offered-dra-a100-profile-on-h200",
     claim_template("mig-slice", profile_request("mig", "1g.5gb")),
     ("resource-not-offered", "spec.spec.devices.requests[0].exactly.deviceClassName"), policy="dra-mig-h200")
case("resource-not-offered-dra-h100-profile-on-h200",
     resource_claim("mig-slice", profile_request("mig", "1g.10gb")),
     ("resource-not-offered", "spec.devices.requests[0].exactly.deviceClassName"), policy="dra-mig-h200")
case("resource-not-offered-dra-a100-profile-on-a100-pass",
     claim_template("mig-slice", profile_request("mig", "3g.20gb")), policy="dra-demos")
case("resource-not-offered-dra-h200-profile-on-a100",
     pod("mig-infer", pod_spec(container("infer", claims=["mig"]), cohort="dra",
                               claims=[template_claim("mig", "mig-slice")])),
     ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[claim_template("mig-slice", profile_request("mig", "7g.141gb"))], policy="dra-demos")
# a selector that reads more than the profile (here the product name) may hold on the cohort's GPUs: not refused
case("resource-not-offered-dra-profile-and-product-pass",
     claim_template("mig-slice", profile_request("mig", None, selector=(
         "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H200') && "
         "device.attributes['gpu.nvidia.com'].profile in ['1g.18gb', '1g.5gb']"))), policy="dra-mig-h200")
case("resource-not-offered-dra-profiles-in-list-none-hosted",
     claim_template("mig-slice", profile_request("mig", None, selector=(
         "device.attributes['gpu.nvidia.com'].profile in ['1g.5gb', '2g.10gb']"))),
     ("resource-not-offered", "spec.spec.devices.requests[0].exactly.deviceClassName"), policy="dra-mig-h200")
case("resource-not-offered-dra-first-available-profile-falls-back-pass",
     claim_template("mig-or-gpu", {"name": "dev", "firstAvailable": [
         {"name": "small", "deviceClassName": "mig.nvidia.com", "selectors": [
             {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}}]},
         {"name": "whole", "deviceClassName": "gpu.nvidia.com"}]}), policy="dra-mig-h200")


@pytest.mark.parametrize("row", TABLE.params)
def test_resource_not_offered(row, evaluate, golden):
    check_case(row, evaluate, golden)
