"""runtime-class-conflict: a device-plugin GPU pod that names another
RuntimeClass than its cohort's. Under another runtime the NVIDIA container toolkit does not inject the
GPUs the device plugin allocated. Fires when the pod is bound for a device-plugin cohort, requests a
device-plugin GPU resource and sets `runtimeClassName` to anything but the cohort's; a pod that sets none
gets the cohort's from default-runtime-class."""
from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T
from webhook.policy.pinning import is_pinned, pinnable
from webhook.policy.results import Finding

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


def exported(policy: Policy) -> bool:
    """Its in-tree policy decides the pods pinned to a cohort, and only a device-plugin cohort has a RuntimeClass."""
    return any(c.mechanism == DEVICE_PLUGIN for c in pinnable(policy))


DEFINITION = Definition(
    "runtime-class-conflict",
    "a device-plugin GPU pod sets a RuntimeClass other than its cohort's",
    "GPU runtime and security",
    __doc__,
    reason=N_(
        "On a device-plugin cohort the GPU reaches the container through the NVIDIA container runtime, the "
        "cohort's RuntimeClass and its containerd handler; a pod with another RuntimeClass is scheduled, its GPU "
        "counted as allocated, and starts without it."),
    checks=(
        Check(POD_SPECS, check),
    ),
    in_tree=InTree(exported, covers=is_pinned, order=4))
