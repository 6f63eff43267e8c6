"""visible-devices-override: a container that chooses its own GPUs through the
environment, past the allocation owner. For every container (regular, init and ephemeral), GPU pod or not:

- an `env` entry named in the policy's `visibleDeviceVariables` (`CUDA_VISIBLE_DEVICES`,
  `NVIDIA_VISIBLE_DEVICES` and the like), by `value` or `valueFrom`; `NVIDIA_VISIBLE_DEVICES=void` on a
  container that gets no GPU is not one (hide-gpus sets it);
- an `envFrom` ConfigMap or Secret holding such a key (after its `prefix`), where its keys can be read;
- an `envFrom` source that cannot be read, in a pod that requests a GPU, is bound for a cohort or runs a
  device-plugin cohort's RuntimeClass: at most a warning, and none for an `optional` source that does not
  exist.

Messages name the variable, never its value."""
from collections.abc import Iterator, Mapping
from typing import Any

from webhook.config.model import Policy
from webhook.objects.access import as_dict, as_list, as_str, quantity
from webhook.objects.podspec import Container, PodView
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree
from webhook.policy.gpu import GpuFacts, is_gpu_resource
from webhook.policy.messages import N_, T, Text, lookup_reason, names, who
from webhook.policy.results import Finding
from webhook.rule_id import Action

HIDDEN = "void"  # what hide-gpus sets on containers without a GPU: not an override
WHY = T("an override hides or misreports the allocated GPUs, or exposes GPUs the pod never requested")
# for a pod that asks for no GPU there is nothing allocated to hide or misreport: say what is true of it
WHY_NO_GPU = T("the pod is allocated no GPU, so the variable grants nothing and can expose the node's GPUs")
# What a variable's finding says (webhook/intree/rules.py writes the same for the apiserver).
SETS = N_("{container} sets {variable} ({path}, {how})")
FIX = N_("remove {variable} and ask for GPUs with resources.limits or a ResourceClaim")
FROM_KEY = N_('from key {key} of {kind} "{name}"')
FROM_FIELD = T("from a field of the pod")
WITH_VALUE_FROM = T("with valueFrom")
LITERAL = T("with a literal value")
KEY_REFS = (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret"))


def _env_sources(container: Container) -> Iterator[tuple[int, str, str, str, bool]]:
    for i, src in enumerate(container.env_from):
        src = as_dict(src)
        prefix = as_str(src.get("prefix")) or ""
        for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            ref = as_dict(src.get(field))
            name = as_str(ref.get("name"))
            if name:
                yield i, kind, name, prefix, ref.get("optional") is True


def _source(env: Mapping[str, Any]) -> Text:
    """Where the variable's value comes from, named without the value itself."""
    value_from = as_dict(env.get("valueFrom"))
    for field, kind in KEY_REFS:
        ref = as_dict(value_from.get(field))
        if ref:
            return T(FROM_KEY, key=as_str(ref.get("key")) or "?", kind=kind, name=as_str(ref.get("name")) or "?")
    if "fieldRef" in value_from or "resourceFieldRef" in value_from:
        return FROM_FIELD
    if "valueFrom" in env:
        return WITH_VALUE_FROM
    return LITERAL


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    variables = policy.visible_device_variables
    gpu_containers = None
    why = WHY if facts.is_gpu else WHY_NO_GPU
    out = []
    for c in facts.view.containers:
        for i, env in enumerate(c.env):
            name = env.get("name") if type(env) is dict else None
            if type(name) is not str or name not in variables:
                continue
            if name == "NVIDIA_VISIBLE_DEVICES" and env.get("value") == HIDDEN:
                if gpu_containers is None:
                    gpu_containers = facts.gpu_containers()
                if c.name not in gpu_containers:
                    continue
            path = f"{c.path}.env[{i}]"
            how = _source(env)
            out.append(Finding(
                path=path,
                what=T(SETS, container=who(c), variable=name, path=path, how=how),
                why=why,
                fix=T(FIX, variable=name)))
        if not c.env_from:
            continue
        for i, kind, name, prefix, optional in _env_sources(c):
            path = f"{c.path}.envFrom[{i}]"
            found = context.env_sources.get((kind, name))
            if found is not None and found.found:
                hits = sorted(v for v in (prefix + k for k in found.value) if v in variables)
                if hits:
                    out.append(Finding(
                        path=path,
                        what=T('{container} takes {variables} from {kind} "{name}" ({path}, envFrom)',
                               container=who(c), variables=names(hits), kind=kind, name=name, path=path),
                        why=why,
                        fix=T("remove {variables} from the {kind}, or stop importing it with envFrom",
                              variables=names(hits), kind=kind)))
            elif not (optional and found is not None and found.reason == "not found") and _gpu_relevant(facts, policy):
                reason = lookup_reason(found.reason) if found is not None else T("cluster lookups are off")
                out.append(Finding(
                    path=path,
                    what=T('{container} imports {kind} "{name}" with envFrom ({path}), which could not be read '
                           "({reason})", container=who(c), kind=kind, name=name, path=path, reason=reason),
                    why=T("it may set {variables} for a GPU pod",
                          variables=names(sorted(variables & {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}))),
                    fix=T("make sure the {kind} holds none of the visible-devices variables, or turn on the {kind} "
                          "lookups", kind=kind),
                    cap=Action.WARN))
    return out


def _gpu_relevant(facts: GpuFacts, policy: Policy) -> bool:
    if facts.is_gpu or facts.choice.cohort is not None:
        return True
    runtime = facts.view.spec.get("runtimeClassName")
    return runtime is not None and any(c.runtime_class_name == runtime for c in policy.cohorts)


# ----------------------------------------------------------------------------------- its in-tree export's coverage

def exported(policy: Policy) -> bool:
    return bool(policy.visible_device_variables)


def covers(view: PodView, policy: Policy) -> bool:
    """No envFrom (its keys need a lookup) and no NVIDIA_VISIBLE_DEVICES=void (an override or not depending on
    the container's GPUs), in a pod whose asking for GPUs is known without a lookup."""
    for c in view.containers:
        if c.env_from:
            return False
        for env in c.env:
            if type(env) is dict and env.get("name") == "NVIDIA_VISIBLE_DEVICES" and env.get("value") == HIDDEN:
                return False
    return _asks_gpus_plainly(view)


def asked(view: PodView, gpu: bool) -> bool:
    """Some container asks for more than 0 of an extended resource (gpu: of one named as the device
    plugin's GPUs), as gpu.analyse counts them: its limits, or requests the limits do not name."""
    for c in view.containers:
        limits, requests = as_dict(c.resources.get("limits")), as_dict(c.resources.get("requests"))
        for section, values in (("limits", limits), ("requests", requests)):
            for name, value in values.items():
                if type(name) is not str or "/" not in name or (section == "requests" and name in limits):
                    continue
                if is_gpu_resource(name) == gpu and (quantity(value) or 0) > 0:
                    return True
    return False


def _asks_gpus_plainly(view: PodView) -> bool:
    """Whether the pod asks for GPUs is known without a lookup (the message says which): it names a GPU
    resource, or it has no claim and no other extended resource, either of which a DeviceClass may serve."""
    return asked(view, True) or not (as_list(view.spec.get("resourceClaims")) or asked(view, False))


DEFINITION = Definition(
    "visible-devices-override",
    "a container sets CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES or a similar variable",
    "GPU device access",
    __doc__,
    reason=N_(
        "The device plugin or DRA driver makes exactly the allocated GPUs visible; an override grants nothing "
        "and hides or misreports the allocation, and under the nvidia runtime NVIDIA_VISIBLE_DEVICES and its "
        "kin make the container toolkit expose GPUs the pod never requested, outside any allocation."),
    checks=(
        Check(POD_SPECS, check),
    ),
    in_tree=InTree(exported, covers=covers, order=1))
