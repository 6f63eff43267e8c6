"""The mutations CEL can express faithfully (those whose definitions have an in-tree export, each writing its
JSONPatch in its own module: `cel_patch`) as MutatingAdmissionPolicies for Pods on CREATE pinned to one of the
export's cohorts, their nodeSelector's alone (webhook/policy/pinning.py, pinned): the coverage, written here from
the cohorts. Each patch adds only fields the pod does not set, so a reinvocation adds nothing. Exported where the
webhook would apply the mutation silently (action enforce, not dry-run): under warn, audit or dry-run the webhook
reports what it sets or would set, which a policy cannot."""
from __future__ import annotations

from typing import Any

from webhook.config.model import Policy
from webhook.intree.export import MANAGED_BY, NAMESPACE_LABEL, RULE_LABEL, _excepted, policy_name
from webhook.policy.cel.pods import no_required_affinity, pin
from webhook.policy.cel.shapes import POD
from webhook.policy.coverage import IN_TREE, MUTATED, covered_cohorts, mutated_rules, silent_namespaces
from webhook.rules import Rule

# The API version that serves MutatingAdmissionPolicy by Kubernetes minor version (docs/rules/default-runtime-class.md):
# GA in 1.36; beta in 1.34 and 1.35 behind the MutatingAdmissionPolicy gate and runtime-config.
GA_MINOR, BETA_MINOR = 36, 34
NEWEST = (1, 37)


def api_version(kubernetes: tuple[int, int]) -> str | None:
    """admissionregistration.k8s.io version of MutatingAdmissionPolicy on that Kubernetes (None: not served)."""
    major, minor = kubernetes
    if major != 1 or minor < BETA_MINOR:
        return None
    return "admissionregistration.k8s.io/" + ("v1" if minor >= GA_MINOR else "v1beta1")


def coverage(rule: Rule, policy: Policy) -> str:
    """CEL: webhook.policy.coverage.COVERED[rule] of a Pod (a matchCondition)."""
    s = POD.inline
    pins = " || ".join(f"({pin(c, s, policy)})" for c in covered_cohorts(policy, rule)) or "false"
    return f"{no_required_affinity(s)} && ({pins})"


def patch_expression(rule: Rule, policy: Policy) -> tuple[list[dict[str, Any]], str]:
    """The policy's variables and its JSONPatch expression: the rule's own (its definition's InTree)."""
    patch = IN_TREE[rule].cel_patch
    assert patch is not None  # as InTree holds for a mutation
    return patch(policy)


def export_mutations(policy: Policy, kubernetes: tuple[int, int] = NEWEST) -> list[dict[str, Any]]:
    """One MutatingAdmissionPolicy per exported mutation and its bindings ([] where the version serves none)."""
    version = api_version(kubernetes)
    if version is None:
        return []
    out: list[dict[str, Any]] = []
    excluded = sorted(policy.exempt_namespaces | {policy.service_namespace})
    for rule in MUTATED:
        if rule not in mutated_rules(policy):
            continue
        name = policy_name(rule, POD)
        labels = {**MANAGED_BY, RULE_LABEL: rule.value}
        conditions = [{"name": "covered", "expression": coverage(rule, policy)}]
        excepted = _excepted(policy, rule, POD)
        if excepted:
            conditions.append({"name": "not-excepted", "expression": f"!({excepted})"})
        variables, expression = patch_expression(rule, policy)
        out.append({
            "apiVersion": version, "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "failurePolicy": "Ignore",  # the mutating webhook never denies either
                "reinvocationPolicy": "IfNeeded",
                "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
                "matchConditions": conditions,
                **({"variables": variables} if variables else {}),
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
            },
        })
        inside, default = silent_namespaces(policy, rule)
        scopes = ([("override-0", {"key": NAMESPACE_LABEL, "operator": "In", "values": list(inside)})]
                  if inside else [])
        if default:
            scopes.append(("default", {"key": NAMESPACE_LABEL, "operator": "NotIn",
                                       "values": sorted({*excluded, *policy.overridden_namespaces})}))
        for suffix, match in scopes:
            out.append({
                "apiVersion": version, "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": f"{name}.{suffix}", "labels": labels},
                "spec": {"policyName": name, "matchResources": {"namespaceSelector": {"matchExpressions": [match]}}},
            })
    return out
