"""The API resources that lookups watch and `audit` lists: group, version, plural, scope and URL paths."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from webhook.objects.kinds import BY_KIND, KindInfo

# The version read for each group the engine handles: resource.k8s.io/v1 is what 1.34+ clusters serve.
_VERSIONS = {"": "v1", "apps": "v1", "batch": "v1", "resource.k8s.io": "v1"}


@dataclass(frozen=True, slots=True)
class ApiResource:
    group: str  # "" for core
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`resourceclaims.resource.k8s.io`, as kubectl and RBAC messages name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The collection (all namespaces when `namespace` is None) or, with `name`, one object."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        return f"{base}/{quote(name, safe='')}" if name else base

    @staticmethod
    def of(info: KindInfo) -> ApiResource:
        return ApiResource(info.group, _VERSIONS[info.group], info.resource, info.kind, info.namespaced)


RESOURCE_CLAIMS = ApiResource.of(BY_KIND["ResourceClaim"])
RESOURCE_CLAIM_TEMPLATES = ApiResource.of(BY_KIND["ResourceClaimTemplate"])
DEVICE_CLASSES = ApiResource.of(BY_KIND["DeviceClass"])
NAMESPACES = ApiResource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIG_MAPS = ApiResource("", "v1", "configmaps", "ConfigMap", namespaced=True)
SECRETS = ApiResource("", "v1", "secrets", "Secret", namespaced=True)
NODES = ApiResource("", "v1", "nodes", "Node", namespaced=False)
RESOURCE_SLICES = ApiResource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False)
# alpha in 1.34 (the DRADeviceTaints gate): a cluster that does not serve it has no such rules
DEVICE_TAINT_RULES = ApiResource("resource.k8s.io", "v1alpha3", "devicetaintrules", "DeviceTaintRule",
                                 namespaced=False)
RUNTIME_CLASSES = ApiResource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", namespaced=False)
NODE_POOLS = ApiResource("karpenter.sh", "v1", "nodepools", "NodePool", namespaced=False)
MACHINE_DEPLOYMENTS = ApiResource("cluster.x-k8s.io", "v1beta1", "machinedeployments", "MachineDeployment",
                                  namespaced=True)
PODS = ApiResource("", "v1", "pods", "Pod", namespaced=True)
EVENTS = ApiResource("", "v1", "events", "Event", namespaced=True)
# The GPU Operator's objects (its CRDs, where installed), at the versions Operator 26.7 serves.
CLUSTER_POLICIES = ApiResource("nvidia.com", "v1", "clusterpolicies", "ClusterPolicy", namespaced=False)
GPU_CLUSTERS = ApiResource("nvidia.com", "v1alpha1", "gpuclusters", "GPUCluster", namespaced=False)
NVIDIA_DRIVERS = ApiResource("nvidia.com", "v1alpha1", "nvidiadrivers", "NVIDIADriver", namespaced=False)
OPERATOR_RESOURCES = (CLUSTER_POLICIES, GPU_CLUSTERS, NVIDIA_DRIVERS)

POLICY_REPORTS = ApiResource("wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport", namespaced=True)
CLUSTER_POLICY_REPORTS = ApiResource(
    "wgpolicyk8s.io", "v1alpha2", "clusterpolicyreports", "ClusterPolicyReport", namespaced=False
)
OPEN_REPORTS = ApiResource("openreports.io", "v1alpha1", "reports", "Report", namespaced=True)
OPEN_CLUSTER_REPORTS = ApiResource("openreports.io", "v1alpha1", "clusterreports", "ClusterReport", namespaced=False)
VALIDATING_WEBHOOKS = ApiResource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
    namespaced=False,
)
