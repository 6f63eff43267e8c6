"""Rule ids: the one source of truth used by messages, config, metrics, JSON output and docs.

Ids are a public contract (DESIGN.md section 6): never rename one.
"""
from __future__ import annotations

import enum


class Action(str, enum.Enum):
    """What a rule's finding does to the request."""

    ENFORCE = "enforce"  # deny (validation) / apply (mutation)
    WARN = "warn"  # allow, with a warning in kubectl; a mutation is applied and announced
    AUDIT = "audit"  # allow, record only; a mutation is not applied, only reported
    OFF = "off"

    def __str__(self) -> str:
        return self.value


class Rule(str, enum.Enum):
    # validation
    DOUBLE_MECHANISM = "double-mechanism"
    COHORT_MISMATCH = "cohort-mismatch"
    RESOURCE_NOT_OFFERED = "resource-not-offered"
    SHARED_REQUEST_COUNT = "shared-request-count"
    SHARED_EXCLUSIVE_MIX = "shared-exclusive-mix"
    SHARING_NOT_ENABLED = "sharing-not-enabled"
    SHARED_CLAIM = "shared-claim"
    VISIBLE_DEVICES_OVERRIDE = "visible-devices-override"
    DEVICE_ACCESS_BYPASS = "device-access-bypass"
    RUNTIME_CLASS_CONFLICT = "runtime-class-conflict"
    RUN_AS_ROOT = "run-as-root"
    CLAIM_SHAPE = "claim-shape"
    LEGACY_API = "legacy-api"
    UNRESOLVED_CLAIM = "unresolved-claim"
    # mutation
    DEFAULT_RUNTIME_CLASS = "default-runtime-class"
    DEFAULT_SECURITY_CONTEXT = "default-security-context"
    DEFAULT_PLACEMENT = "default-placement"
    HIDE_GPUS = "hide-gpus"

    def __str__(self) -> str:
        return self.value

    @property
    def is_mutation(self) -> bool:
        return self in MUTATIONS


MUTATIONS = frozenset(
    {Rule.DEFAULT_RUNTIME_CLASS, Rule.DEFAULT_SECURITY_CONTEXT, Rule.DEFAULT_PLACEMENT, Rule.HIDE_GPUS}
)
VALIDATIONS = tuple(r for r in Rule if r not in MUTATIONS)

DEFAULT_ACTIONS: dict[Rule, Action] = {
    **{r: Action.ENFORCE for r in Rule},
    Rule.SHARED_CLAIM: Action.WARN,
    Rule.RUN_AS_ROOT: Action.WARN,
    Rule.UNRESOLVED_CLAIM: Action.WARN,
}

SUMMARIES: dict[Rule, str] = {
    Rule.DOUBLE_MECHANISM: "one pod asks for GPUs through device-plugin resources and DRA claims at once",
    Rule.COHORT_MISMATCH: "the pod's GPU mechanism is not its target cohort's, or it targets two cohorts",
    Rule.RESOURCE_NOT_OFFERED: "a GPU resource, DeviceClass or device type that the target cohort does not offer",
    Rule.SHARED_REQUEST_COUNT: "more than 1 of a shared (time-sliced or MPS) GPU resource in one container",
    Rule.SHARED_EXCLUSIVE_MIX: "exclusive and shared GPU forms together, or shared GPUs in a workload marked exclusive",
    Rule.SHARING_NOT_ENABLED: "GPU sharing (time-slicing, MPS) asked for on a cohort that does not enable it",
    Rule.SHARED_CLAIM: "a GPU ResourceClaim referenced by name, so possibly shared by several pods",
    Rule.VISIBLE_DEVICES_OVERRIDE:
        "a container sets CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES or a similar variable",
    Rule.DEVICE_ACCESS_BYPASS: "privileged GPU containers, device hostPaths, device-list mounts or CDI annotations",
    Rule.RUNTIME_CLASS_CONFLICT: "a device-plugin GPU pod sets a RuntimeClass other than its cohort's",
    Rule.RUN_AS_ROOT: "explicit settings of a cohort-bound pod that contradict the non-root security defaults",
    Rule.CLAIM_SHAPE: "GPU claims with allocationMode All, too many devices, adminAccess, or no exactly/firstAvailable",
    Rule.LEGACY_API: "DRA shapes that no Kubernetes 1.34+ cluster accepts",
    Rule.UNRESOLVED_CLAIM: "a referenced ResourceClaim or template that cannot be resolved",
    Rule.DEFAULT_RUNTIME_CLASS: "adds the device-plugin cohort's runtimeClassName to GPU pods that set none",
    Rule.DEFAULT_SECURITY_CONTEXT: "adds the cohort's non-root security defaults where a field is absent",
    Rule.DEFAULT_PLACEMENT:
        "adds the cohort's node labels and tolerations when the pod did not select the cohort itself",
    Rule.HIDE_GPUS: "sets NVIDIA_VISIBLE_DEVICES=void on non-GPU containers of pods under the nvidia runtime",
}

# What reports group findings by (PolicyReport and OpenReports `category`, which Policy Reporter shows).
CATEGORIES: dict[Rule, str] = {
    Rule.DOUBLE_MECHANISM: "GPU allocation",
    Rule.COHORT_MISMATCH: "GPU allocation",
    Rule.RESOURCE_NOT_OFFERED: "GPU allocation",
    Rule.SHARED_REQUEST_COUNT: "GPU sharing",
    Rule.SHARED_EXCLUSIVE_MIX: "GPU sharing",
    Rule.SHARING_NOT_ENABLED: "GPU sharing",
    Rule.SHARED_CLAIM: "GPU sharing",
    Rule.VISIBLE_DEVICES_OVERRIDE: "GPU device access",
    Rule.DEVICE_ACCESS_BYPASS: "GPU device access",
    Rule.RUNTIME_CLASS_CONFLICT: "GPU runtime and security",
    Rule.RUN_AS_ROOT: "GPU runtime and security",
    Rule.CLAIM_SHAPE: "DRA claims",
    Rule.LEGACY_API: "DRA claims",
    Rule.UNRESOLVED_CLAIM: "DRA claims",
    Rule.DEFAULT_RUNTIME_CLASS: "GPU runtime and security",
    Rule.DEFAULT_SECURITY_CONTEXT: "GPU runtime and security",
    Rule.DEFAULT_PLACEMENT: "GPU allocation",
    Rule.HIDE_GPUS: "GPU device access",
}
GENERAL_CATEGORY = "GPU admission"  # results about an object as a whole: it passed, was exempt, or could not be listed
