from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.RUNTIME_CLASS_CONFLICT


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
        what=f'runtimeClassName is "{runtime}" ({path}) in a device-plugin GPU pod',
        why=f'cohort "{cohort.name}" injects GPUs through the {cohort.runtime_class_name} RuntimeClass (its containerd '
            "handler); another runtime starts the container without them",
        fix=f"set runtimeClassName: {cohort.runtime_class_name}, or remove it and let the webhook set it")]
