"""Every rule's definition, collected from its module (webhook/policy/checks, webhook/policy/mutations) in
the order of the rule ids: the one list that the engine's registries, the docs index (`make docs`),
SARIF's and PolicyReport's rule metadata, the in-tree coverage (webhook/policy/coverage.py) and the catalogue
checks are derived from. A module is found by its name (the rule id with underscores) from the rule-id table
(webhook/rules.py), which `make schema` writes from the same modules; adding a rule adds its module, nothing
here."""
from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

from webhook.policy.contract import Check, Definition, Target
from webhook.policy.messages import Text
from webhook.rules import Rule

PACKAGES = ("webhook.policy.checks", "webhook.policy.mutations")
GENERAL_CATEGORY = "GPU admission"  # results about an object as a whole: it passed, was exempt, or could not be listed


def _definition(rule: Rule) -> Definition:
    package = PACKAGES[rule.is_mutation]
    module = importlib.import_module(f"{package}.{rule.value.replace('-', '_')}")
    definition = getattr(module, "DEFINITION", None)
    if not isinstance(definition, Definition) or definition.id != rule.value:
        raise ImportError(f"{module.__name__} defines no DEFINITION for {rule.value}")
    if definition.mutates is not rule.is_mutation or definition.default is not rule.default:
        raise ImportError(f"webhook/rules.py does not say what {module.__name__} defines: run `make schema`")
    return definition


DEFINITIONS: tuple[Definition, ...] = tuple(_definition(r) for r in Rule)
BY_RULE: Mapping[Rule, Definition] = MappingProxyType({d.rule: d for d in DEFINITIONS})
SUMMARIES: Mapping[Rule, str] = MappingProxyType({d.rule: d.summary for d in DEFINITIONS})
CATEGORIES: Mapping[Rule, str] = MappingProxyType({d.rule: d.category for d in DEFINITIONS})
# Each validation rule's reason in full: the long form of the one-clause why that a finding's line carries. A line
# leads with what to do and keeps its why to one clause (webhook/policy/messages.py); the reason in full is shown by
# `gpu-admission check --explain` and given as SARIF's rule `fullDescription` and `help`, and the rule's page
# (docs/rules/<rule>.md, "What it stops and why") says the rest. Rendered in the policy's language.
REASONS: Mapping[Rule, Text] = MappingProxyType({d.rule: Text(d.reason) for d in DEFINITIONS if d.reason})


def _checks(target: Target) -> tuple[tuple[Rule, Check], ...]:
    found = [(d.rule, c) for d in DEFINITIONS for c in d.checks if target in c.applies_to]
    return tuple(sorted(found, key=lambda rc: rc[1].stage))  # stable: the ids' order within a stage


# Each target's checks, in the order their findings are reported.
CHECKS: Mapping[Target, tuple[tuple[Rule, Check], ...]] = MappingProxyType({t: _checks(t) for t in Target})
# The mutations, in the order they run.
MUTATIONS: tuple[Definition, ...] = tuple(sorted((d for d in DEFINITIONS if d.mutation is not None),
                                                 key=lambda d: d.mutation.stage if d.mutation else 0))
