"""unresolved-claim: what the policy cannot judge because a reference does not resolve.

- A `resourceClaims` entry names a ResourceClaimTemplate or ResourceClaim that is not found in the pod's
  namespace (the CLI's documents; the webhook's lookups off, not found, or not answered in time).
- A resolved claim asks for a DeviceClass that is neither in the policy's `deviceClasses` nor found, or
  whose CEL selectors cannot be read (and the policy does not vouch for it).
- A container requests `deviceclass.resource.kubernetes.io/<class>` for a class that cannot be
  resolved."""
from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition
from webhook.policy.gpu import IMPLICIT_PREFIX, GpuFacts
from webhook.policy.messages import N_, Arg, T, lookup_reason, names, quoted, who
from webhook.policy.results import Finding
from webhook.rule_id import Action

CREATE_CLASS = T("create the DeviceClass first (or give it to `gpu-admission check` with the pod), list it under "
                 "deviceClasses in the policy, or turn on DeviceClass lookups")


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.claims and not facts.unknown_classes:
        return []
    out = []
    for claim in facts.claims:
        if claim.unresolved:
            out.append(Finding(
                path=claim.path,
                what=T('claim "{claim}" ({path}) refers to {ref} in namespace "{namespace}", which could not be '
                       "resolved ({reason})", claim=claim.name, path=claim.path, ref=claim.ref,
                       namespace=facts.view.namespace, reason=lookup_reason(claim.unresolved)),
                why=T("the GPU rules could not be applied to this claim"),
                fix=T("create the template first (or give it to `gpu-admission check` with the pod), or turn on "
                      "claim lookups") if claim.ref_kind == "ResourceClaimTemplate" else
                T("create the claim first (or give it to `gpu-admission check` with the pod), or turn on claim "
                  "lookups")))
        elif claim.unknown_classes:
            classes = claim.unknown_classes
            args: dict[str, Arg] = {"claim": claim.name, "path": claim.path, "ref": claim.ref,
                                    "classes": names(quoted(classes)),
                                    "reason": lookup_reason(context.class_misses.get(classes[0]) or "not found")}
            out.append(Finding(
                path=claim.path,
                what=T('claim "{claim}" ({path}, {ref}) asks for the DeviceClass {classes}, which could not be '
                       "resolved ({reason})", **args) if len(classes) == 1 else
                T('claim "{claim}" ({path}, {ref}) asks for the DeviceClasses {classes}, which could not be '
                  "resolved ({reason})", **args),
                why=T("the GPU rules could not be applied to this claim"), fix=CREATE_CLASS))
    for use in facts.unknown_classes:
        name = use.resource[len(IMPLICIT_PREFIX):]
        reason = lookup_reason(context.class_misses.get(name) or "not found")
        out.append(Finding(
            path=use.path,
            what=T('{container} requests {resource} ({path}), but the DeviceClass "{name}" could not be resolved '
                   "({reason})", container=who(use.container), resource=use.resource, path=use.path, name=name,
                   reason=reason),
            why=T("the GPU rules could not be applied to it"), fix=CREATE_CLASS))
    return out


DEFINITION = Definition(
    "unresolved-claim",
    "a referenced ResourceClaim or template that cannot be resolved",
    "DRA claims",
    __doc__,
    default=Action.WARN,
    reason=N_(
        "Whether a pod asks for GPUs through DRA is written in the claim or template it names and in its "
        "DeviceClass, not in the pod, and the webhook never guesses; unresolved, the claim escapes the GPU rules, "
        "so a double mechanism or a mismatched cohort may go unnoticed. It may simply not exist yet, so the rule "
        "warns."),
    checks=(
        Check(POD_SPECS, check),
    ))
