from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.gpu import IMPLICIT_PREFIX, GpuFacts
from webhook.policy.messages import names, plural, quoted
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.UNRESOLVED_CLAIM


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.claims and not facts.unknown_classes:
        return []
    out = []
    for claim in facts.claims:
        if claim.unresolved:
            out.append(Finding(
                path=claim.path,
                what=f'claim "{claim.name}" ({claim.path}) refers to {claim.ref} in namespace '
                     f'"{facts.view.namespace}", '
                     f"which could not be resolved ({claim.unresolved})",
                why="without it the webhook cannot tell whether the pod asks for GPUs, so the GPU rules were not "
                    "applied "
                    "to this claim",
                fix=f"create the {'template' if claim.ref_kind == 'ResourceClaimTemplate' else 'claim'} "
                    "first (or give it to `gpu-admission check` with the pod), or turn on claim lookups"))
        elif claim.unknown_classes:
            classes = claim.unknown_classes
            reason = context.class_misses.get(classes[0]) or "not found"
            out.append(Finding(
                path=claim.path,
                what=f'claim "{claim.name}" ({claim.path}, {claim.ref}) asks for the '
                     f"{plural(classes, 'DeviceClass', 'es')} {names(quoted(classes))}, which could not be "
                     f"resolved ({reason})",
                why="without it the webhook cannot tell whether the claim means GPUs, so the GPU rules were not "
                    "applied "
                    "to this claim",
                fix="create the DeviceClass first (or give it to `gpu-admission check` with the pod), "
                    "list it under deviceClasses in the policy, or turn on DeviceClass lookups"))
    for use in facts.unknown_classes:
        name = use.resource[len(IMPLICIT_PREFIX):]
        reason = context.class_misses.get(name) or "not found"
        out.append(Finding(
            path=use.path,
            what=f'{use.container.label} requests {use.resource} ({use.path}), but the DeviceClass "{name}" could not '
                 'be '
                 f"resolved ({reason})",
            why="without it the webhook cannot tell whether the resource means GPUs, so the GPU "
                "rules were not applied to it",
            fix="create the DeviceClass first (or give it to `gpu-admission check` with "
                "the pod), list it under deviceClasses in the policy, or turn on DeviceClass lookups"))
    return out

