"""Cluster lookups for the webhook: ResourceClaims, ResourceClaimTemplates, DeviceClasses, namespace
labels and the key names of ConfigMaps and Secrets, each served from a watch-backed in-memory cache.

An admission request never waits on the API while the cache has the object. A miss (cache not synced
yet, or an object created a moment ago whose watch event is still on its way) makes one GET bounded
by `Lookups.timeout_seconds`; a 404 is a definite "not found", any other failure a miss with its
reason, which the policy turns into `unresolved-claim` or a warning, never into "allowed because
unknown". A 404 is remembered for a few seconds (a burst of pods naming an absent optional ConfigMap
costs one GET; an object created meanwhile still arrives through the watch and wins). After a timeout
or connection failure, misses answer at once for a short hold-off instead of spending the webhook's
budget on an API that just failed. A kind switched off in the config answers
immediately, starts no informer and makes no request (so it needs no RBAC).

Secrets and ConfigMaps are reduced to their key names before anything is stored: values never stay
in memory."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from webhook.config.model import Lookups, Policy
from webhook.lookups import apiserver
from webhook.lookups.apiserver import ApiError
from webhook.lookups.base import NoLookups
from webhook.lookups.informer import Informer, InformerSettings, InformerStats
from webhook.lookups.kubeconfig import load_api_client
from webhook.lookups.resources import (
    CLUSTER_POLICIES,
    CONFIG_MAPS,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    GPU_CLUSTERS,
    MACHINE_DEPLOYMENTS,
    NAMESPACES,
    NODE_POOLS,
    NODES,
    NVIDIA_DRIVERS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    RUNTIME_CLASSES,
    SECRETS,
    ApiResource,
)
from webhook.objects import inventory
from webhook.objects.inventory import Inventory, node_summary
from webhook.objects.lookup import Lookup, Resolver


def _whole(obj: dict) -> dict:
    return obj


def _labels(obj: dict) -> dict:
    return dict(_mapping((obj.get("metadata") or {}).get("labels")))


def _config_map_keys(obj: dict) -> frozenset[str]:
    return frozenset(_mapping(obj.get("data"))) | frozenset(_mapping(obj.get("binaryData")))


def _secret_keys(obj: dict) -> frozenset[str]:
    return frozenset(_mapping(obj.get("data")))  # stringData is write-only: the API never returns it


def _slice_spec(obj: dict) -> dict:
    return {"spec": _mapping(obj.get("spec"))}  # devices, driver, node: all the capacity snapshot reads


def _name(obj: dict) -> str:
    return str(_mapping(obj.get("metadata")).get("name") or "")


def _pool(kind: str) -> Callable[[dict], dict]:
    """What a node pool's reading needs: its kind (a list's items carry none), name, annotations, the spec
    (template, requirements, limits)."""
    def keep(obj: dict) -> dict:
        meta = _mapping(obj.get("metadata"))
        return {"kind": kind, "metadata": {"name": meta.get("name"), "annotations": meta.get("annotations")},
                "spec": _mapping(obj.get("spec"))}
    return keep


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class _Kind:
    resource: ApiResource
    switch: str  # the `Lookups` field that enables it
    transform: Callable[[dict], Any]
    optional: bool = False  # the cluster may not serve it: not served reads as none of them


KINDS = {
    k.resource.plural: k
    for k in (
        _Kind(RESOURCE_CLAIMS, "resource_claims", _whole),
        _Kind(RESOURCE_CLAIM_TEMPLATES, "resource_claims", _whole),
        _Kind(DEVICE_CLASSES, "device_classes", _whole),
        _Kind(NAMESPACES, "namespaces", _labels),
        _Kind(CONFIG_MAPS, "config_maps", _config_map_keys),
        _Kind(SECRETS, "secrets", _secret_keys),
        _Kind(NODES, "nodes", node_summary),
        _Kind(RESOURCE_SLICES, "resource_slices", _slice_spec),
        _Kind(DEVICE_TAINT_RULES, "resource_slices", _slice_spec, optional=True),
        _Kind(RUNTIME_CLASSES, "runtime_classes", _name),
        _Kind(NODE_POOLS, "node_pools", _pool("NodePool"), optional=True),
        _Kind(MACHINE_DEPLOYMENTS, "node_pools", _pool("MachineDeployment"), optional=True),
        _Kind(CLUSTER_POLICIES, "gpu_operator", _whole),
        _Kind(GPU_CLUSTERS, "gpu_operator", _whole),
        _Kind(NVIDIA_DRIVERS, "gpu_operator", _whole),
    )
}
OPERATOR_PLURALS = frozenset({CLUSTER_POLICIES.plural, GPU_CLUSTERS.plural, NVIDIA_DRIVERS.plural})


def _pod_summary(obj: dict) -> dict:
    """What allocation-owner reads of a pod bound to a node: its name and what it asks for."""
    meta, spec = _mapping(obj.get("metadata")), _mapping(obj.get("spec"))
    containers = [{"resources": c.get("resources")} for c in spec.get("containers") or () if isinstance(c, dict)]
    return {"metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
            "spec": {"containers": containers, "resourceClaims": spec.get("resourceClaims")}}


_NOT_FOUND = Lookup.miss("not found")
_MAX_ABSENT = 10_000


@dataclass(frozen=True, slots=True)
class KindStats:
    """Counters of one lookup kind, for metrics: cache hits, misses (each may cost one GET), failed
    fetches (anything but a definite 404), and the informer's own state."""

    kind: str
    hits: int
    misses: int
    errors: int
    informer: InformerStats
    gets: int = 0  # GETs sent for names the cache did not hold


class _Slot:
    def __init__(self, kind: _Kind, informer: Informer):
        self.kind = kind
        self.informer = informer
        self._lock = threading.Lock()
        self.hits = self.misses = self.errors = self.gets = 0

    def count(self, *, hit: bool = False, miss: bool = False, error: bool = False, get: bool = False) -> None:
        with self._lock:
            self.hits += hit
            self.misses += miss
            self.errors += error
            self.gets += get

    def stats(self) -> KindStats:
        return KindStats(self.kind.resource.plural, self.hits, self.misses, self.errors, self.informer.stats(),
                         self.gets)


class ClusterResolver:
    """A `Resolver` over watch-backed caches of the kinds that `policy_lookups` enables."""

    def __init__(self, policy_lookups: Lookups, api_client: ApiClient, *,
                 settings: InformerSettings = InformerSettings(), unreachable_holdoff: float = 5.0,
                 absent_ttl: float = 2.0, start: bool = True, owns_client: bool = False):
        self._api = api_client
        self._timeout = policy_lookups.timeout_seconds
        self._holdoff = unreachable_holdoff
        self._absent_ttl = absent_ttl
        self._absent: dict[tuple[str, str, str], float] = {}  # (plural, namespace, name) -> 404 remembered until
        self._owns_client = owns_client
        self._slots: dict[str, _Slot] = {}
        self._off: dict[str, Lookup] = {}
        for plural, kind in KINDS.items():
            if getattr(policy_lookups, kind.switch):
                informer = Informer(api_client, kind.resource, transform=kind.transform, settings=settings,
                                    optional=kind.optional)
                self._slots[plural] = _Slot(kind, informer)
            else:
                self._off[plural] = Lookup.miss(f"lookups of {plural} are off")
        self._unreachable: tuple[float, str] | None = None  # (until, reason) after a transport failure
        self._class_list: tuple[int, Lookup] | None = None
        self._inventory: tuple[tuple[int, ...], Inventory | None] | None = None
        self._operator: dict[str, tuple[int, Lookup]] = {}
        self._pods = policy_lookups.pods
        if start:
            self.start()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        for slot in self._slots.values():
            slot.informer.start()

    def close(self, timeout: float = 5.0) -> None:
        for slot in self._slots.values():  # all at once, then wait for them together
            slot.informer.stop(timeout=0)
        deadline = time.monotonic() + timeout
        for slot in self._slots.values():
            slot.informer.stop(timeout=max(0.0, deadline - time.monotonic()))
        if self._owns_client:
            self._api.close()

    def __enter__(self) -> ClusterResolver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def synced(self) -> bool:
        """Every enabled cache holds a complete list (it may lag the API by the watch's latency)."""
        return all(slot.informer.synced.is_set() for slot in self._slots.values())

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for slot in self._slots.values():
            if not slot.informer.synced.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True

    def stats(self) -> dict[str, KindStats]:
        return {plural: slot.stats() for plural, slot in self._slots.items()}

    # -- Resolver ----------------------------------------------------------------------------------

    def resource_claim(self, namespace: str, name: str) -> Lookup:
        return self._lookup("resourceclaims", namespace, name)

    def resource_claim_template(self, namespace: str, name: str) -> Lookup:
        return self._lookup("resourceclaimtemplates", namespace, name)

    def device_class(self, name: str) -> Lookup:
        return self._lookup("deviceclasses", "", name)

    def namespace_labels(self, name: str) -> Lookup:
        return self._lookup("namespaces", "", name)

    def config_map_keys(self, namespace: str, name: str) -> Lookup:
        return self._lookup("configmaps", namespace, name)

    def secret_keys(self, namespace: str, name: str) -> Lookup:
        return self._lookup("secrets", namespace, name)

    def device_class_list(self) -> Lookup:
        """Every DeviceClass (the engine scans them for `extendedResourceName`): from the cache once
        synced, rebuilt only when it changed; before that, one bounded list."""
        slot = self._slots.get("deviceclasses")
        if slot is None:
            return self._off["deviceclasses"]
        informer = slot.informer
        if informer.synced.is_set():
            generation = informer.generation
            cached = self._class_list
            if cached is None or cached[0] != generation:
                cached = (generation, Lookup.hit(tuple(informer.values())))
                self._class_list = cached
            slot.count(hit=True)
            return cached[1]
        slot.count(miss=True)
        return self._fetch(slot, lambda: tuple(
            item for page in apiserver.list_pages(self._api, DEVICE_CLASSES, limit=500, timeout=self._timeout)
            for item in page.get("items") or () if isinstance(item, dict)
        ))

    def _synced(self, plural: str) -> Informer | None:
        slot = self._slots.get(plural)
        return slot.informer if slot is not None and slot.informer.synced.is_set() else None

    def inventory(self) -> Inventory | None:
        """The Nodes' and ResourceSlices' snapshot (with DeviceTaintRules and the autoscalers' pools), rebuilt
        only when a cache changed (the informers' generations); a kind that is off, or whose cache has not
        listed yet, is unknown (None in it). A kind the cluster does not serve (DeviceTaintRules without the
        alpha gate, NodePools without Karpenter) has no objects."""
        if "nodes" not in self._slots and "resourceslices" not in self._slots:
            return None
        nodes, slices = self._synced("nodes"), self._synced("resourceslices")
        extra = [self._synced(p) for p in ("devicetaintrules", "nodepools", "machinedeployments")]
        key = tuple(i.generation if i else -1 for i in (nodes, slices, *extra))
        cached = self._inventory
        if cached is not None and cached[0] == key:
            return cached[1]
        rules, pools, groups = extra
        pooled = None if "nodepools" not in self._slots else [*(pools.values() if pools else ()),
                                                              *(groups.values() if groups else ())]
        built = None if nodes is None and slices is None else inventory.build(
            nodes.values() if nodes else None, slices.values() if slices else None,
            rules=rules.values() if rules else (), pools=pooled)
        self._inventory = (key, built)
        return built

    def runtime_classes(self) -> Lookup:
        """The names of every RuntimeClass, once the cache has listed them."""
        slot = self._slots.get("runtimeclasses")
        if slot is None:
            return self._off["runtimeclasses"]
        if not slot.informer.synced.is_set():
            listed = slot.informer.last_error
            return Lookup.miss(listed.describe() if listed is not None else "the RuntimeClass cache has not listed yet")
        return Lookup.hit(frozenset(slot.informer.values()))

    def operator_objects(self, plural: str) -> Lookup:
        """Every object of one of the GPU Operator's kinds: from the cache once synced; before that, one bounded
        list. Where its CRD is not served, a miss that says so (allocation-owner then says nothing)."""
        slot = self._slots.get(plural)
        if slot is None or plural not in OPERATOR_PLURALS:
            return Lookup.miss(f"lookups of {plural} are off")
        informer = slot.informer
        if informer.synced.is_set():
            generation = informer.generation
            cached = self._operator.get(plural)
            if cached is None or cached[0] != generation:
                cached = (generation, Lookup.hit(tuple(informer.values())))
                self._operator[plural] = cached
            slot.count(hit=True)
            return cached[1]
        slot.count(miss=True)
        resource = slot.kind.resource
        return self._fetch(slot, lambda: tuple(
            item for page in apiserver.list_pages(self._api, resource, limit=500, timeout=self._timeout)
            for item in page.get("items") or () if isinstance(item, dict)))

    def pods_on_node(self, node: str) -> Lookup:
        """The pods bound to `node`: one bounded list by field selector (asked only for a Node update that moves
        the node between cohorts, a rare event; no cache of every pod is kept)."""
        if not self._pods:
            return Lookup.miss("lookups of pods are off")
        unreachable = self._unreachable
        if unreachable is not None and time.monotonic() < unreachable[0]:
            return Lookup.miss(unreachable[1])
        try:
            return Lookup.hit(tuple(
                _pod_summary(item) for page in apiserver.list_pages(
                    self._api, PODS, limit=500, timeout=self._timeout, field_selector=f"spec.nodeName={node}")
                for item in page.get("items") or () if isinstance(item, dict)))
        except ApiError as err:
            if err.status is None:
                self._unreachable = (time.monotonic() + self._holdoff, err.describe())
            return Lookup.miss(err.describe())

    # -- internals ---------------------------------------------------------------------------------

    def _lookup(self, plural: str, namespace: str, name: str) -> Lookup:
        slot = self._slots.get(plural)
        if slot is None:
            return self._off[plural]
        value = slot.informer.get((namespace or "", name))
        if value is not None:
            slot.count(hit=True)
            return Lookup.hit(value)
        slot.count(miss=True)
        key = (plural, namespace or "", name)
        until = self._absent.get(key)
        if until is not None:
            if time.monotonic() < until:
                return _NOT_FOUND
            self._absent.pop(key, None)
        resource = slot.kind.resource

        def get() -> Any:
            slot.count(get=True)
            return slot.kind.transform(apiserver.get(self._api, resource, namespace, name, timeout=self._timeout))

        found = self._fetch(slot, get)
        if found is _NOT_FOUND:
            if len(self._absent) >= _MAX_ABSENT:
                self._absent.clear()  # a crude bound: names of absent objects come from requests
            self._absent[key] = time.monotonic() + self._absent_ttl
        return found

    def _fetch(self, slot: _Slot, fetch: Callable[[], Any]) -> Lookup:
        listed = slot.informer.last_error
        if listed is not None and not listed.served:
            return Lookup.miss(f"{slot.kind.resource.qualified}/{slot.kind.resource.version}: {listed.describe()}")
        unreachable = self._unreachable
        if unreachable is not None and time.monotonic() < unreachable[0]:
            slot.count(error=True)
            return Lookup.miss(unreachable[1])
        try:
            return Lookup.hit(fetch())
        except ApiError as err:
            if err.not_found:
                return _NOT_FOUND
            slot.count(error=True)
            if err.status is None:
                self._unreachable = (time.monotonic() + self._holdoff, err.describe())
            return Lookup.miss(err.describe())


def build_resolver(policy: Policy, *, kubeconfig: str | None = None, context: str | None = None,
                   settings: InformerSettings = InformerSettings()) -> Resolver:
    """`NoLookups()` when the policy enables no lookup (no cluster configuration is even read);
    otherwise a started `ClusterResolver` with in-cluster config or kubeconfig/context as kubectl
    finds them. Raises `kubeconfig.ClusterConfigError` when no cluster configuration can be found.
    Create it in the process that serves (after a fork): its informer threads do not survive one."""
    if not policy.lookups.any:
        return NoLookups()
    client = load_api_client(kubeconfig, context)
    return ClusterResolver(policy.lookups, client, settings=settings, owns_client=True)
