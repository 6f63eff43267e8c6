from webhook.policy.messages import message
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.DOUBLE_MECHANISM


def check(facts, context, policy):
    if not facts.device_plugin or not (facts.gpu_claims or facts.dra_resources):
        return []
    dp = facts.device_plugin[0]
    if facts.gpu_claims:
        claim = facts.gpu_claims[0]
        other = f'claim "{claim.name}" (DRA, {claim.ref})'
        keep = "either the limit or the claim"
    else:
        use = facts.dra_resources[0]
        other = f"{use.resource} (DRA, DeviceClass \"{use.device_class.name}\", {use.path})"
        keep = "one of the two resources"
    what = f"{dp.container.label} requests {dp.resource} ({dp.path}) and {other}"
    return [Finding(RULE, dp.path, message(
        policy, RULE, facts.view.subject, what,
        "the same GPU must come from one mechanism only (device plugin or DRA)", f"keep {keep}"))]
