from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.dra import ObjectFacts
from webhook.policy.messages import message
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.CLAIM_SHAPE


def check_object(facts: ObjectFacts, context: Context, policy: Policy) -> list[Finding]:
    """A GPU ResourceClaim or template, or one with a request that says nothing of what it asks for."""
    spec, gpu_leaves, cohort = facts.claim, facts.gpu_leaves, facts.cohort
    if spec is None or not (gpu_leaves or any(not r.has_shape for r in spec.requests)):
        return []
    subject, namespace = facts.subject, facts.namespace
    out: list[Finding] = []
    limit = cohort.max_devices_per_claim if cohort is not None else None
    cohort_name = cohort.name if cohort is not None else ""  # named only where the cohort sets a limit
    admins = cohort.admin_access_namespaces if cohort is not None else ()
    per_request: dict[str, int] = {}  # firstAvailable alternatives count once: the largest
    over = False
    for leaf in gpu_leaves:
        if leaf.allocation_mode == "All":
            path = f"{leaf.path}.allocationMode"
            out.append(Finding(RULE, path, message(
                policy, RULE, subject, f'request "{leaf.name}" sets allocationMode: All ({path})',
                "it takes every matching GPU on a node, however many the node has",
                "use allocationMode: ExactCount with a count")))
            continue
        key = leaf.path.split(".firstAvailable[")[0]
        per_request[key] = max(per_request.get(key, 0), leaf.count)
        if limit is not None and leaf.count > limit:
            over = True
            path = f"{leaf.path}.count"
            out.append(Finding(RULE, path, message(
                policy, RULE, subject, f'request "{leaf.name}" asks for {leaf.count} GPUs ({path})',
                f'cohort "{cohort_name}" allows at most {limit} devices per claim', f"ask for {limit} or fewer")))
        if leaf.admin_access and namespace not in admins:
            path = f"{leaf.path}.adminAccess"
            out.append(Finding(RULE, path, message(
                policy, RULE, subject, f'request "{leaf.name}" sets adminAccess: true ({path})',
                f'admin access reaches GPUs already allocated to other workloads; namespace "{namespace}" is not '
                "allowed to use it", "remove adminAccess, or have the GPU owner list the namespace in the cohort's "
                "adminAccessNamespaces")))
    total = sum(per_request.values())
    if limit is not None and not over and total > limit:
        path = f"{spec.path}.devices.requests"
        out.append(Finding(RULE, path, message(
            policy, RULE, subject, f"the claim's requests ask for {total} GPUs in all ({path})",
            f'cohort "{cohort_name}" allows at most {limit} devices per claim', "ask for fewer, or split the work")))
    for req in spec.requests:
        if not req.has_shape:
            out.append(Finding(RULE, req.path, message(
                policy, RULE, subject, f'request "{req.name}" ({req.path}) has neither exactly nor firstAvailable',
                "a resource.k8s.io/v1 request must say what it asks for",
                "put deviceClassName, allocationMode and count under exactly (or list firstAvailable alternatives)")))
    return out

