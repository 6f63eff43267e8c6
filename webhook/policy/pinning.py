"""The cohorts a Pod's nodeSelector alone binds it to: what an in-tree policy can know of a pod's cohort without
the webhook's resolution (no namespace default, no inference from claims), so the coverage of the rules that
depend on the cohort (their definitions' `in_tree`) and the exporter's CEL (webhook/intree) read it."""
from __future__ import annotations

from webhook.config.model import Cohort, Policy
from webhook.objects.access import as_dict
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import PodView, view_of
from webhook.policy.cohorts import from_selectors


def _pinnable(policy: Policy) -> tuple[Cohort, ...]:
    """The cohorts a nodeSelector of exactly their node labels binds a pod to (cohort resolution, docs/architecture.md
    section 4): their labels tell them apart from every other cohort."""
    out = []
    for c in policy.cohorts:
        probe = {"kind": "Pod", "metadata": {}, "spec": {"nodeSelector": dict(c.node_labels), "containers": []}}
        if c.node_labels and from_selectors(view_of(probe, BY_KIND["Pod"], ""), policy).cohort is c:
            out.append(c)
    return tuple(out)


def pinnable(policy: Policy) -> tuple[Cohort, ...]:
    return policy.derived(_pinnable)


def pinned(view: PodView, policy: Policy) -> Cohort | None:
    """The cohort the pod's nodeSelector binds it to when it holds exactly one pinnable cohort's node labels,
    no other label a cohort declares, and no required node affinity: there the cohort is the selector's
    alone (no namespace default, no inference from claims)."""
    spec = view.spec
    affinity = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity"))
    if "requiredDuringSchedulingIgnoredDuringExecution" in affinity:
        return None
    selector = as_dict(spec.get("nodeSelector"))
    if not selector:
        return None
    for c in pinnable(policy):
        if all(selector.get(k) == v for k, v in c.node_labels.items()) and all(
                k in c.node_labels or k not in policy.label_cohorts for k in selector):
            return c
    return None


def is_pinned(view: PodView, policy: Policy) -> bool:
    """A coverage: the pod is pinned to a cohort."""
    return pinned(view, policy) is not None
