"""DRA through the real apiserver: DeviceClasses, ResourceClaimTemplates and ResourceClaims created for real
(resource.k8s.io/v1, and the betas the release serves), and the webhook's lookups (its watch-backed caches,
with the chart's ServiceAccount token) resolving a template created just before the pod, or reporting
`unresolved-claim` when it does not exist."""
from __future__ import annotations

import pytest

from tests.e2e.test_kubectl import gpu_pod

pytestmark = pytest.mark.e2e

DRA_NODES = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "dra"}


def template(namespace: str, name: str, device_class: str = "gpu.nvidia.com", count: int = 1) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}}}


def dra_pod(namespace: str, name: str, template_name: str) -> dict:
    pod = gpu_pod(namespace, name=name)
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
    pod["spec"]["nodeSelector"] = dict(DRA_NODES)
    return pod


@pytest.fixture(scope="module")
def device_class(kubectl):
    kubectl.apply({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                   "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}})
    yield "gpu.nvidia.com"
    kubectl.run("delete", "deviceclass", "gpu.nvidia.com", check=False)


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_dra_objects_are_served(kubectl, namespace, device_class, version):
    """The DRA API versions the cluster was started with: a ResourceClaimTemplate written for each is admitted
    (through the dra webhook) and read back."""
    assert f"resource.k8s.io/{version}" in kubectl.run("api-versions").stdout.split()
    manifest = template(namespace, f"tpl-{version}")
    manifest["apiVersion"] = f"resource.k8s.io/{version}"
    if version == "v1beta1":  # before v1beta2, the request's fields sat directly under it, not under "exactly"
        request = manifest["spec"]["spec"]["devices"]["requests"][0]
        request.update(request.pop("exactly"))
    kubectl.create(manifest)
    stored = kubectl.json("get", f"resourceclaimtemplates.{version}.resource.k8s.io", f"tpl-{version}",
                          "-n", namespace)
    assert stored["apiVersion"] == f"resource.k8s.io/{version}"


def test_a_template_created_just_before_the_pod_is_resolved(kubectl, namespace, device_class, lookups, webhook):
    text = "\n---\n".join(__import__("yaml").safe_dump(d) for d in (
        template(namespace, "one-gpu"), dra_pod(namespace, "trainer", "one-gpu")))
    result = kubectl.apply(text)
    assert result.stderr == ""  # no unresolved-claim warning: the webhook found the template
    assert "pod/trainer created" in result.stdout
    stored = kubectl.json("get", "pod", "trainer", "-n", namespace)
    assert stored["spec"]["nodeSelector"]["workload.example.com/gpu-allocation"] == "dra"


def test_a_template_asking_too_much_is_denied_at_creation(kubectl, namespace, device_class, webhook):
    result = kubectl.create(template(namespace, "nine-gpus", count=9), check=False)
    assert result.returncode == 1 and "[claim-shape]" in result.stderr, result.stderr
    assert kubectl.create(template(namespace, "eight-gpus", count=8), check=False).returncode == 0


@pytest.fixture(scope="module")
def nic_class(kubectl):
    kubectl.apply({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "nic.example.com"},
                   "spec": {"selectors": [{"cel": {"expression": "device.driver == 'nic.example.com'"}}]}})
    yield "nic.example.com"
    kubectl.run("delete", "deviceclass", "nic.example.com", check=False)


def test_the_lookup_tells_a_gpu_claim_from_another(kubectl, namespace, device_class, nic_class, lookups, webhook):
    """A GPU limit beside a claim: denied when the claim's template asks for GPUs (known only by reading the
    template and its DeviceClass from the cluster), admitted when it asks for a NIC."""
    kubectl.apply(template(namespace, "gpu-claim"))
    kubectl.apply(template(namespace, "nic-claim", device_class=nic_class))
    both = dra_pod(namespace, "both", "gpu-claim")
    both["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    result = kubectl.create(both, check=False)
    assert result.returncode == 1 and "[double-mechanism]" in result.stderr, result.stderr
    twin = dra_pod(namespace, "gpu-and-nic", "nic-claim")
    twin["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    del twin["spec"]["nodeSelector"]
    created = kubectl.create(twin, check=False)
    assert created.returncode == 0, created.stderr


def test_unresolved_claim_when_the_template_does_not_exist(kubectl, namespace, lookups, webhook):
    result = kubectl.create(dra_pod(namespace, "orphan", "missing-template"))
    assert "pod/orphan created" in result.stdout
    assert "Warning: " in result.stderr and "[unresolved-claim]" in result.stderr
    assert '"missing-template"' in result.stderr
