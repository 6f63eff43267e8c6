"""The kinds the engine handles, and where each keeps its pod spec. One table serves the engine, the
webhook's dispatch, the CLI and the chart's webhook rules (a test checks the chart against it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str
    group: str  # "" for core
    resource: str
    pod_spec_path: tuple[str, ...] | None  # None: not pod-bearing
    mutated: bool = False  # only Pods are mutated; templates are validated (GitOps drift otherwise)
    namespaced: bool = True


_KINDS = (
    KindInfo("Pod", "", "pods", ("spec",), mutated=True),
    KindInfo("PodTemplate", "", "podtemplates", ("template", "spec")),
    KindInfo("ReplicationController", "", "replicationcontrollers", ("spec", "template", "spec")),
    KindInfo("Deployment", "apps", "deployments", ("spec", "template", "spec")),
    KindInfo("StatefulSet", "apps", "statefulsets", ("spec", "template", "spec")),
    KindInfo("DaemonSet", "apps", "daemonsets", ("spec", "template", "spec")),
    KindInfo("ReplicaSet", "apps", "replicasets", ("spec", "template", "spec")),
    KindInfo("Job", "batch", "jobs", ("spec", "template", "spec")),
    KindInfo("CronJob", "batch", "cronjobs", ("spec", "jobTemplate", "spec", "template", "spec")),
    KindInfo("ResourceClaim", "resource.k8s.io", "resourceclaims", None),
    KindInfo("ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates", None),
    KindInfo("DeviceClass", "resource.k8s.io", "deviceclasses", None, namespaced=False),
)

BY_KIND = {k.kind: k for k in _KINDS}
BY_RESOURCE = {(k.group, k.resource): k for k in _KINDS}
POD_BEARING = tuple(k for k in _KINDS if k.pod_spec_path is not None)
HANDLED = _KINDS
# The only subresource the engine reads: ephemeral containers are added to running pods through it.
SUBRESOURCES = {("", "pods"): ("ephemeralcontainers",)}
# API versions of resource.k8s.io that no 1.34+ cluster serves for these kinds (rule legacy-api).
# Other kinds still live there (DeviceTaintRule is served at v1alpha3): they are not ours.
LEGACY_DRA_VERSIONS = frozenset({"resource.k8s.io/v1alpha2", "resource.k8s.io/v1alpha3"})
LEGACY_DRA_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceClass",
                              "ResourceClaimParameters", "ResourceClassParameters", "PodSchedulingContext"})


def is_legacy_dra(obj: Mapping) -> bool:
    return obj.get("apiVersion") in LEGACY_DRA_VERSIONS and obj.get("kind") in LEGACY_DRA_KINDS
