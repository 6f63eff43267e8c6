"""Pending GPU pods of an audited cluster, each with the explanation `gpu-admission explain` gives it: the
listing's Pods, claims and classes, with the Nodes, ResourceSlices (and what else explain reads) listed
beside them. What cannot be listed leaves that part unknown, said in the explanation, never a failure."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes.client import ApiClient

from webhook.audit.listing import Listing, list_cluster
from webhook.config.model import Policy
from webhook.evaluation.explain import explain_pod
from webhook.lookups.base import NoLookups
from webhook.lookups.bundle import BundleResolver
from webhook.lookups.resources import (
    DEVICE_TAINT_RULES,
    MACHINE_DEPLOYMENTS,
    NODE_POOLS,
    NODES,
    RESOURCE_SLICES,
    RUNTIME_CLASSES,
    ApiResource,
)
from webhook.objects.access import as_dict, as_str
from webhook.objects.occupancy import build as build_occupancy
from webhook.objects.occupancy import scheduler_words
from webhook.policy.explain import Explanation

CAPACITY = (NODES, RESOURCE_SLICES, RUNTIME_CLASSES, DEVICE_TAINT_RULES, NODE_POOLS, MACHINE_DEPLOYMENTS)


@dataclass(frozen=True, slots=True)
class Pending:
    namespace: str
    name: str
    explanation: Explanation
    uid: str | None = None


def is_pending(pod: dict) -> bool:
    return not as_dict(pod.get("spec")).get("nodeName") and \
        (as_str(as_dict(pod.get("status")).get("phase")) or "Pending") == "Pending"


def has_pending(listing: Listing) -> bool:
    return any(r.kind == "Pod" and is_pending(o) for r, o in listing.objects)


def list_capacity(api_client: ApiClient, listing: Listing, policy: Policy, *, chunk_size: int,
                  timeout: float, cohort_report: bool = False) -> Listing:
    """Everything the audit reads beside the listing, each kind listed once: what explain reads, only when a
    pod is Pending (RuntimeClasses also when their lookups are on), and the cohort report's Nodes and
    ResourceSlices (`cohort_report`). An audit of running workloads in chosen namespaces asks nothing more."""
    wanted: list[ApiResource] = [NODES, RESOURCE_SLICES] if cohort_report else []
    if has_pending(listing):
        wanted += CAPACITY
    elif policy.lookups.runtime_classes:
        wanted.append(RUNTIME_CLASSES)
    if not wanted:
        return Listing((), (), 0)
    return list_cluster(api_client, (), chunk_size=chunk_size, timeout=timeout,
                        resources=tuple(dict.fromkeys(wanted)))


def pending_gpu_pods(listing: Listing, capacity: Listing, policy: Policy) -> list[Pending]:
    pods = [o for r, o in listing.objects if r.kind == "Pod"]
    waiting = [p for p in pods if is_pending(p)]
    if not waiting:
        return []
    objects = [o for _, o in listing.objects] + [o for _, o in capacity.objects]
    resolver = BundleResolver(objects, fallback=NoLookups("not found in the cluster"))
    occupancy = build_occupancy(pods, [o for r, o in listing.objects if r.kind == "ResourceClaim"])
    out = []
    for pod in waiting:
        meta = as_dict(pod.get("metadata"))
        namespace = as_str(meta.get("namespace")) or "default"
        if policy.is_exempt(namespace):
            continue
        found = explain_pod(pod, policy=policy, resolver=resolver, occupancy=occupancy, namespace=namespace,
                            created=True, scheduler=scheduler_words(pod))
        if found.verdict != "not-gpu":
            out.append(Pending(namespace, as_str(meta.get("name")) or "", found, as_str(meta.get("uid"))))
    return out


def missing_runtime_classes(capacity: Listing, policy: Policy) -> list[tuple[str, str]]:
    """(RuntimeClass, cohort) for each device-plugin cohort whose RuntimeClass the cluster lacks; nothing when
    RuntimeClasses could not be listed."""
    if RUNTIME_CLASSES not in capacity.resources or any(f.resource == RUNTIME_CLASSES for f in capacity.failures):
        return []
    names = {as_str(as_dict(o.get("metadata")).get("name")) for r, o in capacity.objects if r == RUNTIME_CLASSES}
    return [(c.runtime_class_name, c.name) for c in policy.cohorts
            if c.runtime_class_name and c.mechanism == "device-plugin" and c.runtime_class_name not in names]
