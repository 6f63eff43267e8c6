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
from webhook.objects.podspec import SECTIONS, SIDECAR, Container, PodView
from webhook.policy.cel import Validation, lit, strings
from webhook.policy.cel.pods import S, all_containers, at, container_asks, device_plugin_gpu, gpu_name, has_claims, some
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cel, If, Lines, Msg, Piece, cat, msg, text
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree, Variables
from webhook.policy.gpu import GpuFacts, is_gpu_resource
from webhook.policy.messages import CONTAINER_WORDS, N_, WHO, T, Text, lookup_reason, names, who
from webhook.policy.results import Finding
from webhook.rule_id import Action

HIDDEN = "void"  # what hide-gpus sets on containers without a GPU: not an override
WHY = T("an override hides or misreports the allocated GPUs, or exposes GPUs the pod never requested")
# for a pod that asks for no GPU there is nothing allocated to hide or misreport: say what is true of it
WHY_NO_GPU = T("the pod is allocated no GPU, so the variable grants nothing and can expose the node's GPUs")
# What a variable's finding says (its in-tree export, below, writes the same for the apiserver).
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


# -------------------------------------------------------------------------------- its in-tree export, in CEL
# The same coverage and findings' lines in CEL (webhook/policy/cel), over the policy's variables.

def _cel_who(section: str, word: str, c: str) -> Msg:
    """messages.who of the container `c` of `section`: a restartable init container is a sidecar."""
    words: Piece = CONTAINER_WORDS[word]
    if section == "initContainers":
        words = If(f"has({c}.restartPolicy) && {c}.restartPolicy == 'Always'", CONTAINER_WORDS[SIDECAR], words)
    return msg(WHO, word=words, name=Cel(f"{c}.name"))


def _cel_or(value: str, default: str) -> str:
    """CEL: the string field `value`, or `default` where it is absent or empty (the engine's `or`)."""
    return f"(has({value}) && {value} != '' ? {value} : {lit(default)})"


def _other_name(k: str) -> str:
    return f"{k}.contains('/') && !({gpu_name(k)})"


def cel_covered(shape: Shape, policy: Policy) -> str:
    """CEL: covers(...)."""
    return "!" + some(lambda c: (
        f"(has({c}.envFrom) && size({c}.envFrom) > 0) || (has({c}.env) && {c}.env.exists(e, "
        f"e.name == 'NVIDIA_VISIBLE_DEVICES' && has(e.value) && e.value == {lit(HIDDEN)}))")) + \
        f" && (variables.gpu || !({has_claims(S)} || {some(lambda c: container_asks(c, _other_name))}))"


def _cel_source(e: str) -> Piece:
    """_source of the variable `e`: where its value comes from."""
    value_from = f"{e}.valueFrom"
    how: Piece = If(f"has({value_from}.fieldRef) || has({value_from}.resourceFieldRef)", FROM_FIELD,
                    WITH_VALUE_FROM)
    for field, kind in reversed(KEY_REFS):
        ref = f"{value_from}.{field}"
        how = If(f"has({ref})", msg(FROM_KEY, key=Cel(_cel_or(f"{ref}.key", "?")), kind=kind,
                                    name=Cel(_cel_or(f"{ref}.name", "?"))), how)
    return If(f"has({value_from})", how, LITERAL)


def cel_validations(shape: Shape, policy: Policy, lines: Lines) -> tuple[Variables, list[Validation]]:
    """One validation per section, failing for its first container that sets a listed variable; the container
    and the variable's entry are variables of their own, so that the message reads them by name, and where each
    section's entry takes its value from is said once for all three (`how`, in the order of the sections)."""
    why = If("variables.gpu", WHY, WHY_NO_GPU)  # the coverage leaves no other case
    variables: Variables = [{"name": "names", "expression": strings(policy.visible_device_variables)},
                            all_containers(),
                            {"name": "gpu", "expression": device_plugin_gpu()}]
    out = []
    found = []
    for n, (section, word) in enumerate(SECTIONS):
        has_var = "has(c.env) && c.env.exists(e, e.name in variables.names)"
        i, c, j, e = (f"variables.{section}{suffix}" for suffix in ("_i", "_c", "_j", "_e"))
        variables += [
            {"name": f"{section}_i", "expression": f"has({S}.{section}) ? {S}.{section}.map(c, {has_var})"
                                                   ".indexOf(true) : -1"},
            {"name": f"{section}_c", "expression": f"{S}.{section}[{i}]"},
            {"name": f"{section}_j", "expression": f"{c}.env.map(e, e.name in variables.names).indexOf(true)"},
            {"name": f"{section}_e", "expression": f"{c}.env[{j}]"},
        ]
        found.append(f"({i} >= 0 ? [{e}] : [])")
        # the entry's place in `how`: the sections before it that have one
        place = " + ".join(f"(variables.{s}_i >= 0 ? 1 : 0)" for s, _ in SECTIONS[:n]) or "0"
        path = cat(shape.path, at(section, i), ".env[", Cel(f"string({j})"), "]")
        name = Cel(f"{e}.name")
        out.append(Validation(f"{i} < 0", lines.line(
            msg(SETS, container=_cel_who(section, word, c), variable=name, path=path,
                how=Cel(f"variables.how[{place}]")), why, msg(FIX, variable=name))))
    variables += [{"name": "found", "expression": " + ".join(found)},
                  {"name": "how", "expression": f"variables.found.map(e, {text(policy, _cel_source('e'))})"}]
    return variables, out


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
    in_tree=InTree(exported, covers=covers, order=1, cel_covered=cel_covered, cel_validations=cel_validations))
