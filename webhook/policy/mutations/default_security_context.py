"""default-security-context: the policy's non-root `securityDefaults` on every pod
bound for a GPU cohort, only where a field is absent (explicit settings are run-as-root's).

- Pod `securityContext`: `runAsNonRoot` (unless the pod or a container sets `runAsUser: 0`), `runAsUser`
  (unless the pod sets `runAsNonRoot: false`), `seccompProfile.type`.
- Each container and init container: `allowPrivilegeEscalation` (unless privileged or adding
  `SYS_ADMIN`, beside which the apiserver refuses it), `readOnlyRootFilesystem`, `capabilities.drop`
  (keeping `capabilities.add`).

Ephemeral containers and Windows pods (`spec.os.name: windows`) are left alone."""
from collections.abc import Mapping
from functools import partial
from typing import Any

from webhook.config.model import Policy, SecurityDefaults
from webhook.objects.access import as_dict, as_list, as_str, integer
from webhook.objects.podspec import Container
from webhook.policy.cel import add, json_value, lit, strings
from webhook.policy.context import Context
from webhook.policy.contract import Definition, InTree, Mutator, Variables
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Said, T, Text, who
from webhook.policy.pinning import is_pinned, pinnable

# The apiserver rejects allowPrivilegeEscalation: false beside these, so it is not added there.
_ESCALATING_CAPS = {"SYS_ADMIN", "CAP_SYS_ADMIN"}


def _container_defaults(sc: Mapping[str, Any], security: SecurityDefaults) -> dict[str, Any]:
    out: dict[str, Any] = {}
    caps = as_dict(sc.get("capabilities"))
    added = as_list(caps.get("add"))
    # the generator only where the container adds capabilities: most add none, and a generator costs its frame
    escalating = sc.get("privileged") is True or (
        bool(added) and any(a in _ESCALATING_CAPS for a in added if type(a) is str))
    if security.allow_privilege_escalation is not None and "allowPrivilegeEscalation" not in sc and not escalating:
        out["allowPrivilegeEscalation"] = security.allow_privilege_escalation
    if security.read_only_root_filesystem is not None and "readOnlyRootFilesystem" not in sc:
        out["readOnlyRootFilesystem"] = security.read_only_root_filesystem
    if security.drop_capabilities and "drop" not in caps:
        out["capabilities"] = {"drop": list(security.drop_capabilities)}
    return out


def mutate(draft: Draft, facts: GpuFacts, policy: Policy, context: Context | None = None) -> list[tuple[str, Said]]:
    if facts.choice.cohort is None:
        return []
    spec = facts.view.spec
    if as_str(as_dict(spec.get("os")).get("name")) == "windows":
        return []  # seccomp, runAsUser and capabilities are Linux-only fields
    security = policy.security
    records: list[tuple[str, Said]] = []
    pod_sc = as_dict(spec.get("securityContext"))
    root_somewhere = integer(pod_sc.get("runAsUser")) == 0
    for c in facts.view.containers:
        sc = c.raw.get("securityContext")
        if type(sc) is dict and integer(sc.get("runAsUser")) == 0:
            root_somewhere = True
    pod_add: dict[str, Any] = {}
    if security.run_as_non_root is not None and "runAsNonRoot" not in pod_sc and not root_somewhere:
        pod_add["runAsNonRoot"] = security.run_as_non_root
    if security.run_as_user is not None and "runAsUser" not in pod_sc and pod_sc.get("runAsNonRoot") is not False:
        pod_add["runAsUser"] = security.run_as_user
    if security.seccomp_profile and "seccompProfile" not in pod_sc:
        pod_add["seccompProfile"] = {"type": security.seccomp_profile}
    if pod_add:
        draft.node("spec", "securityContext").update(pod_add)
        records.append(("spec.securityContext", lambda: T("pod {fields}", fields=", ".join(pod_add))))
    for c in facts.view.containers:
        if c.section == "ephemeralContainers":
            continue
        add = _container_defaults(c.security, security)
        if not add:
            continue
        index = c.position
        added = list(add)
        node = draft.node("spec", c.section, index, "securityContext")
        if "capabilities" in add and type(node.get("capabilities")) is dict:
            # keep the user's capabilities.add; only drop is absent
            capabilities = draft.node("spec", c.section, index, "securityContext", "capabilities")
            capabilities["drop"] = add.pop("capabilities")["drop"]
        node.update(add)
        records.append((f"spec.{c.section}[{index}].securityContext",
                        partial(_said, c, added)))
    return records


def _said(container: Container, added: list[str]) -> Text:
    return T("{container} {fields}", container=who(container), fields=", ".join(added))


# ----------------------------------------------------------------------------------- its in-tree export's coverage

def exported(policy: Policy) -> bool:
    """Some security default is set (its in-tree policy decides the pods pinned to a cohort)."""
    s = policy.security
    return (s.run_as_non_root is not None or s.run_as_user is not None or bool(s.seccomp_profile)
            or s.allow_privilege_escalation is not None or s.read_only_root_filesystem is not None
            or bool(s.drop_capabilities))


# -------------------------------------------------------------------------------- its in-tree export, in CEL

def _cel_each(section: str, cond: str, path: str, value: str) -> str:
    """CEL: one add per container of `section` where `cond` holds (of `c`), at its securityContext + `path`.
    Containers are told apart by name (unique in a Pod: the apiserver rejects a Pod that repeats one)."""
    s = "object.spec"
    where = f"'/spec/{section}/' + string({s}.{section}.map(c, c.name).indexOf(c.name)) + '/securityContext{path}'"
    return f"(has({s}.{section}) ? {s}.{section}.filter(c, {cond}).map(c, {add(where, value)}) : [])"


def _cel_and(condition: str) -> str:
    """CEL: ` && (condition)`, or nothing where it always holds."""
    return "" if condition == "true" else f" && ({condition})"


def cel_patch(policy: Policy) -> tuple[Variables, str]:
    """mutate as patches: the pod's securityContext, then each container's and init container's (never
    ephemeral ones)."""
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
        any_field = " || ".join(f"(!(has({psc}) && has({psc}.{f})){_cel_and(cond)})" for f, cond, _ in pod_fields)
        pod.append(f"(!has({psc}) && ({any_field}) ? [{add(lit('/spec/securityContext'), '{}')}] : [])")
        for f, cond, value in pod_fields:
            pod.append(f"(!(has({psc}) && has({psc}.{f})){_cel_and(cond)} ? "
                       f"[{add(lit('/spec/securityContext/' + f), json_value(value))}] : [])")
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
        out.append(_cel_each(section, absent, "", "{}"))
        for f, cond, value in fields:
            # absent securityContext: every default applies (nothing escalates there)
            out.append(_cel_each(section, f"{absent} || (!has(c.securityContext.{f}){_cel_and(cond)})", "/" + f,
                                 json_value(value)))
        if sec.drop_capabilities:
            drop = json_value(list(sec.drop_capabilities))
            out.append(_cel_each(section, f"{absent} || !has(c.securityContext.capabilities)", "/capabilities",
                                 f"{{\"drop\": {drop}}}"))
            out.append(_cel_each(section, "has(c.securityContext) && has(c.securityContext.capabilities) && "
                                 "!has(c.securityContext.capabilities.drop)", "/capabilities/drop", drop))
    windows = f"has({s}.os) && has({s}.os.name) && {s}.os.name == 'windows'"
    # `root`: the pod or a container runs as UID 0, where runAsNonRoot: true would stop it from starting
    variables = [{"name": "root", "expression": root}] if sec.run_as_non_root is not None else []
    return variables, f"{windows} ? [] : " + (" + ".join(out) if out else "[]")


DEFINITION = Definition(
    "default-security-context",
    "adds the cohort's non-root security defaults where a field is absent",
    "GPU runtime and security",
    __doc__,
    mutation=Mutator(mutate, stage=1),
    in_tree=InTree(exported, covers=is_pinned, cohorts=pinnable, cel_patch=cel_patch))
