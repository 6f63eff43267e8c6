"""runtime-class-conflict: a device-plugin GPU pod that names another
RuntimeClass than its cohort's. Under another runtime the NVIDIA container toolkit does not inject the
GPUs the device plugin allocated. Fires when the pod is bound for a device-plugin cohort, requests a
device-plugin GPU resource and sets `runtimeClassName` to anything but the cohort's; a pod that sets none
gets the cohort's from default-runtime-class."""
from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.policy.cel import Validation, lit, pods
from webhook.policy.cel.pods import S, all_containers, device_plugin_gpu
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cel, Lines, cat, msg
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree, Variables
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T
from webhook.policy.pinning import is_pinned, pinnable
from webhook.policy.results import Finding

# What a finding says (its in-tree export, below, writes the same for the apiserver).
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


# -------------------------------------------------------------------------------- its in-tree export, in CEL
# The same findings' lines in CEL (webhook/policy/cel), over the policy's variables; its coverage is
# pods.is_pinned's.

def cel_validations(shape: Shape, policy: Policy, lines: Lines) -> tuple[Variables, list[Validation]]:
    path = cat(shape.path, ".runtimeClassName")
    variables: Variables = [pods.cohort(policy), all_containers(), {"name": "gpu", "expression": device_plugin_gpu()}]
    out = []
    for c in pinnable(policy):
        if c.mechanism != DEVICE_PLUGIN:
            continue
        same = f" || {S}.runtimeClassName == {lit(c.runtime_class_name)}" if c.runtime_class_name else ""
        runtime = str(c.runtime_class_name)
        out.append(Validation(
            f"variables.cohort != {lit(c.name)} || !has({S}.runtimeClassName){same} || !variables.gpu",
            lines.line(msg(WHAT, runtime=Cel(f"{S}.runtimeClassName"), path=path),
                       T(WHY, cohort=c.name, runtime=runtime), T(FIX, runtime=runtime))))
    return variables, out


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
    in_tree=InTree(exported, covers=is_pinned, order=4, cel_covered=pods.is_pinned,
                   cel_validations=cel_validations))
