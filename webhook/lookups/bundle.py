"""The CLI's resolver: every document given on the command line (and, for `audit`, every object listed),
so a pod's claims, templates and DeviceClasses resolve from the same input; what the bundle lacks is
asked of `fallback` (the cluster for `audit`, nothing for `check`)."""
from __future__ import annotations

from webhook.lookups.base import NoLookups
from webhook.objects import inventory
from webhook.objects.access import as_dict, as_str
from webhook.objects.inventory import Inventory
from webhook.objects.lookup import Lookup, Resolver

_OPERATOR = {"ClusterPolicy": "clusterpolicies", "GPUCluster": "gpuclusters", "NVIDIADriver": "nvidiadrivers"}
_CLUSTER_SCOPED = frozenset({"DeviceClass", "Namespace", "Node", "ResourceSlice", "DeviceTaintRule", "NodePool",
                             "RuntimeClass", *_OPERATOR})


class BundleResolver:
    def __init__(self, documents, *, default_namespace: str = "default", fallback: Resolver | None = None):
        self._fallback = fallback or NoLookups("not among the given manifests")
        self._objects: dict[tuple[str, str, str], dict] = {}
        self._classes: list[dict] = []
        self._nodes: list[dict] = []
        self._slices: list[dict] = []
        self._rules: list[dict] = []
        self._pools: list[dict] = []
        self._runtime_classes: set[str] = set()
        self._operator: dict[str, list[dict]] = {}  # plural -> the GPU Operator's objects given
        self._pods: dict[str, list[dict]] = {}  # node name -> the pods given that are bound to it
        self._inventory: tuple[Inventory | None, Inventory | None] | None = None  # (fallback's, built)
        for doc in documents:
            if type(doc) is not dict:
                continue
            kind = as_str(doc.get("kind"))
            meta = as_dict(doc.get("metadata"))
            name = as_str(meta.get("name"))
            if not kind or not name:
                continue
            namespace = "" if kind in _CLUSTER_SCOPED else (as_str(meta.get("namespace")) or default_namespace)
            self._objects[(kind, namespace, name)] = doc
            if kind == "DeviceClass":
                self._classes.append(doc)
            elif kind == "Node":
                self._nodes.append(doc)
            elif kind == "ResourceSlice":
                self._slices.append(doc)
            elif kind == "DeviceTaintRule":
                self._rules.append(doc)
            elif kind in ("NodePool", "MachineDeployment"):
                self._pools.append(doc)
            elif kind == "RuntimeClass":
                self._runtime_classes.add(name)
            elif kind in _OPERATOR and (as_str(doc.get("apiVersion")) or "").startswith("nvidia.com/"):
                self._operator.setdefault(_OPERATOR[kind], []).append(doc)
            elif kind == "Pod":
                node = as_str(as_dict(doc.get("spec")).get("nodeName"))
                if node:
                    self._pods.setdefault(node, []).append(doc)

    def _get(self, kind: str, namespace: str, name: str, ask) -> Lookup:
        doc = self._objects.get((kind, namespace, name))
        return Lookup.hit(doc) if doc is not None else ask()

    def resource_claim(self, namespace: str, name: str) -> Lookup:
        return self._get("ResourceClaim", namespace, name, lambda: self._fallback.resource_claim(namespace, name))

    def resource_claim_template(self, namespace: str, name: str) -> Lookup:
        return self._get("ResourceClaimTemplate", namespace, name,
                         lambda: self._fallback.resource_claim_template(namespace, name))

    def device_class(self, name: str) -> Lookup:
        return self._get("DeviceClass", "", name, lambda: self._fallback.device_class(name))

    def device_class_list(self) -> Lookup:
        found = self._fallback.device_class_list()
        listed = {as_str(as_dict(c.get("metadata")).get("name")): c for c in (found.value if found.found else ())}
        listed.update({as_str(as_dict(c.get("metadata")).get("name")): c for c in self._classes})
        return Lookup.hit(tuple(listed.values()))

    def inventory(self) -> Inventory | None:
        """The given Nodes and ResourceSlices (a `kubectl get nodes,resourceslices -o yaml` snapshot);
        a kind the bundle lacks is the fallback's."""
        fallback = self._fallback.inventory()
        kept = self._inventory
        if kept is not None and kept[0] is fallback:
            return kept[1]
        if not self._nodes and not self._slices and not self._pools:
            built = fallback
        else:
            nodes = inventory.build(self._nodes, None).nodes if self._nodes else (fallback.nodes if fallback else None)
            given = inventory.build(None, self._slices, rules=self._rules,
                                    pools=self._pools if self._pools else None)
            devices = given.devices if self._slices else (fallback.devices if fallback else None)
            built = Inventory(nodes, devices, counters=given.counters if self._slices else
                              (fallback.counters if fallback else {}),
                              pools=given.pools if self._pools else (fallback.pools if fallback else None))
        self._inventory = (fallback, built)
        return built

    def runtime_classes(self) -> Lookup:
        """The given RuntimeClasses, with the fallback's (a snapshot that lists none says nothing of them)."""
        found = self._fallback.runtime_classes()
        if not self._runtime_classes:
            return found
        return Lookup.hit(frozenset(self._runtime_classes) | (found.value if found.found else frozenset()))
    def operator_objects(self, plural: str) -> Lookup:
        """The given objects of that kind, beside the fallback's (a cluster's, for `audit`)."""
        given = self._operator.get(plural)
        found = self._fallback.operator_objects(plural)
        if not given:
            return found
        names = {as_str(as_dict(o.get("metadata")).get("name")) for o in given}
        rest = tuple(o for o in (found.value if found.found else ()) if type(o) is dict
                     and as_str(as_dict(o.get("metadata")).get("name")) not in names)
        return Lookup.hit(tuple(given) + rest)

    def pods_on_node(self, node: str) -> Lookup:
        given = self._pods.get(node)
        return Lookup.hit(tuple(given)) if given else self._fallback.pods_on_node(node)

    def namespace_labels(self, name: str) -> Lookup:
        doc = self._objects.get(("Namespace", "", name))
        if doc is not None:
            return Lookup.hit(dict(as_dict(as_dict(doc.get("metadata")).get("labels"))))
        return self._fallback.namespace_labels(name)

    def _keys(self, kind: str, namespace: str, name: str, ask) -> Lookup:
        doc = self._objects.get((kind, namespace, name))
        if doc is None:
            return ask()
        keys = set(as_dict(doc.get("data"))) | set(as_dict(doc.get("binaryData"))) | set(as_dict(doc.get("stringData")))
        return Lookup.hit(frozenset(k for k in keys if type(k) is str))

    def config_map_keys(self, namespace: str, name: str) -> Lookup:
        return self._keys("ConfigMap", namespace, name, lambda: self._fallback.config_map_keys(namespace, name))

    def secret_keys(self, namespace: str, name: str) -> Lookup:
        return self._keys("Secret", namespace, name, lambda: self._fallback.secret_keys(namespace, name))
