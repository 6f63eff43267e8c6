"""The mutations CEL can express faithfully: `default-runtime-class` and `default-security-context` as
MutatingAdmissionPolicies (JSONPatch) for Pods on CREATE whose cohort is their nodeSelector's alone
(webhook/policy/coverage.py, pinned). Each patch adds only fields the pod does not set, so a reinvocation adds nothing.
Exported where the webhook would apply the mutation silently (action enforce, not dry-run): under warn,
audit or dry-run the webhook reports what it sets or would set, which a policy cannot."""
from __future__ import annotations

from typing import Any

from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.intree.cel import lit, strings
from webhook.intree.export import MANAGED_BY, NAMESPACE_LABEL, RULE_LABEL, _excepted, policy_name
from webhook.intree.rules import _all_containers, _device_plugin_gpu, _no_required_affinity, pin
from webhook.intree.shapes import POD as PODS
from webhook.policy.coverage import MUTATED, covered_cohorts, mutated_rules, silent_namespaces
from webhook.policy.mutations.default_security_context import _ESCALATING_CAPS
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
    s = PODS.inline
    pins = " || ".join(f"({pin(c, s, policy)})" for c in covered_cohorts(policy, rule)) or "false"
    return f"{_no_required_affinity(s)} && ({pins})"


def _patch(path: str, value: str) -> str:
    return f"JSONPatch{{op: \"add\", path: {path}, value: {value}}}"


def _json(value: Any) -> str:
    """A JSON value as a CEL literal (bools, ints, strings, lists and maps of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return lit(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json(v) for v in value) + "]"
    return "{" + ", ".join(f"{lit(k)}: {_json(v)}" for k, v in value.items()) + "}"


def _runtime_class(policy: Policy) -> tuple[list[dict[str, str]], str]:
    s = "object.spec"
    chain = "".join(f"({pin(c, s, policy)}) ? {lit(c.runtime_class_name or '')} : "
                    for c in covered_cohorts(policy, Rule.DEFAULT_RUNTIME_CLASS) if c.mechanism == DEVICE_PLUGIN)
    variables = [{"name": "runtimeClass", "expression": chain + "''"}, _all_containers(s)]
    return variables, (f"!has({s}.runtimeClassName) && variables.runtimeClass != '' && {_device_plugin_gpu()} ? "
                       f"[{_patch(lit('/spec/runtimeClassName'), 'variables.runtimeClass')}] : []")


def _each(section: str, cond: str, path: str, value: str) -> str:
    """CEL: one add per container of `section` where `cond` holds (of `c`), at its securityContext + `path`.
    Containers are told apart by name (unique in a Pod: the apiserver rejects a Pod that repeats one)."""
    s = "object.spec"
    where = f"'/spec/{section}/' + string({s}.{section}.map(c, c.name).indexOf(c.name)) + '/securityContext{path}'"
    return f"(has({s}.{section}) ? {s}.{section}.filter(c, {cond}).map(c, {_patch(where, value)}) : [])"


def _and(condition: str) -> str:
    """CEL: ` && (condition)`, or nothing where it always holds."""
    return "" if condition == "true" else f" && ({condition})"


def _security_context(policy: Policy) -> tuple[list[dict[str, str]], str]:
    """default_security_context.mutate as patches: the pod's securityContext, then each container's and
    init container's (never ephemeral ones)."""
    s, sec = "object.spec", policy.security
    psc = f"{s}.securityContext"
    root = (f"(has({psc}) && has({psc}.runAsUser) && {psc}.runAsUser == 0) || "
            + " || ".join(f"(has({s}.{section}) && {s}.{section}.exists(c, has(c.securityContext) && "
                          "has(c.securityContext.runAsUser) && c.securityContext.runAsUser == 0))"
                          for section in ("containers", "initContainers", "ephemeralContainers")))
    pod: list[str] = []
    pod_fields: list[tuple[str, str, Any]] = []  # (field, condition beyond absent, value)
    if sec.run_as_non_root is not None:
        pod_fields.append(("runAsNonRoot", "!variables.root", sec.run_as_non_root))
    if sec.run_as_user is not None:
        pod_fields.append(("runAsUser", f"!(has({psc}) && has({psc}.runAsNonRoot) && {psc}.runAsNonRoot == false)",
                           sec.run_as_user))
    if sec.seccomp_profile:
        pod_fields.append(("seccompProfile", "true", {"type": sec.seccomp_profile}))
    if pod_fields:
        any_field = " || ".join(f"(!(has({psc}) && has({psc}.{f})){_and(cond)})" for f, cond, _ in pod_fields)
        pod.append(f"(!has({psc}) && ({any_field}) ? [{_patch(lit('/spec/securityContext'), '{}')}] : [])")
        for f, cond, value in pod_fields:
            pod.append(f"(!(has({psc}) && has({psc}.{f})){_and(cond)} ? "
                       f"[{_patch(lit('/spec/securityContext/' + f), _json(value))}] : [])")
    escalating = ("(has(c.securityContext.privileged) && c.securityContext.privileged == true) || "
                  "(has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add) && "
                  f"c.securityContext.capabilities.add.exists(a, a in {strings(_ESCALATING_CAPS)}))")
    fields: list[tuple[str, str, Any]] = []
    if sec.allow_privilege_escalation is not None:
        fields.append(("allowPrivilegeEscalation", f"!({escalating})", sec.allow_privilege_escalation))
    if sec.read_only_root_filesystem is not None:
        fields.append(("readOnlyRootFilesystem", "true", sec.read_only_root_filesystem))
    out = list(pod)
    for section in ("containers", "initContainers") if fields or sec.drop_capabilities else ():
        absent = "!has(c.securityContext)"
        out.append(_each(section, absent, "", "{}"))
        for f, cond, value in fields:
            # absent securityContext: every default applies (nothing escalates there)
            out.append(_each(section, f"{absent} || (!has(c.securityContext.{f}){_and(cond)})", "/" + f, _json(value)))
        if sec.drop_capabilities:
            drop = _json(list(sec.drop_capabilities))
            out.append(_each(section, f"{absent} || !has(c.securityContext.capabilities)", "/capabilities",
                             f"{{\"drop\": {drop}}}"))
            out.append(_each(section, "has(c.securityContext) && has(c.securityContext.capabilities) && "
                             "!has(c.securityContext.capabilities.drop)", "/capabilities/drop", drop))
    windows = f"has({s}.os) && has({s}.os.name) && {s}.os.name == 'windows'"
    # `root`: the pod or a container runs as UID 0, where runAsNonRoot: true would stop it from starting
    variables = [{"name": "root", "expression": root}] if sec.run_as_non_root is not None else []
    return variables, f"{windows} ? [] : " + (" + ".join(out) if out else "[]")


def patch_expression(rule: Rule, policy: Policy) -> tuple[list[dict[str, str]], str]:
    """The policy's variables and its JSONPatch expression."""
    if rule is Rule.DEFAULT_RUNTIME_CLASS:
        return _runtime_class(policy)
    if rule is Rule.DEFAULT_SECURITY_CONTEXT:
        return _security_context(policy)
    raise KeyError(rule)


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
        name = policy_name(rule, PODS)
        labels = {**MANAGED_BY, RULE_LABEL: rule.value}
        conditions = [{"name": "covered", "expression": coverage(rule, policy)}]
        excepted = _excepted(policy, rule, PODS)
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
