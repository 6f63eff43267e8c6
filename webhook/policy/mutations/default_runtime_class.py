from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Said, T
from webhook.rules import Rule

RULE = Rule.DEFAULT_RUNTIME_CLASS


def mutate(draft: Draft, facts: GpuFacts, policy: Policy) -> list[tuple[str, Said]]:
    cohort = facts.choice.cohort
    if cohort is None or cohort.mechanism != DEVICE_PLUGIN or not facts.device_plugin:
        return []
    if facts.view.spec.get("runtimeClassName") is not None:
        return []
    draft.node("spec")["runtimeClassName"] = cohort.runtime_class_name
    return [("spec.runtimeClassName", lambda: T('runtimeClassName "{runtime}" of cohort "{cohort}"',
                                                runtime=str(cohort.runtime_class_name), cohort=cohort.name))]
