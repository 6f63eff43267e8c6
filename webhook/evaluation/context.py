"""Resolve, before the pure policy runs, everything an object refers to: claims and templates in its
namespace, their DeviceClasses, DeviceClasses serving extended resources, the namespace's labels and the
key names of envFrom sources. Asks only what the object needs, so a plain pod costs almost nothing."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from webhook.config.model import Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.claims import claim_spec
from webhook.objects.kinds import BY_KIND
from webhook.objects.lookup import Lookup, Resolver
from webhook.objects.owners import DEVICE_PLUGIN, owners
from webhook.objects.podspec import PodView, claim_reference, view_of
from webhook.policy.context import Context, base_context, classes_from_objects, device_class_info, extended_map
from webhook.policy.gpu import IMPLICIT_PREFIX

_STANDARD_PREFIXES = ("kubernetes.io/", "requests.", "hugepages-")


def build_context(obj: dict, kind: str, namespace: str, *, policy: Policy, resolver: Resolver,
                  user: dict | None = None, view: PodView | None = None, old: Mapping | None = None) -> Context:
    info = BY_KIND.get(kind)
    if info is not None and info.pod_spec_path is None and kind in _INFRASTRUCTURE:
        return _infrastructure(obj, kind, policy, resolver, user, old)
    if kind == "DeviceClass" and as_dict(obj.get("spec")).get("extendedResourceName"):
        # allocation-owner: every class that maps the same extended resource, whatever its selectors select
        base = base_context(policy)
        return Context(classes=base.classes, extended=base.extended, user=user or base.user,
                       operator=MappingProxyType({"deviceclasses": resolver.device_class_list()}))
    base = base_context(policy)
    claims: dict = {}
    class_names: set[str] = set()
    env_sources: dict = {}
    operator: Mapping[str, Lookup] = {}
    extended_wanted = False
    labels = None
    if info is not None and info.pod_spec_path is not None:
        view = view or view_of(obj, info, namespace)
        for entry in as_list(view.spec.get("resourceClaims")):
            ref_kind, name, _ = claim_reference(as_dict(entry))
            if ref_kind and name and (ref_kind, name) not in claims:
                lookup = (resolver.resource_claim_template if ref_kind == "ResourceClaimTemplate"
                          else resolver.resource_claim)
                found = claims[(ref_kind, name)] = lookup(namespace, name)
                if found.found and type(found.value) is dict:
                    class_names.update(_classes_of(found.value, ref_kind))
        for c in view.containers:
            resources = c.resources
            for section in ("limits", "requests"):
                names = resources.get(section)
                if type(names) is not dict:
                    continue
                for rname in names:
                    if type(rname) is not str or "/" not in rname or rname.startswith(_STANDARD_PREFIXES):
                        continue
                    if rname.startswith(IMPLICIT_PREFIX):
                        class_names.add(rname[len(IMPLICIT_PREFIX):])
                    else:
                        extended_wanted = True
            for src in c.env_from:
                src = as_dict(src)
                for field, src_kind, lookup in (("configMapRef", "ConfigMap", resolver.config_map_keys),
                                                ("secretRef", "Secret", resolver.secret_keys)):
                    name = as_str(as_dict(src.get(field)).get("name"))
                    if name and (src_kind, name) not in env_sources:
                        env_sources[(src_kind, name)] = lookup(namespace, name)
        if namespace and namespace not in policy.namespace_cohorts:
            found = resolver.namespace_labels(namespace)
            labels = found.value if found.found and type(found.value) is dict else None
        if info.kind != "Pod":
            operator = _operator_for(view, resolver)
    elif kind in ("ResourceClaim", "ResourceClaimTemplate"):
        class_names.update(_classes_of(obj, kind))

    listed = resolver.device_class_list() if extended_wanted else None
    if listed is not None and not listed.found:
        listed = None  # the config's classes are all there is
    # The cluster's capacity matters only to a pod asking for extended resources or claims.
    inventory = resolver.inventory() if (extended_wanted or claims) else None
    # Which RuntimeClasses exist matters only to a pod that default-runtime-class may give one.
    runtime_classes = None
    if extended_wanted:
        runtime = resolver.runtime_classes()
        if runtime.found:
            runtime_classes = runtime.value
    if not (claims or class_names or env_sources or listed or labels):
        # The request's user matters only to the policy's exceptions.
        if inventory is None and runtime_classes is None and not operator and (not user or not policy.exceptions):
            return base
        return Context(classes=base.classes, extended=base.extended, user=user or base.user, inventory=inventory,
                       runtime_classes=runtime_classes, operator=MappingProxyType(dict(operator)))
    misses: dict[str, str] = {}
    classes = classes_from_objects(policy, listed.value, misses) if listed else dict(base.classes)
    for name in sorted(class_names):
        found = resolver.device_class(name)
        if found.found and type(found.value) is dict:
            read = device_class_info(found.value, policy, policy.device_classes.get(name))
            if read.unknown:
                classes.pop(name, None)
                misses[name] = read.unknown
            else:
                classes[name] = read
                misses.pop(name, None)
        elif name not in classes:
            misses[name] = found.reason
    return Context(
        claims=MappingProxyType(claims),
        classes=MappingProxyType(classes),
        class_misses=MappingProxyType(misses),
        extended=MappingProxyType(extended_map(classes)) if listed else base.extended,
        namespace_labels=labels,
        env_sources=MappingProxyType(env_sources),
        user=user or base.user,
        inventory=inventory,
        runtime_classes=runtime_classes,
        operator=MappingProxyType(dict(operator)),
    )


_INFRASTRUCTURE = frozenset({"ClusterPolicy", "GPUCluster", "NVIDIADriver", "Node"})
# Which of the GPU Operator's objects each kind is judged against.
_AGAINST = {"ClusterPolicy": ("gpuclusters",), "GPUCluster": ("clusterpolicies",), "NVIDIADriver": ("nvidiadrivers",)}


def _operator_for(view: PodView, resolver: Resolver) -> dict[str, Lookup]:
    """For a pod template that runs an allocation owner: the Operator's objects that already run its mechanism."""
    found = owners(view.spec, view.prefix)
    if not found:
        return {}
    plural = "clusterpolicies" if found[0].mechanism == DEVICE_PLUGIN else "gpuclusters"
    return {plural: resolver.operator_objects(plural)}


def infrastructure_context(view: PodView, *, policy: Policy, resolver: Resolver,
                           user: dict | None = None) -> Context | None:
    """The context of a controller in an exempt namespace, judged by allocation-owner alone; None when its pod
    template runs no allocation owner (nothing to judge, nothing asked of the cluster)."""
    operator = _operator_for(view, resolver)
    if not operator:
        return None
    base = base_context(policy)
    return Context(classes=base.classes, extended=base.extended, user=user or base.user,
                   operator=MappingProxyType(operator))


def _infrastructure(obj: dict, kind: str, policy: Policy, resolver: Resolver, user: dict | None,
                    old: Mapping | None) -> Context:
    base = base_context(policy)
    old = old or None  # a CREATE's: none
    operator = {plural: resolver.operator_objects(plural) for plural in _AGAINST.get(kind, ())}
    node_pods = None
    if kind == "Node" and old is not None and _labels(obj) != _labels(old):
        name = as_str(as_dict(obj.get("metadata")).get("name"))
        node_pods = resolver.pods_on_node(name) if name else None
    return Context(classes=base.classes, extended=base.extended, user=user or base.user,
                   operator=MappingProxyType(operator), node_pods=node_pods, old=old)


def _labels(obj: Mapping) -> object:
    return as_dict(obj.get("metadata")).get("labels")


def _classes_of(obj: Mapping, kind: str) -> set[str]:
    return {leaf.device_class for req in claim_spec(obj, kind).requests for leaf in req.leaves() if leaf.device_class}
