"""GPU infrastructure on its own (the GPU Operator's objects, a Node being updated): what the
allocation-owner rule reads of it, and which cohort a node's labels put it in."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Cohort, Policy
from webhook.objects.access import as_dict, as_list, as_str


@dataclass(slots=True, kw_only=True)
class InfraFacts:
    kind: str
    name: str
    subject: str  # 'gpucluster "gpu-cluster"', 'node "gpu-7"' as messages say it
    obj: Mapping[str, Any]
    old: Mapping[str, Any] | None  # the object before an UPDATE; None on CREATE


def infra_facts(obj: Mapping[str, Any], kind: str, name: str, old: Mapping[str, Any] | None) -> InfraFacts:
    return InfraFacts(kind=kind, name=name, subject=f'{kind.lower()} "{name}"', obj=obj, old=old)


def labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    labels = as_dict(as_dict(as_dict(obj).get("metadata")).get("labels"))
    return {k: v for k, v in labels.items() if type(k) is str and type(v) is str}


def node_cohort(labels: Mapping[str, str], policy: Policy) -> Cohort | None:
    """The cohort whose node labels the node carries, all of them (the first, should two match)."""
    for c in policy.cohorts:
        if c.node_labels and all(labels.get(k) == v for k, v in c.node_labels.items()):
            return c
    return None


GPU_PREFIXES = ("nvidia.com/", "deviceclass.resource.kubernetes.io/")


def is_gpu_pod(pod: Mapping[str, Any]) -> bool:
    """The pod holds GPUs: it asks for an NVIDIA resource or a class's extended resource, or has claims."""
    spec = as_dict(pod.get("spec"))
    if as_list(spec.get("resourceClaims")):
        return True
    for section in ("containers", "initContainers"):
        for c in as_list(spec.get(section)):
            resources = as_dict(as_dict(c).get("resources"))
            for part in ("limits", "requests"):
                if any(type(k) is str and k.startswith(GPU_PREFIXES) for k in as_dict(resources.get(part))):
                    return True
    return False


def pod_name(pod: Mapping[str, Any]) -> str:
    meta = as_dict(pod.get("metadata"))
    return f"{as_str(meta.get('namespace')) or ''}/{as_str(meta.get('name')) or '?'}"
