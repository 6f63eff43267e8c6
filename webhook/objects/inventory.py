"""What a cluster can ever offer a pod: its Nodes (labels, taints, allocatable) and the devices its
ResourceSlices publish, read once when the caches (or the CLI's bundle) change, never per request.

A Node is kept as its name, labels, NoSchedule/NoExecute taints and `status.allocatable`; nothing else
of it (conditions, images, addresses) is read. A ResourceSlice device is kept as the scheduler's DRA CEL
environment shows it: `device.driver`, `device.attributes[domain][name]` (an unqualified attribute name
is in the driver's domain), `device.capacity[domain][name]` (a quantity: thousandths, as
`webhook.objects.selectors` represents quantities) and `device.allowMultipleAllocations`; beside the view,
what allocation reads: the device's taints (its own and those DeviceTaintRules give it, by driver, pool and
device name) and the shared counters it consumes (partitionable devices: the counter sets of its pool).

Autoscaled node pools (Karpenter NodePools, cluster-autoscaler's Cluster API node groups) are kept as the
node they would add: the labels and taints of its template and the most of each extended resource such a
node can have, where the pool says so."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from webhook.objects.access import as_dict, as_list, as_str, quantity
from webhook.objects.selectors import milli

# Taint effects that keep a pod off a node it does not tolerate (PreferNoSchedule only discourages).
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
# Taints the node lifecycle controller sets for a passing condition (not ready, unreachable, pressure,
# cordoned) or the cloud provider before it initialises a node: they say nothing of what the node can
# ever offer, so they are not kept.
TRANSIENT_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, float]  # extended resources only (names with a "/")
    passing: tuple[Taint, ...] = ()  # the transient taints it carries now (not ready, cordoned, ...)


@dataclass(frozen=True, slots=True)
class Device:
    node: str  # the slice's nodeName; "" for a slice of allNodes or a nodeSelector (usable from any node)
    driver: str
    pool: str
    name: str
    view: Mapping[str, Any]  # what a CEL selector sees as `device`
    taints: tuple[Taint, ...] = ()  # NoSchedule / NoExecute taints: only a request that tolerates them gets it
    consumes: tuple[tuple[str, str, int], ...] = ()  # (counter set, counter, thousandths) of its pool's counters

    @property
    def key(self) -> tuple[str, str, str]:
        """(driver, pool, device): how an allocation result names it."""
        return (self.driver, self.pool, self.name)

    @property
    def label(self) -> str:
        """How messages name it: node (or pool), then the device's name."""
        return f"{self.node or self.pool}/{self.name}"

    def describe(self) -> str:
        """Product and memory when the driver publishes them: what a reader compares with a selector."""
        attrs = as_dict(as_dict(self.view.get("attributes")).get(self.driver))
        capacity = as_dict(as_dict(self.view.get("capacity")).get(self.driver))
        parts = [str(attrs[k]) for k in ("productName", "model", "profile") if type(attrs.get(k)) is str]
        memory = capacity.get("memory")
        if type(memory) is int:
            parts.append(_bytes(memory // 1000))
        return ", ".join(dict.fromkeys(parts))


def _bytes(n: int) -> str:
    for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    if n >= 2**20:
        return f"{n / 2**30:.1f}Gi"
    return str(n)


@dataclass(frozen=True, slots=True)
class NodePool:
    """An autoscaler's pool: the node it would add. `allocatable` holds the resources whose most per node the
    pool tells; any other resource is not known (it may have any amount)."""

    kind: str  # NodePool (karpenter.sh) | MachineDeployment (cluster.x-k8s.io)
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, float]


@dataclass(slots=True)
class Inventory:
    """The cluster's capacity as one snapshot. `nodes` / `devices` are None when that lookup is off
    (or its cache has not listed yet): then nothing can be said from it. The dicts below are filled
    lazily by `webhook.policy.capacity`: each answer is computed once per snapshot."""

    nodes: tuple[NodeInfo, ...] | None
    devices: tuple[Device, ...] | None
    cohort_nodes: dict[Any, tuple[NodeInfo, ...]] = field(default_factory=dict)
    eligible: dict[Any, Admitted] = field(default_factory=dict)
    matches: dict[tuple[str, ...], Any] = field(default_factory=dict)
    everywhere: Admitted | None = None  # when Node lookups are off: every node that publishes devices
    # (driver, pool, counter set) -> counter -> thousandths: what partitionable devices of the pool share
    counters: Mapping[tuple[str, str, str], Mapping[str, int]] = field(default_factory=dict)
    pools: tuple[NodePool, ...] | None = None  # None: the autoscalers' pools are not looked up


@dataclass(slots=True)
class Admitted:
    """The nodes one node selection admits (None: not known, every node counts), with what was derived
    from them for earlier requests of the same selection: kept, so that a warm snapshot answers a request
    without walking the nodes or devices again."""

    nodes: tuple[NodeInfo, ...] | None
    names: frozenset[str] | None
    largest: dict[str, tuple[float, NodeInfo | None]] = field(default_factory=dict)
    fits: dict[Any, Any] = field(default_factory=dict)


def read_node(obj: Mapping[str, Any]) -> NodeInfo | None:
    meta = as_dict(obj.get("metadata"))
    name = as_str(meta.get("name"))
    if not name:
        return None
    labels = {k: v for k, v in as_dict(meta.get("labels")).items() if type(k) is str and type(v) is str}
    taints: list[Taint] = []
    passing: list[Taint] = []
    for t in as_list(as_dict(obj.get("spec")).get("taints")):
        t = as_dict(t)
        key, effect = as_str(t.get("key")), as_str(t.get("effect"))
        if key and effect in BLOCKING_EFFECTS:
            (passing if key.startswith(TRANSIENT_TAINTS) else taints).append(
                Taint(key, as_str(t.get("value")) or "", effect))
    allocatable = {}
    for rname, value in as_dict(as_dict(obj.get("status")).get("allocatable")).items():
        if type(rname) is str and "/" in rname:
            amount = quantity(value)
            if amount is not None:
                allocatable[rname] = amount
    return NodeInfo(name, MappingProxyType(labels), tuple(taints), MappingProxyType(allocatable), tuple(passing))


def node_summary(obj: dict[str, Any]) -> dict[str, Any]:
    """The parts of a Node the lookups keep (the informer's transform): labels, taints, allocatable."""
    meta = as_dict(obj.get("metadata"))
    return {"metadata": {"name": meta.get("name"), "labels": meta.get("labels")},
            "spec": {"taints": as_dict(obj.get("spec")).get("taints")},
            "status": {"allocatable": as_dict(obj.get("status")).get("allocatable")}}


def _attribute(value: Mapping[str, Any]) -> Any:
    for key in ("int", "bool", "string", "version"):
        if key in value:
            found = value[key]
            if key == "int" and type(found) is int:
                return found
            if key == "bool" and type(found) is bool:
                return found
            if key in ("string", "version") and type(found) is str:
                return found
    return None


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, rest = name.partition("/")
    return (domain, rest) if sep else (driver, name)


def _taints(raw: Any) -> tuple[Taint, ...]:
    out = []
    for t in as_list(raw):
        t = as_dict(t)
        key, effect = as_str(t.get("key")), as_str(t.get("effect"))
        if key and effect in BLOCKING_EFFECTS:
            out.append(Taint(key, as_str(t.get("value")) or "", effect))
    return tuple(out)


def _counter_values(raw: Any) -> dict[str, int]:
    out = {}
    for name, value in as_dict(raw).items():
        text = as_dict(value).get("value")
        text = str(text) if type(text) in (int, float) else text
        if type(name) is str and type(text) is str:
            try:
                out[name] = milli(text)
            except ValueError:
                continue
    return out


def slice_counters(obj: Mapping[str, Any]) -> dict[tuple[str, str, str], dict[str, int]]:
    """The shared counter sets a ResourceSlice declares for its pool (partitionable devices)."""
    spec = as_dict(obj.get("spec"))
    driver = as_str(spec.get("driver")) or ""
    pool = as_str(as_dict(spec.get("pool")).get("name")) or as_str(spec.get("nodeName")) or driver
    out = {}
    for entry in as_list(spec.get("sharedCounters")):
        entry = as_dict(entry)
        name = as_str(entry.get("name"))
        if name:
            out[(driver, pool, name)] = _counter_values(entry.get("counters"))
    return out


def read_slice(obj: Mapping[str, Any], views: dict[str, dict[str, Any]] | None = None) -> list[Device]:
    """The devices of one ResourceSlice (resource.k8s.io v1, v1beta2; v1beta1's `basic` wrapper too).
    `views`: the views read so far, by what they were read from: the devices of a large cluster are a few
    models, so their views are read once and shared (read-only; a selector's verdict on one is kept)."""
    spec = as_dict(obj.get("spec"))
    driver = as_str(spec.get("driver")) or ""
    node = as_str(spec.get("nodeName")) or ""
    pool = as_str(as_dict(spec.get("pool")).get("name")) or node or driver
    out = []
    for raw in as_list(spec.get("devices")):
        raw = as_dict(raw)
        name = as_str(raw.get("name"))
        if not name:
            continue
        body = as_dict(raw.get("basic")) or raw
        consumes = tuple((counter_set, counter, amount) for c in as_list(body.get("consumesCounters"))
                         if (counter_set := as_str(as_dict(c).get("counterSet")))
                         for counter, amount in _counter_values(as_dict(c).get("counters")).items())
        taints = _taints(body.get("taints"))
        read_from = ""
        if views is not None:
            read_from = repr((driver, body.get("attributes"), body.get("capacity"),
                              body.get("allowMultipleAllocations")))
            seen = views.get(read_from)
            if seen is not None:
                out.append(Device(node, driver, pool, name, seen, taints, consumes))
                continue
        attributes: dict[str, dict[str, Any]] = {driver: {}}
        for key, value in as_dict(body.get("attributes")).items():
            read = _attribute(as_dict(value)) if type(key) is str else None
            if read is not None:
                domain, short = _qualified(key, driver)
                attributes.setdefault(domain, {})[short] = read
        capacity: dict[str, dict[str, int]] = {driver: {}}
        for key, value in as_dict(body.get("capacity")).items():
            text = as_dict(value).get("value")
            text = str(text) if type(text) in (int, float) else text
            if type(key) is str and type(text) is str:
                try:
                    amount = milli(text)
                except ValueError:
                    continue
                domain, short = _qualified(key, driver)
                capacity.setdefault(domain, {})[short] = amount
        view = {"driver": driver, "attributes": attributes, "capacity": capacity,
                "allowMultipleAllocations": body.get("allowMultipleAllocations") is True}
        if views is not None:
            views[read_from] = view
        # a dict: the CEL runtime reads plain dicts
        out.append(Device(node, driver, pool, name, view, taints, consumes))
    return out


def taint_rules(devices: tuple[Device, ...], rules: Iterable[Mapping[str, Any]]) -> tuple[Device, ...]:
    """The devices with the taints DeviceTaintRules give them. A rule that selects by DeviceClass or CEL is
    not applied (what it taints is not told here): a device is then counted as usable, never the reverse."""
    extra: dict[tuple[str, str, str], list[Taint]] = {}
    chosen = []
    for rule in rules:
        spec = as_dict(rule.get("spec"))
        selector = as_dict(spec.get("deviceSelector"))
        given = _taints([spec.get("taint")])
        if not given or selector.get("deviceClassName") or selector.get("selectors"):
            continue
        chosen.append((as_str(selector.get("driver")), as_str(selector.get("pool")), as_str(selector.get("device")),
                       given[0]))  # one taint per rule
    if not chosen:
        return devices
    for d in devices:
        for driver, pool, name, taint in chosen:
            if (driver is None or driver == d.driver) and (pool is None or pool == d.pool) and \
                    (name is None or name == d.name):
                extra.setdefault(d.key, []).append(taint)
    return tuple(replace(d, taints=d.taints + tuple(extra[d.key])) if d.key in extra else d for d in devices)


_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
_CAPI_GPU = "capacity.cluster-autoscaler.kubernetes.io/gpu-count"
_CAPI_LABELS = "capacity.cluster-autoscaler.kubernetes.io/labels"
_CAPI_TAINTS = "capacity.cluster-autoscaler.kubernetes.io/taints"
_CAPI_MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"


def _ints(values: Any) -> list[int]:
    out = []
    for v in as_list(values):
        try:
            out.append(int(str(v)))
        except ValueError:
            continue
    return out


def read_node_pool(obj: Mapping[str, Any]) -> NodePool | None:
    """A Karpenter NodePool (karpenter.sh/v1), or a Cluster API MachineDeployment that cluster-autoscaler
    scales (the node-group max-size annotation; its capacity annotations describe the node it adds)."""
    kind = as_str(obj.get("kind")) or ""
    meta = as_dict(obj.get("metadata"))
    name = as_str(meta.get("name")) or ""
    if kind == "NodePool":
        template = as_dict(as_dict(obj.get("spec")).get("template"))
        labels = {k: v for k, v in as_dict(as_dict(template.get("metadata")).get("labels")).items()
                  if type(k) is str and type(v) is str}
        tspec = as_dict(template.get("spec"))
        allocatable: dict[str, float] = {}
        for r in as_list(tspec.get("requirements")):
            r = as_dict(r)
            key, op, values = as_str(r.get("key")), as_str(r.get("operator")), _ints(r.get("values"))
            if key and op == "In" and len(as_list(r.get("values"))) == 1 and type(as_list(r.get("values"))[0]) is str:
                labels.setdefault(key, as_list(r.get("values"))[0])
            if key == _GPU_COUNT and values:
                most = max(values) if op == "In" else values[0] - 1 if op == "Lt" else None
                if most is not None:
                    allocatable["nvidia.com/gpu"] = float(max(most, 0))
        limit = quantity(as_dict(as_dict(obj.get("spec")).get("limits")).get("nvidia.com/gpu"))
        if limit is not None:
            allocatable["nvidia.com/gpu"] = min(limit, allocatable.get("nvidia.com/gpu", limit))
        return NodePool(kind, name, MappingProxyType(labels), _taints(tspec.get("taints")),
                        MappingProxyType(allocatable))
    annotations = as_dict(meta.get("annotations"))
    if kind == "MachineDeployment" and _CAPI_MAX in annotations:
        labels = {}
        for item in (as_str(annotations.get(_CAPI_LABELS)) or "").split(","):
            key, sep, value = item.strip().partition("=")
            if sep and key:
                labels[key] = value
        taints = []
        for item in (as_str(annotations.get(_CAPI_TAINTS)) or "").split(","):
            head, _, effect = item.strip().partition(":")
            key, _, value = head.partition("=")
            if key and effect in BLOCKING_EFFECTS:
                taints.append(Taint(key, value, effect))
        gpus = quantity(annotations.get(_CAPI_GPU))
        # cluster-autoscaler builds the node of an empty group from these annotations: no count, no GPU
        return NodePool(kind, name, MappingProxyType(labels), tuple(taints),
                        MappingProxyType({"nvidia.com/gpu": gpus if gpus is not None else 0.0}))
    return None


def build(nodes: Iterable[Mapping[str, Any]] | None, slices: Iterable[Mapping[str, Any]] | None, *,
          rules: Iterable[Mapping[str, Any]] = (), pools: Iterable[Mapping[str, Any]] | None = None) -> Inventory:
    """One snapshot from Node and ResourceSlice objects (and DeviceTaintRules, autoscalers' pools); None for
    a kind that is not known at all."""
    node_infos = None
    if nodes is not None:
        node_infos = tuple(sorted((n for n in map(read_node, nodes) if n is not None), key=lambda n: n.name))
    devices = None
    counters: dict[tuple[str, str, str], dict[str, int]] = {}
    if slices is not None:
        slices = list(slices)
        views: dict[str, dict[str, Any]] = {}
        devices = taint_rules(tuple(d for s in slices for d in read_slice(s, views)), rules)
        for s in slices:
            counters.update(slice_counters(s))
    node_pools = None if pools is None else tuple(p for p in map(read_node_pool, pools) if p is not None)
    return Inventory(node_infos, devices, counters=counters, pools=node_pools)
