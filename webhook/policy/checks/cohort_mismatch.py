from webhook.config.model import DEVICE_PLUGIN, DRA
from webhook.policy.cohorts import INFERRED
from webhook.policy.messages import message, names
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.COHORT_MISMATCH


def check(facts, context, policy):
    choice = facts.choice
    subject = facts.view.subject
    if choice.conflict:
        return [Finding(RULE, choice.path, message(
            policy, RULE, subject, f"node selection ({choice.path}) targets the cohorts {names(choice.conflict)}",
            "a pod runs on exactly one GPU cohort and each cohort allocates GPUs its own way",
            f"select the nodes of one cohort only (label {policy.allocation_label})"))]
    cohort = choice.cohort
    if cohort is None or choice.source == INFERRED:
        return []
    where = f'cohort "{cohort.name}" (chosen by {choice.path})'
    out = []
    if cohort.mechanism == DRA:
        for use in facts.device_plugin:
            out.append(Finding(RULE, use.path, message(
                policy, RULE, subject,
                f"{use.container.label} requests {use.resource} ({use.path}) but is bound for {where}",
                "that cohort runs the NVIDIA DRA driver, not the device plugin, so the resource is never offered there",
                "ask for the GPU with a ResourceClaimTemplate of a gpu.nvidia.com DeviceClass and "
                "resources.claims, or target the device-plugin cohort")))
    elif cohort.mechanism == DEVICE_PLUGIN:
        for claim in facts.gpu_claims:
            out.append(Finding(RULE, claim.path, message(
                policy, RULE, subject,
                f'claim "{claim.name}" ({claim.path}, {claim.ref}) asks for GPUs through DRA but the pod is bound for {where}',
                "that cohort runs the NVIDIA device plugin, whose GPUs DRA cannot allocate",
                f"request {cohort.resources[0] if cohort.resources else 'nvidia.com/gpu'} in resources.limits "
                "instead of the claim, or target the DRA cohort")))
        for use in facts.dra_resources:
            out.append(Finding(RULE, use.path, message(
                policy, RULE, subject,
                f"{use.container.label} requests {use.resource} ({use.path}), served by DRA DeviceClass "
                f'"{use.device_class.name}", but the pod is bound for {where}',
                "that cohort runs the NVIDIA device plugin, not the DRA driver",
                "request the device plugin's resource instead, or target the DRA cohort")))
    return out
