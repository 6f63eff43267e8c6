"""The resolver contract: how handlers obtain the objects a pod refers to.

A resolver answers from memory (the CLI's bundle, the config, a watch-backed cache); a cache miss may
do one bounded GET. It never raises: a failure is a `Lookup` with `found=False` and the reason, which
the policy reports as `unresolved-claim` (or a warning for `envFrom`), never as "allowed because unknown".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from webhook.objects.inventory import Inventory


@dataclass(frozen=True, slots=True)
class Lookup:
    found: bool
    value: Any = None  # the object (dict), a label dict, or a frozenset of key names
    reason: str = ""  # when not found: "not found", "lookups of resourceclaims are off", "API timeout after 0.5s"

    @staticmethod
    def hit(value: Any) -> Lookup:
        return Lookup(True, value)

    @staticmethod
    def miss(reason: str) -> Lookup:
        return Lookup(False, None, reason)


class Resolver(Protocol):
    def resource_claim(self, namespace: str, name: str) -> Lookup: ...

    def resource_claim_template(self, namespace: str, name: str) -> Lookup: ...

    def device_class(self, name: str) -> Lookup: ...

    def namespace_labels(self, name: str) -> Lookup: ...

    def config_map_keys(self, namespace: str, name: str) -> Lookup: ...

    def secret_keys(self, namespace: str, name: str) -> Lookup: ...

    def device_class_list(self) -> Lookup: ...  # value: tuple of every DeviceClass dict (for extendedResourceName)

    # The Nodes' and ResourceSlices' snapshot (unsatisfiable-request); None when neither is known.
    def inventory(self) -> Inventory | None: ...

    # The names of the cluster's RuntimeClasses (a frozenset); a miss when they are not looked up.
    def runtime_classes(self) -> Lookup: ...

    # allocation-owner: every GPU Operator object of one plural (clusterpolicies, gpuclusters, nvidiadrivers),
    # value a tuple of dicts; a miss where the CRD is not served or the lookup is off (the rule then says nothing)
    def operator_objects(self, plural: str) -> Lookup: ...

    # allocation-owner: the pods bound to a node (value a tuple of pod dicts), for a Node update that moves it
    def pods_on_node(self, node: str) -> Lookup: ...
