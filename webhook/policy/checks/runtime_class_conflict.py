from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.RUNTIME_CLASS_CONFLICT
# What a finding says (webhook/intree/rules.py writes the same for the apiserver).
WHAT = N_('runtimeClassName is "{runtime}" ({path}) in a device-plugin GPU pod')
WHY = N_('cohort "{cohort}" injects GPUs only through the {runtime} RuntimeClass')
FIX = N_("set runtimeClassName: {runtime}, or remove it and let the webhook set it")


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    cohort = facts.choice.cohort
    if cohort is None or cohort.mechanism != DEVICE_PLUGIN or not facts.device_plugin:
        return []
    runtime = facts.view.spec.get("runtimeClassName")
    if runtime is None or runtime == cohort.runtime_class_name:
        return []
    path = f"{facts.view.prefix}.runtimeClassName"
    return [Finding(
        path=path,
        what=T(WHAT, runtime=str(runtime), path=path),
        why=T(WHY, cohort=cohort.name, runtime=str(cohort.runtime_class_name)),
        fix=T(FIX, runtime=str(cohort.runtime_class_name)))]
