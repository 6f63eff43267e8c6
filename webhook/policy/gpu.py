"""How a pod spec asks for GPUs: device-plugin resources, DRA claims, DRA-served extended resources.
Computed once per decision and read by every check."""
from __future__ import annotations

from dataclasses import dataclass, replace

from webhook.config.model import DEVICE_PLUGIN, DRA, DeviceClassInfo, Policy
from webhook.objects.access import NO_DICT, as_dict, as_list, as_str, quantity
from webhook.objects.claims import ClaimSpec, DeviceRequest, claim_spec
from webhook.objects.podspec import Container, PodView, claim_reference
from webhook.policy import cohorts
from webhook.policy.cohorts import CohortChoice
from webhook.policy.context import Context
from webhook.policy.messages import T, Text

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
_NEITHER: frozenset[str] = frozenset()
_DEVICE_PLUGIN_ONLY, _DRA_ONLY = frozenset({DEVICE_PLUGIN}), frozenset({DRA})
_BOTH = _DEVICE_PLUGIN_ONLY | _DRA_ONLY


GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")


def is_gpu_resource(name: str) -> bool:
    """Names the NVIDIA device plugin advertises GPUs (or slices of them) under."""
    return name.startswith(GPU_RESOURCE_PREFIXES)


# Built for every extended resource of every container: positional, as podspec.Container is.
@dataclass(slots=True)
class ResourceUse:
    container: Container
    resource: str
    amount: float  # how many
    path: str  # ...resources.limits (or .requests when only requests name it)
    device_class: DeviceClassInfo | None = None  # set when DRA serves the resource


@dataclass(slots=True, kw_only=True)
class ClaimUse:
    """One entry of the pod's `resourceClaims`, resolved as far as the context allows."""

    name: str
    path: str
    ref_kind: str | None  # ResourceClaimTemplate | ResourceClaim | None (legacy `source` or nothing)
    ref_name: str | None
    legacy_source: bool
    spec: ClaimSpec | None  # None when unresolved
    unresolved: str | None  # why it could not be resolved
    gpu_requests: tuple[DeviceRequest, ...]  # leaves whose DeviceClass is a GPU driver's
    unknown_classes: tuple[str, ...]  # DeviceClasses that could not be resolved
    containers: tuple[Container, ...]

    @property
    def ref(self) -> Text:
        """What the entry refers to, as messages say it."""
        if not self.ref_name:
            return T("no claim or template")
        if self.ref_kind == "ResourceClaimTemplate":
            return T('template "{name}"', name=self.ref_name)
        return T('claim "{name}"', name=self.ref_name)

    @property
    def sharing(self) -> tuple[str, ...]:
        """Sharing strategies the claim's opaque GPU config asks for."""
        if self.spec is None:
            return ()
        return tuple(c.sharing_strategy for c in self.spec.configs if c.sharing_strategy)


@dataclass(slots=True)  # positional, as podspec.Container: built once or twice per request, with ten fields
class GpuFacts:
    view: PodView
    device_plugin: tuple[ResourceUse, ...]  # GPU resources served by the device plugin
    dra_resources: tuple[ResourceUse, ...]  # extended resources served by DRA DeviceClasses
    other_nvidia: tuple[ResourceUse, ...]  # nvidia.com/* resources that are not GPUs (e.g. network)
    claims: tuple[ClaimUse, ...]
    choice: CohortChoice
    # deviceclass.resource.kubernetes.io/<class> resources whose DeviceClass could not be resolved
    unknown_classes: tuple[ResourceUse, ...]
    gpu_claims: tuple[ClaimUse, ...]  # the claims with GPU requests
    mechanisms: frozenset[str]  # DEVICE_PLUGIN and/or DRA: how the pod asks for GPUs
    is_gpu: bool  # it asks for GPUs at all
    # Some resource's mechanism was read from the cohort chosen: a name that both the device plugin and a
    # DRA DeviceClass's extendedResourceName serve (KEP-5004). The facts of a revision then depend on its choice.
    by_cohort: bool = False

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
        out.append(ClaimUse(name=name, path=path, ref_kind=ref_kind, ref_name=ref_name, legacy_source=legacy,
                            spec=spec, unresolved=unresolved, gpu_requests=tuple(gpu),
                            unknown_classes=tuple(dict.fromkeys(unknown)), containers=tuple(users.get(name, ()))))
    return tuple(out)


def _device_plugin_cohort(policy: Policy, excluded: tuple[str, ...]) -> bool:
    """Cohorts the pod's node selection rules out cannot serve it: they do not make nvidia.com/gpu ambiguous."""
    return any(c.mechanism == DEVICE_PLUGIN and c.name not in excluded for c in policy.cohorts)


def analyse(view: PodView, policy: Policy, context: Context) -> GpuFacts:
    choice = _bound(view, policy, context)
    excluded = choice.excluded
    target = choice.cohort
    device_plugin: list[ResourceUse] = []
    dra: list[ResourceUse] = []
    other: list[ResourceUse] = []
    unknown: list[ResourceUse] = []
    by_cohort = False
    extended = context.extended
    for c in view.containers:
        resources = c.resources
        if not resources:
            continue
        limits, requests = resources.get("limits"), resources.get("requests")  # read inline: the hottest loop
        limits = limits if type(limits) is dict else NO_DICT
        for section, values in (("limits", limits), ("requests", requests if type(requests) is dict else NO_DICT)):
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
                if served is not None and policy.selects_gpus(served):
                    if not is_gpu_resource(name):
                        dra.append(ResourceUse(c, name, count, path, served))
                        continue
                    by_cohort = True
                    if (target is not None and target.mechanism == DRA) or \
                            (target is None and not _device_plugin_cohort(policy, excluded)):
                        dra.append(ResourceUse(c, name, count, path, served))
                        continue
                if is_gpu_resource(name):
                    device_plugin.append(ResourceUse(c, name, count, path))
                elif name.startswith("nvidia.com/"):
                    other.append(ResourceUse(c, name, count, path))
    claims = _claim_uses(view, policy, context) if "resourceClaims" in view.spec else ()
    gpu_claims = tuple(c for c in claims if c.gpu_requests) if claims else ()
    if device_plugin:
        mechanisms = _BOTH if dra or gpu_claims else _DEVICE_PLUGIN_ONLY
    else:
        mechanisms = _DRA_ONLY if dra or gpu_claims else _NEITHER
    return GpuFacts(view, tuple(device_plugin), tuple(dra), tuple(other), claims, _settled(choice, mechanisms, policy),
                    tuple(unknown), gpu_claims, mechanisms, bool(mechanisms), by_cohort)


def revised(facts: GpuFacts, view: PodView, policy: Policy, context: Context) -> GpuFacts:
    """The facts of `view`, a copy-on-write revision of `facts.view` (the mutated Pod, seen through
    podspec.revised_view), equal to `analyse(view, ...)` at a fraction of its cost. Mutations set
    runtimeClassName, securityContext, node selection, tolerations and env, never a resource or a claim:
    the resources and claims are kept (their containers swapped for the revision's), and the cohort is
    chosen again, since default-placement changes the node selection. The view is analysed again where that
    does not hold: a container's resources, name or place, or the pod's resourceClaims, are not the same
    objects as before, or a resource's mechanism was read from the cohort chosen (`by_cohort`)."""
    before = facts.view
    if facts.by_cohort or len(view.containers) != len(before.containers) or \
            view.spec.get("resourceClaims") is not before.spec.get("resourceClaims"):
        return analyse(view, policy, context)
    swapped: dict[int, Container] = {}
    for new, old in zip(view.containers, before.containers):
        if new is not old:
            if new.resources is not old.resources or new.path != old.path or new.name != old.name:
                return analyse(view, policy, context)
            swapped[id(old)] = new
    choice = _settled(_bound(view, policy, context), facts.mechanisms, policy)
    if not swapped:
        return GpuFacts(view, facts.device_plugin, facts.dra_resources, facts.other_nvidia, facts.claims, choice,
                        facts.unknown_classes, facts.gpu_claims, facts.mechanisms, facts.is_gpu, False)
    claims = tuple(_swap_claim(c, swapped) for c in facts.claims) if facts.claims else ()
    gpu_claims = tuple(c for c in claims if c.gpu_requests) if claims else ()
    return GpuFacts(view, _swap(facts.device_plugin, swapped), _swap(facts.dra_resources, swapped),
                    _swap(facts.other_nvidia, swapped), claims, choice, _swap(facts.unknown_classes, swapped),
                    gpu_claims, facts.mechanisms, facts.is_gpu, False)


def _swap(uses: tuple[ResourceUse, ...], swapped: dict[int, Container]) -> tuple[ResourceUse, ...]:
    if not uses:
        return uses
    out = []
    for u in uses:  # a loop, not a generator: most pods have one or two uses, and a generator costs its frame
        out.append(ResourceUse(swapped.get(id(u.container), u.container), u.resource, u.amount, u.path,
                               u.device_class))
    return tuple(out)


def _swap_claim(claim: ClaimUse, swapped: dict[int, Container]) -> ClaimUse:
    if not any(id(c) in swapped for c in claim.containers):
        return claim
    return replace(claim, containers=tuple(swapped.get(id(c), c) for c in claim.containers))


def _bound(view: PodView, policy: Policy, context: Context) -> CohortChoice:
    """The cohort the pod's node selection binds it to, else its namespace's (before inference)."""
    choice = cohorts.from_selectors(view, policy)
    if choice.cohort is None and not choice.conflict:
        by_namespace = cohorts.from_namespace(view, policy, context, choice.excluded)
        if by_namespace.cohort is not None:
            return by_namespace
    return choice


def _settled(choice: CohortChoice, mechanisms: frozenset[str], policy: Policy) -> CohortChoice:
    """The choice given how the pod asks for GPUs: inferred from its one mechanism where nothing binds it."""
    if choice.cohort is None and not choice.conflict:
        inferred = cohorts.inferred(mechanisms, policy, choice.excluded)
        if inferred.cohort is not None:
            return inferred
    elif choice.source == cohorts.NAMESPACE and not mechanisms:
        # A namespace default says which cohort the namespace's GPU pods use; a pod that asks for no GPU
        # is bound for none (placing it would put CPU work on GPU nodes).
        return cohorts.NONE
    return choice
