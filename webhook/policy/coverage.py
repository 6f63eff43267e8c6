"""What the apiserver's in-tree policies decide, as the engine reads it, derived from the rules' definitions (each
rule's `in_tree`: webhook/policy/contract.py's InTree, in the rule's own module): which rules `gpu-admission
export` writes policies for under a configuration (exported_rules, mutated_rules), where their bindings apply them
(scopes, silent_in), and for which objects a rule's policy decides (covered, claims_covered). The engine leaves a
covered rule to the apiserver; outside the coverage, a rule's verdict or its message needs what CEL cannot do (a
lookup, a path as the host resolves it, the pod's GPU allocation), and the webhook keeps the rule. Each rule's
module writes its predicate again in CEL (InTree's `cel_covered`; a mutation's, its cohorts pinned), which the
exporter (webhook/intree) puts into the rule's policy; the parity tests (tests/intree) hold the two equal."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from webhook.config.model import Cohort, Policy
from webhook.objects.claims import ClaimSpec
from webhook.objects.podspec import PodView
from webhook.policy.contract import InTree
from webhook.policy.definitions import DEFINITIONS
from webhook.rules import Action, Rule

# Each rule's in-tree export, where it has one.
IN_TREE: Mapping[Rule, InTree] = {d.rule: d.in_tree for d in DEFINITIONS if d.in_tree}
# The rules `export` can write ValidatingAdmissionPolicies for, in the order it writes them, and
# MutatingAdmissionPolicies for.
EXPORTED = tuple(sorted((r for r in IN_TREE if not r.is_mutation), key=lambda r: IN_TREE[r].order))
MUTATED = tuple(sorted((r for r in IN_TREE if r.is_mutation), key=lambda r: IN_TREE[r].order))
# Each exported rule's coverage of pod-bearing objects (through their pod spec), and of claims.
COVERED: Mapping[Rule, Callable[[PodView, Policy], bool]] = {
    r: t.covers for r, t in IN_TREE.items() if t.covers is not None}
CLAIMS_COVERED: Mapping[Rule, Callable[[ClaimSpec, Policy], bool]] = {
    r: t.covers_claim for r, t in IN_TREE.items() if t.covers_claim is not None}


# ------------------------------------------------------------------------------------------------ the bindings

# What each action does to a request, as the webhook answers it (a dry-run policy never denies: the
# webhook warns "would deny" instead).
ACTIONS = {Action.ENFORCE: ["Deny"], Action.WARN: ["Warn"], Action.AUDIT: ["Audit"]}
DRY_RUN = {Action.ENFORCE: ["Warn", "Audit"], Action.WARN: ["Warn"], Action.AUDIT: ["Audit"]}


@dataclass(frozen=True, slots=True)
class Scope:
    """Namespaces where the rule has one action: `namespaces` In, or (None) every other namespace."""

    validation_actions: tuple[str, ...]
    namespaces: tuple[str, ...] | None


def scopes(policy: Policy, rule: Rule) -> list[Scope]:
    """The rule's bindings: namespace overrides first, then the rest, less the exempt namespaces."""
    def actions(mode: str, action: Action) -> tuple[str, ...]:
        return tuple((DRY_RUN if mode == "audit" else ACTIONS).get(action, ()))

    by_actions: dict[tuple[str, ...], list[str]] = {}
    for ns in sorted(policy.overridden_namespaces - policy.exempt_namespaces - {policy.service_namespace}):
        mode, acts = policy.settings_for(ns)  # as the engine's plan reads them
        by_actions.setdefault(actions(mode, acts[rule]), []).append(ns)
    out = [Scope(a, tuple(n)) for a, n in by_actions.items() if a]
    default = actions(policy.mode, policy.actions[rule])
    if default:
        out.append(Scope(default, None))
    return out


def exported_rules(policy: Policy) -> frozenset[Rule]:
    """The rules whose policies `export` writes for this configuration."""
    return frozenset(r for r in EXPORTED if scopes(policy, r) and IN_TREE[r].exported(policy))


def silent_namespaces(policy: Policy, rule: Rule) -> tuple[tuple[str, ...], bool]:
    """Where the webhook applies the mutation silently: the overridden namespaces that keep it so, and
    whether every other (not exempt, not overridden) namespace does."""
    def silent(mode: str, action: Action) -> bool:
        return mode != "audit" and action is Action.ENFORCE

    inside = []
    for ns in sorted(policy.overridden_namespaces - policy.exempt_namespaces - {policy.service_namespace}):
        mode, acts = policy.settings_for(ns)  # as the engine's plan reads them
        if silent(mode, acts[rule]):
            inside.append(ns)
    return tuple(inside), silent(policy.mode, policy.actions[rule])


def silent_in(policy: Policy, rule: Rule, namespace: str) -> bool:
    """The rule's bindings match `namespace` (not exempt; the engine's plan checks that)."""
    inside, default = policy.derived(silent_namespaces, rule)
    return namespace in inside if namespace in policy.overridden_namespaces else default


def covered_cohorts(policy: Policy, rule: Rule) -> tuple[Cohort, ...]:
    """The cohorts whose Pods the mutation's policy decides."""
    cohorts = IN_TREE[rule].cohorts
    assert cohorts is not None  # as Definition holds for a mutation's in-tree export
    return policy.derived(cohorts)


def mutated_rules(policy: Policy) -> frozenset[Rule]:
    """The rules whose MutatingAdmissionPolicies `export` writes for this configuration."""
    def writes(rule: Rule) -> bool:
        inside, default = silent_namespaces(policy, rule)
        return bool(inside or default) and bool(covered_cohorts(policy, rule)) and IN_TREE[rule].exported(policy)
    return frozenset(r for r in MUTATED if writes(r))


# ----------------------------------------------------------------------------------------------- the coverage

def covered(rules: frozenset[Rule], view: PodView, policy: Policy) -> frozenset[Rule]:
    """Those of `rules` whose in-tree policy decides for this pod-bearing object."""
    return frozenset(r for r in rules if r in COVERED and COVERED[r](view, policy))


def claims_covered(rules: frozenset[Rule], spec: ClaimSpec, policy: Policy) -> frozenset[Rule]:
    """Those of `rules` whose in-tree policy decides for this ResourceClaim or ResourceClaimTemplate."""
    return frozenset(r for r in rules if r in CLAIMS_COVERED and CLAIMS_COVERED[r](spec, policy))
