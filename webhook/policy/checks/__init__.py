"""One module per validation rule (the rule id is the module name with dashes). The registry below is
the one place that says which checks run, on what, and in which order their findings are reported."""
from webhook.policy.checks import (
    allocation_owner,
    claim_shape,
    cohort_mismatch,
    device_access_bypass,
    device_config,
    double_mechanism,
    legacy_api,
    resource_not_offered,
    run_as_root,
    runtime_class_conflict,
    shared_claim,
    shared_exclusive_mix,
    shared_request_count,
    sharing_not_enabled,
    unresolved_claim,
    unsatisfiable_request,
    visible_devices_override,
)
from webhook.policy.contract import CLAIMS, DEVICE_CLASSES, DRA_OBJECTS, INFRASTRUCTURE, POD_SPECS, TEMPLATES, Check

REGISTRY: tuple[Check, ...] = (
    Check(double_mechanism, POD_SPECS),
    Check(cohort_mismatch, POD_SPECS),
    Check(resource_not_offered, POD_SPECS),
    Check(shared_request_count, POD_SPECS),
    Check(shared_exclusive_mix, POD_SPECS),
    Check(sharing_not_enabled, POD_SPECS),
    Check(shared_claim, POD_SPECS),
    Check(visible_devices_override, POD_SPECS),
    Check(device_access_bypass, POD_SPECS),
    Check(runtime_class_conflict, POD_SPECS),
    Check(run_as_root, POD_SPECS),
    Check(legacy_api, POD_SPECS),
    Check(unresolved_claim, POD_SPECS),
    Check(unsatisfiable_request, POD_SPECS),
    # controllers' pod templates only (a DaemonSet that runs an allocation owner), never a Pod
    Check(allocation_owner, TEMPLATES),
    # DRA objects on their own: the object's API first, then its requests
    Check(legacy_api, DRA_OBJECTS),
    Check(claim_shape, CLAIMS),
    Check(device_config, CLAIMS),
    Check(sharing_not_enabled, CLAIMS),
    Check(resource_not_offered, CLAIMS),
    Check(allocation_owner, DEVICE_CLASSES),
    # the GPU Operator's objects and Node updates
    Check(allocation_owner, INFRASTRUCTURE),
)
