from webhook.policy.messages import message, names
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.UNRESOLVED_CLAIM


def check(facts, context, policy):
    out = []
    for claim in facts.claims:
        if claim.unresolved:
            out.append(Finding(RULE, claim.path, message(
                policy, RULE, facts.view.subject,
                f'claim "{claim.name}" ({claim.path}) refers to {claim.ref} in namespace "{facts.view.namespace}", '
                f"which could not be resolved ({claim.unresolved})",
                "without it the webhook cannot tell whether the pod asks for GPUs, so the GPU rules were not applied "
                "to this claim", f"create the {'template' if claim.ref_kind == 'ResourceClaimTemplate' else 'claim'} "
                "first (or give it to `gpu-admission check` with the pod), or turn on claim lookups")))
        elif claim.unknown_classes:
            out.append(Finding(RULE, claim.path, message(
                policy, RULE, facts.view.subject,
                f'claim "{claim.name}" ({claim.path}, {claim.ref}) asks for the DeviceClass '
                f"{names(claim.unknown_classes)}, which could not be resolved",
                "without it the webhook cannot tell whether the claim means GPUs",
                "list the class under deviceClasses in the policy, give it to `gpu-admission check`, or turn on "
                "DeviceClass lookups")))
    return out
