"""The resolvers' shared parts: NoLookups, the resolver of a webhook without cluster lookups.

The contract they implement (`Lookup`, `Resolver`) is webhook.objects.lookup, below the policy that reads it.
"""
from __future__ import annotations

from webhook.objects.inventory import Inventory
from webhook.objects.lookup import Lookup, Resolver

__all__ = ["Lookup", "NoLookups", "Resolver"]


class NoLookups:
    """The webhook without cluster lookups: nothing outside the request can be resolved."""

    def __init__(self, reason: str = "cluster lookups are off"):
        self._miss = Lookup.miss(reason)

    def resource_claim(self, namespace: str, name: str) -> Lookup:
        return self._miss

    def resource_claim_template(self, namespace: str, name: str) -> Lookup:
        return self._miss

    def device_class(self, name: str) -> Lookup:
        return self._miss

    def namespace_labels(self, name: str) -> Lookup:
        return self._miss

    def config_map_keys(self, namespace: str, name: str) -> Lookup:
        return self._miss

    def secret_keys(self, namespace: str, name: str) -> Lookup:
        return self._miss

    def device_class_list(self) -> Lookup:
        return self._miss

    def inventory(self) -> Inventory | None:
        return None

    def runtime_classes(self) -> Lookup:
        return self._miss

    def operator_objects(self, plural: str) -> Lookup:
        return self._miss

    def pods_on_node(self, node: str) -> Lookup:
        return self._miss
