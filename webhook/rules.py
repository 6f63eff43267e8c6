"""Rule ids: a public contract (docs/architecture.md, Rule ids), used by every layer: messages, config,
metrics, JSON output, docs. Never rename one.

Written by `make schema` (tools/rule_ids.py) from the rules' definitions: a rule's id, its default action (the
config fills it in where a policy names none) and whether it mutates (metrics, reports and exit codes count a
mutation apart from a finding) are declared in its module's `DEFINITION` (webhook/policy/checks/<id>.py,
webhook/policy/mutations/<id>.py), and the layers below the policy read them here. Do not edit: a rule is
added by adding its module. The order of the ids is the rules' order everywhere they are listed: the order
they were added in, validations first.
"""
from __future__ import annotations

from webhook.rule_id import MUTATION, Action, RuleId

__all__ = ["DEFAULT_ACTIONS", "MUTATIONS", "VALIDATIONS", "Action", "Rule"]


class Rule(RuleId):
    """A rule id, with its default action (enforce unless given) and whether it mutates (`MUTATION`)."""

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


MUTATIONS = frozenset(r for r in Rule if r.is_mutation)
VALIDATIONS = tuple(r for r in Rule if not r.is_mutation)
DEFAULT_ACTIONS: dict[Rule, Action] = {r: r.default for r in Rule}
