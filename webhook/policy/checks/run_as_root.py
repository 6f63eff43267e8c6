from webhook.objects.access import as_dict, as_list, integer
from webhook.policy.messages import message
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.RUN_AS_ROOT


def _contradictions(sc: dict, path: str, security, container: bool):
    if security.run_as_non_root and integer(sc.get("runAsUser")) == 0:
        yield f"{path}.runAsUser", "runAsUser: 0", f"remove runAsUser or set {security.run_as_user}"
    if security.run_as_non_root and sc.get("runAsNonRoot") is False:
        yield f"{path}.runAsNonRoot", "runAsNonRoot: false", "remove runAsNonRoot: false"
    if container:
        if security.allow_privilege_escalation is False and sc.get("allowPrivilegeEscalation") is True:
            yield f"{path}.allowPrivilegeEscalation", "allowPrivilegeEscalation: true", "set it to false"
        added = [a for a in as_list(as_dict(sc.get("capabilities")).get("add")) if type(a) is str]
        if added and security.drop_capabilities:
            yield f"{path}.capabilities.add", f"capabilities.add: [{', '.join(added)}]", "remove the added capabilities"


def check(facts, context, policy):
    cohort = facts.choice.cohort
    if cohort is None:
        return []
    view = facts.view
    security = policy.security
    out = []
    targets = [(None, view.spec)] + [(c, c.raw) for c in view.containers]
    for container, holder in targets:
        sc = holder.get("securityContext")
        if type(sc) is not dict or not sc:
            continue
        if container is None:
            who, base = ("the pod" if view.is_pod else "the pod template"), f"{view.prefix}.securityContext"
        else:
            who, base = container.label, f"{container.path}.securityContext"
        for path, what, fix in _contradictions(sc, base, security, container is not None):
            out.append(Finding(RULE, path, message(
                policy, RULE, view.subject, f"{who} sets {what} ({path})",
                f'workloads on GPU cohort "{cohort.name}" run as non-root (UID {security.run_as_user}) without '
                "privilege escalation or added capabilities", fix)))
    return out
