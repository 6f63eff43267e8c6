"""What the apiserver's in-tree policies decide, as the engine reads it: which rules `gpu-admission export`
writes policies for under a configuration (exported_rules, mutated_rules), where their bindings apply them
(scopes, silent_in), and for which objects a rule's policy decides (covered, claim_covered). The engine leaves
a covered rule to the apiserver; outside the coverage, a rule's verdict or its message needs what CEL cannot do
(a lookup, a path as the host resolves it, the pod's GPU allocation), and the webhook keeps the rule. The
exporter (webhook/intree) writes each predicate here again in CEL, as the policies' matchConditions; the parity
tests (tests/intree) hold the two equal."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.objects.access import as_dict, as_list, as_str, quantity
from webhook.objects.claims import ClaimSpec
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import PodView, view_of
from webhook.policy.cohorts import from_selectors
from webhook.policy.driver_configs import DRIVER_KINDS
from webhook.policy.gpu import IMPLICIT_PREFIX, is_gpu_resource
from webhook.rules import Action, Rule

# The rules `export` can write ValidatingAdmissionPolicies for, and MutatingAdmissionPolicies for.
EXPORTED = (Rule.VISIBLE_DEVICES_OVERRIDE, Rule.DEVICE_ACCESS_BYPASS, Rule.RUN_AS_ROOT, Rule.RUNTIME_CLASS_CONFLICT,
            Rule.DOUBLE_MECHANISM, Rule.DEVICE_CONFIG)
MUTATED = (Rule.DEFAULT_RUNTIME_CLASS, Rule.DEFAULT_SECURITY_CONTEXT)


# ------------------------------------------------------------------------------------------------ the bindings

# What each action does to a request, as the webhook answers it (a dry-run policy never denies: the
# webhook warns "would deny" instead).
ACTIONS = {Action.ENFORCE: ["Deny"], Action.WARN: ["Warn"], Action.AUDIT: ["Audit"]}
DRY_RUN = {Action.ENFORCE: ["Warn", "Audit"], Action.WARN: ["Warn"], Action.AUDIT: ["Audit"]}


@dataclass(frozen=True, slots=True)
class Scope:
    """Namespaces where the rule has one action: `namespaces` In, or (None) every other namespace."""

    validation_actions: tuple[str, ...]
    namespaces: tuple[str, ...] | None


def scopes(policy: Policy, rule: Rule) -> list[Scope]:
    """The rule's bindings: namespace overrides first, then the rest, less the exempt namespaces."""
    def actions(mode: str, action: Action) -> tuple[str, ...]:
        return tuple((DRY_RUN if mode == "audit" else ACTIONS).get(action, ()))

    by_actions: dict[tuple[str, ...], list[str]] = {}
    for ns in sorted(policy.overridden_namespaces - policy.exempt_namespaces - {policy.service_namespace}):
        mode, acts = policy.settings_for(ns)  # as the engine's plan reads them
        by_actions.setdefault(actions(mode, acts[rule]), []).append(ns)
    out = [Scope(a, tuple(n)) for a, n in by_actions.items() if a]
    default = actions(policy.mode, policy.actions[rule])
    if default:
        out.append(Scope(default, None))
    return out


def exported_rules(policy: Policy) -> frozenset[Rule]:
    """The rules whose policies `export` writes for this configuration."""
    return frozenset(r for r in EXPORTED if scopes(policy, r)
                     and (r is not Rule.VISIBLE_DEVICES_OVERRIDE or policy.visible_device_variables)
                     and (r is not Rule.RUN_AS_ROOT or pinnable(policy))
                     and (r is not Rule.RUNTIME_CLASS_CONFLICT
                          or any(c.mechanism == DEVICE_PLUGIN for c in pinnable(policy)))
                     and (r is not Rule.DOUBLE_MECHANISM
                          or (not policy.lookups.device_classes and bool(gpu_class_resources(policy))))
                     and (r is not Rule.DEVICE_CONFIG or not policy.lookups.device_classes))


def silent_namespaces(policy: Policy, rule: Rule) -> tuple[tuple[str, ...], bool]:
    """Where the webhook applies the mutation silently: the overridden namespaces that keep it so, and
    whether every other (not exempt, not overridden) namespace does."""
    def silent(mode: str, action: Action) -> bool:
        return mode != "audit" and action is Action.ENFORCE

    inside = []
    for ns in sorted(policy.overridden_namespaces - policy.exempt_namespaces - {policy.service_namespace}):
        mode, acts = policy.settings_for(ns)  # as the engine's plan reads them
        if silent(mode, acts[rule]):
            inside.append(ns)
    return tuple(inside), silent(policy.mode, policy.actions[rule])


def silent_in(policy: Policy, rule: Rule, namespace: str) -> bool:
    """The rule's bindings match `namespace` (not exempt; the engine's plan checks that)."""
    inside, default = policy.derived(silent_namespaces, rule)
    return namespace in inside if namespace in policy.overridden_namespaces else default


def _cohorts(policy: Policy, rule: Rule) -> tuple[Cohort, ...]:
    """The pinnable cohorts whose pods the rule's policy decides (a device-plugin cohort without a runtime
    class would have the webhook write a null)."""
    return tuple(c for c in pinnable(policy) if rule is not Rule.DEFAULT_RUNTIME_CLASS
                 or c.mechanism != DEVICE_PLUGIN or c.runtime_class_name is not None)


def mutated_rules(policy: Policy) -> frozenset[Rule]:
    """The rules whose MutatingAdmissionPolicies `export` writes for this configuration."""
    def writes(rule: Rule) -> bool:
        inside, default = silent_namespaces(policy, rule)
        if not (inside or default) or not _cohorts(policy, rule):
            return False
        if rule is Rule.DEFAULT_RUNTIME_CLASS:
            return any(c.mechanism == DEVICE_PLUGIN for c in _cohorts(policy, rule))
        s = policy.security
        return (s.run_as_non_root is not None or s.run_as_user is not None or bool(s.seccomp_profile)
                or s.allow_privilege_escalation is not None or s.read_only_root_filesystem is not None
                or bool(s.drop_capabilities))
    return frozenset(r for r in MUTATED if writes(r))


def covered_cohorts(policy: Policy, rule: Rule) -> tuple[Cohort, ...]:
    return policy.derived(_cohorts, rule)




# ----------------------------------------------------------------------------------------- pod-bearing objects

HIDDEN = "void"  # hide-gpus's value: an override or not depending on the container's GPUs
DEVICE_LIST_MARK = "nvidia-container-devices"
# A host path the kernel resolves to itself: absolute, no `.`/`..`/empty parts, no link (/var/run, /proc/<pid>/root).
PLAIN_PATH = r"^(/[A-Za-z0-9_.@+:,=~-]+)+$"
_PLAIN = re.compile(PLAIN_PATH)
DOTS = r"(^|/)\.\.?(/|$)"
_DOTS = re.compile(DOTS)


def plain_path(path: str) -> bool:
    return bool(_PLAIN.fullmatch(path)) and not _DOTS.search(path) and not (
        path in ("/var/run", "/proc") or path.startswith(("/var/run/", "/proc/")))


def _visible_devices(view: PodView, policy: Policy) -> bool:
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


def _device_access(view: PodView, policy: Policy) -> bool:
    platform = policy.platform_device_annotations
    annotations = view.meta.get("annotations")
    if platform and type(annotations) is dict and any(type(k) is str and k.startswith(platform) for k in annotations):
        return False  # which device paths its value lists needs a parser CEL does not have
    for c in view.containers:
        if c.security.get("privileged") is True:
            return False
        for mount in c.mounts:
            mp = mount.get("mountPath") if type(mount) is dict else None
            if type(mp) is str and DEVICE_LIST_MARK in mp:
                return False
    for vol in as_list(view.spec.get("volumes")):
        if type(vol) is dict and "hostPath" in vol:
            path = as_str(as_dict(vol["hostPath"]).get("path"))
            if path is None or not plain_path(path):
                return False
    return True


def _pinnable(policy: Policy) -> tuple[Cohort, ...]:
    """The cohorts a nodeSelector of exactly their node labels binds a pod to (cohort resolution, docs/architecture.md
    section 4): their labels tell them apart from every other cohort."""
    out = []
    for c in policy.cohorts:
        probe = {"kind": "Pod", "metadata": {}, "spec": {"nodeSelector": dict(c.node_labels), "containers": []}}
        if c.node_labels and from_selectors(view_of(probe, BY_KIND["Pod"], ""), policy).cohort is c:
            out.append(c)
    return tuple(out)


def pinnable(policy: Policy) -> tuple[Cohort, ...]:
    return policy.derived(_pinnable)


def pinned(view: PodView, policy: Policy) -> Cohort | None:
    """The cohort the pod's nodeSelector binds it to when it holds exactly one pinnable cohort's node labels,
    no other label a cohort declares, and no required node affinity: there the cohort is the selector's
    alone (no namespace default, no inference from claims)."""
    spec = view.spec
    affinity = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity"))
    if "requiredDuringSchedulingIgnoredDuringExecution" in affinity:
        return None
    selector = as_dict(spec.get("nodeSelector"))
    if not selector:
        return None
    for c in pinnable(policy):
        if all(selector.get(k) == v for k, v in c.node_labels.items()) and all(
                k in c.node_labels or k not in policy.label_cohorts for k in selector):
            return c
    return None


def _pinned(view: PodView, policy: Policy) -> bool:
    return pinned(view, policy) is not None


def _runtime_class(view: PodView, policy: Policy) -> bool:
    """Pinned, and not to a device-plugin cohort without a runtime class (the webhook would write a null)."""
    c = pinned(view, policy)
    return c is not None and (c.mechanism != DEVICE_PLUGIN or c.runtime_class_name is not None)



def _mapped(policy: Policy) -> frozenset[str]:
    return frozenset(i.extended_resource_name for i in policy.device_classes.values() if i.extended_resource_name)


def mapped_names(policy: Policy) -> frozenset[str]:
    """Resource names a listed DeviceClass serves through extendedResourceName: whether such a name means the
    device plugin or DRA depends on the cohort the pod is bound for (gpu.analyse)."""
    return policy.derived(_mapped)


def _gpu_classes(policy: Policy) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((IMPLICIT_PREFIX + name, info.name) for name, info in policy.device_classes.items()
                        if policy.selects_gpus(info)))


def gpu_class_resources(policy: Policy) -> tuple[tuple[str, str], ...]:
    """(deviceclass.resource.kubernetes.io/<class>, the class's name) for each listed GPU class: the
    implicit extended resources that DRA serves with GPUs (KEP-5004)."""
    return policy.derived(_gpu_classes)


def _double_mechanism(view: PodView, policy: Policy) -> bool:
    """No claims and no name a listed class maps: the pod's mechanisms are then its resource names alone, read
    against the policy's DeviceClasses. With DeviceClass lookups on, the cluster's classes replace those,
    and the rule is not exported (exported_rules); False here too, so that nothing depends on that."""
    if policy.lookups.device_classes or as_list(view.spec.get("resourceClaims")):
        return False
    mapped = mapped_names(policy)
    if not mapped:
        return True
    for c in view.containers:
        resources = c.resources
        for section in ("limits", "requests"):
            if any(name in mapped for name in as_dict(resources.get(section))):
                return False
    return True


COVERED: Mapping[Rule, Callable[[PodView, Policy], bool]] = {
    Rule.VISIBLE_DEVICES_OVERRIDE: _visible_devices, Rule.DEVICE_ACCESS_BYPASS: _device_access,
    Rule.RUN_AS_ROOT: _pinned, Rule.RUNTIME_CLASS_CONFLICT: _pinned,
    Rule.DEFAULT_RUNTIME_CLASS: _runtime_class, Rule.DEFAULT_SECURITY_CONTEXT: _pinned,
    Rule.DOUBLE_MECHANISM: _double_mechanism}


def covered(rules: frozenset[Rule], view: PodView, policy: Policy) -> frozenset[Rule]:
    """Those of `rules` whose in-tree policy decides for this pod-bearing object (device-config's are
    claims': claim_covered)."""
    return frozenset(r for r in rules if r in COVERED and COVERED[r](view, policy))


# -------------------------------------------------------------------------- ResourceClaims and their templates

PRINTABLE = r"^[ -~]*$"  # printable ASCII: what the webhook's line writes unescaped (RE2: `$` is the end)
_PRINTABLE = re.compile(r"[ -~]*")  # fullmatch: Python's `$` would also match before a final newline
INT64 = range(-(2**63), 2**63)  # a JSON integer beyond int64 reaches CEL as a double
SHARING_KINDS = ("GpuConfig", "MigDeviceConfig")


def _text(value: object, printable: bool) -> bool:
    """Absent, or a string (printable: one a message may quote)."""
    return value is _ABSENT or (type(value) is str and (not printable or bool(_PRINTABLE.fullmatch(value))))


_ABSENT = object()


def _keys(value: Mapping[str, Any]) -> bool:
    return all(_PRINTABLE.fullmatch(k) for k in value)


def _map(obj: Mapping[str, Any], key: str, then: Callable[[Mapping[str, Any]], bool]) -> bool:
    value = obj.get(key, _ABSENT)
    return value is _ABSENT or (type(value) is dict and _keys(value) and then(value))


def _typed(obj: Mapping[str, Any], key: str, kind: type) -> bool:
    value = obj.get(key, _ABSENT)
    return value is _ABSENT or (type(value) is kind and (kind is not int or value in INT64))


def _mps(m: Mapping[str, Any]) -> bool:
    return (_typed(m, "defaultActiveThreadPercentage", int) and _typed(m, "multiUser", bool)
            and "defaultPinnedDeviceMemoryLimit" not in m and "defaultPerDevicePinnedMemoryLimit" not in m)


def plain(parameters: object, driver: str) -> bool:
    """Whether the device-config policy decides this config's parameters exactly as the webhook does."""
    if type(parameters) is not dict:
        return False
    p: dict[str, Any] = parameters
    if not (_text(p.get("apiVersion", _ABSENT), True) and _text(p.get("kind", _ABSENT), True)):
        return False
    kind = p.get("kind")
    if kind not in DRIVER_KINDS[driver]:
        return True  # the driver stops at the kind: nothing else is read
    if not _keys(p):
        return False
    if kind in SHARING_KINDS:
        return _map(p, "sharing", lambda s: _text(s.get("strategy", _ABSENT), True) and _map(s, "mpsConfig", _mps) and (
            kind != "GpuConfig" or _map(s, "timeSlicingConfig", lambda t: _text(t.get("interval", _ABSENT), True))))
    if kind == "VfioDeviceConfig":
        return _map(p, "iommu", lambda i: _text(i.get("backendPolicy", _ABSENT), True)
                    and _typed(i, "enableAPIDevice", bool))
    return _text(p.get("domainID", _ABSENT), False) and (
        kind != "ComputeDomainChannelConfig" or _text(p.get("allocationMode", _ABSENT), False))


def claim_covered(spec: ClaimSpec, policy: Policy) -> bool:
    """The device-config policy decides this claim or template: every NVIDIA config is plain."""
    for config in spec.configs:
        driver = config.driver
        if driver is None or driver not in DRIVER_KINDS:
            continue
        if not plain(config.parameters, driver):
            return False
    return True
