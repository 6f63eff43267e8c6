"""What a cluster can ever offer a pod: its Nodes (labels, taints, allocatable) and the devices its
ResourceSlices publish, read once when the caches (or the CLI's bundle) change, never per request.

A Node is kept as its name, labels, NoSchedule/NoExecute taints and `status.allocatable`; nothing else
of it (conditions, images, addresses) is read. A ResourceSlice device is kept as the scheduler's DRA CEL
environment shows it: `device.driver`, `device.attributes[domain][name]` (an unqualified attribute name
is in the driver's domain), `device.capacity[domain][name]` (a quantity: thousandths, as
`webhook.objects.selectors` represents quantities) and `device.allowMultipleAllocations`."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class Device:
    node: str  # the slice's nodeName; "" for a slice of allNodes or a nodeSelector (usable from any node)
    driver: str
    pool: str
    name: str
    view: Mapping[str, Any]  # what a CEL selector sees as `device`

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
    taints = []
    for t in as_list(as_dict(obj.get("spec")).get("taints")):
        t = as_dict(t)
        key, effect = as_str(t.get("key")), as_str(t.get("effect"))
        if key and effect in BLOCKING_EFFECTS and not key.startswith(TRANSIENT_TAINTS):
            taints.append(Taint(key, as_str(t.get("value")) or "", effect))
    allocatable = {}
    for rname, value in as_dict(as_dict(obj.get("status")).get("allocatable")).items():
        if type(rname) is str and "/" in rname:
            amount = quantity(value)
            if amount is not None:
                allocatable[rname] = amount
    return NodeInfo(name, MappingProxyType(labels), tuple(taints), MappingProxyType(allocatable))


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


def read_slice(obj: Mapping[str, Any]) -> list[Device]:
    """The devices of one ResourceSlice (resource.k8s.io v1, v1beta2; v1beta1's `basic` wrapper too)."""
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
        out.append(Device(node, driver, pool, name, view))  # a dict: the CEL runtime reads plain dicts
    return out


def build(nodes: Iterable[Mapping[str, Any]] | None, slices: Iterable[Mapping[str, Any]] | None) -> Inventory:
    """One snapshot from Node and ResourceSlice objects; None for a kind that is not known at all."""
    node_infos = None
    if nodes is not None:
        node_infos = tuple(sorted((n for n in map(read_node, nodes) if n is not None), key=lambda n: n.name))
    devices = None
    if slices is not None:
        devices = tuple(d for s in slices for d in read_slice(s))
    return Inventory(node_infos, devices)
