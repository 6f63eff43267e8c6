"""The kinds the engine handles, and where each keeps its pod spec. One table serves the engine, the
webhook's dispatch, the CLI and the chart's webhook rules (a test checks the chart against it)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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

# Infrastructure that only the allocation-owner rule reads: the GPU Operator's objects and Node updates
# (which move a node between cohorts). The audit lists Nodes itself, for its cohort report.
INFRASTRUCTURE = (
    KindInfo("ClusterPolicy", "nvidia.com", "clusterpolicies", None, namespaced=False),
    KindInfo("GPUCluster", "nvidia.com", "gpuclusters", None, namespaced=False),
    KindInfo("NVIDIADriver", "nvidia.com", "nvidiadrivers", None, namespaced=False),
    KindInfo("Node", "", "nodes", None, namespaced=False),
)
INFRASTRUCTURE_KINDS = frozenset(k.kind for k in INFRASTRUCTURE)
OPERATOR_VERSIONS = {"ClusterPolicy": "v1", "GPUCluster": "v1alpha1", "NVIDIADriver": "v1alpha1"}

BY_KIND = {k.kind: k for k in (*_KINDS, *INFRASTRUCTURE)}
BY_RESOURCE = {(k.group, k.resource): k for k in (*_KINDS, *INFRASTRUCTURE)}
POD_BEARING = tuple(k for k in _KINDS if k.pod_spec_path is not None)
HANDLED = _KINDS
# The only subresource the engine reads: ephemeral containers are added to running pods through it.
SUBRESOURCES = {("", "pods"): ("ephemeralcontainers",)}
# API versions of resource.k8s.io that no 1.34+ cluster serves for these kinds (rule legacy-api).
# Other kinds still live there (DeviceTaintRule is served at v1alpha3): they are not ours.
LEGACY_DRA_VERSIONS = frozenset({"resource.k8s.io/v1alpha2", "resource.k8s.io/v1alpha3"})
LEGACY_DRA_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceClass",
                              "ResourceClaimParameters", "ResourceClassParameters", "PodSchedulingContext"})


def api_group(api_version: object) -> str | None:
    """The API group of an apiVersion ("" for core's "v1"); None when there is no apiVersion to read."""
    if type(api_version) is not str or not api_version:
        return None
    return api_version.rpartition("/")[0]


def foreign_kind(obj: Mapping[str, Any], kind: str) -> str | None:
    """Why an object whose kind bears one of our names is not ours ("a batch.volcano.sh Job"), else None:
    kinds are matched with their API group (Volcano's, Kubeflow's and Ray's Jobs are not batch/v1 Jobs)."""
    info = BY_KIND.get(kind)
    group = api_group(obj.get("apiVersion"))
    if info is None or group is None or group == info.group:
        return None
    return (f"kind {kind} of API group {group} is not the {info.group or 'core'} {kind} gpu-admission handles")


def is_legacy_dra(obj: Mapping[str, Any]) -> bool:
    version, kind = obj.get("apiVersion"), obj.get("kind")
    # a set lookup hashes its key: a list or mapping where a string belongs would raise
    return type(version) is str and type(kind) is str and version in LEGACY_DRA_VERSIONS and kind in LEGACY_DRA_KINDS
