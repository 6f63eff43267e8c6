"""Evaluate a cluster listing with the webhook's engine: each object by the validating rules, as on
CREATE, references resolved from the listed objects first, as one bundle, then from the cluster.
Running Pods are validated as they run: what the mutating webhook would have added at their creation
is no finding about them (the webhook was not there then, or it was and they carry it already)."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes.client import ApiClient

from webhook.audit.listing import Listing
from webhook.config.model import Policy
from webhook.evaluation import evaluate_object
from webhook.lookups.base import NoLookups
from webhook.lookups.bundle import BundleResolver
from webhook.lookups.cluster import ClusterResolver
from webhook.lookups.informer import InformerSettings
from webhook.lookups.resources import ApiResource
from webhook.objects.inventory import Inventory
from webhook.objects.lookup import Lookup, Resolver
from webhook.policy.phase import Phase
from webhook.policy.results import Evaluation


@dataclass(frozen=True, slots=True)
class Audited:
    resource: ApiResource
    obj: dict
    evaluation: Evaluation


class ListedOrCluster:
    """What the bundle of listed objects lacks. Claims, templates and DeviceClasses were listed whole,
    so a miss is definite ("not found"), or carries the reason their listing failed; namespace labels
    and envFrom sources are asked of the cluster lookups the policy enables."""

    def __init__(self, listing: Listing, cluster: Resolver):
        self._failed = {(f.resource.plural, f.namespace): f.reason for f in listing.failures}
        self._cluster = cluster

    def _miss(self, plural: str, namespace: str | None) -> Lookup:
        reason = self._failed.get((plural, namespace)) or self._failed.get((plural, None))
        return Lookup.miss(f"{plural} could not be listed: {reason}" if reason else "not found")

    def resource_claim(self, namespace: str, name: str) -> Lookup:
        return self._miss("resourceclaims", namespace)

    def resource_claim_template(self, namespace: str, name: str) -> Lookup:
        return self._miss("resourceclaimtemplates", namespace)

    def device_class(self, name: str) -> Lookup:
        return self._miss("deviceclasses", None)

    def device_class_list(self) -> Lookup:
        failed = self._miss("deviceclasses", None)
        return failed if failed.reason != "not found" else Lookup.hit(())

    def namespace_labels(self, name: str) -> Lookup:
        return self._cluster.namespace_labels(name)

    def config_map_keys(self, namespace: str, name: str) -> Lookup:
        return self._cluster.config_map_keys(namespace, name)

    def secret_keys(self, namespace: str, name: str) -> Lookup:
        return self._cluster.secret_keys(namespace, name)

    def inventory(self) -> Inventory | None:
        return self._cluster.inventory()

    def runtime_classes(self) -> Lookup:
        return self._cluster.runtime_classes()

    def operator_objects(self, plural: str) -> Lookup:
        # listed with the rest where the CRDs are served; a kind that could not be listed is unknown
        failed = self._miss(plural, None)
        return failed if failed.reason != "not found" else Lookup.hit(())

    def pods_on_node(self, node: str) -> Lookup:
        return self._cluster.pods_on_node(node)


def cluster_lookups(policy: Policy, api_client: ApiClient, *, settings: InformerSettings = InformerSettings(),
                    sync_timeout: float = 30.0) -> ClusterResolver | NoLookups:
    """The policy's namespace, ConfigMap and Secret lookups (claims and classes come from the listing),
    started and given up to `sync_timeout` to fill: until every cache is synced or has failed once."""
    lookups = dataclasses.replace(policy.lookups, resource_claims=False, device_classes=False)
    if not lookups.any:
        return NoLookups()
    resolver = ClusterResolver(lookups, api_client, settings=settings)
    deadline = time.monotonic() + sync_timeout
    while time.monotonic() < deadline and not all(
            s.informer.synced or s.informer.errors for s in resolver.stats().values()):
        time.sleep(0.02)
    return resolver


def evaluate_listing(listing: Listing, policy: Policy, cluster: Resolver, *, cluster_scoped: bool = True,
                     on_object: Callable[[int, int], None] | None = None) -> list[Audited]:
    """`cluster_scoped` False (namespaces were chosen): cluster-scoped objects only serve to resolve."""
    resolver = BundleResolver((obj for _, obj in listing.objects), fallback=ListedOrCluster(listing, cluster))
    chosen = [(r, o) for r, o in listing.objects if cluster_scoped or r.namespaced]
    out = []
    for done, (resource, obj) in enumerate(chosen, 1):
        out.append(Audited(resource, obj, evaluate_object(obj, policy=policy, resolver=resolver, operation="CREATE",
                                                                 phases=Phase.VALIDATE)))
        if on_object is not None:
            on_object(done, len(chosen))
    return out
