"""How a pod spec asks for GPUs: device-plugin resources, DRA claims, DRA-served extended resources.
Computed once per decision and read by every check."""
from __future__ import annotations

from typing import Final

from webhook.config.model import DEVICE_PLUGIN, DRA, DeviceClassInfo, Policy
from webhook.objects.access import as_dict, as_list, as_str, quantity
from webhook.objects.claims import ClaimSpec, DeviceRequest, claim_spec
from webhook.objects.podspec import Container, PodView, claim_reference
from webhook.policy import cohorts
from webhook.policy.cohorts import CohortChoice
from webhook.policy.context import Context

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
_NEITHER: frozenset[str] = frozenset()
_DEVICE_PLUGIN_ONLY, _DRA_ONLY = frozenset({DEVICE_PLUGIN}), frozenset({DRA})
_BOTH = _DEVICE_PLUGIN_ONLY | _DRA_ONLY


GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")


def is_gpu_resource(name: str) -> bool:
    """Names the NVIDIA device plugin advertises GPUs (or slices of them) under."""
    return name.startswith(GPU_RESOURCE_PREFIXES)


# Plain classes with Final fields, built on every request: see podspec.Container.
class ResourceUse:
    __slots__ = ("container", "resource", "amount", "path", "device_class")

    def __init__(self, container: Container, resource: str, amount: float, path: str,
                 device_class: DeviceClassInfo | None = None) -> None:
        self.container: Final = container
        self.resource: Final = resource
        self.amount: Final = amount  # how many
        self.path: Final = path  # ...resources.limits (or .requests when only requests name it)
        self.device_class: Final = device_class  # set when DRA serves the resource


class ClaimUse:
    """One entry of the pod's `resourceClaims`, resolved as far as the context allows."""

    __slots__ = ("name", "path", "ref_kind", "ref_name", "legacy_source", "spec", "unresolved", "gpu_requests",
                 "unknown_classes", "containers")

    def __init__(self, name: str, path: str, ref_kind: str | None, ref_name: str | None, legacy_source: bool,
                 spec: ClaimSpec | None, unresolved: str | None, gpu_requests: tuple[DeviceRequest, ...],
                 unknown_classes: tuple[str, ...], containers: tuple[Container, ...]) -> None:
        self.name: Final = name
        self.path: Final = path
        self.ref_kind: Final = ref_kind  # ResourceClaimTemplate | ResourceClaim | None (legacy `source` or nothing)
        self.ref_name: Final = ref_name
        self.legacy_source: Final = legacy_source
        self.spec: Final = spec  # None when unresolved
        self.unresolved: Final = unresolved  # why it could not be resolved
        self.gpu_requests: Final = gpu_requests  # leaves whose DeviceClass is a GPU driver's
        self.unknown_classes: Final = unknown_classes  # DeviceClasses that could not be resolved
        self.containers: Final = containers

    @property
    def ref(self) -> str:
        word = "template" if self.ref_kind == "ResourceClaimTemplate" else "claim"
        return f'{word} "{self.ref_name}"' if self.ref_name else "no claim or template"

    @property
    def sharing(self) -> tuple[str, ...]:
        """Sharing strategies the claim's opaque GPU config asks for."""
        if self.spec is None:
            return ()
        return tuple(c.sharing_strategy for c in self.spec.configs if c.sharing_strategy)


class GpuFacts:
    __slots__ = ("view", "device_plugin", "dra_resources", "other_nvidia", "claims", "choice", "unknown_classes",
                 "gpu_claims", "mechanisms", "is_gpu")

    def __init__(self, view: PodView, device_plugin: tuple[ResourceUse, ...], dra_resources: tuple[ResourceUse, ...],
                 other_nvidia: tuple[ResourceUse, ...], claims: tuple[ClaimUse, ...], choice: CohortChoice,
                 unknown_classes: tuple[ResourceUse, ...], gpu_claims: tuple[ClaimUse, ...],
                 mechanisms: frozenset[str], is_gpu: bool) -> None:
        self.view: Final = view
        self.device_plugin: Final = device_plugin  # GPU resources served by the device plugin
        self.dra_resources: Final = dra_resources  # extended resources served by DRA DeviceClasses
        self.other_nvidia: Final = other_nvidia  # nvidia.com/* resources that are not GPUs (e.g. network)
        self.claims: Final = claims
        self.choice: Final = choice
        # deviceclass.resource.kubernetes.io/<class> resources whose DeviceClass could not be resolved
        self.unknown_classes: Final = unknown_classes
        self.gpu_claims: Final = gpu_claims  # the claims with GPU requests
        self.mechanisms: Final = mechanisms  # DEVICE_PLUGIN and/or DRA: how the pod asks for GPUs
        self.is_gpu: Final = is_gpu  # it asks for GPUs at all

    def gpu_containers(self) -> frozenset[str]:
        """Names of containers that get a GPU: by a resource, or by a GPU claim they reference."""
        names = {u.container.name for u in self.device_plugin + self.dra_resources}
        for claim in self.claims:
            if claim.gpu_requests or claim.unresolved:
                names.update(c.name for c in claim.containers)
        return frozenset(names)


def _claim_uses(view: PodView, policy: Policy, context: Context) -> tuple[ClaimUse, ...]:
    users: dict[str, list[Container]] = {}
    for c in view.containers:
        for ref in as_list(c.resources.get("claims")):
            name = as_str(as_dict(ref).get("name"))
            if name:
                users.setdefault(name, []).append(c)
    out = []
    for i, entry in enumerate(as_list(view.spec.get("resourceClaims"))):
        if type(entry) is not dict:
            continue
        name = as_str(entry.get("name")) or f"#{i}"
        path = f"{view.prefix}.resourceClaims[{i}]"
        ref_kind, ref_name, legacy = claim_reference(entry)
        spec = None
        unresolved = None
        gpu: list[DeviceRequest] = []
        unknown: list[str] = []
        if ref_kind and ref_name:
            found = context.claims.get((ref_kind, ref_name))
            if found is None or not found.found:
                unresolved = found.reason if found is not None else "not resolved"
            else:
                spec = claim_spec(found.value, ref_kind)
                for req in spec.requests:
                    for leaf in req.leaves():
                        info = context.device_class(leaf.device_class)
                        if info is None:
                            if leaf.device_class:
                                unknown.append(leaf.device_class)
                        elif policy.selects_gpus(info):
                            gpu.append(leaf)
        out.append(ClaimUse(name, path, ref_kind, ref_name, legacy, spec, unresolved, tuple(gpu),
                            tuple(dict.fromkeys(unknown)), tuple(users.get(name, ()))))
    return tuple(out)


def _device_plugin_cohort(policy: Policy, excluded: tuple[str, ...]) -> bool:
    """Cohorts the pod's node selection rules out cannot serve it: they do not make nvidia.com/gpu ambiguous."""
    return any(c.mechanism == DEVICE_PLUGIN and c.name not in excluded for c in policy.cohorts)


def analyse(view: PodView, policy: Policy, context: Context) -> GpuFacts:
    choice = cohorts.from_selectors(view, policy)
    excluded = choice.excluded
    if choice.cohort is None and not choice.conflict:
        by_namespace = cohorts.from_namespace(view, policy, context, excluded)
        if by_namespace.cohort is not None:
            choice = by_namespace
    target = choice.cohort
    device_plugin: list[ResourceUse] = []
    dra: list[ResourceUse] = []
    other: list[ResourceUse] = []
    unknown: list[ResourceUse] = []
    extended = context.extended
    for c in view.containers:
        resources = c.resources
        if not resources:
            continue
        limits = as_dict(resources.get("limits"))
        for section, values in (("limits", limits), ("requests", as_dict(resources.get("requests")))):
            for name, value in values.items():
                # cpu, memory, ephemeral-storage have no "/"; extended resources must have limits == requests
                if type(name) is not str or "/" not in name or (section == "requests" and name in limits):
                    continue
                count = quantity(value)
                if count is None or count <= 0:
                    continue
                path = f"{c.path}.resources.{section}"
                if name.startswith(IMPLICIT_PREFIX):
                    info = context.device_class(name[len(IMPLICIT_PREFIX):])
                    if info is None:
                        unknown.append(ResourceUse(c, name, count, path))
                    elif policy.selects_gpus(info):
                        dra.append(ResourceUse(c, name, count, path, info))
                    continue
                served = extended.get(name)
                # KEP-5004: a DeviceClass's extendedResourceName lets DRA serve a plain resource; which
                # mechanism the name means then depends on the cohort the pod is bound for.
                # A name the device plugin never advertises (e.g. example.com/gpu) means DRA wherever it is served.
                if served is not None and policy.selects_gpus(served) and (
                    not is_gpu_resource(name) or (target is not None and target.mechanism == DRA)
                    or (target is None and not _device_plugin_cohort(policy, excluded))
                ):
                    dra.append(ResourceUse(c, name, count, path, served))
                elif is_gpu_resource(name):
                    device_plugin.append(ResourceUse(c, name, count, path))
                elif name.startswith("nvidia.com/"):
                    other.append(ResourceUse(c, name, count, path))
    claims = _claim_uses(view, policy, context) if "resourceClaims" in view.spec else ()
    gpu_claims = tuple(c for c in claims if c.gpu_requests) if claims else ()
    if device_plugin:
        mechanisms = _BOTH if dra or gpu_claims else _DEVICE_PLUGIN_ONLY
    else:
        mechanisms = _DRA_ONLY if dra or gpu_claims else _NEITHER
    if target is None and not choice.conflict:
        inferred = cohorts.inferred(mechanisms, policy, excluded)
        if inferred.cohort is not None:
            choice = inferred
    elif choice.source == cohorts.NAMESPACE and not mechanisms:
        # A namespace default says which cohort the namespace's GPU pods use; a pod that asks for no GPU
        # is bound for none (placing it would put CPU work on GPU nodes).
        choice = cohorts.NONE
    return GpuFacts(view, tuple(device_plugin), tuple(dra), tuple(other), claims, choice, tuple(unknown), gpu_claims,
                    mechanisms, bool(mechanisms))
