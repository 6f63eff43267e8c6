from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import names
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.DOUBLE_MECHANISM


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.device_plugin or not (facts.gpu_claims or facts.dra_resources):
        return []
    dp = facts.device_plugin[0]
    if facts.gpu_claims:
        claim = facts.gpu_claims[0]
        other = f'claim "{claim.name}" (DRA, {claim.ref})'
        users = [c for c in claim.containers if c.name != dp.container.name]
        if dp.container.name in {c.name for c in claim.containers} or not users:
            joined = f"and {other}"
        else:
            joined = f"while {names([c.label for c in users])} use{'s' if len(users) == 1 else ''} {other}"
        # the resource is named where the user wrote it: limits, or requests only
        keep = f"either the {'limit' if dp.path.endswith('.limits') else 'request'} or the claim"
    else:
        use = facts.dra_resources[0]
        served_by = use.device_class.name if use.device_class else "?"  # always set on a DRA-served resource
        other = f"{use.resource} (DRA, DeviceClass \"{served_by}\", {use.path})"
        joined = (f"and {other}" if use.container.name == dp.container.name
                  else f"while {use.container.label} requests {other}")
        keep = "one of the two resources"
    what = f"{dp.container.label} requests {dp.resource} ({dp.path}) {joined}"
    return [Finding(
        path=dp.path,
        what=what,
        why="the same GPU must come from one mechanism only (device plugin or DRA)",
        fix=f"keep {keep}")]
