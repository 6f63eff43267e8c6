"""run-as-root: explicit settings of a cohort-bound pod that contradict the policy's
non-root `securityDefaults` (default-security-context adds them only where a field is absent, so these
are left as written). One finding per setting, in regular, init and ephemeral containers:

- the pod or a container sets `runAsUser: 0` or `runAsNonRoot: false` (when `runAsNonRoot: true`);
- a container sets `allowPrivilegeEscalation: true` (when `allowPrivilegeEscalation: false`);
- a container adds capabilities (when `dropCapabilities` is not empty).

`privileged: true` is device-access-bypass's."""
from collections.abc import Mapping
from typing import Any

from webhook.config.model import Policy, SecurityDefaults
from webhook.objects.access import as_dict, as_list, integer
from webhook.objects.podspec import SECTIONS
from webhook.policy.cel import Validation, pods
from webhook.policy.cel.pods import S
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cel, If, Lines, Piece, cat, msg
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree, Variables
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T, Text, who
from webhook.policy.pinning import is_pinned, pinnable
from webhook.policy.results import Finding
from webhook.rule_id import Action

# What a finding says (its in-tree export, below, writes the same for the apiserver).
SETS = N_("{who} sets {setting} ({path})")
WHY = N_('workloads on GPU cohort "{cohort}" run as non-root (UID {uid}) without privilege escalation or added '
         "capabilities")
THE_POD, THE_TEMPLATE = T("the pod"), T("the pod template")
FIX_USER = N_("remove runAsUser or set {uid}")
FIX_NON_ROOT = T("remove runAsNonRoot: false")
FIX_ESCALATION = T("set it to false")
FIX_CAPABILITIES = T("remove the added capabilities")


def _contradictions(sc: Mapping[str, Any], security: SecurityDefaults, container: bool) -> list[tuple[str, str, Text]]:
    """(field, what, fix) for each setting of `sc` that contradicts the defaults. Runs for every
    securityContext of every cohort-bound pod: it only reads the four fields that can contradict."""
    out = []
    if security.run_as_non_root:
        if "runAsUser" in sc and integer(sc["runAsUser"]) == 0:
            out.append(("runAsUser", "runAsUser: 0", T(FIX_USER, uid=str(security.run_as_user))))
        if sc.get("runAsNonRoot") is False:
            out.append(("runAsNonRoot", "runAsNonRoot: false", FIX_NON_ROOT))
    if container:
        if security.allow_privilege_escalation is False and sc.get("allowPrivilegeEscalation") is True:
            out.append(("allowPrivilegeEscalation", "allowPrivilegeEscalation: true", FIX_ESCALATION))
        adds = as_list(as_dict(sc["capabilities"]).get("add")) if "capabilities" in sc else ()
        # read before the list is built: after default-security-context every container has capabilities
        # (its drop), and few add any
        if security.drop_capabilities and adds:
            added = [a for a in adds if type(a) is str]
            if added:
                out.append(("capabilities.add", f"capabilities.add: [{', '.join(added)}]",
                            FIX_CAPABILITIES))
    return out


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    cohort = facts.choice.cohort
    if cohort is None:
        return []
    view = facts.view
    security = policy.security
    found = []
    pod_sc = view.spec.get("securityContext")
    if type(pod_sc) is dict and pod_sc:
        for problem in _contradictions(pod_sc, security, False):
            found.append((THE_POD if view.is_pod else THE_TEMPLATE, f"{view.prefix}.securityContext", problem))
    for c in view.containers:
        if c.security:
            for problem in _contradictions(c.security, security, True):
                found.append((who(c), f"{c.path}.securityContext", problem))
    out = []
    for subject, base, (field, what, fix) in found:
        path = f"{base}.{field}"
        out.append(Finding(
            path=path,
            what=T(SETS, who=subject, setting=what, path=path),
            why=T(WHY, cohort=cohort.name, uid=str(security.run_as_user)),
            fix=fix))
    return out


def exported(policy: Policy) -> bool:
    """Its in-tree policy decides the pods pinned to a cohort: where no cohort can be pinned, none is written."""
    return bool(pinnable(policy))


# -------------------------------------------------------------------------------- its in-tree export, in CEL
# The same findings' lines in CEL (webhook/policy/cel), over the policy's variables; its coverage is
# pods.is_pinned's.

def _cel_contradictions(sc: str, container: bool, policy: Policy) -> list[tuple[str, str, Piece, Text]]:
    """(field, condition on the securityContext `sc`, the setting, fix): _contradictions in CEL."""
    security = policy.security
    out: list[tuple[str, str, Piece, Text]] = []
    if security.run_as_non_root:
        out.append(("runAsUser", f"has({sc}.runAsUser) && {sc}.runAsUser == 0", "runAsUser: 0",
                    T(FIX_USER, uid=str(security.run_as_user))))
        out.append(("runAsNonRoot", f"has({sc}.runAsNonRoot) && {sc}.runAsNonRoot == false", "runAsNonRoot: false",
                    FIX_NON_ROOT))
    if container:
        if security.allow_privilege_escalation is False:
            out.append(("allowPrivilegeEscalation",
                        f"has({sc}.allowPrivilegeEscalation) && {sc}.allowPrivilegeEscalation == true",
                        "allowPrivilegeEscalation: true", FIX_ESCALATION))
        if security.drop_capabilities:
            added = f"{sc}.capabilities.add"
            out.append(("capabilities.add", f"has({sc}.capabilities) && has({added}) && size({added}) > 0",
                        Cel(f"'capabilities.add: [' + {added}.join(', ') + ']'"), FIX_CAPABILITIES))
    return out


def cel_validations(shape: Shape, policy: Policy, lines: Lines) -> tuple[Variables, list[Validation]]:
    """One validation per setting the pod's securityContext contradicts, and per section and setting its
    containers' do: the first container that does, the first of the section's number in `root<n>` (each
    container of `placed` with its setting n: its section's number, or -1), named by `who`."""
    why = msg(WHY, cohort=Cel("variables.cohort"), uid=str(policy.security.run_as_user))
    variables: Variables = [pods.cohort(policy), *pods.placed(policy)]
    out = []
    subject: Piece = THE_POD if shape.pods_only else If("object.kind == 'Pod'", THE_POD, THE_TEMPLATE)
    for field, cond, setting, fix in _cel_contradictions(f"{S}.securityContext", False, policy):
        path = cat(shape.path, f".securityContext.{field}")
        out.append(Validation(f"!(has({S}.securityContext) && {cond})",
                              lines.line(msg(SETS, who=subject, setting=setting, path=path), why, fix)))
    settings = _cel_contradictions("t[1].securityContext", True, policy)
    for n, (_, cond, _, _) in enumerate(settings):
        variables.append({"name": f"root{n}", "expression": f"variables.placed.map(t, has(t[1].securityContext) && "
                                                            f"{cond} ? t[0] : -1)"})
    offsets = ("0", "variables.init_at", "variables.ephemeral_at")
    for k, (section, _) in enumerate(SECTIONS):
        for n, (field, _, _, fix) in enumerate(settings):
            j = f"variables.root{n}.indexOf({k})"  # the first container of the section with the setting
            setting = _cel_contradictions(f"variables.placed[{j}][1].securityContext", True, policy)[n][2]
            at = cat(shape.path, pods.at(section, j + (f" - {offsets[k]}" if k else "")), f".securityContext.{field}")
            out.append(Validation(f"{j} < 0", lines.line(
                msg(SETS, who=Cel(f"variables.who[{j}]"), setting=setting, path=at), why, fix)))
    return variables, out


DEFINITION = Definition(
    "run-as-root",
    "explicit settings of a cohort-bound pod that contradict the non-root security defaults",
    "GPU runtime and security",
    __doc__,
    default=Action.WARN,
    reason=N_(
        "GPU containers get device nodes and driver libraries from the host, and a root container with extra "
        "capabilities is a short step from it: cohort workloads run as non-root without privilege escalation "
        "or added capabilities. Absent settings are filled in; explicit ones against the defaults are reported."),
    checks=(
        Check(POD_SPECS, check),
    ),
    in_tree=InTree(exported, covers=is_pinned, order=3, cel_covered=pods.is_pinned,
                   cel_validations=cel_validations))
