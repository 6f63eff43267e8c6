"""The policy in force as admissionregistration.k8s.io objects: per exported rule one ValidatingAdmissionPolicy
for every kind it reads (webhook/policy/cel/shapes.py: pod specs, or claims and claim templates), and one binding
per action the rule has across namespaces. What a policy decides is the rule's own, in its definition's in-tree
export (webhook/policy/contract.py, InTree: its coverage and its validations in CEL, written in the rule's module);
this assembles the objects around them. A policy's matchConditions hold only the config's exceptions; the rule's
coverage is its `covered` variable, which every validation reads first, so that it is written once over the
variables the checks share (matchConditions cannot read variables)."""
from __future__ import annotations

from typing import Any

from webhook.config.model import Exception_, Policy
from webhook.policy.cel import Validation, fnmatch_regex, lit, strings
from webhook.policy.cel.shapes import CLAIMS, PODS, Shape
from webhook.policy.cel.text import Lines
from webhook.policy.coverage import EXPORTED, IN_TREE, exported_rules, scopes
from webhook.rules import Rule

API_VERSION = "admissionregistration.k8s.io/v1"
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-admission"}
RULE_LABEL = "gpu-admission.io/rule"


def _excepted(policy: Policy, rule: Rule, shape: Shape) -> str | None:
    """CEL: a config-owned exception lifts the rule for this request (engine._lifted)."""
    clauses = [_exception(e, shape) for e in policy.exceptions if rule in e.rules]
    return " || ".join(f"({c})" for c in clauses) if clauses else None


def _name() -> str:
    return ("(has(object.metadata.name) && object.metadata.name != '' ? object.metadata.name : "
            "has(object.metadata.generateName) && object.metadata.generateName != '' ? "
            "object.metadata.generateName + '*' : '(unnamed)')")


def _exception(e: Exception_, shape: Shape) -> str:
    s = shape.inline
    parts = []
    if not shape.pod and e.scheduler_names:
        return "false"  # a claim has no scheduler (engine._lifted reads an empty spec)
    if e.namespaces:
        parts.append(f"request.namespace in {strings(e.namespaces)}")
    if e.names:
        parts.append(" || ".join(f"{_name()}.matches({lit(fnmatch_regex(p))})" for p in e.names))
    if e.service_accounts and not shape.pod:  # a claim runs as no service account: only its author's
        users = [f"system:serviceaccount:{a.replace('/', ':', 1)}" for a in e.service_accounts]
        parts.append(f"request.userInfo.username in {strings(users)}")
    elif e.service_accounts:
        account = (f"request.namespace + '/' + (has({s}.serviceAccountName) && {s}.serviceAccountName != '' ? "
                   f"{s}.serviceAccountName : 'default')")
        users = [f"system:serviceaccount:{a.replace('/', ':', 1)}" for a in e.service_accounts]
        parts.append(f"{account} in {strings(e.service_accounts)} || request.userInfo.username in {strings(users)}")
    if e.users:
        parts.append(f"request.userInfo.username in {strings(e.users)}")
    if e.groups:
        parts.append(f"has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {strings(e.groups)})")
    if e.scheduler_names:
        parts.append(f"has({s}.schedulerName) && {s}.schedulerName in {strings(e.scheduler_names)}")
    return " && ".join(f"({p})" for p in parts)


def _kind_word(shape: Shape) -> str:
    """CEL: the kind as messages name it (`deployment`), from the shape's kinds."""
    if len(shape.kinds) == 1:
        return lit(shape.kinds[0].kind.lower())
    return "object.kind.lowerAscii()"


def policy_name(rule: Rule, shape: Shape) -> str:
    return f"gpu-admission.{rule.value}.{shape.name}"


def shapes(rule: Rule) -> tuple[Shape, ...]:
    """The shapes of the objects the rule's policies match: what its coverage reads, pod specs or claims."""
    return (CLAIMS,) if IN_TREE[rule].covers_claim is not None else (PODS,)


def _decided(rule: Rule, shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """(variables, validations) of the rule's policy for `shape`: the rule's own variables, its coverage
    (`covered`), the lines' shared endings, and the validations, each passing outside the coverage."""
    lines = Lines(policy, rule)
    in_tree = IN_TREE[rule]
    assert in_tree.cel_validations is not None and in_tree.cel_covered is not None  # as InTree holds for a validation
    variables, checks = in_tree.cel_validations(shape, policy, lines)
    covers = in_tree.cel_covered(shape, policy)
    return ([*variables, {"name": "covered", "expression": covers}, *lines.variables],
            [Validation(f"!variables.covered || {_grouped(v.expression)}", lines.resolve(v.message)) for v in checks])


def _grouped(expression: str) -> str:
    """CEL: `expression` as the right operand of `||` (a conditional binds looser)."""
    return f"({expression})" if "?" in expression else expression


def export(policy: Policy) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    excluded = sorted(policy.exempt_namespaces | {policy.service_namespace})
    for rule in EXPORTED:
        if rule not in exported_rules(policy):
            continue
        rule_scopes = scopes(policy, rule)
        # every overridden namespace has its own binding, or none where the rule is off there
        overridden = sorted(policy.overridden_namespaces)
        for shape in shapes(rule):
            name = policy_name(rule, shape)
            labels = {**MANAGED_BY, RULE_LABEL: rule.value}
            variables, checks = _decided(rule, shape, policy)
            excepted = _excepted(policy, rule, shape)
            conditions = [{"name": "not-excepted", "expression": f"!({excepted})"}] if excepted else []
            out.append({
                "apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "failurePolicy": "Fail" if policy.on_error.get(rule) == "deny" else "Ignore",
                    "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": shape.rules},
                    **({"matchConditions": conditions} if conditions else {}),
                    "variables": [
                        *({"name": n, "expression": e} for n, e in shape.variables),
                        {"name": "subject", "expression": f"{_kind_word(shape)} + ' \"' + request.namespace + "
                                                          f"'/' + {_name()} + '\"'"},
                        *variables,
                    ],
                    # no `reason`: the apiserver answers a failed validation with Invalid where none is set
                    "validations": [{"expression": v.expression, "messageExpression": v.message} for v in checks],
                },
            })
            for i, sc in enumerate(rule_scopes):
                if sc.namespaces is None:
                    match = {"key": NAMESPACE_LABEL, "operator": "NotIn", "values": sorted({*excluded, *overridden})}
                    suffix = "default"
                else:
                    match = {"key": NAMESPACE_LABEL, "operator": "In", "values": list(sc.namespaces)}
                    suffix = f"override-{i}"
                out.append({
                    "apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
                    "metadata": {"name": f"{name}.{suffix}", "labels": labels},
                    "spec": {"policyName": name, "validationActions": list(sc.validation_actions),
                             "matchResources": {"namespaceSelector": {"matchExpressions": [match]}}},
                })
    return out
