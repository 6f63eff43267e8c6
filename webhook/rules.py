"""Rule ids: the one source of truth used by messages, config, metrics, JSON output and docs.

Ids are a public contract (docs/architecture.md, Rule ids): never rename one.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


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
    DEVICE_CONFIG = "device-config"
    LEGACY_API = "legacy-api"
    UNRESOLVED_CLAIM = "unresolved-claim"
    UNSATISFIABLE_REQUEST = "unsatisfiable-request"
    ALLOCATION_OWNER = "allocation-owner"
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


@dataclass(frozen=True, slots=True)
class RuleInfo:
    summary: str  # one line: the docs index, SARIF's shortDescription
    category: str  # what reports group findings by (PolicyReport and OpenReports `category`)
    default: Action = Action.ENFORCE
    mutation: bool = False


# What each rule is, in one place: every list below, the docs index (docs/rules/README.md, written by
# `make docs`) and the tests' all-rules policies are derived from it.
RULES: dict[Rule, RuleInfo] = {
    Rule.DOUBLE_MECHANISM: RuleInfo(
        "one pod asks for GPUs through device-plugin resources and DRA claims at once", "GPU allocation"),
    Rule.COHORT_MISMATCH: RuleInfo(
        "the pod's GPU mechanism is not its target cohort's, or it targets two cohorts", "GPU allocation"),
    Rule.RESOURCE_NOT_OFFERED: RuleInfo(
        "a GPU resource, DeviceClass or device type that the target cohort does not offer", "GPU allocation"),
    Rule.SHARED_REQUEST_COUNT: RuleInfo(
        "more than 1 of a shared (time-sliced or MPS) GPU resource in one container", "GPU sharing"),
    Rule.SHARED_EXCLUSIVE_MIX: RuleInfo(
        "exclusive and shared GPU forms together, or shared GPUs in a workload marked exclusive", "GPU sharing"),
    Rule.SHARING_NOT_ENABLED: RuleInfo(
        "GPU sharing (time-slicing, MPS) asked for on a cohort that does not enable it", "GPU sharing"),
    Rule.SHARED_CLAIM: RuleInfo(
        "a GPU ResourceClaim referenced by name, so possibly shared by several pods", "GPU sharing",
        default=Action.WARN),
    Rule.VISIBLE_DEVICES_OVERRIDE: RuleInfo(
        "a container sets CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES or a similar variable",
        "GPU device access"),
    Rule.DEVICE_ACCESS_BYPASS: RuleInfo(
        "privileged GPU containers, device hostPaths, device-list mounts or CDI annotations", "GPU device access"),
    Rule.RUNTIME_CLASS_CONFLICT: RuleInfo(
        "a device-plugin GPU pod sets a RuntimeClass other than its cohort's", "GPU runtime and security"),
    Rule.RUN_AS_ROOT: RuleInfo(
        "explicit settings of a cohort-bound pod that contradict the non-root security defaults",
        "GPU runtime and security", default=Action.WARN),
    Rule.CLAIM_SHAPE: RuleInfo(
        "GPU claims with allocationMode All, too many devices, adminAccess, or no exactly/firstAvailable",
        "DRA claims"),
    Rule.DEVICE_CONFIG: RuleInfo(
        "an opaque config of the NVIDIA DRA drivers that the driver refuses (kind, fields, values, requests)",
        "DRA claims"),
    Rule.LEGACY_API: RuleInfo("DRA shapes that no Kubernetes 1.34+ cluster accepts", "DRA claims"),
    Rule.UNRESOLVED_CLAIM: RuleInfo(
        "a referenced ResourceClaim or template that cannot be resolved", "DRA claims", default=Action.WARN),
    Rule.UNSATISFIABLE_REQUEST: RuleInfo(
        "a GPU request that no node or device of the cohort can ever satisfy (with Node/ResourceSlice lookups)",
        "GPU allocation", default=Action.WARN),
    Rule.ALLOCATION_OWNER: RuleInfo(
        "GPU infrastructure that gives a node a second allocation owner: owner DaemonSets reaching another "
        "cohort, GPU Operator objects that clash, DeviceClasses sharing an extended resource, nodes moved "
        "between cohorts", "GPU infrastructure"),
    Rule.DEFAULT_RUNTIME_CLASS: RuleInfo(
        "adds the device-plugin cohort's runtimeClassName to GPU pods that set none", "GPU runtime and security",
        mutation=True),
    Rule.DEFAULT_SECURITY_CONTEXT: RuleInfo(
        "adds the cohort's non-root security defaults where a field is absent", "GPU runtime and security",
        mutation=True),
    Rule.DEFAULT_PLACEMENT: RuleInfo(
        "adds the cohort's node labels and tolerations when the pod did not select the cohort itself",
        "GPU allocation", mutation=True),
    Rule.HIDE_GPUS: RuleInfo(
        "sets NVIDIA_VISIBLE_DEVICES=void on non-GPU containers of pods under the nvidia runtime",
        "GPU device access", mutation=True),
}

MUTATIONS = frozenset(r for r, info in RULES.items() if info.mutation)
VALIDATIONS = tuple(r for r in Rule if r not in MUTATIONS)
DEFAULT_ACTIONS: dict[Rule, Action] = {r: info.default for r, info in RULES.items()}
SUMMARIES: dict[Rule, str] = {r: info.summary for r, info in RULES.items()}
CATEGORIES: dict[Rule, str] = {r: info.category for r, info in RULES.items()}
GENERAL_CATEGORY = "GPU admission"  # results about an object as a whole: it passed, was exempt, or could not be listed
