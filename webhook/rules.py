"""Rule ids: a public contract (docs/architecture.md, Rule ids), used by every layer: messages, config,
metrics, JSON output, docs. Never rename one.

Each id says here only what the layers below the policy need to read a decision or a configuration:
its default action (the config fills it in where a policy names none) and whether the rule mutates
(metrics, reports and exit codes count a mutation apart from a finding). Everything else about a rule
(what it applies to, its checks or mutation, its summary and category, its spec) is its definition, in
its own module under webhook/policy/checks or webhook/policy/mutations (webhook/policy/definitions.py
lists them); the order of the ids is the rules' order everywhere they are listed.
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


MUTATION = True  # the third field of a mutation rule's id


class Rule(str, enum.Enum):
    """A rule id, with its default action (enforce unless given) and whether it mutates (`MUTATION`)."""

    default: Action
    is_mutation: bool

    def __new__(cls, value: str, default: Action = Action.ENFORCE, mutation: bool = False) -> Rule:
        member = str.__new__(cls, value)
        member._value_ = value
        member.default = default
        member.is_mutation = mutation
        return member

    DOUBLE_MECHANISM = "double-mechanism"
    COHORT_MISMATCH = "cohort-mismatch"
    RESOURCE_NOT_OFFERED = "resource-not-offered"
    SHARED_REQUEST_COUNT = "shared-request-count"
    SHARED_EXCLUSIVE_MIX = "shared-exclusive-mix"
    SHARING_NOT_ENABLED = "sharing-not-enabled"
    SHARED_CLAIM = "shared-claim", Action.WARN
    VISIBLE_DEVICES_OVERRIDE = "visible-devices-override"
    DEVICE_ACCESS_BYPASS = "device-access-bypass"
    RUNTIME_CLASS_CONFLICT = "runtime-class-conflict"
    RUN_AS_ROOT = "run-as-root", Action.WARN
    CLAIM_SHAPE = "claim-shape"
    DEVICE_CONFIG = "device-config"
    LEGACY_API = "legacy-api"
    UNRESOLVED_CLAIM = "unresolved-claim", Action.WARN
    UNSATISFIABLE_REQUEST = "unsatisfiable-request", Action.WARN
    ALLOCATION_OWNER = "allocation-owner"
    DEFAULT_RUNTIME_CLASS = "default-runtime-class", Action.ENFORCE, MUTATION
    DEFAULT_SECURITY_CONTEXT = "default-security-context", Action.ENFORCE, MUTATION
    DEFAULT_PLACEMENT = "default-placement", Action.ENFORCE, MUTATION
    HIDE_GPUS = "hide-gpus", Action.ENFORCE, MUTATION

    def __str__(self) -> str:
        return self.value


MUTATIONS = frozenset(r for r in Rule if r.is_mutation)
VALIDATIONS = tuple(r for r in Rule if not r.is_mutation)
DEFAULT_ACTIONS: dict[Rule, Action] = {r: r.default for r in Rule}
