"""What already holds a cluster's capacity: the extended resources that pods bound to each node request,
and the DRA devices that ResourceClaims' `status.allocation` holds. Read once from a listing (or a
snapshot), for `explain`; the admission path never reads it.

A pod's request per resource is what the scheduler counts (the larger of its containers' sum and its
largest init container); pods that have finished (Succeeded, Failed) hold nothing."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.objects.access import as_dict, as_list, as_str, quantity

_DONE = frozenset({"Succeeded", "Failed"})


def pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """The pod's extended resources as the scheduler counts them (limits, or requests that name one)."""
    total: dict[str, float] = {}
    for c in as_list(spec.get("containers")):
        for name, amount in _extended(as_dict(c)).items():
            total[name] = total.get(name, 0.0) + amount
    for c in as_list(spec.get("initContainers")):
        for name, amount in _extended(as_dict(c)).items():
            if as_dict(c).get("restartPolicy") == "Always":
                total[name] = total.get(name, 0.0) + amount
            elif amount > total.get(name, 0.0):
                total[name] = amount
    return total


def _extended(container: Mapping[str, Any]) -> dict[str, float]:
    resources = as_dict(container.get("resources"))
    if not resources:
        return {}
    out: dict[str, float] = {}
    for section in ("requests", "limits"):  # a limit wins: extended resources have limits == requests
        for name, value in as_dict(resources.get(section)).items():
            if type(name) is str and "/" in name:
                amount = quantity(value)
                if amount is not None and amount > 0:
                    out[name] = amount
    return out


@dataclass(frozen=True, slots=True)
class Holder:
    pod: str  # "namespace/name"
    amount: float


@dataclass(slots=True)
class Occupancy:
    # node -> the pods bound to it that have not finished: what they hold is read when the node is asked about
    pods: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    # node -> resource -> the pods holding it there (each node read once, on the first question)
    by_node: dict[str, dict[str, list[Holder]]] = field(default_factory=dict)
    # (driver, pool, device) -> the claims ("namespace/name") whose allocation holds it
    held: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    # (namespace, name) -> the ResourceClaim, for a pod's own claims and their allocation
    claims: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)

    def _on(self, node: str) -> dict[str, list[Holder]]:
        found = self.by_node.get(node)
        if found is None:
            found = self.by_node[node] = {}
            for pod in self.pods.get(node, ()):
                meta = as_dict(pod.get("metadata"))
                who = f"{as_str(meta.get('namespace')) or ''}/{as_str(meta.get('name')) or ''}"
                for resource, amount in pod_requests(as_dict(pod.get("spec"))).items():
                    found.setdefault(resource, []).append(Holder(who, amount))
        return found

    def used(self, node: str, resource: str) -> float:
        return sum(h.amount for h in self._on(node).get(resource, ()))

    def holders(self, node: str, resource: str) -> list[Holder]:
        return self._on(node).get(resource, [])


def allocated_devices(claim: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(driver, pool, device) of each device a claim's allocation holds."""
    results = as_list(as_dict(as_dict(as_dict(claim.get("status")).get("allocation")).get("devices")).get("results"))
    out = []
    for r in results:
        r = as_dict(r)
        driver, pool, device = as_str(r.get("driver")), as_str(r.get("pool")), as_str(r.get("device"))
        if driver and pool and device:
            out.append((driver, pool, device))
    return out


def build(pods: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]) -> Occupancy:
    """Indexed once: pods by the node they are bound to (what each requests is read only for the nodes
    asked about: a cluster's other cohorts cost nothing), devices by the claims whose allocation holds them."""
    out = Occupancy()
    for pod in pods:
        node = as_dict(pod.get("spec")).get("nodeName")
        if type(node) is str and node and as_str(as_dict(pod.get("status")).get("phase")) not in _DONE:
            out.pods.setdefault(node, []).append(pod)
    for claim in claims:
        meta = as_dict(claim.get("metadata"))
        namespace, name = as_str(meta.get("namespace")) or "", as_str(meta.get("name")) or ""
        out.claims[(namespace, name)] = claim
        for key in allocated_devices(claim):
            out.held.setdefault(key, []).append(f"{namespace}/{name}")
    return out


SCHEDULING_REASONS = ("FailedScheduling", "NotTriggerScaleUp", "TriggeredScaleUp", "FailedScaleUp", "Scheduled")


def scheduler_words(pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The PodScheduled condition's message and the pod's scheduling events, as the scheduler wrote them."""
    out = []
    for c in as_list(as_dict(pod.get("status")).get("conditions")):
        c = as_dict(c)
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and as_str(c.get("message")):
            out.append(f"{as_str(c.get('reason')) or 'PodScheduled=False'}: {as_str(c.get('message'))}")
    uid = as_dict(pod.get("metadata")).get("uid")
    for e in events:
        involved = as_dict(e.get("involvedObject"))
        if uid and involved.get("uid") not in (None, uid):
            continue
        reason, message = as_str(e.get("reason")), as_str(e.get("message"))
        if reason in SCHEDULING_REASONS and message and f"{reason}: {message}" not in out:
            out.append(f"{reason}: {message}")
    return out
