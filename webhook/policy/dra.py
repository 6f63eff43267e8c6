"""A DRA object on its own (a ResourceClaim or template, a DeviceClass, a kind of the alpha API): what
the checks read of it, computed once per decision."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.config.model import DRA, Cohort, DeviceClassInfo, Policy
from webhook.objects.claims import ClaimSpec, DeviceRequest, claim_spec
from webhook.policy.context import Context, device_class_info

CLAIM_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate"})


@dataclass(slots=True, kw_only=True)
class ObjectFacts:
    kind: str
    namespace: str
    subject: str  # 'resourceclaim "ml/train"' as messages say it
    obj: Mapping[str, Any]
    claim: ClaimSpec | None  # a claim's or template's spec
    word: str  # "claim" | "template", as messages name the object
    gpu_leaves: tuple[DeviceRequest, ...]  # the claim's requests that select GPU DeviceClasses
    cohort: Cohort | None  # the DRA cohort a claim is bound for
    device_class: DeviceClassInfo | None  # a DeviceClass, read (its CEL selectors evaluated)


def claim_cohort(policy: Policy, namespace: str) -> Cohort | None:
    """A claim has no node selector: the namespace's default DRA cohort, else the only DRA cohort."""
    named = policy.cohort(policy.namespace_cohorts.get(namespace, ""))
    if named is not None and named.mechanism == DRA:
        return named
    dra = [c for c in policy.cohorts if c.mechanism == DRA]
    return dra[0] if len(dra) == 1 else None


def object_facts(obj: Mapping[str, Any], kind: str, name: str, namespace: str, policy: Policy,
                 context: Context) -> ObjectFacts:
    subject = f'{kind.lower()} "{namespace}/{name}"' if namespace else f'{kind.lower()} "{name}"'
    claim = None
    leaves: tuple[DeviceRequest, ...] = ()
    cohort = None
    if kind in CLAIM_KINDS:
        claim = claim_spec(obj, kind)
        leaves = tuple(leaf for req in claim.requests for leaf in req.leaves()
                       if (info := context.device_class(leaf.device_class)) is not None
                       and policy.selects_gpus(info))
        cohort = claim_cohort(policy, namespace)
    return ObjectFacts(
        kind=kind, namespace=namespace, subject=subject, obj=obj, claim=claim,
        word="template" if kind == "ResourceClaimTemplate" else "claim", gpu_leaves=leaves, cohort=cohort,
        device_class=device_class_info(obj, policy) if kind == "DeviceClass" else None)
