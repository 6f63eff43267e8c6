"""Which objects the in-tree policies decide for a rule: the same predicate in Python (the engine skips the
rule there, webhook/policy/engine.py) and in CEL (the policy's matchConditions). Outside it, a rule's verdict
or its message needs what CEL cannot do (a lookup, a path as the host resolves it, the pod's GPU
allocation), and the webhook keeps the rule."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.objects.access import as_dict, as_list, as_str, quantity
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import PodView, view_of
from webhook.policy.cohorts import from_selectors
from webhook.policy.gpu import IMPLICIT_PREFIX, is_gpu_resource
from webhook.rules import Rule

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
    and the rule is not exported (export.exported_rules); False here too, so that nothing depends on that."""
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
    claims': webhook/intree/claims.py)."""
    return frozenset(r for r in rules if r in COVERED and COVERED[r](view, policy))
