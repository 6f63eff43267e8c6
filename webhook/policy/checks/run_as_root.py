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
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T, Text, who
from webhook.policy.pinning import is_pinned, pinnable
from webhook.policy.results import Finding
from webhook.rule_id import Action

# What a finding says (webhook/intree/rules.py writes the same for the apiserver).
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
    in_tree=InTree(exported, covers=is_pinned, order=3))
