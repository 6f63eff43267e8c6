from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.gpu import IMPLICIT_PREFIX, GpuFacts
from webhook.policy.messages import names, plural, quoted
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.UNRESOLVED_CLAIM


WITH_THE_POD = "first (or give it to `gpu-admission check` with the pod)"
CREATE_CLASS = f"create the DeviceClass {WITH_THE_POD}, list it under deviceClasses in the policy, or turn on " \
    "DeviceClass lookups"


def _unknown(what: str, to: str = "to this claim") -> str:
    return f"without it the webhook cannot tell whether {what}, so the GPU rules were not applied {to}"


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.claims and not facts.unknown_classes:
        return []
    out = []
    for claim in facts.claims:
        if claim.unresolved:
            word = "template" if claim.ref_kind == "ResourceClaimTemplate" else "claim"
            out.append(Finding(
                path=claim.path,
                what=f'claim "{claim.name}" ({claim.path}) refers to {claim.ref} in namespace '
                     f'"{facts.view.namespace}", which could not be resolved ({claim.unresolved})',
                why=_unknown("the pod asks for GPUs"),
                fix=f"create the {word} {WITH_THE_POD}, or turn on claim lookups"))
        elif claim.unknown_classes:
            classes = claim.unknown_classes
            reason = context.class_misses.get(classes[0]) or "not found"
            out.append(Finding(
                path=claim.path,
                what=f'claim "{claim.name}" ({claim.path}, {claim.ref}) asks for the '
                     f"{plural(classes, 'DeviceClass', 'es')} {names(quoted(classes))}, which could not be "
                     f"resolved ({reason})",
                why=_unknown("the claim means GPUs"), fix=CREATE_CLASS))
    for use in facts.unknown_classes:
        name = use.resource[len(IMPLICIT_PREFIX):]
        reason = context.class_misses.get(name) or "not found"
        out.append(Finding(
            path=use.path,
            what=f'{use.container.label} requests {use.resource} ({use.path}), but the DeviceClass "{name}" could not '
                 f"be resolved ({reason})",
            why=_unknown("the resource means GPUs", "to it"), fix=CREATE_CLASS))
    return out
