"""Which MutatingAdmissionPolicy API a cluster serves, from its discovery: `export --check` compares the
mutations in the version the cluster's Kubernetes version implies (mutations.api_version) and reports when
the cluster does not serve that one. Discovery is the apiserver's own answer: a 1.34 or 1.35 apiserver lists
admissionregistration.k8s.io/v1beta1 mutatingadmissionpolicies only with
--runtime-config=admissionregistration.k8s.io/v1beta1=true (beta APIs are off by default), and lists them
whether or not the MutatingAdmissionPolicy feature gate is on: the gate turns the admission plugin on, not
the API, which is why the gate is read separately (feature_enabled)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

GROUP = "admissionregistration.k8s.io"
RESOURCE = "mutatingadmissionpolicies"
GATE = "MutatingAdmissionPolicy"
# The versions a client may ask for, newest first (discovery's preferred order).
VERSIONS = ("v1", "v1beta1", "v1alpha1")


def group_versions(group: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The group versions an APIGroup discovery document (GET /apis/admissionregistration.k8s.io) lists;
    none when the group is absent."""
    return tuple(v["groupVersion"] for v in (group or {}).get("versions") or [])


def serves(resources: Mapping[str, Any] | None) -> bool:
    """An APIResourceList (GET /apis/<group>/<version>) has the MutatingAdmissionPolicy resource."""
    return any(r.get("name") == RESOURCE for r in (resources or {}).get("resources") or [])


def served(resource_lists: Mapping[str, Mapping[str, Any] | None]) -> tuple[str, ...]:
    """The group versions, e.g. admissionregistration.k8s.io/v1beta1, whose resource list (group version ->
    APIResourceList) has MutatingAdmissionPolicy, newest first."""
    order = {f"{GROUP}/{v}": i for i, v in enumerate(VERSIONS)}
    return tuple(sorted((gv for gv, lst in resource_lists.items() if serves(lst)),
                        key=lambda gv: order.get(gv, len(order))))


_FEATURE = re.compile(r'^kubernetes_feature_enabled\{([^}]*)\}\s+([0-9.eE+-]+)\s*$', re.MULTILINE)


def feature_enabled(metrics: str, name: str = GATE) -> bool | None:
    """The feature gate's state in the apiserver's /metrics (kubernetes_feature_enabled{name=...}, 1 or 0);
    None when the metric does not name it."""
    for labels, value in _FEATURE.findall(metrics):
        if f'name="{name}"' in labels.split(","):
            return float(value) != 0
    return None
