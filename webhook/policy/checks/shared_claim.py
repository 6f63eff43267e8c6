"""shared-claim: a GPU ResourceClaim referenced by name (`resourceClaimName`), which other
pods can reference too: they then share its GPUs, which the pod may not expect. One finding per such
entry whose claim resolves to a GPU request; a claim that cannot be resolved is unresolved-claim's."""
from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T
from webhook.policy.results import Finding
from webhook.rule_id import Action


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.gpu_claims:
        return []
    return [
        Finding(
            path=claim.path,
            what=T('claim "{claim}" ({path}) names the GPU ResourceClaim "{ref}" directly', claim=claim.name,
                   path=claim.path, ref=claim.ref_name or ""),
            why=T("every pod naming one ResourceClaim shares its one allocation, the same GPUs"),
            fix=T("use resourceClaimTemplateName for GPUs of its own per pod, or keep it if sharing is intended"))
        for claim in facts.gpu_claims
        if claim.ref_kind == "ResourceClaim"
    ]


DEFINITION = Definition(
    "shared-claim",
    "a GPU ResourceClaim referenced by name, so possibly shared by several pods",
    "GPU sharing",
    __doc__,
    default=Action.WARN,
    reason=N_(
        "A ResourceClaim is one allocation: every pod that names the same claim gets the same GPUs at the same "
        "time, with no isolation between them, so every replica of a Deployment or Job lands on one device. "
        "That is sometimes intended, so the rule warns."),
    checks=(
        Check(POD_SPECS, check),
    ))
