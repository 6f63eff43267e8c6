from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.SHARED_CLAIM


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.gpu_claims:
        return []
    return [
        Finding(
            path=claim.path,
            what=f'claim "{claim.name}" ({claim.path}) names the GPU ResourceClaim "{claim.ref_name}" directly',
            why="every pod that names one ResourceClaim shares its single allocation, so these pods share the same "
                "GPUs",
            fix="use resourceClaimTemplateName for GPUs of its own per pod, or keep it if sharing is intended")
        for claim in facts.gpu_claims
        if claim.ref_kind == "ResourceClaim"
    ]
