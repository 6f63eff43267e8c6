"""The policy configuration as frozen values. Built only by `webhook.config.load`, which passes the fields a
policy document gives: every default of the policy lives here, as a field's default (and, where it depends on the
cohort's mechanism or the kind of sharing, in MECHANISM_DEFAULTS and SHARING_DEFAULTS)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar

from webhook.objects.selectors import NON_GPU_DEVICE_TYPES, ClassSelectors
from webhook.rules import DEFAULT_ACTIONS, Action, Rule
from webhook.version import docs_base_url as release_docs_url

T = TypeVar("T")

DEVICE_PLUGIN = "device-plugin"
DRA = "dra"
MECHANISMS = (DEVICE_PLUGIN, DRA)

EMPTY: Mapping = MappingProxyType({})

DEFAULT_VISIBLE_DEVICE_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "CUDA_MPS_PIPE_DIRECTORY",
    "GPU_DEVICE_ORDINAL",
)
# GKE's device injection: the runtime mounts the host paths listed in `devices.gke.io/container.<name>`
# into that container (GPUDirect-TCPX manifests use it for /dev/nvidia*), outside any allocation.
DEFAULT_PLATFORM_DEVICE_ANNOTATIONS = ("devices.gke.io/container.",)


@dataclass(frozen=True, slots=True)
class SecurityDefaults:
    run_as_non_root: bool | None = True
    run_as_user: int | None = 65532
    seccomp_profile: str | None = "RuntimeDefault"
    allow_privilege_escalation: bool | None = False
    read_only_root_filesystem: bool | None = True
    drop_capabilities: tuple[str, ...] = ("ALL",)


@dataclass(frozen=True, slots=True)
class DeviceClassInfo:
    """What the policy knows of a DeviceClass: whose devices it selects and which extended resource it serves."""

    name: str
    driver: str | None = None
    device_type: str | None = None
    extended_resource_name: str | None = None
    legacy_fields: tuple[str, ...] = ()  # e.g. ("suitableNodes",): fields no 1.34+ cluster accepts
    unknown: str | None = None  # why what the class selects cannot be told (its CEL selectors): unresolved
    # the class object's CEL selector expressions; None when only the config names the class
    selectors: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SharedResource:
    name: str  # the resource the device plugin shares (nvidia.com/gpu)
    replicas: int


@dataclass(frozen=True, slots=True)
class Sharing:
    """Time-slicing or MPS of a device-plugin cohort (the plugin's `sharing:` config)."""

    resources: tuple[SharedResource, ...]
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False

    def exposed_names(self) -> tuple[str, ...]:
        suffix = ".shared" if self.rename_by_default else ""
        return tuple(r.name + suffix for r in self.resources)


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str | None = None
    operator: str = "Equal"
    value: str | None = None
    effect: str | None = None

    def as_dict(self) -> dict:
        out: dict = {}
        if self.key is not None:
            out["key"] = self.key
        out["operator"] = self.operator
        if self.value is not None:
            out["value"] = self.value
        if self.effect is not None:
            out["effect"] = self.effect
        return out


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    mechanism: str
    node_labels: Mapping[str, str]
    tolerations: tuple[Toleration, ...] = ()
    manager: str = "standalone"
    # device-plugin
    runtime_class_name: str | None = None
    resources: tuple[str, ...] = ()
    extra_resources: tuple[str, ...] = ()
    mig_strategy: str = "none"
    mig_profiles: Mapping[str, int] = field(default_factory=lambda: EMPTY)
    time_slicing: Sharing | None = None
    mps: Sharing | None = None
    # dra
    driver: str | None = None
    device_types: tuple[str, ...] = ()
    device_classes: tuple[str, ...] = ()  # empty: any class of the driver whose device type is offered
    max_devices_per_claim: int = 8
    sharing_strategies: tuple[str, ...] = ()
    admin_access_namespaces: tuple[str, ...] = ()
    # an autoscaler adds the cohort's nodes (scale from zero): no node is no verdict; `autoscaled_allocatable`
    # is the most of each resource one node it adds can have (a resource not named there: not known)
    autoscaled: bool = False
    autoscaled_allocatable: Mapping[str, float] = field(default_factory=lambda: EMPTY)

    # derived once (read on every admission request): see __post_init__
    _shared: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())
    _offered: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())

    def __post_init__(self):
        shared = {name for s in (self.time_slicing, self.mps) if s is not None for name in s.exposed_names()}
        # With renameByDefault the device plugin advertises shared replicas as <name>.shared *instead of* <name>.
        renamed = {r.name for s in (self.time_slicing, self.mps) if s is not None and s.rename_by_default
                   for r in s.resources}
        offered = (set(self.resources) - renamed) | set(self.extra_resources) | shared
        if self.mig_strategy == "mixed":
            # The device plugin advertises "+me" (media extension) instances under the plain profile's
            # name (NVIDIA/k8s-device-plugin#1462): no resource name of their own.
            offered.update("nvidia.com/mig-" + p for p in self.mig_profiles if "+" not in p)
        object.__setattr__(self, "_shared", frozenset(shared))
        object.__setattr__(self, "_offered", frozenset(offered))

    def shared_resources(self) -> frozenset[str]:
        """Names under which this cohort's nodes advertise shared (time-sliced or MPS) replicas."""
        return self._shared

    def offered_resources(self) -> frozenset[str]:
        """Every `nvidia.com/*` extended resource this cohort's nodes advertise."""
        return self._offered

    def gpu_resource(self) -> str:
        """The name to request one GPU (or replica) by on this cohort, for messages' fixes."""
        offered = self.offered_resources()
        for name in self.resources:
            if name in offered:
                return name
        shared = sorted(self.shared_resources())
        return shared[0] if shared else "nvidia.com/gpu"


# What a cohort of each mechanism has where its document says nothing; Cohort's own defaults hold for the rest.
MECHANISM_DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    DEVICE_PLUGIN: MappingProxyType({"runtime_class_name": "nvidia", "resources": ("nvidia.com/gpu",)}),
    DRA: MappingProxyType({"driver": "gpu.nvidia.com", "device_types": ("gpu",)}),
})
# A cohort's sharing by its document key: the device plugin always fails MPS requests for more than one replica.
SHARING_DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "timeSlicing": EMPTY,
    "mps": MappingProxyType({"fail_requests_greater_than_one": True}),
})


@dataclass(frozen=True, slots=True)
class Exception_:
    """A config-owned exception: requests matching every given selector have `rules` lifted."""

    name: str
    rules: frozenset[Rule]
    namespaces: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # fnmatch patterns on the object's name
    service_accounts: tuple[str, ...] = ()  # "namespace/name" of the pod's service account
    users: tuple[str, ...] = ()  # userInfo.username of the request
    groups: tuple[str, ...] = ()  # any of userInfo.groups
    scheduler_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NamespaceOverride:
    namespaces: tuple[str, ...]
    mode: str | None = None
    actions: Mapping[Rule, Action] = field(default_factory=lambda: EMPTY)
    language: str | None = None  # of the messages in these namespaces (webhook/locale), else the policy's


@dataclass(frozen=True, slots=True)
class Lookups:
    """Which cluster lookups the webhook may make. All off by default."""

    resource_claims: bool = False
    device_classes: bool = False
    namespaces: bool = False
    config_maps: bool = False
    secrets: bool = False
    timeout_seconds: float = 1.0
    nodes: bool = False  # labels, taints and allocatable of every Node (unsatisfiable-request)
    resource_slices: bool = False  # the devices ResourceSlices publish, and DeviceTaintRules (unsatisfiable-request)
    runtime_classes: bool = False  # which RuntimeClasses exist (default-runtime-class injects only those)
    node_pools: bool = False  # Karpenter NodePools and Cluster API node groups: which cohorts are autoscaled
    gpu_operator: bool = False  # ClusterPolicies, GPUClusters, NVIDIADrivers (allocation-owner)
    pods: bool = False  # the pods bound to a node whose cohort labels change (allocation-owner)

    @property
    def any(self) -> bool:
        return (self.resource_claims or self.device_classes or self.namespaces or self.config_maps or self.secrets
                or self.nodes or self.resource_slices or self.runtime_classes or self.node_pools
                or self.gpu_operator or self.pods)


@dataclass(frozen=True, slots=True)
class InTree:
    """Which exported rules the apiserver itself runs (`gpu-admission export`, the chart's `inTree`): the
    webhook then skips those rules for the objects the in-tree policies cover."""

    validation: bool = False
    mutation: bool = False


@dataclass(frozen=True, slots=True)
class Policy:
    cohorts: tuple[Cohort, ...]
    mode: str = "enforce"  # enforce | audit
    docs_base_url: str = field(default_factory=release_docs_url)  # the rule pages of the installed release
    language: str = "en"  # of the messages (webhook/locale.LANGUAGES); never read from the workload
    service_namespace: str = "gpu-admission"
    exempt_namespaces: frozenset[str] = frozenset()
    actions: Mapping[Rule, Action] = field(default_factory=lambda: MappingProxyType(dict(DEFAULT_ACTIONS)))
    on_error: Mapping[Rule, str] = field(default_factory=lambda: EMPTY)  # "allow" | "deny" when a rule raises
    namespace_overrides: tuple[NamespaceOverride, ...] = ()
    namespace_cohorts: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    exceptions: tuple[Exception_, ...] = ()
    security: SecurityDefaults = field(default_factory=SecurityDefaults)
    gpu_drivers: frozenset[str] = frozenset({"gpu.nvidia.com"})
    device_classes: Mapping[str, DeviceClassInfo] = field(default_factory=lambda: EMPTY)
    visible_device_variables: frozenset[str] = frozenset(DEFAULT_VISIBLE_DEVICE_VARIABLES)
    # annotation key prefixes by which a platform injects host devices (device-access-bypass)
    platform_device_annotations: tuple[str, ...] = DEFAULT_PLATFORM_DEVICE_ANNOTATIONS
    exclusive_label: str = "workload.example.com/gpu-exclusive"
    allocation_label: str = "workload.example.com/gpu-allocation"
    lookups: Lookups = field(default_factory=Lookups)
    in_tree: InTree = field(default_factory=InTree)
    # derived once from the fields above, and what the policy keeps for itself: see __post_init__
    cohort_names: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())
    # nodeSelector items -> what they mean for cohort choice (webhook/policy/cohorts.py), kept per policy
    selector_readings: dict = field(init=False, repr=False, compare=False, default_factory=dict)
    # node label key -> names of the cohorts that do not declare it (their nodes may carry any value)
    label_undeclared: Mapping[str, frozenset[str]] = field(init=False, repr=False, compare=False,
                                                           default_factory=lambda: EMPTY)
    # DeviceClass selectors evaluated for this policy's GPU drivers, each verdict cached by content
    class_selectors: ClassSelectors = field(init=False, repr=False, compare=False, default=None)  # type: ignore[assignment]
    # derived once (read on every admission request): see __post_init__
    # node label key -> value -> names of the cohorts whose nodes carry that label
    label_cohorts: Mapping[str, Mapping[str, frozenset[str]]] = field(init=False, repr=False, compare=False,
                                                                      default_factory=lambda: EMPTY)
    discriminating_labels: Mapping[str, Mapping[str, Cohort]] = field(init=False, repr=False, compare=False,
                                                                       default_factory=lambda: EMPTY)
    overridden_namespaces: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())
    # what the layers above derive from this policy alone (see derived()); never shared with another policy
    _derived: dict[tuple, Any] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self):
        by_key: dict[str, dict[str, Cohort]] = {}
        carrying: dict[str, dict[str, set[str]]] = {}
        for c in self.cohorts:
            for k, v in c.node_labels.items():
                by_key.setdefault(k, {})[v] = c
                carrying.setdefault(k, {}).setdefault(v, set()).add(c.name)
        # label key -> {value: cohort}, for the keys whose values tell cohorts apart
        telling = {k: MappingProxyType(vals) for k, vals in by_key.items() if len(vals) > 1 or len(self.cohorts) == 1}
        object.__setattr__(self, "label_cohorts", MappingProxyType(
            {k: MappingProxyType({v: frozenset(names) for v, names in vals.items()}) for k, vals in carrying.items()}))
        object.__setattr__(self, "discriminating_labels", MappingProxyType(telling))
        object.__setattr__(self, "class_selectors", ClassSelectors(self.gpu_drivers))
        names = frozenset(c.name for c in self.cohorts)
        object.__setattr__(self, "cohort_names", names)
        object.__setattr__(self, "label_undeclared", MappingProxyType(
            {k: names - frozenset().union(*vals.values()) for k, vals in carrying.items()}))
        object.__setattr__(self, "overridden_namespaces",
                           frozenset(n for o in self.namespace_overrides for n in o.namespaces))

    def derived(self, make: Callable[..., T], *args: Any) -> T:
        """`make(self, *args)`, computed once for this policy. A reload builds a new Policy, so a request still
        holding the old one can never store what it derives into the new one's cache. Two threads may both
        compute a missing value; both compute the same thing from the same policy."""
        key = (make, *args)
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = make(self, *args)
            return value

    def cohort(self, name: str) -> Cohort | None:
        for c in self.cohorts:
            if c.name == name:
                return c
        return None

    def selects_gpus(self, info: DeviceClassInfo | None) -> bool:
        """The class gives GPUs (or MIG / VFIO slices of one): a GPU driver's device of a GPU type."""
        return info is not None and info.driver in self.gpu_drivers and info.device_type not in NON_GPU_DEVICE_TYPES

    def is_exempt(self, namespace: str | None) -> bool:
        return bool(namespace) and (namespace in self.exempt_namespaces or namespace == self.service_namespace)

    def settings_for(self, namespace: str | None) -> tuple[str, Mapping[Rule, Action]]:
        """The mode and the rules' actions in `namespace`: every override naming it, in order, over the
        global ones (a later entry wins)."""
        mode, actions = self.mode, self.actions
        for override in self.namespace_overrides:
            if namespace in override.namespaces:
                mode = override.mode or mode
                if override.actions:
                    actions = {**actions, **override.actions}
        return mode, actions

    def language_for(self, namespace: str | None) -> str:
        """The messages' language in `namespace`: the last override naming it that sets one, else the policy's."""
        language = self.language
        for override in self.namespace_overrides:
            if namespace in override.namespaces:
                language = override.language or language
        return language

    def in_language(self, language: str) -> Policy:
        """This policy with every message in `language`: what a CLI user asks for (--lang, the locale) wins
        over the policy's `language` and its namespace overrides'."""
        overrides = tuple(replace(o, language=None) for o in self.namespace_overrides)
        return replace(self, language=language, namespace_overrides=overrides)

    def docs_url(self, rule: Rule, language: str = "en") -> str:
        """The rule's page; a Japanese message links to its Japanese twin, docs/rules/ja/<rule>.md."""
        if language == "en":
            return f"{self.docs_base_url}/{rule.value}.md"
        return f"{self.docs_base_url}/{language}/{rule.value}.md"
