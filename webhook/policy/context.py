"""What a decision may know beyond the object itself, resolved before the policy runs (by the CLI's
bundle, the config, or the cluster cache) and handed in frozen."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from webhook.config.model import DeviceClassInfo, Policy
from webhook.objects.access import as_dict, as_str
from webhook.objects.inventory import Inventory
from webhook.objects.kinds import LEGACY_DRA_VERSIONS
from webhook.objects.lookup import Lookup
from webhook.objects.selectors import selector_texts

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Context:
    # ("ResourceClaim" | "ResourceClaimTemplate", name) in the object's namespace -> the object, or why not
    claims: Mapping[tuple[str, str], Lookup] = field(default_factory=lambda: _EMPTY)
    # every DeviceClass known: the config's, then the bundle's / cluster's (which win)
    classes: Mapping[str, DeviceClassInfo] = field(default_factory=lambda: _EMPTY)
    class_misses: Mapping[str, str] = field(default_factory=lambda: _EMPTY)  # class name -> reason
    extended: Mapping[str, DeviceClassInfo] = field(default_factory=lambda: _EMPTY)  # extendedResourceName -> class
    namespace_labels: Mapping[str, str] | None = None
    # ("ConfigMap" | "Secret", name) -> frozenset of key names, or why not
    env_sources: Mapping[tuple[str, str], Lookup] = field(default_factory=lambda: _EMPTY)
    user: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)  # the request's userInfo
    # the cluster's Nodes and ResourceSlice devices (unsatisfiable-request); None when those lookups are off
    inventory: Inventory | None = None
    # the names of the cluster's RuntimeClasses; None when they are not looked up
    runtime_classes: frozenset[str] | None = None
    # the allocation-owner rule's infrastructure: the GPU Operator's objects by plural (each a tuple of
    # dicts, or why not), the pods bound to a Node being updated, and that update's old object
    operator: Mapping[str, Lookup] = field(default_factory=lambda: _EMPTY)
    node_pods: Lookup | None = None
    old: Mapping[str, Any] | None = None

    def device_class(self, name: str | None) -> DeviceClassInfo | None:
        return self.classes.get(name) if name else None


def device_class_info(obj: Mapping[str, Any], policy: Policy, known: DeviceClassInfo | None = None) -> DeviceClassInfo:
    """Read a DeviceClass object: driver and device type by evaluating its CEL selectors (the object is what
    the cluster allocates by, so it wins over the config's entry of that name, which gives only the name)."""
    meta = as_dict(obj.get("metadata"))
    spec = as_dict(obj.get("spec"))
    selection = policy.class_selectors.selection(obj)  # type: ignore[arg-type]
    if selection.unknown and known is not None:
        # The policy's entry vouches for what a class the runtime cannot read selects.
        selection = type(selection)(known.driver, known.device_type)
    legacy = []
    if "suitableNodes" in spec:
        legacy.append("spec.suitableNodes")
    if as_str(obj.get("apiVersion")) in LEGACY_DRA_VERSIONS:
        legacy.append("apiVersion")
    return DeviceClassInfo(
        name=as_str(meta.get("name")) or (known.name if known else ""),
        driver=selection.driver,
        device_type=selection.device_type,
        extended_resource_name=as_str(spec.get("extendedResourceName")),
        legacy_fields=tuple(legacy),
        unknown=selection.unknown,
        selectors=selector_texts(obj),
    )


def base_context(policy: Policy) -> Context:
    """The context when nothing outside the object is known: the config's DeviceClasses only."""
    return policy.derived(_make_base_context)


def _make_base_context(policy: Policy) -> Context:
    return Context(classes=policy.device_classes, extended=MappingProxyType(extended_map(policy.device_classes)))


def classes_from_objects(policy: Policy, objects: Iterable[object],
                         misses: dict[str, str]) -> dict[str, DeviceClassInfo]:
    """DeviceClass dicts (bundle or cluster) read into infos, layered over the config's. A class whose
    selectors cannot be read goes to `misses` (name -> why) instead, and hides the config's entry."""
    out = dict(policy.device_classes)
    for obj in objects:
        if type(obj) is dict:
            name = as_str(as_dict(obj.get("metadata")).get("name")) or ""
            info = device_class_info(obj, policy, policy.device_classes.get(name))
            if not info.name:
                continue
            if info.unknown:
                out.pop(info.name, None)
                misses[info.name] = info.unknown
            else:
                out[info.name] = info
    return out


def extended_map(classes: Mapping[str, DeviceClassInfo]) -> dict[str, DeviceClassInfo]:
    out: dict[str, DeviceClassInfo] = {}
    for name in sorted(classes):  # deterministic when two classes claim one resource name
        info = classes[name]
        if info.extended_resource_name and info.extended_resource_name not in out:
            out[info.extended_resource_name] = info
    return out

