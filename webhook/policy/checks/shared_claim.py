from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import T
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.SHARED_CLAIM


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
